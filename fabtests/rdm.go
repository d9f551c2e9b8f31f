package fabtests

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// testRDM is the rdm group: messages (fi_msg(3)) over reliable
// unconnected endpoints (FI_EP_RDM), addressed through address vectors
// (fi_av(3)).
func testRDM(t *testing.T, s *suite) {
	s.run2(t, "send-recv", func(t *testing.T) {
		for _, typ := range []fi.AVType{fi.AVMap, fi.AVTable} {
			t.Run(typ.String(), func(t *testing.T) {
				m := s.rdmPair(t, rdmOpts{av: typ})
				if typ == fi.AVTable {
					require.Equal(t, fi.Addr(0), m.addr[0][1], "FI_AV_TABLE: the first address inserted is index 0")
				}
				for _, d := range [][2]int{{0, 1}, {1, 0}} {
					rdmSendForms(t, m, d[0], d[1])
				}
				for _, x := range m.peers {
					x.requireCQEmpty(t)
				}
			})
		}
	}, func(t *testing.T) {
		m := s.rdm(t, rdmOpts{}, "parent")
		x := m.peers[0]
		l := s.spawn(t, m.poll)
		child := exchangeNames(t, l, x)
		for i, n := range procSizes(x) {
			l.recv(t, "posted")
			rdmSendTo(t, m, x, child, pattern(n, byte(i)))
			l.recv(t, "received")
		}
		for i, n := range procSizes(x) {
			rdmRecvFrom(t, m, x, child, n, func() { l.send(t, "posted", nil) }, pattern(n, byte(100+i)))
		}
		l.finish(t)
	}, func(t *testing.T, l *link) {
		m := s.rdm(t, rdmOpts{}, "child")
		x := m.peers[0]
		l.poll = m.poll
		parent := exchangeNames(t, l, x)
		for i, n := range procSizes(x) {
			rdmRecvFrom(t, m, x, parent, n, func() { l.send(t, "posted", nil) }, pattern(n, byte(i)))
			l.send(t, "received", nil)
		}
		for i, n := range procSizes(x) {
			l.recv(t, "posted")
			rdmSendTo(t, m, x, parent, pattern(n, byte(100+i)))
		}
	})

	s.run(t, "source", func(t *testing.T) {
		// FI_SOURCE: a receive reports its sender as the fi.Addr the
		// receiver's AV holds for it, and FI_ADDR_NOTAVAIL for a sender
		// not in the AV.
		m := s.rdm(t, rdmOpts{caps: fi.CapMsg | fi.CapSource}, "receiver", "known", "stranger")
		if m.peers[0].info.Caps&fi.CapSource == 0 {
			t.Skipf("provider's Info lacks FI_SOURCE: %v", m.peers[0].info.Caps)
		}
		m.insertPeer(t, 0, 1)
		m.insertPeer(t, 1, 0)
		m.insertPeer(t, 2, 0)
		r := m.peers[0]
		rm := r.msg(t)
		bufs := [2][]byte{make([]byte, 16), make([]byte, 16)}
		for i := range bufs {
			require.NoError(t, rm.Recv(bufs[i], r.desc(t, bufs[i]), fi.AddrUnspec, nil))
		}
		for i := 1; i <= 2; i++ {
			x, data := m.peers[i], []byte{byte(i)}
			desc := x.desc(t, data)
			m.post(t, x.role+" send", func() error { return x.msg(t).Send(data, desc, m.addr[i][0], nil) })
		}
		for i, e := range m.completions(t, r, 2) {
			sender := int(bufs[i][0])
			require.Contains(t, []int{1, 2}, sender, "payload names the sender")
			want := m.addr[0][sender] // fi.AddrUnspec (FI_ADDR_NOTAVAIL) for the stranger
			require.Equal(t, want, e.src, "source of %s's message", m.peers[sender].role)
		}
	})

	s.run(t, "order", func(t *testing.T) {
		m := s.rdmPair(t, rdmOpts{})
		a, b := m.peers[0], m.peers[1]
		if a.info.TxAttr.MsgOrder&fi.OrderSAS == 0 {
			t.Skipf("provider does not order sends after sends (FI_ORDER_SAS): %v", a.info.TxAttr.MsgOrder)
		}
		am, bm := a.msg(t), b.msg(t)
		n := min(a.info.TxAttr.Size, b.info.RxAttr.Size, 256)
		rbufs := make([][]byte, n)
		for i := range n {
			rbufs[i] = make([]byte, 64)
			require.NoError(t, bm.Recv(rbufs[i], b.desc(t, rbufs[i]), fi.AddrUnspec, nil))
		}
		for i := range n {
			buf := make([]byte, 8+i%50)
			binary.LittleEndian.PutUint64(buf, uint64(i))
			desc := a.desc(t, buf)
			m.post(t, "send", func() error { return am.Send(buf, desc, m.addr[0][1], nil) })
		}
		for i, e := range m.completions(t, b, n) {
			require.Equal(t, 8+i%50, e.c.Len, "length of message %d", i)
			require.Equal(t, uint64(i), binary.LittleEndian.Uint64(rbufs[i]), "message order")
		}
		m.completions(t, a, n)
	})

	s.run(t, "truncate", func(t *testing.T) {
		m := s.rdmPair(t, rdmOpts{})
		a, b := m.peers[0], m.peers[1]
		am, bm := a.msg(t), b.msg(t)
		small, rctx := make([]byte, 8), &opCtx{"small recv"}
		require.NoError(t, bm.Recv(small, b.desc(t, small), fi.AddrUnspec, rctx))
		data := pattern(20, 5)
		desc := a.desc(t, data)
		m.post(t, "send", func() error { return am.Send(data, desc, m.addr[0][1], nil) })
		e := m.cqError(t, b)
		require.Equal(t, fi.ETRUNC, e.Err, "error entry: %v", e)
		require.ErrorIs(t, e, fi.ETRUNC)
		require.Same(t, rctx, e.Context)
		require.Equal(t, len(data)-len(small), e.OLen, "OLen is the excess")
		require.Equal(t, len(small), e.Len, "Len is what was placed")
		require.Equal(t, data[:len(small)], small, "the part that fits is placed")
		m.take(t, a, 1)
		rdmSendForms(t, m, 0, 1) // the endpoint carries on
	})

	s.run(t, "sizes", func(t *testing.T) {
		m := s.rdmPair(t, rdmOpts{})
		for _, n := range []int{0, 1, 64, 4 << 10, 64 << 10, 1 << 20} {
			t.Run(sizeName(n), func(t *testing.T) {
				if mx := m.peers[0].info.EPAttr.MaxMsgSize; n > mx {
					t.Skipf("provider's max message size is %d", mx)
				}
				for i, d := range [][2]int{{0, 1}, {1, 0}} {
					from, to := m.peers[d[0]], m.peers[d[1]]
					rbuf, rctx := make([]byte, n), &opCtx{"recv"}
					require.NoError(t, to.msg(t).Recv(rbuf, to.desc(t, rbuf), fi.AddrUnspec, rctx))
					data := pattern(n, byte(i+n))
					desc, sctx := from.desc(t, data), &opCtx{"send"}
					m.post(t, "send", func() error { return from.msg(t).Send(data, desc, m.addr[d[0]][d[1]], sctx) })
					rc := m.completion(t, to)
					requireRecv(t, rc.c, rctx, n, recvFlags)
					require.True(t, bytes.Equal(data, rbuf), "%s received different bytes", to.role)
					requireSend(t, m.completion(t, from).c, sctx)
				}
			})
		}
	})

	s.run(t, "eagain", func(t *testing.T) {
		// With no receive posted and no CQ read, sends fill the queues and
		// then return fi.EAGAIN, without blocking; every message sent
		// before arrives, in order where FI_ORDER_SAS, once receives are
		// posted.
		m := s.rdmPair(t, rdmOpts{})
		a, b := m.peers[0], m.peers[1]
		m.warm(t, 0, 1)
		am, bm := a.msg(t), b.msg(t)
		dest := m.addr[0][1]
		const size, bound = 16 << 10, 8192
		type result struct {
			sent [][]byte
			mrs  []fi.MR
			err  error
		}
		done := make(chan result, 1)
		go func() {
			var r result
			for range bound {
				buf := make([]byte, size)
				binary.LittleEndian.PutUint64(buf, uint64(len(r.sent)))
				var desc any
				if a.mrLocal {
					mr, err := fi.RegisterMR(a.domain, &fi.MRAttr{Buf: buf, Access: fi.AccessSend}, 0)
					if r.err = err; err != nil {
						break
					}
					r.mrs, desc = append(r.mrs, mr), mr.Desc()
				}
				if r.err = am.Send(buf, desc, dest, nil); r.err != nil {
					break
				}
				r.sent = append(r.sent, buf)
			}
			done <- r
		}()
		var r result
		select {
		case r = <-done:
		case <-s.ctx(t).Done():
			t.Fatal("Send blocked: data-transfer calls must return fi.EAGAIN instead")
		}
		for _, mr := range r.mrs {
			keep(t, mr)
		}
		require.ErrorIs(t, r.err, fi.EAGAIN, "after %d sends of %d bytes with nothing received", len(r.sent), size)
		require.NotEmpty(t, r.sent, "no send accepted at all")
		t.Logf("%d sends of %d bytes accepted before fi.EAGAIN", len(r.sent), size)

		ordered := a.info.TxAttr.MsgOrder&fi.OrderSAS != 0
		rbufs := make([][]byte, len(r.sent))
		seen := make([]bool, len(r.sent))
		posted, got := 0, 0
		window := max(1, b.info.RxAttr.Size)
		ctx := s.ctx(t)
		for got < len(r.sent) {
			for posted < len(r.sent) && posted-got < window {
				rbufs[posted] = make([]byte, size)
				err := bm.Recv(rbufs[posted], b.desc(t, rbufs[posted]), fi.AddrUnspec, nil)
				if errors.Is(err, fi.EAGAIN) {
					break
				}
				require.NoError(t, err)
				posted++
			}
			m.poll(t)
			for _, e := range b.in {
				require.Nil(t, e.err, "receive error entry")
				i := int(binary.LittleEndian.Uint64(rbufs[got]))
				if ordered {
					require.Equal(t, got, i, "message order")
				}
				require.False(t, seen[i], "message %d received twice", i)
				seen[i] = true
				require.Equal(t, r.sent[i], rbufs[got])
				got++
			}
			b.in = b.in[:0]
			require.NoError(t, ctx.Err(), "received %d of %d messages", got, len(r.sent))
		}
		m.completions(t, a, len(r.sent))
		rdmSendForms(t, m, 0, 1)
	})

	s.run(t, "many-peers", func(t *testing.T) {
		// Three senders, one receiver: every message arrives, and each
		// sender's messages in its order where FI_ORDER_SAS.
		m := s.rdm(t, rdmOpts{}, "receiver", "s1", "s2", "s3")
		for i := 1; i <= 3; i++ {
			m.insertPeer(t, 0, i)
			m.insertPeer(t, i, 0)
		}
		r := m.peers[0]
		rm := r.msg(t)
		k := min(32, r.info.RxAttr.Size/3)
		require.Positive(t, k, "receive queue size %d", r.info.RxAttr.Size)
		rbufs := make([][]byte, 3*k)
		for i := range rbufs {
			rbufs[i] = make([]byte, 16)
			require.NoError(t, rm.Recv(rbufs[i], r.desc(t, rbufs[i]), fi.AddrUnspec, i))
		}
		for seq := range k {
			for i := 1; i <= 3; i++ {
				x := m.peers[i]
				buf := make([]byte, 16)
				buf[0] = byte(i)
				binary.LittleEndian.PutUint64(buf[8:], uint64(seq))
				desc := x.desc(t, buf)
				m.post(t, x.role+" send", func() error { return x.msg(t).Send(buf, desc, m.addr[i][0], nil) })
			}
		}
		next := [4]uint64{}
		count := [4]int{}
		ordered := r.info.TxAttr.MsgOrder&fi.OrderSAS != 0
		// Completions may come in any order (completion order
		// FI_ORDER_NONE): receives are told apart by their context, and
		// order is checked in the order the receives were posted.
		byRecv := make([]*rdmEntry, len(rbufs))
		for _, e := range m.completions(t, r, 3*k) {
			j, ok := e.c.Context.(int)
			require.True(t, ok && j >= 0 && j < len(rbufs) && byRecv[j] == nil, "receive completion with context %v", e.c.Context)
			byRecv[j] = &e
		}
		for j, e := range byRecv {
			i := int(rbufs[j][0])
			require.Contains(t, []int{1, 2, 3}, i, "payload names the sender")
			requireSource(t, r, *e, m.addr[0][i])
			seq := binary.LittleEndian.Uint64(rbufs[j][8:])
			if ordered {
				require.Equal(t, next[i], seq, "order of %s's messages", m.peers[i].role)
			}
			next[i] = seq + 1
			count[i]++
		}
		require.Equal(t, [4]int{0, k, k, k}, count, "messages received per sender")
		for i := 1; i <= 3; i++ {
			m.completions(t, m.peers[i], k)
		}
	})

	s.run(t, "dest-not-yet", func(t *testing.T) {
		rdmDestNotYet(t, s)
	})

	s.run2(t, "peer-gone", func(t *testing.T) {
		// In one process: the peer's endpoint, AV, CQ, domain and fabric
		// close while the survivor has sends to it in flight.
		m := s.rdm(t, rdmOpts{}, "survivor", "other", "doomed")
		m.connect(t)
		x := m.peers[0]
		sent := rdmFlood(t, m, x, m.addr[0][2])
		m.peers[2].closeAll(t)
		m.peers = m.peers[:2]
		rdmSurvive(t, m, m.addr[0][2], sent)
	}, func(t *testing.T) {
		// Two processes: the peer process is killed (SIGKILL) while it
		// and the survivor have sends to each other in flight.
		m := s.rdm(t, rdmOpts{}, "survivor", "other")
		m.connect(t)
		x := m.peers[0]
		l := s.spawn(t, m.poll)
		doomed := exchangeNames(t, l, x)
		l.recv(t, "busy")
		sent := rdmFlood(t, m, x, doomed)
		l.kill(t)
		t.Logf("peer process killed with %d of the survivor's sends to it posted", sent)
		rdmSurvive(t, m, doomed, sent)
	}, func(t *testing.T, l *link) {
		m := s.rdm(t, rdmOpts{}, "doomed")
		x := m.peers[0]
		l.poll = m.poll
		survivor := exchangeNames(t, l, x)
		sent := rdmFlood(t, m, x, survivor)
		t.Logf("%d sends to the survivor posted", sent)
		l.send(t, "busy", nil)
		// The harness now polls until the parent kills this process.
	})
}

