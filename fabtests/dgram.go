package fabtests

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file is the dgram group and the helpers it shares with the
// multicast group: unreliable datagram endpoints (FI_EP_DGRAM) opened the
// way rdmconn.go opens RDM ones, polled with the same mesh. The suite
// assumes no ordering and no reliability of datagrams, only that a
// datagram sent on loopback to a posted receive arrives: every test posts
// its receives before the sends they expect, and never retries.

// dgramInfo returns the provider's first FI_EP_DGRAM Info offering caps
// (FI_MSG when zero) on the suite's node, skipping when there is none.
func (s *suite) dgramInfo(t testing.TB, caps fi.Caps) *fi.Info {
	t.Helper()
	h := s.hints(fi.EPTypeDgram)
	if caps == 0 {
		caps = fi.CapMsg
	}
	h.Caps |= caps
	infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, "", fi.FlagSource, h)
	skipIfAbsent(t, err, "datagram (FI_EP_DGRAM) endpoints with "+caps.String())
	require.NotEmpty(t, infos)
	return infos[0]
}

// dgramOpts selects what datagram endpoints are opened with.
type dgramOpts struct {
	// eq opens an event queue and binds it (multicast joins need one).
	eq bool
	// counters opens and binds a send and a receive counter.
	counters bool
	// wait is the wait object of the CQ and the counters (fi.WaitNone
	// when zero).
	wait fi.WaitObj
}

// openDgram opens an endpoint for info with its own fabric, domain,
// address vector and completion queue (format data), and with an event
// queue and counters as o says, binds and enables it and reads its name.
// role names it in failure messages.
func (s *suite) openDgram(t testing.TB, role string, info *fi.Info, o dgramOpts) *rdmPeer {
	t.Helper()
	x := &rdmPeer{peer: &peer{role: role, info: info}}
	x.mrLocal = info.DomainAttr.MRMode&fi.MRModeLocal != 0
	var err error
	x.fabric, err = fi.OpenFabric(info)
	require.NoError(t, err, "%s: open fabric", role)
	keep(t, x.fabric)
	if o.eq {
		x.eq, err = eq.OpenEQ(x.fabric, &eq.Attr{})
		skipIfAbsent(t, err, "event queues")
		keep(t, x.eq)
	}
	x.domain, err = x.fabric.OpenDomain(info)
	require.NoError(t, err, "%s: open domain", role)
	keep(t, x.domain)
	typ := info.DomainAttr.AVType
	if typ == fi.AVUnspec {
		typ = fi.AVMap
	}
	x.av, err = fi.OpenAV(x.domain, &fi.AVAttr{Type: typ})
	skipIfAbsent(t, err, "address vectors of type "+typ.String())
	keep(t, x.av)
	x.cq, err = eq.OpenCQ(x.domain, &eq.CQAttr{Format: eq.FormatData, WaitObj: o.wait})
	skipIfAbsent(t, err, "completion queues of format data")
	keep(t, x.cq)
	x.ep, err = ep.Open(x.domain, info)
	skipIfAbsent(t, err, "datagram endpoints")
	keep(t, x.ep)
	n, ok := x.ep.(ep.Namer)
	if !ok {
		t.Skipf("provider's endpoint %T has no address (ep.Namer)", x.ep)
	}
	if o.eq {
		require.NoError(t, x.ep.Bind(x.eq, 0), "%s: bind eq", role)
	}
	require.NoError(t, x.ep.Bind(x.av, 0), "%s: bind av", role)
	require.NoError(t, x.ep.Bind(x.cq, fi.FlagSend|fi.FlagRecv), "%s: bind cq", role)
	if o.counters {
		x.bindCounters(t, o.wait)
	}
	require.NoError(t, x.ep.Enable(), "%s: enable", role)
	x.name = name(t, n)
	return x
}

// dgram opens one datagram endpoint per role for info (see openDgram).
// No address is inserted yet.
func (s *suite) dgram(t testing.TB, info *fi.Info, o dgramOpts, roles ...string) *mesh {
	t.Helper()
	m := &mesh{s: s, addr: make([][]fi.Addr, len(roles))}
	for i, r := range roles {
		m.peers = append(m.peers, s.openDgram(t, r, info, o))
		m.addr[i] = slices.Repeat([]fi.Addr{fi.AddrUnspec}, len(roles))
	}
	return m
}

