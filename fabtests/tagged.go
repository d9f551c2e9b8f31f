package fabtests

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

const (
	tsendFlags = fi.FlagSend | fi.FlagTagged
	trecvFlags = fi.FlagRecv | fi.FlagTagged
	// anyTag is an ignore mask that matches every tag.
	anyTag = ^uint64(0)
)

// taggedOf returns x's tagged ability, skipping when the Info or the
// endpoint lacks it.
func taggedOf(t testing.TB, x *rdmPeer) ep.Tagged {
	t.Helper()
	if x.info.Caps&fi.CapTagged == 0 {
		t.Skipf("provider's Info lacks FI_TAGGED: %v", x.info.Caps)
	}
	g, ok := x.ep.(ep.Tagged)
	if !ok {
		t.Skipf("provider's endpoint %T has no tagged ability (ep.Tagged)", x.ep)
	}
	return g
}

// requireTRecv checks a tagged receive completion.
func requireTRecv(t testing.TB, c eq.Completion, ctx *opCtx, n int, tag uint64, flags fi.Flags) {
	t.Helper()
	requireRecv(t, c, ctx, n, flags)
	require.Equal(t, tag, c.Tag, "tagged receive completion's tag")
}

// requireTSend checks a tagged send completion.
func requireTSend(t testing.TB, c eq.Completion, ctx *opCtx) {
	t.Helper()
	require.Same(t, ctx, c.Context, "tagged send completion's context")
	require.Equal(t, tsendFlags, c.Flags, "tagged send completion's flags: %v", c.Flags)
}

// tpost posts a tagged receive of n bytes at x and returns its buffer
// and context.
func tpost(t testing.TB, x *rdmPeer, n int, src fi.Addr, tag, ignore uint64, name string) ([]byte, *opCtx) {
	t.Helper()
	buf, ctx := make([]byte, n), &opCtx{name}
	require.NoError(t, taggedOf(t, x).TRecv(buf, x.desc(t, buf), src, tag, ignore, ctx), "%s: trecv %s", x.role, name)
	return buf, ctx
}

// tsend posts a tagged send of data from x, retrying on fi.EAGAIN.
func tsend(t testing.TB, m *mesh, x *rdmPeer, dest fi.Addr, tag uint64, data []byte, ctx *opCtx) {
	t.Helper()
	desc := x.desc(t, data)
	m.post(t, x.role+" tsend", func() error { return taggedOf(t, x).TSend(data, desc, dest, tag, ctx) })
}

// byContext takes n completions of x and returns them by context.
func byContext(t testing.TB, m *mesh, x *rdmPeer, n int) map[*opCtx]rdmEntry {
	t.Helper()
	out := make(map[*opCtx]rdmEntry, n)
	for _, e := range m.completions(t, x, n) {
		ctx, ok := e.c.Context.(*opCtx)
		require.True(t, ok, "%s: completion with a foreign context %v", x.role, e.c.Context)
		require.NotContains(t, out, ctx, "%s: context completed twice", x.role)
		out[ctx] = e
	}
	return out
}