// exchangeNames sends x's name over l, inserts the other process's name
// into x's AV and returns its fi.Addr.
func exchangeNames(t testing.TB, l *link, x *rdmPeer) fi.Addr {
	t.Helper()
	l.send(t, "name", x.name)
	return x.insert(t, l.recv(t, "name"))
}

// procSizes are the message sizes of the two-process tests: a small one
// and a large one, within the provider's maximum.
func procSizes(x *rdmPeer) []int {
	return []int{100, min(256<<10, x.info.EPAttr.MaxMsgSize)}
}

// rdmSendTo sends data from x to dest and waits for its completion.
func rdmSendTo(t testing.TB, m *mesh, x *rdmPeer, dest fi.Addr, data []byte) {
	t.Helper()
	desc, sctx := x.desc(t, data), &opCtx{"send"}
	m.post(t, x.role+" send", func() error { return x.msg(t).Send(data, desc, dest, sctx) })
	requireSend(t, m.completion(t, x).c, sctx)
}

// rdmRecvFrom posts a receive of n bytes at x, calls posted, and waits
// for want from src.
func rdmRecvFrom(t testing.TB, m *mesh, x *rdmPeer, src fi.Addr, n int, posted func(), want []byte) {
	t.Helper()
	rbuf, rctx := make([]byte, n), &opCtx{"recv"}
	require.NoError(t, x.msg(t).Recv(rbuf, x.desc(t, rbuf), fi.AddrUnspec, rctx))
	posted()
	rc := m.completion(t, x)
	requireRecv(t, rc.c, rctx, len(want), recvFlags)
	requireSource(t, x, rc, src)
	require.True(t, bytes.Equal(want, rbuf[:len(want)]), "%s received different bytes", x.role)
}