// dgramPair is dgram for FI_MSG endpoints "a" and "b", each in the
// other's AV.
func (s *suite) dgramPair(t testing.TB) *mesh {
	t.Helper()
	m := s.dgram(t, s.dgramInfo(t, 0), dgramOpts{}, "a", "b")
	m.connect(t)
	return m
}

// dgramSizes are the sizes of the sizes test: from an empty datagram to
// the provider's maximum message size.
func dgramSizes(max int) []int {
	var out []int
	for _, n := range []int{0, 1, 64, 1 << 10, 4 << 10, 16 << 10, 32 << 10} {
		if n < max {
			out = append(out, n)
		}
	}
	return append(out, max)
}

// testDgram is the dgram group: messages (fi_msg(3)) over unreliable
// datagram endpoints (FI_EP_DGRAM, fi_endpoint(3)), addressed through
// address vectors.
func testDgram(t *testing.T, s *suite) {
	s.run2(t, "send-recv", func(t *testing.T) {
		m := s.dgramPair(t)
		for _, d := range [][2]int{{0, 1}, {1, 0}} {
			rdmSendForms(t, m, d[0], d[1])
		}
		for _, x := range m.peers {
			x.requireCQEmpty(t)
		}
	}, func(t *testing.T) {
		m := s.dgram(t, s.dgramInfo(t, 0), dgramOpts{}, "parent")
		x := m.peers[0]
		l := s.spawn(t, m.poll)
		child := exchangeNames(t, l, x)
		sizes := []int{100, x.info.EPAttr.MaxMsgSize}
		for i, n := range sizes {
			l.recv(t, "posted")
			rdmSendTo(t, m, x, child, pattern(n, byte(i)))
			l.recv(t, "received")
		}
		l.recv(t, "posted")
		data := pattern(min(x.info.TxAttr.InjectSize, 24), 50)
		m.post(t, "inject", func() error { return x.msg(t).Inject(data, child) })
		l.recv(t, "received")
		for i, n := range sizes {
			rdmRecvFrom(t, m, x, child, n, func() { l.send(t, "posted", nil) }, pattern(n, byte(100+i)))
		}
		x.requireCQEmpty(t)
		l.finish(t)
	}, func(t *testing.T, l *link) {
		m := s.dgram(t, s.dgramInfo(t, 0), dgramOpts{}, "child")
		x := m.peers[0]
		l.poll = m.poll
		parent := exchangeNames(t, l, x)
		sizes := []int{100, x.info.EPAttr.MaxMsgSize}
		for i, n := range sizes {
			rdmRecvFrom(t, m, x, parent, n, func() { l.send(t, "posted", nil) }, pattern(n, byte(i)))
			l.send(t, "received", nil)
		}
		n := min(x.info.TxAttr.InjectSize, 24)
		rdmRecvFrom(t, m, x, parent, n+8, func() { l.send(t, "posted", nil) }, pattern(n, 50))
		l.send(t, "received", nil)
		for i, n := range sizes {
			l.recv(t, "posted")
			rdmSendTo(t, m, x, parent, pattern(n, byte(100+i)))
		}
		x.requireCQEmpty(t)
	})

	s.run(t, "sizes", func(t *testing.T) {
		m := s.dgramPair(t)
		for _, n := range dgramSizes(m.peers[0].info.EPAttr.MaxMsgSize) {
			t.Run(sizeName(n), func(t *testing.T) {
				for i, d := range [][2]int{{0, 1}, {1, 0}} {
					from, to := m.peers[d[0]], m.peers[d[1]]
					rbuf, rctx := make([]byte, n), &opCtx{"recv"}
					require.NoError(t, to.msg(t).Recv(rbuf, to.desc(t, rbuf), fi.AddrUnspec, rctx))
					data := pattern(n, byte(i+n))
					desc, sctx := from.desc(t, data), &opCtx{"send"}
					m.post(t, "send", func() error { return from.msg(t).Send(data, desc, m.addr[d[0]][d[1]], sctx) })
					rc := m.completion(t, to)
					requireRecv(t, rc.c, rctx, n, recvFlags)
					requireSource(t, to, rc, m.addr[d[1]][d[0]])
					require.True(t, bytes.Equal(data, rbuf), "%s received different bytes", to.role)
					requireSend(t, m.completion(t, from).c, sctx)
				}
			})
		}
	})

	s.run(t, "too-large", func(t *testing.T) {
		// A send above the maximum message size, and an inject above the
		// inject size, are refused at post (a datagram is never split);
		// nothing of them reaches the receiver.
		m := s.dgramPair(t)
		a, b := m.peers[0], m.peers[1]
		am := a.msg(t)
		rbuf, rctx := make([]byte, a.info.EPAttr.MaxMsgSize+16), &opCtx{"recv"}
		require.NoError(t, b.msg(t).Recv(rbuf, b.desc(t, rbuf), fi.AddrUnspec, rctx))
		big := pattern(a.info.EPAttr.MaxMsgSize+1, 9)
		err := am.Send(big, a.desc(t, big), m.addr[0][1], &opCtx{"too large"})
		requireTooLarge(t, err, "send of max_msg_size+1 = %d bytes", len(big))
		inj := pattern(a.info.TxAttr.InjectSize+1, 10)
		err = am.Inject(inj, m.addr[0][1])
		requireTooLarge(t, err, "inject of inject_size+1 = %d bytes", len(inj))
		a.requireCQEmpty(t)

		data := []byte("after the refused sends")
		m.post(t, "send", func() error { return am.Send(data, a.desc(t, data), m.addr[0][1], nil) })
		rc := m.completion(t, b)
		requireRecv(t, rc.c, rctx, len(data), recvFlags)
		require.Equal(t, data, rbuf[:len(data)], "the receive got the next valid datagram")
		m.completion(t, a)
	})

	s.run(t, "truncate", func(t *testing.T) {
		m := s.dgramPair(t)
		a, b := m.peers[0], m.peers[1]
		small, rctx := make([]byte, 8), &opCtx{"small recv"}
		require.NoError(t, b.msg(t).Recv(small, b.desc(t, small), fi.AddrUnspec, rctx))
		data := pattern(20, 5)
		desc := a.desc(t, data)
		m.post(t, "send", func() error { return a.msg(t).Send(data, desc, m.addr[0][1], nil) })
		e := m.cqError(t, b)
		require.Equal(t, fi.ETRUNC, e.Err, "error entry: %v", e)
		require.ErrorIs(t, e, fi.ETRUNC)
		require.Same(t, rctx, e.Context)
		require.Equal(t, len(data)-len(small), e.OLen, "OLen is the excess")
		require.Equal(t, len(small), e.Len, "Len is what was placed")
		require.Equal(t, data[:len(small)], small, "the part that fits is placed")
		m.completion(t, a)
		rdmSendForms(t, m, 0, 1) // the endpoint carries on
	})

	s.run(t, "source", func(t *testing.T) {
		// FI_SOURCE (fi_cq_readfrom): the sender's fi.Addr in the
		// receiver's AV, fi.AddrUnspec for a sender not in it.
		info := s.dgramInfo(t, fi.CapMsg|fi.CapSource)
		if info.Caps&fi.CapSource == 0 {
			t.Skipf("provider's Info lacks FI_SOURCE: %v", info.Caps)
		}
		m := s.dgram(t, info, dgramOpts{}, "receiver", "known", "stranger")
		m.insertPeer(t, 0, 1)
		m.insertPeer(t, 1, 0)
		m.insertPeer(t, 2, 0)
		r := m.peers[0]
		bufs := [2][]byte{make([]byte, 16), make([]byte, 16)}
		for i := range bufs {
			require.NoError(t, r.msg(t).Recv(bufs[i], r.desc(t, bufs[i]), fi.AddrUnspec, nil))
		}
		for i := 1; i <= 2; i++ {
			x, data := m.peers[i], []byte{byte(i)}
			desc := x.desc(t, data)
			m.post(t, x.role+" send", func() error { return x.msg(t).Send(data, desc, m.addr[i][0], nil) })
			m.completion(t, x)
		}
		for i, e := range m.completions(t, r, 2) {
			sender := int(bufs[i][0])
			require.Contains(t, []int{1, 2}, sender, "payload names the sender")
			require.Equal(t, m.addr[0][sender], e.src, "source of %s's datagram", m.peers[sender].role)
		}
	})
}

// requireTooLarge requires err to refuse an oversized datagram with
// fi.EMSGSIZE or fi.EINVAL.
func requireTooLarge(t testing.TB, err error, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	require.Error(t, err, what)
	if c := fi.Code(err); c != fi.EMSGSIZE && c != fi.EINVAL {
		t.Fatalf("%s: got %v (%s), want fi.EMSGSIZE or fi.EINVAL", what, err, c.Name())
	}
}
