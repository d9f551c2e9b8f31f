//go:build linux

package rxm_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// offsetIn returns where part starts in buf, -1 when it is not inside it.
func offsetIn(buf, part []byte) int {
	if len(part) == 0 {
		return -2
	}
	b, p := uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(unsafe.Pointer(unsafe.SliceData(part)))
	if p < b || p+uintptr(len(part)) > b+uintptr(len(buf)) {
		return -1
	}
	return int(p - b)
}

// postMulti posts buf on s as a multi-receive buffer with context ctx.
func postMulti(t testing.TB, s *side, buf []byte, ctx any) {
	t.Helper()
	require.NoError(t, s.msg().RecvMsg(&ep.Message{IOV: [][]byte{buf}, Addr: fi.AddrUnspec, Context: ctx}, fi.FlagMultiRecv))
}

// TestRDMMultiRecv: over tcp, one buffer posted with FI_MULTI_RECV takes
// eager, segmented and rendezvous messages one after the other, each
// completion carrying the buffer's context, its length and its part of
// the buffer (eq.Completion.Buf), in order and without overlap; the
// completion after which the space left is below FI_OPT_MIN_MULTI_RECV
// carries FI_MULTI_RECV, and the next message goes to the next receive.
// Messages waiting unexpected when the buffer is posted take it first.
// fi_cancel releases a buffer with an FI_MULTI_RECV error entry.
func TestRDMMultiRecv(t *testing.T) {
	a, b, toB, _ := pair(t)
	opts := b.e.(ep.Options)
	min, err := opts.GetOpt(ep.OptLevelEndpoint, ep.OptMinMultiRecv)
	require.NoError(t, err)
	require.Equal(t, 16384, min, "the default is the eager limit, as C's")
	_, err = opts.GetOpt(ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.ErrorIs(t, err, fi.ENOPROTOOPT)
	require.ErrorIs(t, opts.SetOpt(ep.OptLevelEndpoint, ep.OptMinMultiRecv, -1), fi.EINVAL)
	require.NoError(t, opts.SetOpt(ep.OptLevelEndpoint, ep.OptMinMultiRecv, 1000))
	require.ErrorIs(t, b.msg().RecvMsg(&ep.Message{IOV: [][]byte{make([]byte, 999)}, Addr: fi.AddrUnspec}, fi.FlagMultiRecv),
		fi.EINVAL, "smaller than the minimum")

	// 200 KiB: 64 B, 5000 B, 20000 B (SAR over bounce receives, else
	// rendezvous), 150000 B (rendezvous), then 3000 B: 26736 bytes are
	// left after the fifth; a 25737-byte sixth leaves 999, below the
	// minimum, and the seventh goes to the next receive.
	buf := make([]byte, 200*1024)
	postMulti(t, b, buf, "multi")
	other := make([]byte, 64)
	require.NoError(t, b.msg().Recv(other, nil, fi.AddrUnspec, "next"))
	sizes := []int{64, 5000, 20000, 150000, 3000, 25737, 10}
	off := 0
	for i, n := range sizes {
		msg := fill(n, byte(i))
		if n == 10 {
			msg = []byte("to next rx")
		}
		_, err := sendRetry(a, func() error { return a.msg().Send(msg, nil, toB, i) }, b)
		require.NoError(t, err)
		got := next(t, b, a)
		require.Nil(t, got.err, "message %d", i)
		require.Equal(t, i, next(t, a, b).c.Context)
		if i == len(sizes)-1 {
			require.Equal(t, "next", got.c.Context)
			require.Equal(t, msg, other[:got.c.Len])
			break
		}
		c := got.c
		require.Equal(t, "multi", c.Context, "message %d", i)
		require.Equal(t, n, c.Len)
		require.Equal(t, off, offsetIn(buf, c.Buf), "message %d lands at the next free offset", i)
		require.Equal(t, msg, c.Buf)
		want := fi.FlagRecv | fi.FlagMsg
		if i == 5 {
			want |= fi.FlagMultiRecv // 999 bytes left
		}
		require.Equal(t, want, c.Flags, "message %d", i)
		off += n
	}

	// Unexpected messages take a buffer posted after them, in order.
	for i := range 3 {
		_, err := sendRetry(a, func() error { return a.msg().Send(fill(600, byte(i)), nil, toB, i) }, b)
		require.NoError(t, err)
		require.Equal(t, i, next(t, a, b).c.Context)
	}
	small := make([]byte, 2500)
	postMulti(t, b, small, "small")
	for i := range 3 {
		got := next(t, b, a)
		require.Nil(t, got.err)
		require.Equal(t, "small", got.c.Context)
		require.Equal(t, 600*i, offsetIn(small, got.c.Buf))
		require.Equal(t, fill(600, byte(i)), got.c.Buf)
		want := fi.FlagRecv | fi.FlagMsg
		if i == 2 {
			want |= fi.FlagMultiRecv // 700 left
		}
		require.Equal(t, want, got.c.Flags)
	}

	// A cancelled buffer is released by its error entry.
	postMulti(t, b, make([]byte, 4096), "cancel me")
	require.NoError(t, b.e.Cancel("cancel me"))
	got := next(t, b, a)
	require.NotNil(t, got.err)
	require.Equal(t, fi.ECANCELED, got.err.Err)
	require.Equal(t, "cancel me", got.err.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, got.err.Flags)

	// Tagged receives ignore the flag, as C's rxm does.
	tb := make([]byte, 4096)
	require.NoError(t, b.tagged().TRecvMsg(&ep.TaggedMessage{IOV: [][]byte{tb}, Addr: fi.AddrUnspec, Tag: 5, Context: "tagged"},
		fi.FlagMultiRecv))
	require.NoError(t, a.tagged().TSend([]byte("t1"), nil, toB, 5, "t1"))
	got = next(t, b, a)
	require.Equal(t, "tagged", got.c.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagTagged, got.c.Flags)
	require.Equal(t, "t1", next(t, a, b).c.Context)
	var none [1]eq.Completion
	n, _ := b.cq.Read(none[:])
	require.Zero(t, n)
}

// TestRDMMultiRecvAllocs: a multi-receive buffer posted, filled by four
// eager messages and released, over and over, allocates nothing once
// the pools are warm.
func TestRDMMultiRecvAllocs(t *testing.T) {
	a, b, toB, _ := pair(t)
	require.NoError(t, b.e.(ep.Options).SetOpt(ep.OptLevelEndpoint, ep.OptMinMultiRecv, 1024))
	buf, sbuf := make([]byte, 4096), fill(1000, 3)
	msg := &ep.Message{IOV: [][]byte{buf}, Addr: fi.AddrUnspec}
	comps := make([]eq.Completion, 4)
	cycle := func() {
		if err := b.msg().RecvMsg(msg, fi.FlagMultiRecv); err != nil {
			panic(err)
		}
		for range 4 {
			for a.msg().Send(sbuf, nil, toB, nil) == fi.EAGAIN {
				_, _ = a.cq.Read(comps[:0])
			}
		}
		got, released := 0, false
		for got < 4 || !released {
			n, err := b.cq.Read(comps)
			if err == fi.EAVAIL {
				panic("error completion")
			}
			for _, c := range comps[:max(n, 0)] {
				got++
				released = released || c.Flags&fi.FlagMultiRecv != 0
			}
			_, _ = a.cq.Read(comps[:0])
		}
		for sent := 0; sent < 4; {
			n, _ := a.cq.Read(comps)
			sent += max(n, 0)
		}
	}
	cycle()
	require.Zero(t, testing.AllocsPerRun(50, cycle))
}
