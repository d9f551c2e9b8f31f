package fabtests

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// opCtx is an operation context; completions must return the very
// pointer that was posted.
type opCtx struct{ name string }

// msgOf returns x's message ability, skipping when the provider's Info or
// endpoint lacks it.
func msgOf(t testing.TB, x *peer) ep.Msg {
	t.Helper()
	if x.info.Caps&fi.CapMsg == 0 {
		t.Skipf("provider's Info lacks FI_MSG: %v", x.info.Caps)
	}
	m, ok := x.ep.(ep.Msg)
	if !ok {
		t.Skipf("provider's endpoint %T has no message ability (ep.Msg)", x.ep)
	}
	return m
}

// cqData returns v cut to the provider's remote CQ data size, skipping
// when it carries none.
func cqData(t testing.TB, x *peer, v uint64) uint64 {
	t.Helper()
	n := x.info.DomainAttr.CQDataSize
	if n <= 0 {
		t.Skip("provider carries no remote CQ data (cq_data_size 0)")
	}
	if n < 8 {
		v &= 1<<(8*n) - 1
	}
	return v
}

const (
	sendFlags = fi.FlagSend | fi.FlagMsg
	recvFlags = fi.FlagRecv | fi.FlagMsg
)

// requireRecv checks a receive completion.
func requireRecv(t testing.TB, c eq.Completion, ctx *opCtx, n int, flags fi.Flags) {
	t.Helper()
	require.Same(t, ctx, c.Context, "receive completion's context")
	require.Equal(t, flags, c.Flags, "receive completion's flags: %v", c.Flags)
	require.Equal(t, n, c.Len, "receive completion's length")
}

// requireSend checks a send completion.
func requireSend(t testing.TB, c eq.Completion, ctx *opCtx) {
	t.Helper()
	require.Same(t, ctx, c.Context, "send completion's context")
	require.Equal(t, sendFlags, c.Flags, "send completion's flags: %v", c.Flags)
}

