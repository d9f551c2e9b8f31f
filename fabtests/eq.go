package fabtests

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// openEQ opens an event queue on e's fabric, skipping when it has none.
func (e *env) openEQ(t testing.TB, attr *eq.Attr) eq.EventQueue {
	t.Helper()
	q, err := eq.OpenEQ(e.fabric, attr)
	skipIfAbsent(t, err, "event queues")
	closeOnce(t, q)
	return q
}

func testEQ(t *testing.T, s *suite) {
	s.run(t, "open-close", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		for _, size := range []int{0, 1, 32, 1024} {
			q, err := eq.OpenEQ(e.fabric, &eq.Attr{Size: size})
			skipIfAbsent(t, err, "event queues")
			require.NoError(t, q.Close(), "size %d", size)
			require.ErrorIs(t, q.Close(), fi.EBADF, "second close")
		}
	})

	s.run(t, "write-read", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{Flags: fi.FlagWrite})
		ctx := new(int)
		for i := range 3 {
			require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Context: ctx, Data: uint64(i)}))
		}
		for i := range 3 {
			ev, err := q.Read()
			require.NoError(t, err)
			n, ok := ev.(*eq.Notify)
			require.True(t, ok, "got %T", ev)
			require.Equal(t, uint64(i), n.Data, "events in order")
			require.Same(t, ctx, n.Context)
		}
		_, err := q.Read()
		require.ErrorIs(t, err, fi.EAGAIN)
	})

	s.run(t, "write-needs-flag", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{})
		requireCoded(t, q.Write(&eq.Notify{}))
		_, err := q.Read()
		require.ErrorIs(t, err, fi.EAGAIN, "a refused write inserts nothing")
	})

	s.run(t, "peek", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{Flags: fi.FlagWrite})
		require.NoError(t, q.Write(&eq.Notify{Data: 7}))
		for range 2 {
			ev, err := q.Peek()
			require.NoError(t, err)
			require.Equal(t, uint64(7), ev.(*eq.Notify).Data)
		}
		ev, err := q.Read()
		require.NoError(t, err)
		require.Equal(t, uint64(7), ev.(*eq.Notify).Data)
		_, err = q.Peek()
		require.ErrorIs(t, err, fi.EAGAIN)
	})

	s.run(t, "readerr-empty", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{Flags: fi.FlagWrite})
		_, err := q.ReadErr()
		require.ErrorIs(t, err, fi.EAGAIN)
		require.NoError(t, q.Write(&eq.Notify{}))
		_, err = q.ReadErr()
		require.ErrorIs(t, err, fi.EAGAIN, "ReadErr does not return normal events")
	})

	s.run(t, "sread-deadline", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err := q.SRead(ctx)
		require.Equal(t, fi.ETIMEDOUT, fi.Code(err), "got %v", err)
	})

	s.run(t, "sread-cancel", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := q.SRead(ctx)
		require.Equal(t, fi.ECANCELED, fi.Code(err), "got %v", err)
	})

	s.run(t, "sread-wakes", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{Flags: fi.FlagWrite})
		done := make(chan error, 1)
		time.AfterFunc(20*time.Millisecond, func() { done <- q.Write(&eq.Notify{Data: 9}) })
		ev, err := q.SRead(s.ctx(t))
		require.NoError(t, err)
		require.Equal(t, uint64(9), ev.(*eq.Notify).Data)
		require.NoError(t, <-done)
	})

	s.run(t, "close-unblocks-sread", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{})
		time.AfterFunc(20*time.Millisecond, func() { _ = q.Close() })
		_, err := q.SRead(s.ctx(t))
		require.ErrorIs(t, err, fi.EBADF)
		_, err = q.Read()
		require.ErrorIs(t, err, fi.EBADF, "read after close")
	})

	s.run(t, "read-allocs", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openEQ(t, &eq.Attr{Flags: fi.FlagWrite, Size: 256})
		allocs := testing.AllocsPerRun(100, func() { _, _ = q.Read() })
		require.Zero(t, allocs, "Read on an empty EQ allocates")
		ev := &eq.Notify{}
		for range 101 {
			require.NoError(t, q.Write(ev))
		}
		allocs = testing.AllocsPerRun(100, func() { _, _ = q.Read() })
		require.Zero(t, allocs, "Read of a queued event allocates")
	})
}