// rdmSendForms sends from peer i to peer j with Send, Inject and
// SendData (where the provider carries CQ data) and checks every
// completion's context, flags, length, data and source.
func rdmSendForms(t testing.TB, m *mesh, i, j int) {
	t.Helper()
	from, to := m.peers[i], m.peers[j]
	dest, src := m.addr[i][j], m.addr[j][i]
	fm, tm := from.msg(t), to.msg(t)
	recv := func(n int) ([]byte, *opCtx) {
		rbuf, rctx := make([]byte, n+8), &opCtx{"recv"}
		require.NoError(t, tm.Recv(rbuf, to.desc(t, rbuf), fi.AddrUnspec, rctx))
		return rbuf, rctx
	}
	check := func(rbuf []byte, rctx *opCtx, data []byte, flags fi.Flags) eq.Completion {
		rc := m.completion(t, to)
		requireRecv(t, rc.c, rctx, len(data), flags)
		requireSource(t, to, rc, src)
		require.Equal(t, data, rbuf[:len(data)], "%s received", to.role)
		return rc.c
	}

	rbuf, rctx := recv(37)
	data := pattern(37, byte(i))
	desc, sctx := from.desc(t, data), &opCtx{"send"}
	m.post(t, "send", func() error { return fm.Send(data, desc, dest, sctx) })
	check(rbuf, rctx, data, recvFlags)
	requireSend(t, m.completion(t, from).c, sctx)

	if n := min(from.info.TxAttr.InjectSize, 24); n > 0 {
		rbuf, rctx := recv(n)
		buf := pattern(n, byte(i+1))
		want := bytes.Clone(buf)
		m.post(t, "inject", func() error { return fm.Inject(buf, dest) })
		clear(buf) // Inject's buffer is the caller's again at once.
		check(rbuf, rctx, want, recvFlags)
	}

	if from.info.DomainAttr.CQDataSize > 0 {
		v := cqData(t, from.peer, 0x0123456789abcdef+uint64(i))
		rbuf, rctx := recv(20)
		data := pattern(20, byte(i+2))
		desc, sctx := from.desc(t, data), &opCtx{"senddata"}
		m.post(t, "senddata", func() error { return fm.SendData(data, desc, v, dest, sctx) })
		require.Equal(t, v, check(rbuf, rctx, data, recvFlags|fi.FlagRemoteCQData).Data, "remote CQ data")
		requireSend(t, m.completion(t, from).c, sctx)
	}
	from.requireCQEmpty(t) // Inject generates no completion.
}

