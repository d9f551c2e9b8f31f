package kit_test

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// offsetIn returns where part starts in buf, from their capacities: a
// claimed part keeps the posted buffer's capacity.
func offsetIn(buf, part []byte) int { return cap(buf) - cap(part) }

// TestMultiRecvPost: a buffer smaller than the minimum, an empty one and
// a negative minimum are refused with fi.EINVAL naming the provider and
// the sizes; a buffer of exactly the minimum is taken.
func TestMultiRecvPost(t *testing.T) {
	var m kit.MultiRecv
	err := m.Post("shm", make([]byte, 100), 4096, "ctx", kit.ReleaseEntry)
	require.ErrorIs(t, err, fi.EINVAL)
	require.ErrorContains(t, err, "shm: recv: FI_MULTI_RECV buffer of 100 bytes is smaller than the minimum of 4096")
	require.NotEmpty(t, errors.GetAllHints(err))
	require.ErrorIs(t, m.Post("shm", nil, 0, nil, kit.ReleaseEntry), fi.EINVAL)
	require.ErrorIs(t, m.Post("shm", make([]byte, 8), -1, nil, kit.ReleaseEntry), fi.EINVAL)

	require.NoError(t, m.Post("shm", make([]byte, 64), 64, "ctx", kit.ReleaseEntry))
	require.Equal(t, 64, m.Left())
	require.Equal(t, "ctx", m.Context())
	require.False(t, m.Full())
}

// TestMultiRecvFill: messages go one after the other with no alignment;
// the buffer is full once the space left is below the minimum, and
// released when the last message placed is done; only then (with
// ReleaseEntry) is a release completion due, of FI_MULTI_RECV alone.
func TestMultiRecvFill(t *testing.T) {
	buf := make([]byte, 100)
	var m kit.MultiRecv
	require.NoError(t, m.Post("shm", buf, 30, "ctx", kit.ReleaseEntry))
	sizes := []int{7, 0, 13, 41} // 61 used, 39 left; then 10: 29 left < 30
	off := 0
	for _, n := range sizes {
		dst, full := m.Claim(n)
		require.False(t, full)
		require.Len(t, dst, n)
		require.Equal(t, off, offsetIn(buf, dst))
		off += n
		flags, released := m.Done(fi.FlagRecv | fi.FlagMsg | fi.FlagMultiRecv)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg, flags, "a message's completion carries no FI_MULTI_RECV")
		require.False(t, released)
	}
	require.Equal(t, 39, m.Left())
	require.Equal(t, 61, m.Offset())
	dst, full := m.Claim(10)
	require.True(t, full, "29 bytes left, minimum 30")
	require.Equal(t, 61, offsetIn(buf, dst))
	require.Equal(t, 1, m.Pending())
	flags, released := m.Done(fi.FlagRecv | fi.FlagMsg)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, flags)
	require.True(t, released)
	require.Equal(t, eq.Completion{Context: "ctx", Flags: fi.FlagMultiRecv}, m.ReleaseCompletion())
	m.Reset()
	require.Nil(t, m.Context())
}

// TestMultiRecvPendingHoldsRelease: a full buffer is released only when
// the last of the messages placed in it is done, whatever their order.
func TestMultiRecvPendingHoldsRelease(t *testing.T) {
	var m kit.MultiRecv
	require.NoError(t, m.Post("shm", make([]byte, 64), 16, nil, kit.ReleaseEntry))
	m.Claim(20)
	_, full := m.Claim(30) // 14 left
	require.True(t, full)
	_, released := m.Done(fi.FlagRecv)
	require.False(t, released, "one message still pending")
	_, released = m.Done(fi.FlagRecv)
	require.True(t, released)
}

// TestMultiRecvTruncates: a message larger than the space left takes
// that space (the provider reports fi.ETRUNC) and the buffer is full,
// whatever the minimum (0 included); so is a buffer with no space left.
func TestMultiRecvTruncates(t *testing.T) {
	buf := make([]byte, 50)
	var m kit.MultiRecv
	require.NoError(t, m.Post("shm", buf, 0, nil, kit.ReleaseEntry))
	m.Claim(20)
	dst, full := m.Claim(40)
	require.Len(t, dst, 30, "the space left")
	require.Equal(t, 20, offsetIn(buf, dst))
	require.True(t, full)

	require.NoError(t, m.Post("shm", buf, 0, nil, kit.ReleaseEntry))
	_, full = m.Claim(50)
	require.True(t, full, "no space left, minimum 0")
}

// TestMultiRecvWithLast: with ReleaseWithLast (C's rxm) the completion
// of the last message carries FI_MULTI_RECV.
func TestMultiRecvWithLast(t *testing.T) {
	var m kit.MultiRecv
	require.NoError(t, m.Post("rxm", make([]byte, 32), 8, "c", kit.ReleaseWithLast))
	m.Claim(10)
	flags, released := m.Done(fi.FlagRecv | fi.FlagMsg)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, flags)
	require.False(t, released)
	_, full := m.Claim(20)
	require.True(t, full)
	flags, released = m.Done(fi.FlagRecv | fi.FlagMsg)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, flags)
	require.True(t, released)
}

// TestMultiRecvCancel: a cancelled buffer with nothing pending is
// released at once; with a message pending, when it is done, and that
// message's completion does not carry FI_MULTI_RECV (the cancellation
// entry, fi.ECANCELED with FI_MULTI_RECV, does).
func TestMultiRecvCancel(t *testing.T) {
	var m kit.MultiRecv
	require.NoError(t, m.Post("shm", make([]byte, 32), 8, nil, kit.ReleaseWithLast))
	require.True(t, m.Cancel())
	require.True(t, m.Full())
	require.True(t, m.Canceled())
	require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, m.CancelFlags(fi.FlagRecv|fi.FlagMsg))

	require.NoError(t, m.Post("shm", make([]byte, 32), 8, nil, kit.ReleaseWithLast))
	m.Claim(4)
	require.False(t, m.Cancel(), "a message is pending")
	flags, released := m.Done(fi.FlagRecv | fi.FlagMsg)
	require.True(t, released)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, flags)
}

// TestMultiRecvDoesNotAllocate: Claim, Done and the release completion
// allocate nothing.
func TestMultiRecvDoesNotAllocate(t *testing.T) {
	var m kit.MultiRecv
	buf := make([]byte, 1<<20)
	ctx := &struct{ int }{1}
	require.NoError(t, m.Post("shm", buf, 64, ctx, kit.ReleaseEntry))
	var sink eq.Completion
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, full := m.Claim(100); full {
			panic("full")
		}
		if _, released := m.Done(fi.FlagRecv); released {
			panic("released")
		}
		sink = m.ReleaseCompletion()
	}))
	require.Same(t, ctx, sink.Context)
}
