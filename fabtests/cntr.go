package fabtests

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func (e *env) openCounter(t testing.TB) eq.Counter {
	t.Helper()
	c, err := eq.OpenCounter(e.domain, &eq.CounterAttr{})
	skipIfAbsent(t, err, "counters")
	closeOnce(t, c)
	return c
}

func testCntr(t *testing.T, s *suite) {
	s.run(t, "add-set-read", func(t *testing.T) {
		c := s.open(t, fi.EPTypeUnspec).openCounter(t)
		require.Zero(t, c.Read())
		require.NoError(t, c.Add(5))
		require.NoError(t, c.Add(2))
		require.Equal(t, uint64(7), c.Read())
		require.NoError(t, c.Set(100))
		require.Equal(t, uint64(100), c.Read())
		require.Zero(t, c.ReadErr())
		require.NoError(t, c.AddErr(3))
		require.Equal(t, uint64(3), c.ReadErr())
		require.NoError(t, c.SetErr(1))
		require.Equal(t, uint64(1), c.ReadErr())
		require.Equal(t, uint64(100), c.Read(), "error count is separate")
	})

	s.run(t, "wait-met", func(t *testing.T) {
		c := s.open(t, fi.EPTypeUnspec).openCounter(t)
		require.NoError(t, c.Set(10))
		require.NoError(t, c.Wait(s.ctx(t), 10))
		require.NoError(t, c.Wait(s.ctx(t), 3))
	})

	s.run(t, "wait-wakes", func(t *testing.T) {
		c := s.open(t, fi.EPTypeUnspec).openCounter(t)
		time.AfterFunc(20*time.Millisecond, func() { _ = c.Add(2) })
		require.NoError(t, c.Wait(s.ctx(t), 2))
		require.Equal(t, uint64(2), c.Read())
	})

	s.run(t, "wait-error", func(t *testing.T) {
		c := s.open(t, fi.EPTypeUnspec).openCounter(t)
		time.AfterFunc(20*time.Millisecond, func() { _ = c.AddErr(1) })
		require.ErrorIs(t, c.Wait(s.ctx(t), 1), fi.EAVAIL)
	})

	s.run(t, "wait-deadline", func(t *testing.T) {
		c := s.open(t, fi.EPTypeUnspec).openCounter(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		err := c.Wait(ctx, 1)
		require.Equal(t, fi.ETIMEDOUT, fi.Code(err), "got %v", err)
	})

	s.run(t, "close", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		c, err := eq.OpenCounter(e.domain, nil)
		skipIfAbsent(t, err, "counters")
		require.NoError(t, c.Close())
		require.ErrorIs(t, c.Close(), fi.EBADF)
		require.ErrorIs(t, c.Add(1), fi.EBADF, "add after close")
	})

	s.run(t, "read-allocs", func(t *testing.T) {
		c := s.open(t, fi.EPTypeUnspec).openCounter(t)
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = c.Read(); _ = c.ReadErr() }))
	})
}
