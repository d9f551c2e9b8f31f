package fabtests

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// openCQ opens a completion queue on e's domain, skipping when it has
// none.
func (e *env) openCQ(t testing.TB, attr *eq.CQAttr) eq.CompletionQueue {
	t.Helper()
	q, err := eq.OpenCQ(e.domain, attr)
	skipIfAbsent(t, err, "completion queues")
	closeOnce(t, q)
	return q
}

func testCQ(t *testing.T, s *suite) {
	s.run(t, "open-close", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		for _, f := range []eq.CQFormat{eq.FormatUnspec, eq.FormatContext, eq.FormatMsg, eq.FormatData, eq.FormatTagged} {
			for _, size := range []int{0, 1, 64, 4096} {
				q, err := eq.OpenCQ(e.domain, &eq.CQAttr{Format: f, Size: size})
				skipIfAbsent(t, err, "completion queues")
				require.NoError(t, q.Close(), "%v size %d", f, size)
				require.ErrorIs(t, q.Close(), fi.EBADF, "second close")
			}
		}
	})

	s.run(t, "bad-format", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		q, err := eq.OpenCQ(e.domain, &eq.CQAttr{Format: eq.CQFormat(99)})
		if err == nil {
			_ = q.Close()
		}
		requireCoded(t, err)
	})

	s.run(t, "read-empty", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openCQ(t, &eq.CQAttr{Format: eq.FormatData})
		var c [4]eq.Completion
		var src [4]fi.Addr
		n, err := q.Read(c[:])
		require.ErrorIs(t, err, fi.EAGAIN)
		require.Zero(t, n)
		_, err = q.ReadFrom(c[:], src[:])
		require.ErrorIs(t, err, fi.EAGAIN)
		_, err = q.ReadErr()
		require.ErrorIs(t, err, fi.EAGAIN)
	})

	s.run(t, "sread-deadline", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openCQ(t, &eq.CQAttr{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		var c [1]eq.Completion
		_, err := q.SRead(ctx, c[:])
		require.Equal(t, fi.ETIMEDOUT, fi.Code(err), "got %v", err)
	})

	s.run(t, "close-unblocks-sread", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openCQ(t, &eq.CQAttr{})
		time.AfterFunc(20*time.Millisecond, func() { _ = q.Close() })
		var c [1]eq.Completion
		_, err := q.SRead(s.ctx(t), c[:])
		require.ErrorIs(t, err, fi.EBADF)
		_, err = q.Read(c[:])
		require.ErrorIs(t, err, fi.EBADF, "read after close")
	})

	s.run(t, "read-allocs", func(t *testing.T) {
		q := s.open(t, fi.EPTypeUnspec).openCQ(t, &eq.CQAttr{Format: eq.FormatTagged})
		var c [8]eq.Completion
		var src [8]fi.Addr
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = q.Read(c[:]) }), "Read")
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = q.ReadFrom(c[:], src[:]) }), "ReadFrom")
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = q.ReadErr() }), "ReadErr")
	})

	s.run(t, "bound-busy", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		q := e.openCQ(t, &eq.CQAttr{})
		x := e.endpoint(t)
		require.NoError(t, x.Bind(q, fi.FlagSend|fi.FlagRecv))
		require.ErrorIs(t, q.Close(), fi.EBUSY, "closing a bound CQ")
		var c [1]eq.Completion
		_, err := q.Read(c[:])
		require.ErrorIs(t, err, fi.EAGAIN, "a refused close leaves the CQ working")
		require.NoError(t, x.Close())
		require.NoError(t, q.Close(), "close after the endpoint is gone")
	})

	s.run(t, "bind-flags", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		q := e.openCQ(t, &eq.CQAttr{})
		x := e.endpoint(t)
		defer x.Close()
		requireCoded(t, x.Bind(q, 0))
		require.NoError(t, x.Bind(q, fi.FlagSend))
		requireCoded(t, x.Bind(q, fi.FlagSend))
	})
}