// testMsg is the message group (fi_msg(3)) over a connected pair, with
// RMA (fi_rma(3)) where the provider offers it.
func testMsg(t *testing.T, s *suite) {
	s.run2(t, "send-recv", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		for i, d := range [][2]*peer{{p.client, p.server}, {p.server, p.client}} {
			from, to := d[0], d[1]
			fm, tm := msgOf(t, from), msgOf(t, to)
			rbuf := make([]byte, 64)
			rctx, sctx := &opCtx{"recv"}, &opCtx{"send"}
			require.NoError(t, tm.Recv(rbuf, to.desc(t, rbuf), fi.AddrUnspec, rctx))
			data := pattern(37, byte(i))
			desc := from.desc(t, data)
			p.post(t, s, "send", func() error { return fm.Send(data, desc, fi.AddrUnspec, sctx) })
			requireRecv(t, p.completion(t, s, to), rctx, len(data), recvFlags)
			require.Equal(t, data, rbuf[:len(data)], "%s received", to.role)
			requireSend(t, p.completion(t, s, from), sctx)
		}
		p.Close(t)
		p.client.requireCQEmpty(t)
		p.server.requireCQEmpty(t)
	}, func(t *testing.T) {
		// Sizes up to 1 MiB, from the peer process to the parent, then
		// back; the parent says each size.
		l, lk := s.listen2(t)
		srv := s.accept2(t, l, lk, epOpts{}, noData)
		p, sm := alone(srv), msgOf(t, srv)
		sizes := msgSizes(srv)
		lk.sendU64(t, "count", uint64(len(sizes)))
		for i, n := range sizes {
			rbuf, rctx := make([]byte, n), &opCtx{"recv"}
			require.NoError(t, sm.Recv(rbuf, srv.desc(t, rbuf), fi.AddrUnspec, rctx))
			lk.sendU64(t, "posted", uint64(n))
			requireRecv(t, p.completion(t, s, srv), rctx, n, recvFlags)
			require.True(t, bytes.Equal(pattern(n, byte(i)), rbuf), "server received different bytes (%d)", n)
		}
		for i, n := range sizes {
			lk.sendU64(t, "size", uint64(n))
			lk.recv(t, "posted")
			data := pattern(n, byte(100+i))
			desc, sctx := srv.desc(t, data), &opCtx{"send"}
			p.post(t, s, "send", func() error { return sm.Send(data, desc, fi.AddrUnspec, sctx) })
			requireSend(t, p.completion(t, s, srv), sctx)
		}
		lk.recv(t, "received")
		lk.finish(t)
		srv.requireCQEmpty(t)
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		s.connect2(t, lk, c, dest, noData)
		p, cm := alone(c), msgOf(t, c)
		count := int(lk.recvU64(t, "count"))
		for i := range count {
			n := int(lk.recvU64(t, "posted"))
			data := pattern(n, byte(i))
			desc, sctx := c.desc(t, data), &opCtx{"send"}
			p.post(t, s, "send", func() error { return cm.Send(data, desc, fi.AddrUnspec, sctx) })
			requireSend(t, p.completion(t, s, c), sctx)
		}
		for i := range count {
			n := int(lk.recvU64(t, "size"))
			rbuf, rctx := make([]byte, n), &opCtx{"recv"}
			require.NoError(t, cm.Recv(rbuf, c.desc(t, rbuf), fi.AddrUnspec, rctx))
			lk.send(t, "posted", nil)
			requireRecv(t, p.completion(t, s, c), rctx, n, recvFlags)
			require.True(t, bytes.Equal(pattern(n, byte(100+i)), rbuf), "client received different bytes (%d)", n)
		}
		lk.send(t, "received", nil)
		c.requireCQEmpty(t)
	})

	s.run(t, "before-connected", func(t *testing.T) {
		// fi_cm(3): no sends before FI_CONNECTED; receives may be posted
		// at any time.
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		cm := msgOf(t, c)
		msg := []byte("early")
		require.ErrorIs(t, cm.Send(msg, c.desc(t, msg), fi.AddrUnspec, nil), fi.ENOTCONN, "send before connect")
		crbuf, crctx := make([]byte, 16), &opCtx{"client recv"}
		require.NoError(t, cm.Recv(crbuf, c.desc(t, crbuf), fi.AddrUnspec, crctx), "recv before connect")
		require.NoError(t, c.cm.Connect(l.name, nil))
		require.ErrorIs(t, cm.Send(msg, c.desc(t, msg), fi.AddrUnspec, nil), fi.ENOTCONN, "send while connecting")

		srv := s.server(t, l, l.connReq(t, s), epOpts{})
		sm := msgOf(t, srv)
		require.ErrorIs(t, sm.Send(msg, srv.desc(t, msg), fi.AddrUnspec, nil), fi.ENOTCONN, "send before accept")
		srbuf, srctx := make([]byte, 16), &opCtx{"server recv"}
		require.NoError(t, sm.Recv(srbuf, srv.desc(t, srbuf), fi.AddrUnspec, srctx), "recv before accept")
		require.NoError(t, srv.cm.Accept(nil))
		p := &pair{l: l, client: c, server: srv}
		p.connected(t, s, nil)

		cmsg, smsg := []byte("from client"), []byte("from server")
		cdesc, sdesc := c.desc(t, cmsg), srv.desc(t, smsg)
		p.post(t, s, "client send", func() error { return cm.Send(cmsg, cdesc, fi.AddrUnspec, nil) })
		p.post(t, s, "server send", func() error { return sm.Send(smsg, sdesc, fi.AddrUnspec, nil) })
		byCtx := func(x *peer, want *opCtx, n int, buf, data []byte) {
			var got []eq.Completion
			for _, c := range p.completions(t, s, x, 2) {
				if c.Flags&fi.FlagRecv != 0 {
					got = append(got, c)
				}
			}
			require.Len(t, got, 1, "%s: one receive completion", x.role)
			requireRecv(t, got[0], want, n, recvFlags)
			require.Equal(t, data, buf[:n])
		}
		byCtx(srv, srctx, len(cmsg), srbuf, cmsg)
		byCtx(c, crctx, len(smsg), crbuf, smsg)
	})

	s.run2(t, "senddata-injectdata", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		v := cqData(t, p.client, 0x0123456789abcdef)
		bufs := [2][]byte{make([]byte, 32), make([]byte, 32)}
		rctx := [2]*opCtx{{"recv senddata"}, {"recv injectdata"}}
		for i := range bufs {
			require.NoError(t, sm.Recv(bufs[i], p.server.desc(t, bufs[i]), fi.AddrUnspec, rctx[i]))
		}
		a, b := []byte("with data"), []byte("injected")
		adesc, sctx := p.client.desc(t, a), &opCtx{"senddata"}
		p.post(t, s, "senddata", func() error { return cm.SendData(a, adesc, v, fi.AddrUnspec, sctx) })
		if p.client.info.TxAttr.InjectSize < len(b) {
			t.Skipf("provider's inject size %d is below %d", p.client.info.TxAttr.InjectSize, len(b))
		}
		p.post(t, s, "injectdata", func() error { return cm.InjectData(b, v-1, fi.AddrUnspec) })
		rc := p.completions(t, s, p.server, 2)
		requireRecv(t, rc[0], rctx[0], len(a), recvFlags|fi.FlagRemoteCQData)
		require.Equal(t, v, rc[0].Data, "remote CQ data")
		require.Equal(t, a, bufs[0][:len(a)])
		requireRecv(t, rc[1], rctx[1], len(b), recvFlags|fi.FlagRemoteCQData)
		require.Equal(t, v-1, rc[1].Data, "remote CQ data")
		require.Equal(t, b, bufs[1][:len(b)])
		requireSend(t, p.completion(t, s, p.client), sctx)
		p.Close(t)
		p.client.requireCQEmpty(t)
	}, func(t *testing.T) {
		// SendData and InjectData from the peer process, SendData back.
		l, lk := s.listen2(t)
		srv := s.accept2(t, l, lk, epOpts{}, noData)
		v := cqData(t, srv, 0x0123456789abcdef)
		p, sm := alone(srv), msgOf(t, srv)
		bufs := [2][]byte{make([]byte, 32), make([]byte, 32)}
		rctx := [2]*opCtx{{"recv senddata"}, {"recv injectdata"}}
		for i := range bufs {
			require.NoError(t, sm.Recv(bufs[i], srv.desc(t, bufs[i]), fi.AddrUnspec, rctx[i]))
		}
		lk.send(t, "posted", nil)
		sent := int(lk.recvU64(t, "sent"))
		for i, rc := range p.completions(t, s, srv, sent) {
			want := msgDataMsgs[i]
			requireRecv(t, rc, rctx[i], len(want), recvFlags|fi.FlagRemoteCQData)
			require.Equal(t, v-uint64(i), rc.Data, "remote CQ data")
			require.Equal(t, want, bufs[i][:len(want)])
		}
		lk.recv(t, "posted")
		data, sctx := []byte("data back"), &opCtx{"senddata"}
		desc := srv.desc(t, data)
		p.post(t, s, "senddata", func() error { return sm.SendData(data, desc, v+1, fi.AddrUnspec, sctx) })
		requireSend(t, p.completion(t, s, srv), sctx)
		lk.finish(t)
		srv.requireCQEmpty(t)
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		s.connect2(t, lk, c, dest, noData)
		v := cqData(t, c, 0x0123456789abcdef)
		p, cm := alone(c), msgOf(t, c)
		lk.recv(t, "posted")
		a, b := msgDataMsgs[0], bytes.Clone(msgDataMsgs[1])
		adesc, sctx := c.desc(t, a), &opCtx{"senddata"}
		p.post(t, s, "senddata", func() error { return cm.SendData(a, adesc, v, fi.AddrUnspec, sctx) })
		sent := 1
		if c.info.TxAttr.InjectSize >= len(b) {
			p.post(t, s, "injectdata", func() error { return cm.InjectData(b, v-1, fi.AddrUnspec) })
			sent++
		}
		lk.sendU64(t, "sent", uint64(sent))
		requireSend(t, p.completion(t, s, c), sctx)

		rbuf, rctx := make([]byte, 32), &opCtx{"recv senddata"}
		require.NoError(t, cm.Recv(rbuf, c.desc(t, rbuf), fi.AddrUnspec, rctx))
		lk.send(t, "posted", nil)
		rc := p.completion(t, s, c)
		requireRecv(t, rc, rctx, len("data back"), recvFlags|fi.FlagRemoteCQData)
		require.Equal(t, v+1, rc.Data, "remote CQ data")
		require.Equal(t, "data back", string(rbuf[:rc.Len]))
		c.requireCQEmpty(t) // InjectData generates no completion.
	})

	s.run(t, "inject", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		n := p.client.info.TxAttr.InjectSize
		if n <= 0 {
			t.Skip("provider's inject size is 0")
		}
		requireCoded(t, cm.Inject(make([]byte, n+1), fi.AddrUnspec))
		rbufs := [2][]byte{make([]byte, n), make([]byte, 16)}
		rctx := [2]*opCtx{{"recv inject"}, {"recv send"}}
		for i := range rbufs {
			require.NoError(t, sm.Recv(rbufs[i], p.server.desc(t, rbufs[i]), fi.AddrUnspec, rctx[i]))
		}
		buf := pattern(n, 3)
		want := bytes.Clone(buf)
		p.post(t, s, "inject", func() error { return cm.Inject(buf, fi.AddrUnspec) })
		clear(buf) // Inject's buffer is the caller's again at once.
		last, sctx := []byte("after"), &opCtx{"send"}
		ldesc := p.client.desc(t, last)
		p.post(t, s, "send", func() error { return cm.Send(last, ldesc, fi.AddrUnspec, sctx) })
		rc := p.completions(t, s, p.server, 2)
		requireRecv(t, rc[0], rctx[0], n, recvFlags)
		require.Equal(t, want, rbufs[0], "injected data")
		requireRecv(t, rc[1], rctx[1], len(last), recvFlags)
		requireSend(t, p.completion(t, s, p.client), sctx)
		p.Close(t)
		p.client.requireCQEmpty(t) // Inject generates no completion.
	})

	s.run(t, "sendv-recvv", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		lim := min(p.client.info.TxAttr.IOVLimit, p.server.info.RxAttr.IOVLimit, 4)
		if lim < 2 {
			t.Skipf("provider's iov limit is %d", lim)
		}
		data := pattern(3+100+1+50, 9)
		var siov, riov [][]byte
		var sdesc, rdesc []any
		off := 0
		for _, n := range []int{3, 100, 1, 50}[:lim] {
			seg := data[off : off+n]
			siov, sdesc, off = append(siov, seg), append(sdesc, p.client.desc(t, seg)), off+n
		}
		data = data[:off]
		rbuf := make([]byte, off+10)
		roff := 0
		for i := range lim {
			n := (len(rbuf) - roff) / (lim - i)
			if i == lim-1 {
				n = len(rbuf) - roff
			}
			seg := rbuf[roff : roff+n]
			riov, rdesc, roff = append(riov, seg), append(rdesc, p.server.desc(t, seg)), roff+n
		}
		rctx, sctx := &opCtx{"recvv"}, &opCtx{"sendv"}
		require.NoError(t, sm.RecvV(riov, rdesc, fi.AddrUnspec, rctx))
		p.post(t, s, "sendv", func() error { return cm.SendV(siov, sdesc, fi.AddrUnspec, sctx) })
		requireRecv(t, p.completion(t, s, p.server), rctx, len(data), recvFlags)
		require.Equal(t, data, rbuf[:len(data)], "gathered and scattered data")
		requireSend(t, p.completion(t, s, p.client), sctx)

		over := make([][]byte, p.client.info.TxAttr.IOVLimit+1)
		for i := range over {
			over[i] = []byte{byte(i)}
		}
		requireCoded(t, cm.SendV(over, make([]any, len(over)), fi.AddrUnspec, nil))
	})

	s.run(t, "sendmsg-recvmsg", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		inject := p.client.info.TxAttr.InjectSize
		type msgCase struct {
			name  string
			flags fi.Flags
			data  uint64
			n     int
		}
		cases := []msgCase{
			{"plain", 0, 0, 40},
			{"completion", fi.FlagCompletion, 0, 40},
			{"delivery-complete", fi.FlagDeliveryComplete, 0, 4096},
			{"inject", fi.FlagInject, 0, min(inject, 40)},
		}
		if p.client.info.DomainAttr.CQDataSize > 0 {
			cases = append(cases, msgCase{"remote-cq-data", fi.FlagRemoteCQData, cqData(t, p.client, 0xfeedf00d), 40})
		}
		for i, tc := range cases {
			if tc.n == 0 {
				continue // inject size 0
			}
			rbuf, rctx := make([]byte, tc.n), &opCtx{"recvmsg " + tc.name}
			rm := &ep.Message{IOV: [][]byte{rbuf}, Desc: []any{p.server.desc(t, rbuf)}, Addr: fi.AddrUnspec, Context: rctx}
			require.NoError(t, sm.RecvMsg(rm, 0), tc.name)
			buf := pattern(tc.n, byte(i))
			want := bytes.Clone(buf)
			sctx := &opCtx{"sendmsg " + tc.name}
			m := &ep.Message{IOV: [][]byte{buf}, Desc: []any{p.client.desc(t, buf)}, Addr: fi.AddrUnspec, Context: sctx, Data: tc.data}
			p.post(t, s, tc.name, func() error { return cm.SendMsg(m, tc.flags) })
			if tc.flags&fi.FlagInject != 0 {
				clear(buf)
			}
			if tc.flags&fi.FlagDeliveryComplete != 0 {
				// Delivery complete: the data is in the receive buffer by
				// the time the send completes.
				p.until(t, s, "delivery-complete send completion", func() bool { return len(p.client.got) > 0 })
				require.Equal(t, want, rbuf, "receive buffer when the delivery-complete send completes")
			}
			rflags := recvFlags
			if tc.flags&fi.FlagRemoteCQData != 0 {
				rflags |= fi.FlagRemoteCQData
			}
			rc := p.completion(t, s, p.server)
			requireRecv(t, rc, rctx, tc.n, rflags)
			require.Equal(t, want, rbuf, tc.name)
			if rflags&fi.FlagRemoteCQData != 0 {
				require.Equal(t, tc.data, rc.Data, "remote CQ data")
			}
			requireSend(t, p.completion(t, s, p.client), sctx)
		}
	})

	s.run(t, "truncate", func(t *testing.T) {
		p := s.pair(t, epOpts{counters: true})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		small, rctx := make([]byte, 8), &opCtx{"small recv"}
		require.NoError(t, sm.Recv(small, p.server.desc(t, small), fi.AddrUnspec, rctx))
		data := pattern(20, 5)
		desc := p.client.desc(t, data)
		p.post(t, s, "send", func() error { return cm.Send(data, desc, fi.AddrUnspec, nil) })
		e := p.cqError(t, s, p.server)
		require.Equal(t, fi.ETRUNC, e.Err, "error entry: %v", e)
		require.ErrorIs(t, e, fi.ETRUNC)
		require.Same(t, rctx, e.Context)
		require.Equal(t, len(data)-len(small), e.OLen, "OLen is the excess")
		require.Equal(t, len(small), e.Len, "Len is what was placed")
		require.Equal(t, data[:len(small)], small, "the part that fits is placed")
		p.take(t, s, p.client, 1)
		p.until(t, s, "the receive counter's error count", func() bool { return p.server.rxCntr.ReadErr() > 0 })
		require.Equal(t, uint64(1), p.server.rxCntr.ReadErr(), "a truncated receive counts as one error")
		require.Zero(t, p.server.rxCntr.Read(), "a truncated receive is no success")

		// The connection carries on after a truncated message.
		rbuf, rctx2 := make([]byte, 16), &opCtx{"recv"}
		require.NoError(t, sm.Recv(rbuf, p.server.desc(t, rbuf), fi.AddrUnspec, rctx2))
		next := []byte("next")
		ndesc := p.client.desc(t, next)
		p.post(t, s, "send", func() error { return cm.Send(next, ndesc, fi.AddrUnspec, nil) })
		requireRecv(t, p.completion(t, s, p.server), rctx2, len(next), recvFlags)
		require.Equal(t, next, rbuf[:len(next)])
	})

	s.run(t, "many-in-flight", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		n := min(p.client.info.TxAttr.Size, p.server.info.RxAttr.Size, 256)
		rbufs := make([][]byte, n)
		rctx := make([]*opCtx, n)
		for i := range n {
			rbufs[i], rctx[i] = make([]byte, 64), &opCtx{"recv"}
			require.NoError(t, sm.Recv(rbufs[i], p.server.desc(t, rbufs[i]), fi.AddrUnspec, rctx[i]))
		}
		sctx := map[*opCtx]bool{}
		for i := range n {
			buf := make([]byte, 8+i%50)
			binary.LittleEndian.PutUint64(buf, uint64(i))
			c, desc := &opCtx{"send"}, p.client.desc(t, buf)
			sctx[c] = true
			p.post(t, s, "send", func() error { return cm.Send(buf, desc, fi.AddrUnspec, c) })
		}
		for i, c := range p.completions(t, s, p.server, n) {
			requireRecv(t, c, rctx[i], 8+i%50, recvFlags)
			require.Equal(t, uint64(i), binary.LittleEndian.Uint64(rbufs[i]), "message order")
		}
		for _, c := range p.completions(t, s, p.client, n) {
			ctx, _ := c.Context.(*opCtx)
			require.True(t, sctx[ctx], "send completion with a context reported twice or never posted")
			delete(sctx, ctx)
		}
	})

	s.run(t, "eagain", func(t *testing.T) {
		// With no receive posted and no CQ read, sends fill the queues and
		// then return fi.EAGAIN, without blocking; every message sent
		// before arrives, in order, once receives are posted.
		p := s.pair(t, epOpts{})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
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
				if p.client.mrLocal {
					mr, err := fi.RegisterMR(p.client.domain, &fi.MRAttr{Buf: buf, Access: fi.AccessSend}, 0)
					if r.err = err; err != nil {
						break
					}
					r.mrs, desc = append(r.mrs, mr), mr.Desc()
				}
				if r.err = cm.Send(buf, desc, fi.AddrUnspec, nil); r.err != nil {
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

		rbufs := make([][]byte, len(r.sent))
		posted, got := 0, 0
		window := max(1, p.server.info.RxAttr.Size)
		ctx := s.ctx(t)
		for got < len(r.sent) {
			for posted < len(r.sent) && posted-got < window {
				rbufs[posted] = make([]byte, size)
				err := sm.Recv(rbufs[posted], p.server.desc(t, rbufs[posted]), fi.AddrUnspec, nil)
				if errors.Is(err, fi.EAGAIN) {
					break
				}
				require.NoError(t, err)
				posted++
			}
			p.poll(t)
			for _, e := range p.server.got {
				require.Nil(t, e.err, "receive error entry")
				require.Equal(t, uint64(got), binary.LittleEndian.Uint64(rbufs[got]), "message order")
				require.Equal(t, r.sent[got], rbufs[got])
				got++
			}
			p.server.got = p.server.got[:0]
			require.NoError(t, ctx.Err(), "received %d of %d messages", got, len(r.sent))
		}
		p.completions(t, s, p.client, len(r.sent))
		rbuf := make([]byte, 8)
		require.NoError(t, sm.Recv(rbuf, p.server.desc(t, rbuf), fi.AddrUnspec, nil))
		last := []byte("drained")
		ldesc := p.client.desc(t, last)
		p.post(t, s, "send after the queues drained", func() error { return cm.Send(last, ldesc, fi.AddrUnspec, nil) })
		p.completion(t, s, p.server)
		p.completion(t, s, p.client)
	})

	s.run(t, "large", func(t *testing.T) {
		const size = 1 << 20
		p := s.pair(t, epOpts{})
		if m := p.client.info.EPAttr.MaxMsgSize; m < size {
			t.Skipf("provider's max message size is %d", m)
		}
		for i, d := range [][2]*peer{{p.client, p.server}, {p.server, p.client}} {
			from, to := d[0], d[1]
			fm, tm := msgOf(t, from), msgOf(t, to)
			rbuf, rctx := make([]byte, size), &opCtx{"recv"}
			require.NoError(t, tm.Recv(rbuf, to.desc(t, rbuf), fi.AddrUnspec, rctx))
			data := pattern(size, byte(i+11))
			desc, sctx := from.desc(t, data), &opCtx{"send"}
			p.post(t, s, "send 1 MiB", func() error { return fm.Send(data, desc, fi.AddrUnspec, sctx) })
			requireRecv(t, p.completion(t, s, to), rctx, size, recvFlags)
			require.True(t, bytes.Equal(data, rbuf), "%s received different bytes", to.role)
			requireSend(t, p.completion(t, s, from), sctx)
		}
	})

	s.run(t, "selective-completion", func(t *testing.T) {
		p := s.pair(t, epOpts{selective: true})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		for range 3 {
			buf := make([]byte, 16)
			require.NoError(t, sm.Recv(buf, p.server.desc(t, buf), fi.AddrUnspec, nil))
		}
		quiet, loud := []byte("quiet"), []byte("loud")
		qctx, lctx := &opCtx{"no completion"}, &opCtx{"completion"}
		qm := &ep.Message{IOV: [][]byte{quiet}, Desc: []any{p.client.desc(t, quiet)}, Addr: fi.AddrUnspec, Context: qctx}
		lm := &ep.Message{IOV: [][]byte{loud}, Desc: []any{p.client.desc(t, loud)}, Addr: fi.AddrUnspec, Context: lctx}
		p.post(t, s, "sendmsg without FI_COMPLETION", func() error { return cm.SendMsg(qm, 0) })
		if p.client.info.TxAttr.OpFlags&fi.FlagCompletion == 0 {
			p.post(t, s, "send", func() error { return cm.Send(quiet, qm.Desc[0], fi.AddrUnspec, qctx) })
		}
		p.post(t, s, "sendmsg with FI_COMPLETION", func() error { return cm.SendMsg(lm, fi.FlagCompletion) })
		n := 3
		if p.client.info.TxAttr.OpFlags&fi.FlagCompletion != 0 {
			n = 2
		}
		p.completions(t, s, p.server, n)
		requireSend(t, p.completion(t, s, p.client), lctx)
		p.Close(t)
		p.client.requireCQEmpty(t)
	})

	s.run(t, "counters", func(t *testing.T) {
		p := s.pair(t, epOpts{counters: true})
		cm, sm := msgOf(t, p.client), msgOf(t, p.server)
		const n = 5
		for range n {
			buf := make([]byte, 16)
			require.NoError(t, sm.Recv(buf, p.server.desc(t, buf), fi.AddrUnspec, nil))
		}
		msg := []byte("count me")
		desc := p.client.desc(t, msg)
		for range n {
			p.post(t, s, "send", func() error { return cm.Send(msg, desc, fi.AddrUnspec, nil) })
		}
		p.until(t, s, "counters", func() bool {
			return p.client.txCntr.Read() >= n && p.server.rxCntr.Read() >= n
		})
		p.completions(t, s, p.client, n)
		p.completions(t, s, p.server, n)
		require.Equal(t, uint64(n), p.client.txCntr.Read(), "send counter")
		require.Equal(t, uint64(n), p.server.rxCntr.Read(), "receive counter")
		require.Zero(t, p.client.rxCntr.Read(), "the client received nothing")
		require.Zero(t, p.server.txCntr.Read(), "the server sent nothing")
		require.Zero(t, p.client.txCntr.ReadErr()+p.server.rxCntr.ReadErr(), "error counts")
	})
}