// rdmFlood posts up to 8 large sends (1 MiB or the provider's maximum)
// from x to dest, for which no receive is posted, stopping at the first
// fi.EAGAIN, and returns how many were posted.
func rdmFlood(t testing.TB, m *mesh, x *rdmPeer, dest fi.Addr) int {
	t.Helper()
	size := min(1<<20, x.info.EPAttr.MaxMsgSize)
	n := min(8, x.info.TxAttr.Size)
	for i := range n {
		buf := pattern(size, 0xdd)
		err := x.msg(t).Send(buf, x.desc(t, buf), dest, &opCtx{"flood"})
		if errors.Is(err, fi.EAGAIN) {
			return i
		}
		require.NoError(t, err, "%s: send %d of %d bytes", x.role, i, size)
		m.poll(t)
	}
	return n
}

// rdmSurvive checks peers[0] (the survivor) of m after the peer at dead
// went away with sent of its sends in flight: each of them completes,
// successfully or as an error entry with a code, within the timeout; a
// new send to the dead peer fails cleanly or completes; and the survivor
// goes on exchanging messages with peers[1]. Messages the dead peer sent
// earlier may still be delivered, but only whole.
func rdmSurvive(t testing.TB, m *mesh, dead fi.Addr, sent int) {
	t.Helper()
	x := m.peers[0]
	var ok, failed int
	for _, e := range m.take(t, x, sent) {
		if e.err != nil {
			requireCoded(t, e.err)
			failed++
			continue
		}
		require.Equal(t, sendFlags, e.c.Flags, "send completion's flags")
		ok++
	}
	t.Logf("in-flight sends to the lost peer: %d completed, %d error entries", ok, failed)

	// A new send to the lost peer: refused, completed (either way), or
	// fi.EAGAIN for as long as the provider waits for an endpoint at
	// that address; the suite only requires that it does not block.
	data := []byte("after the peer went away")
	desc := x.desc(t, data)
	bound := min(m.s.cfg.Timeout/4, 2*time.Second)
	for end := time.Now().Add(bound); ; {
		err := x.msg(t).Send(data, desc, dead, &opCtx{"late"})
		if err == nil {
			e := m.take(t, x, 1)[0]
			if e.err != nil {
				requireCoded(t, e.err)
			}
			t.Logf("a new send to the lost peer: posted, then %v", entryString(e))
			break
		}
		if !errors.Is(err, fi.EAGAIN) {
			requireCoded(t, err)
			t.Logf("a new send to the lost peer: refused with %v", err)
			break
		}
		if time.Now().After(end) {
			t.Logf("a new send to the lost peer: fi.EAGAIN for %v", bound)
			break
		}
		m.poll(t)
		runtime.Gosched()
	}

	// Exchanges with the other peer: the survivor's receives may first
	// match messages the lost peer sent before it went (they are
	// pattern(size, 0xdd)); those must arrive whole or as error entries.
	other := m.peers[1]
	obuf := make([]byte, 64)
	require.NoError(t, other.msg(t).Recv(obuf, other.desc(t, obuf), fi.AddrUnspec, nil))
	rdmSendTo(t, m, x, m.addr[0][1], []byte("to other"))
	rc := m.completion(t, other)
	require.Equal(t, "to other", string(obuf[:rc.c.Len]))

	size := min(1<<20, x.info.EPAttr.MaxMsgSize)
	want := []byte("from other")
	wdesc, wctx := other.desc(t, want), &opCtx{"from other"}
	m.post(t, "send from other", func() error { return other.msg(t).Send(want, wdesc, m.addr[1][0], wctx) })
	for {
		rbuf := make([]byte, size)
		require.NoError(t, x.msg(t).Recv(rbuf, x.desc(t, rbuf), fi.AddrUnspec, nil))
		e := m.take(t, x, 1)[0]
		if e.err != nil {
			requireCoded(t, e.err)
			continue
		}
		if e.c.Len == len(want) && bytes.Equal(want, rbuf[:len(want)]) {
			break
		}
		require.Equal(t, size, e.c.Len, "a message from the lost peer is delivered whole or not at all")
		require.True(t, bytes.Equal(pattern(size, 0xdd), rbuf), "a message from the lost peer arrived corrupted")
	}
	requireSend(t, m.completion(t, other).c, wctx)
}

