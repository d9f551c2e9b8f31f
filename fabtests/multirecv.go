package fabtests

import (
	"bytes"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// testMultiRecv is the multi-recv group: receive buffers posted with
// FI_MULTI_RECV (fi_msg(3)) on reliable unconnected endpoints
// (FI_EP_RDM), for providers whose Info offers FI_MULTI_RECV. One
// buffer takes many messages from a peer; each message completes on its
// own with the buffer's context, FI_RECV|FI_MSG, its length and
// eq.Completion.Buf, the part of the buffer it landed in (in order,
// without overlap; a provider may align them); the buffer is released
// once the space it has left falls below the minimum set with
// ep.SetOpt(FI_OPT_MIN_MULTI_RECV), and not before: either with an
// entry of its own flagged FI_MULTI_RECV (C's shm) or with the flag on
// the last message's completion (C's rxm), exactly once. After the
// release the buffer takes nothing: the next message goes to the next
// receive. Posted again, it fills again.
func testMultiRecv(t *testing.T, s *suite) {
	for _, minimum := range []int{64, 1000} {
		s.run(t, "fill-min-"+sizeName(minimum), func(t *testing.T) {
			m := s.multiRecvPair(t)
			a, b := m.peers[0], m.peers[1]
			require.NoError(t, ep.SetOpt(b.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv, minimum), "%s: setopt FI_OPT_MIN_MULTI_RECV", b.role)
			got, err := ep.GetOpt(b.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv)
			require.NoError(t, err, "%s: getopt FI_OPT_MIN_MULTI_RECV", b.role)
			require.Equal(t, minimum, got, "FI_OPT_MIN_MULTI_RECV reads back what was set")
			buf := make([]byte, 4096)
			for round := range 2 { // the second round posts the buffer again
				ctx := &opCtx{"multi-recv " + sizeName(minimum)}
				n := multiRecvFill(t, m, a, b, buf, ctx, minimum, round)
				t.Logf("round %d: the buffer took %d messages", round, n)
			}
			// Released: the next message goes to the next receive.
			next, nctx := make([]byte, 64), &opCtx{"next"}
			require.NoError(t, b.msg(t).Recv(next, b.desc(t, next), fi.AddrUnspec, nctx))
			data := []byte("after the release")
			desc := a.desc(t, data)
			m.post(t, "send", func() error { return a.msg(t).Send(data, desc, m.addr[0][1], nil) })
			e := m.take(t, b, 1)[0]
			require.Nil(t, e.err, "receive error entry")
			requireRecv(t, e.c, nctx, len(data), recvFlags)
			require.Equal(t, data, next[:len(data)])
			m.take(t, a, 1)
			a.requireCQEmpty(t)
			b.requireCQEmpty(t)
		})
	}
}

// multiRecvPair opens a sender and a receiver offering FI_MULTI_RECV,
// each in the other's AV, skipping when the provider has none.
func (s *suite) multiRecvPair(t testing.TB) *mesh {
	t.Helper()
	caps := fi.CapMsg | fi.CapMultiRecv
	m := s.rdm(t, rdmOpts{caps: caps}, "sender", "receiver")
	if c := m.peers[1].info.Caps; c&fi.CapMultiRecv == 0 {
		t.Skipf("provider's Info lacks FI_MULTI_RECV: %v", c)
	}
	m.connect(t)
	return m
}

// multiRecvSizes are the sizes of the messages that fill a buffer, in
// turn: small and larger ones.
var multiRecvSizes = []int{100, 37, 300, 1, 211, 64, 150}

// multiRecvFill posts buf at b with FI_MULTI_RECV and context ctx, sends
// it messages from a, one at a time, until the buffer is released, and
// checks every completion; it returns how many messages the buffer
// took. No message is larger than the space left.
func multiRecvFill(t testing.TB, m *mesh, a, b *rdmPeer, buf []byte, ctx *opCtx, minimum, round int) int {
	t.Helper()
	msg := &ep.Message{IOV: [][]byte{buf}, Addr: fi.AddrUnspec, Context: ctx}
	if d := b.desc(t, buf); d != nil {
		msg.Desc = []any{d}
	}
	require.NoError(t, b.msg(t).RecvMsg(msg, fi.FlagMultiRecv), "%s: recvmsg FI_MULTI_RECV", b.role)
	end := 0 // where the last message ended
	for i := 0; ; i++ {
		require.Less(t, i, len(buf), "the buffer of %d bytes was not released after %d messages (minimum %d)", len(buf), i, minimum)
		// Never more than the space left: what a provider does with a
		// larger message is its own (C's shm and rxm truncate it).
		data := pattern(min(multiRecvSizes[i%len(multiRecvSizes)], len(buf)-end), byte(i+17*round))
		desc, sctx := a.desc(t, data), &opCtx{"send"}
		m.post(t, "send", func() error { return a.msg(t).Send(data, desc, m.addr[0][1], sctx) })
		requireSend(t, m.completion(t, a).c, sctx)

		e := m.take(t, b, 1)[0]
		require.Nil(t, e.err, "message %d: receive error entry %v", i, e.err)
		c := e.c
		require.Same(t, ctx, c.Context, "message %d: the buffer's context", i)
		require.Equal(t, recvFlags, c.Flags&^fi.FlagMultiRecv, "message %d: flags %v", i, c.Flags)
		require.Equal(t, len(data), c.Len, "message %d: length", i)
		require.Len(t, c.Buf, len(data), "message %d: Buf is the message", i)
		off := offsetOf(buf, c.Buf)
		require.GreaterOrEqual(t, off, 0, "message %d: Buf is not part of the posted buffer", i)
		require.GreaterOrEqual(t, off, end, "message %d landed at %d, before the end of the previous one (%d)", i, off, end)
		require.True(t, bytes.Equal(data, buf[off:off+len(data)]), "message %d: the bytes at its place", i)
		end = off + len(data)
		left := len(buf) - end

		released := c.Flags&fi.FlagMultiRecv != 0 // on the last message, as C's rxm
		if !released && left < minimum {
			// An entry of its own, as C's shm.
			r := m.take(t, b, 1)[0]
			require.Nil(t, r.err, "release: error entry %v", r.err)
			require.Same(t, ctx, r.c.Context, "release entry's context")
			require.Equal(t, fi.FlagMultiRecv, r.c.Flags&fi.FlagMultiRecv, "release entry's flags: %v", r.c.Flags)
			require.Zero(t, r.c.Len, "release entry's length")
			released = true
		}
		if released {
			require.Less(t, left, minimum, "released with %d bytes left, the minimum is %d", left, minimum)
			b.requireCQEmpty(t)
			return i + 1
		}
	}
}

// offsetOf returns where part, a non-empty slice of buf's memory,
// starts in buf, or -1 when it is not in buf (or empty).
func offsetOf(buf, part []byte) int {
	if len(part) == 0 {
		return -1
	}
	for i := range buf {
		if &buf[i] == &part[0] {
			return i
		}
	}
	return -1
}