// rmaTarget is a connected pair whose server exposes buf as an RMA
// target.
type rmaTarget struct {
	*pair
	rma  ep.RMA // the client's
	buf  []byte
	key  uint64
	base uint64 // what addresses buf[0] (rmaBase)
}

// at is the RMA address of offset off in the target buffer.
func (x *rmaTarget) at(off uint64) uint64 { return x.base + off }

// rmaPair connects a pair and registers a 4 KiB target buffer on the
// server with access, skipping when the provider lacks FI_RMA. The target
// holds pattern(4096, 0x5a); x.at turns offsets into it into RMA
// addresses.
func (s *suite) rmaPair(t testing.TB, access fi.Access) *rmaTarget {
	t.Helper()
	p := s.pair(t, epOpts{})
	info := p.client.info
	if info.Caps&fi.CapRMA == 0 {
		t.Skipf("provider's Info lacks FI_RMA: %v", info.Caps)
	}
	rmaSkips(t, info)
	r, ok := p.client.ep.(ep.RMA)
	if !ok {
		t.Skipf("provider's endpoint %T has no RMA ability (ep.RMA)", p.client.ep)
	}
	x := &rmaTarget{pair: p, rma: r, buf: pattern(4096, 0x5a)}
	mr, err := fi.RegisterMR(p.server.domain, &fi.MRAttr{Buf: x.buf, Access: access, RequestedKey: 0x5eed}, 0)
	skipIfAbsent(t, err, "memory registration")
	keep(t, mr)
	x.key = mr.Key()
	x.base = rmaBase(p.server.info, x.buf)
	return x
}