// entryString describes a CQ entry for logs.
func entryString(e rdmEntry) string {
	if e.err != nil {
		return "error entry " + e.err.Error()
	}
	return "completion " + e.c.Flags.String()
}

// closeAll closes x's endpoint, CQ, AV, domain and fabric, in that order.
func (x *rdmPeer) closeAll(t testing.TB) {
	t.Helper()
	for _, f := range []fi.Fid{x.ep, x.cq, x.av, x.domain, x.fabric} {
		require.NoError(t, f.Close(), "%s: close %T", x.role, f)
	}
}

// rdmDestNotYet inserts the name of an endpoint that does not exist (it
// was closed) and sends to it. Nothing may block or hang: the send is
// refused with a coded error, returns fi.EAGAIN until an endpoint opens
// at that address (hints src_addr) and then goes through, completes as an error
// entry, or stays pending until the endpoint exists and then arrives. A
// send that completes successfully must arrive once the endpoint exists.
// The test logs which behaviour the provider showed.
func rdmDestNotYet(t *testing.T, s *suite) {
	m := s.rdm(t, rdmOpts{}, "sender", "absent")
	x, g := m.peers[0], m.peers[1]
	addr := g.name
	g.closeAll(t)
	m.peers = m.peers[:1]
	dest := x.insert(t, addr) // allowed: AV inserts do not reach the peer

	data := pattern(64, 0x77)
	desc, sctx := x.desc(t, data), &opCtx{"send to nobody"}
	send := func() error { return x.msg(t).Send(data, desc, dest, sctx) }
	bound := min(s.cfg.Timeout/4, 2*time.Second)
	var err error
	for end := time.Now().Add(bound); ; {
		if err = send(); !errors.Is(err, fi.EAGAIN) || time.Now().After(end) {
			break
		}
		m.poll(t)
		runtime.Gosched()
	}
	again := errors.Is(err, fi.EAGAIN)
	var done *rdmEntry
	switch {
	case again:
		t.Logf("behaviour: Send returned fi.EAGAIN for %v while the destination did not exist", bound)
	case err != nil:
		requireCoded(t, err)
		t.Logf("behaviour: the send was refused at post with %v (%s)", err, fi.Code(err).Name())
		return
	default:
		m.settle(t, bound)
		if len(x.in) == 0 {
			t.Logf("behaviour: the send was still pending after %v", bound)
			break
		}
		e := m.take(t, x, 1)[0]
		if e.err != nil {
			requireCoded(t, e.err)
			require.Same(t, sctx, e.err.Context)
			t.Logf("behaviour: the send completed as an error entry: %v (%s)", e.err, e.err.Err.Name())
			return
		}
		requireSend(t, e.c, sctx)
		done = &e
		t.Log("behaviour: the send completed successfully before the destination existed")
	}

	h, err := s.openNamed(t, x.info.AddrFormat, addr)
	if err != nil {
		switch {
		case again:
			t.Logf("no endpoint can be opened at the absent address (%v): the send cannot be seen to go through", err)
		case done == nil:
			// The pending send must at least end when its endpoint
			// closes (fi_close cancels queued operations).
			require.NoError(t, x.ep.Close(), "close the sender with a send pending")
			e := m.take(t, x, 1)[0]
			require.NotNil(t, e.err, "a send pending at close completes as an error entry")
			require.Same(t, sctx, e.err.Context)
			t.Logf("no endpoint can be opened at the absent address (%v); the pending send ended at close with %v", err, e.err)
		default:
			t.Skipf("cannot create an endpoint with the absent name to check delivery: %v", err)
		}
		return
	}
	m.peers = append(m.peers, h)
	rbuf, rctx := make([]byte, 64), &opCtx{"recv"}
	require.NoError(t, h.msg(t).Recv(rbuf, h.desc(t, rbuf), fi.AddrUnspec, rctx))
	if again {
		m.post(t, "send once the destination exists", send)
	}
	requireRecv(t, m.completion(t, h).c, rctx, len(data), recvFlags)
	require.Equal(t, data, rbuf, "the message sent before its destination existed")
	if done == nil {
		requireSend(t, m.completion(t, x).c, sctx)
	}
	t.Log("behaviour: the message arrived once the destination existed")
}

// openNamed opens an RDM endpoint at the address addr, asked for as the
// source address in the hints (fi_getinfo(3) src_addr), and requires it
// to take that name. It returns GetInfo's error when the provider cannot.
func (s *suite) openNamed(t testing.TB, format fi.AddrFormat, addr []byte) (*rdmPeer, error) {
	t.Helper()
	h := s.hints(fi.EPTypeRDM)
	h.Caps |= fi.CapMsg
	h.AddrFormat, h.SrcAddr = format, addr
	infos, err := fi.GetInfo(s.ctx(t), "", "", 0, h)
	if err != nil {
		requireCoded(t, err)
		return nil, err
	}
	x := s.openRDM(t, "named", infos[0], rdmOpts{})
	require.Equal(t, string(addr), string(x.name), "the endpoint's name, asked for as the source address")
	return x, nil
}

// sizeName names a size subtest: "0B", "64B", "4KiB", "1MiB".
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