// testTagged is the tagged group (fi_tagged(3)) over RDM endpoints.
func testTagged(t *testing.T, s *suite) {
	o := rdmOpts{caps: fi.CapTagged}
	s.run2(t, "tsend-trecv", func(t *testing.T) {
		m := s.rdmPair(t, o)
		for i, d := range [][2]int{{0, 1}, {1, 0}} {
			from, to := m.peers[d[0]], m.peers[d[1]]
			dest, src := m.addr[d[0]][d[1]], m.addr[d[1]][d[0]]
			fg := taggedOf(t, from)

			// The ignore mask: 0x12ab matches 0x1200 under 0xff.
			rbuf, rctx := tpost(t, to, 64, fi.AddrUnspec, 0x1200, 0xff, "masked")
			data, sctx := pattern(40, byte(i)), &opCtx{"tsend"}
			tsend(t, m, from, dest, 0x12ab, data, sctx)
			rc := m.completion(t, to)
			requireTRecv(t, rc.c, rctx, len(data), 0x12ab, trecvFlags)
			requireSource(t, to, rc, src)
			require.Equal(t, data, rbuf[:len(data)])
			requireTSend(t, m.completion(t, from).c, sctx)

			if n := min(from.info.TxAttr.InjectSize, 24); n > 0 {
				rbuf, rctx := tpost(t, to, n, fi.AddrUnspec, 5, 0, "tinject")
				buf := pattern(n, byte(i+1))
				want := bytes.Clone(buf)
				m.post(t, "tinject", func() error { return fg.TInject(buf, dest, 5) })
				clear(buf)
				requireTRecv(t, m.completion(t, to).c, rctx, n, 5, trecvFlags)
				require.Equal(t, want, rbuf)
			}

			if from.info.DomainAttr.CQDataSize > 0 {
				v := cqData(t, from.peer, 0xfedcba9876543210)
				rbuf, rctx := tpost(t, to, 32, fi.AddrUnspec, 6, 0, "tsenddata")
				data, sctx := pattern(32, byte(i+2)), &opCtx{"tsenddata"}
				desc := from.desc(t, data)
				m.post(t, "tsenddata", func() error { return fg.TSendData(data, desc, v, dest, 6, sctx) })
				rc := m.completion(t, to)
				requireTRecv(t, rc.c, rctx, len(data), 6, trecvFlags|fi.FlagRemoteCQData)
				require.Equal(t, v, rc.c.Data, "remote CQ data")
				require.Equal(t, data, rbuf)
				requireTSend(t, m.completion(t, from).c, sctx)
			}
			from.requireCQEmpty(t)
			to.requireCQEmpty(t)
		}
	}, func(t *testing.T) {
		m := s.rdm(t, o, "parent")
		x := m.peers[0]
		l := s.spawn(t, m.poll)
		child := exchangeNames(t, l, x)
		l.recv(t, "posted")
		ca, cb := &opCtx{"tag a"}, &opCtx{"tag b"}
		tsend(t, m, x, child, 0xb, pattern(300, 0xb), cb)
		tsend(t, m, x, child, 0xa, pattern(200, 0xa), ca)
		sc := byContext(t, m, x, 2)
		requireTSend(t, sc[ca].c, ca)
		requireTSend(t, sc[cb].c, cb)
		// Unexpected: sent before the child posts its receive.
		uctx := &opCtx{"unexpected"}
		tsend(t, m, x, child, 0x99, pattern(5000, 0x99), uctx)
		l.send(t, "sent", nil)
		requireTSend(t, m.completion(t, x).c, uctx)
		// Child to parent, caught by a wildcard receive.
		rbuf, rctx := tpost(t, x, 128, fi.AddrUnspec, 0, anyTag, "wildcard")
		l.send(t, "posted", nil)
		rc := m.completion(t, x)
		requireTRecv(t, rc.c, rctx, 77, 0x7777, trecvFlags)
		requireSource(t, x, rc, child)
		require.Equal(t, pattern(77, 0x77), rbuf[:77])
		l.finish(t)
	}, func(t *testing.T, l *link) {
		m := s.rdm(t, o, "child")
		x := m.peers[0]
		l.poll = m.poll
		parent := exchangeNames(t, l, x)
		abuf, actx := tpost(t, x, 1000, fi.AddrUnspec, 0xa, 0, "tag a")
		bbuf, bctx := tpost(t, x, 1000, fi.AddrUnspec, 0xb, 0, "tag b")
		l.send(t, "posted", nil)
		rc := byContext(t, m, x, 2)
		requireTRecv(t, rc[actx].c, actx, 200, 0xa, trecvFlags)
		requireTRecv(t, rc[bctx].c, bctx, 300, 0xb, trecvFlags)
		requireSource(t, x, rc[actx], parent)
		require.Equal(t, pattern(200, 0xa), abuf[:200], "message of tag a")
		require.Equal(t, pattern(300, 0xb), bbuf[:300], "message of tag b")
		l.recv(t, "sent")
		ubuf, uctx := tpost(t, x, 8000, fi.AddrUnspec, 0x99, 0, "unexpected")
		requireTRecv(t, m.completion(t, x).c, uctx, 5000, 0x99, trecvFlags)
		require.Equal(t, pattern(5000, 0x99), ubuf[:5000], "the unexpected message")
		l.recv(t, "posted")
		sctx := &opCtx{"to parent"}
		tsend(t, m, x, parent, 0x7777, pattern(77, 0x77), sctx)
		requireTSend(t, m.completion(t, x).c, sctx)
	})

	s.run(t, "wildcard", func(t *testing.T) {
		// Receives match in the order they were posted: a message goes to
		// the first posted receive whose tag matches under its mask.
		m := s.rdmPair(t, o)
		a, b := m.peers[0], m.peers[1]
		bufA, ctxA := tpost(t, b, 16, fi.AddrUnspec, 1, 0, "tag 1")
		bufB, ctxB := tpost(t, b, 16, fi.AddrUnspec, 2, 0, "tag 2")
		bufW, ctxW := tpost(t, b, 16, fi.AddrUnspec, 0, anyTag, "any tag")
		for _, tag := range []uint64{2, 3, 1} {
			tsend(t, m, a, m.addr[0][1], tag, []byte{byte(tag)}, nil)
		}
		got := byContext(t, m, b, 3)
		for _, w := range []struct {
			ctx *opCtx
			buf []byte
			tag uint64
		}{{ctxA, bufA, 1}, {ctxB, bufB, 2}, {ctxW, bufW, 3}} {
			requireTRecv(t, got[w.ctx].c, w.ctx, 1, w.tag, trecvFlags)
			require.Equal(t, byte(w.tag), w.buf[0], "%s received the message of tag %d", w.ctx.name, w.tag)
		}
		m.completions(t, a, 3)
	})

	s.run(t, "unexpected", func(t *testing.T) {
		// Messages that arrive before their receive is posted wait, and
		// match the receive posted later by tag, not by arrival.
		m := s.rdmPair(t, o)
		a, b := m.peers[0], m.peers[1]
		c10, c11 := &opCtx{"tag 10"}, &opCtx{"tag 11"}
		tsend(t, m, a, m.addr[0][1], 10, pattern(100, 10), c10)
		tsend(t, m, a, m.addr[0][1], 11, pattern(70000, 11), c11)
		m.settle(t, 50*time.Millisecond)
		require.Empty(t, b.in, "completions at a receiver with nothing posted")
		buf11, r11 := tpost(t, b, 70000, fi.AddrUnspec, 11, 0, "recv 11")
		requireTRecv(t, m.completion(t, b).c, r11, 70000, 11, trecvFlags)
		require.True(t, bytes.Equal(pattern(70000, 11), buf11), "message of tag 11")
		buf10, r10 := tpost(t, b, 100, fi.AddrUnspec, 10, 0, "recv 10")
		requireTRecv(t, m.completion(t, b).c, r10, 100, 10, trecvFlags)
		require.Equal(t, pattern(100, 10), buf10)
		sc := byContext(t, m, a, 2)
		requireTSend(t, sc[c10].c, c10)
		requireTSend(t, sc[c11].c, c11)
	})

	s.run(t, "order", func(t *testing.T) {
		// Messages of one tag match receives in the order sent, whether
		// they arrive before (unexpected) or after the receives are
		// posted.
		m := s.rdmPair(t, o)
		a, b := m.peers[0], m.peers[1]
		if a.info.TxAttr.MsgOrder&fi.OrderSAS == 0 {
			t.Skipf("provider does not order sends after sends (FI_ORDER_SAS): %v", a.info.TxAttr.MsgOrder)
		}
		n := min(a.info.TxAttr.Size, b.info.RxAttr.Size, 64)
		send := func(i int) {
			buf := binary.LittleEndian.AppendUint64(nil, uint64(i))
			tsend(t, m, a, m.addr[0][1], 42, buf, nil)
		}
		half := n / 2
		for i := range half {
			send(i)
		}
		bufs := make([][]byte, n)
		for i := range n {
			bufs[i], _ = tpost(t, b, 8, fi.AddrUnspec, 42, 0, "same tag")
		}
		for i := half; i < n; i++ {
			send(i)
		}
		for i, e := range m.completions(t, b, n) {
			require.Equal(t, uint64(42), e.c.Tag)
			require.Equal(t, uint64(i), binary.LittleEndian.Uint64(bufs[i]), "order of same-tag messages")
		}
		m.completions(t, a, n)
	})

	s.run(t, "directed-recv", func(t *testing.T) {
		// FI_DIRECTED_RECV: a receive posted for source A does not match a
		// message from B with the same tag.
		m := s.rdm(t, rdmOpts{caps: fi.CapTagged | fi.CapDirectedRecv}, "receiver", "A", "B")
		r := m.peers[0]
		if r.info.Caps&fi.CapDirectedRecv == 0 {
			t.Skipf("provider's Info lacks FI_DIRECTED_RECV: %v", r.info.Caps)
		}
		for i := 1; i <= 2; i++ {
			m.insertPeer(t, 0, i)
			m.insertPeer(t, i, 0)
		}
		bufA, ctxA := tpost(t, r, 16, m.addr[0][1], 5, 0, "from A")
		tsend(t, m, m.peers[2], m.addr[2][0], 5, []byte("B"), nil)
		m.settle(t, 100*time.Millisecond)
		require.Empty(t, r.in, "a receive directed at A completed with B's message")
		tsend(t, m, m.peers[1], m.addr[1][0], 5, []byte("A"), nil)
		rc := m.completion(t, r)
		requireTRecv(t, rc.c, ctxA, 1, 5, trecvFlags)
		requireSource(t, r, rc, m.addr[0][1])
		require.Equal(t, "A", string(bufA[:1]))
		bufB, ctxB := tpost(t, r, 16, fi.AddrUnspec, 5, 0, "from anyone")
		rc = m.completion(t, r)
		requireTRecv(t, rc.c, ctxB, 1, 5, trecvFlags)
		requireSource(t, r, rc, m.addr[0][2])
		require.Equal(t, "B", string(bufB[:1]))
		m.completion(t, m.peers[1])
		m.completion(t, m.peers[2])
	})
}