const (
	remoteRW    = fi.AccessRemoteRead | fi.AccessRemoteWrite
	writeFlags  = fi.FlagRMA | fi.FlagWrite
	readFlags   = fi.FlagRMA | fi.FlagRead
	targetBytes = 4096
)

// testMsgRMA is the rma/msg group: RMA over a connected pair (fi_rma(3)).
func testMsgRMA(t *testing.T, s *suite) {
	s.run(t, "write", func(t *testing.T) {
		x := s.rmaPair(t, remoteRW)
		before := bytes.Clone(x.buf)
		// The target may place the data on a progress goroutine of its
		// own, ordered with the test's reads of the buffer only through
		// the network, which the race detector cannot see: polling the
		// target (its progress lock) after reading the buffer and before
		// checking it orders them for it.
		x.poll(t)
		data := pattern(100, 1)
		ctx := &opCtx{"write"}
		m := &ep.RMAMessage{IOV: [][]byte{data}, Desc: []any{x.client.desc(t, data)}, Addr: fi.AddrUnspec,
			RMAIOV: []ep.RMAIOV{{Addr: x.at(200), Len: len(data), Key: x.key}}, Context: ctx}
		x.post(t, s, "writemsg", func() error { return x.rma.WriteMsg(m, fi.FlagDeliveryComplete) })
		c := x.completion(t, s, x.client)
		require.Same(t, ctx, c.Context)
		require.Equal(t, writeFlags, c.Flags, "write completion's flags: %v", c.Flags)
		x.poll(t)
		// Delivery complete: the data is in place when the write completes.
		require.Equal(t, data, x.buf[200:300], "written range")
		require.Equal(t, before[:200], x.buf[:200], "bytes before the range")
		require.Equal(t, before[300:], x.buf[300:], "bytes after the range")
		x.Close(t)
		x.server.requireCQEmpty(t) // a write without CQ data completes only at the initiator
	})

	s.run(t, "read", func(t *testing.T) {
		x := s.rmaPair(t, remoteRW)
		lbuf, ctx := make([]byte, 300), &opCtx{"read"}
		ldesc := x.client.desc(t, lbuf)
		x.post(t, s, "read", func() error { return x.rma.Read(lbuf, ldesc, fi.AddrUnspec, x.at(1000), x.key, ctx) })
		c := x.completion(t, s, x.client)
		require.Same(t, ctx, c.Context)
		require.Equal(t, readFlags, c.Flags, "read completion's flags: %v", c.Flags)
		require.Equal(t, x.buf[1000:1300], lbuf)
	})

	s.run(t, "write-then-read", func(t *testing.T) {
		x := s.rmaPair(t, remoteRW)
		if x.client.info.TxAttr.MsgOrder&fi.OrderRAW == 0 {
			t.Skip("provider does not order reads after writes (FI_ORDER_RAW)")
		}
		data, lbuf := pattern(64, 2), make([]byte, 64)
		ddesc, ldesc := x.client.desc(t, data), x.client.desc(t, lbuf)
		x.post(t, s, "write", func() error { return x.rma.Write(data, ddesc, fi.AddrUnspec, x.at(targetBytes-64), x.key, nil) })
		x.post(t, s, "read", func() error { return x.rma.Read(lbuf, ldesc, fi.AddrUnspec, x.at(targetBytes-64), x.key, nil) })
		x.completions(t, s, x.client, 2)
		x.poll(t) // as in write
		require.Equal(t, data, lbuf, "the read sees the write before it")
		require.Equal(t, data, x.buf[targetBytes-64:])
	})

	s.run(t, "writedata", func(t *testing.T) {
		x := s.rmaPair(t, remoteRW)
		v := cqData(t, x.client, 0xc0ffee)
		if x.server.info.Mode&fi.ModeRxCQData != 0 {
			buf := make([]byte, 8)
			require.NoError(t, msgOf(t, x.server).Recv(buf, x.server.desc(t, buf), fi.AddrUnspec, nil))
		}
		data, ctx := pattern(32, 3), &opCtx{"writedata"}
		desc := x.client.desc(t, data)
		x.post(t, s, "writedata", func() error { return x.rma.WriteData(data, desc, v, fi.AddrUnspec, x.at(64), x.key, ctx) })
		rc := x.completion(t, s, x.server)
		require.Equal(t, fi.FlagRMA|fi.FlagRemoteWrite|fi.FlagRemoteCQData, rc.Flags, "target completion's flags: %v", rc.Flags)
		require.Equal(t, v, rc.Data, "remote CQ data")
		require.Equal(t, data, x.buf[64:96], "written range when the target completion arrives")
		c := x.completion(t, s, x.client)
		require.Same(t, ctx, c.Context)
		require.Equal(t, writeFlags, c.Flags)
	})

	for _, tc := range []struct {
		name   string
		access fi.Access
		read   bool
		addr   uint64
		badKey bool
	}{
		{"bad-key", remoteRW, false, 0, true},
		{"write-out-of-range", remoteRW, false, targetBytes - 10, false},
		{"read-out-of-range", remoteRW, true, targetBytes - 10, false},
		{"write-no-access", fi.AccessRemoteRead, false, 0, false},
		{"read-no-access", fi.AccessRemoteWrite, true, 0, false},
	} {
		s.run(t, tc.name, func(t *testing.T) {
			x := s.rmaPair(t, tc.access)
			before := bytes.Clone(x.buf)
			key := x.key
			if tc.badKey {
				key++
			}
			lbuf, ctx := pattern(100, 4), &opCtx{tc.name}
			ldesc := x.client.desc(t, lbuf)
			x.post(t, s, tc.name, func() error {
				if tc.read {
					return x.rma.Read(lbuf, ldesc, fi.AddrUnspec, x.at(tc.addr), key, ctx)
				}
				return x.rma.Write(lbuf, ldesc, fi.AddrUnspec, x.at(tc.addr), key, ctx)
			})
			e := x.cqError(t, s, x.client)
			require.NotZero(t, e.Err, "error entry without a code")
			require.NotEqual(t, fi.EOTHER, e.Err, "error entry: %v", e)
			require.Same(t, ctx, e.Context)
			require.Equal(t, before, x.buf, "target memory after a refused RMA")
		})
	}
}

// msgDataMsgs are the payloads of senddata-injectdata's two-process
// variant: one sent with SendData, one with InjectData.
var msgDataMsgs = [2][]byte{[]byte("with data"), []byte("injected")}

// msgSizes are the message sizes of msg/send-recv's two-process variant,
// up to 1 MiB, within x's maximum.
func msgSizes(x *peer) []int {
	var out []int
	for _, n := range []int{1, 100, 4 << 10, 64 << 10, 1 << 20} {
		if n <= x.info.EPAttr.MaxMsgSize {
			out = append(out, n)
		}
	}
	return out
}
