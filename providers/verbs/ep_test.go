//go:build verbs && cgo

package verbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// tside is one connected endpoint of testPair with its objects.
type tside struct {
	domain fi.Domain
	eq     eq.EventQueue
	cq     eq.CompletionQueue
	ep     ep.Endpoint
}

func closeAt(t testing.TB, f fi.Fid) {
	t.Cleanup(func() {
		if err := f.Close(); err != nil && !errors.Is(err, fi.EBADF) {
			t.Errorf("close %T: %v", f, err)
		}
	})
}

// openSide opens a domain, EQ, CQ and endpoint for info and enables it.
func openSide(t testing.TB, fab fi.Fabric, info *fi.Info) *tside {
	s := &tside{}
	var err error
	s.domain, err = fab.OpenDomain(info)
	require.NoError(t, err)
	closeAt(t, s.domain)
	s.eq, err = eq.OpenEQ(fab, &eq.Attr{})
	require.NoError(t, err)
	closeAt(t, s.eq)
	s.cq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	closeAt(t, s.cq)
	s.ep, err = ep.Open(s.domain, info)
	require.NoError(t, err)
	closeAt(t, s.ep)
	require.NoError(t, s.ep.Bind(s.eq, 0))
	require.NoError(t, s.ep.Bind(s.cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, s.ep.Enable())
	return s
}

// msgHints are hints for the device's FI_EP_MSG entries (their MR mode),
// declaring FI_RX_CQ_DATA when rxCQData is set.
func msgHints(rxCQData bool) *fi.Info {
	h := &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: provName},
		EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg}, DomainAttr: &fi.DomainAttr{MRMode: msgMRMode}}
	if rxCQData {
		h.Mode = fi.ModeRxCQData
	}
	return h
}

// listener is a listening passive endpoint on the RDMA device's IPv4
// address, with its fabric and event queue.
type listener struct {
	info *fi.Info // the FI_SOURCE entry it was opened with
	fab  fi.Fabric
	eq   eq.EventQueue
	pep  ep.PassiveEndpoint
	name []byte
}

// openListener opens a fabric, an event queue and a passive endpoint for hints
// on the device's address, and listens.
func openListener(t testing.TB, hints *fi.Info) *listener {
	t.Helper()
	ip := rdmaAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, ip.String(), "", fi.FlagSource, hints)
	require.NoError(t, err)
	l := &listener{info: infos[0]}
	l.fab, err = fi.OpenFabric(l.info)
	require.NoError(t, err)
	closeAt(t, l.fab)
	l.eq, err = eq.OpenEQ(l.fab, &eq.Attr{})
	require.NoError(t, err)
	closeAt(t, l.eq)
	l.pep, err = ep.OpenPassive(l.fab, l.info)
	require.NoError(t, err)
	closeAt(t, l.pep)
	require.NoError(t, l.pep.Bind(l.eq, 0))
	require.NoError(t, l.pep.Listen())
	name := make([]byte, 128)
	n, err := l.pep.Name(name)
	require.NoError(t, err)
	l.name = name[:n]
	return l
}

// testPair connects a client and a server endpoint through a passive
// endpoint, over the RDMA device.
func testPair(t testing.TB) (client, server *tside) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	hints := msgHints(true)
	l := openListener(t, hints)

	h := hints.Clone()
	h.AddrFormat, h.DestAddr = l.info.AddrFormat, l.name
	cinfos, err := fi.GetInfo(ctx, "", "", 0, h)
	require.NoError(t, err)
	cfab, err := fi.OpenFabric(cinfos[0])
	require.NoError(t, err)
	closeAt(t, cfab)
	client = openSide(t, cfab, cinfos[0])
	require.NoError(t, client.ep.(ep.CM).Connect(l.name, []byte("hi")))
	ev, err := l.eq.SRead(ctx)
	require.NoError(t, err)
	req := ev.(*eq.ConnReq)
	require.Equal(t, []byte("hi"), req.Data)
	server = openSide(t, l.fab, req.Info)
	require.NoError(t, server.ep.(ep.CM).Accept(nil))
	for _, s := range []*tside{client, server} {
		ev, err := s.eq.SRead(ctx)
		require.NoError(t, err)
		require.IsType(t, &eq.Connected{}, ev)
	}
	return client, server
}

// next waits (SRead, through the completion channel) for s's next entry.
func (s *tside) next(t *testing.T) (eq.Completion, *eq.CQError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var buf [1]eq.Completion
	_, err := s.cq.SRead(ctx, buf[:])
	if errors.Is(err, fi.EAVAIL) {
		e, rerr := s.cq.ReadErr()
		require.NoError(t, rerr)
		return eq.Completion{}, e
	}
	require.NoError(t, err)
	return buf[0], nil
}

func register(t testing.TB, s *tside, buf []byte, access fi.Access) fi.MR {
	mr, err := fi.RegisterMR(s.domain, &fi.MRAttr{Buf: buf, Access: access}, 0)
	require.NoError(t, err)
	closeAt(t, mr)
	return mr
}

// RMA over FI_EP_MSG endpoints, which the suite skips under
// FI_MR_VIRT_ADDR: write and read by virtual address and rkey, a write
// with remote CQ data consuming a posted receive at the target
// (FI_RX_CQ_DATA), and a write with a wrong key completing as an error
// entry.
func TestEndpointRMA(t *testing.T) {
	c, s := testPair(t)
	target := make([]byte, 4096)
	tmr := register(t, s, target, fi.AccessRemoteRead|fi.AccessRemoteWrite)
	base := uint64(bufAddr(target))
	r := c.ep.(ep.RMA)

	data := []byte("written by RDMA")
	dmr := register(t, c, data, fi.AccessWrite)
	ctx := &struct{ n int }{1}
	require.NoError(t, r.Write(data, dmr.Desc(), fi.AddrUnspec, base+100, tmr.Key(), ctx))
	got, e := c.next(t)
	require.Nil(t, e)
	require.Same(t, ctx, got.Context)
	require.Equal(t, fi.FlagRMA|fi.FlagWrite, got.Flags)
	require.Equal(t, data, target[100:100+len(data)])

	copy(target[1000:], "read me back")
	lbuf := make([]byte, 12)
	lmr := register(t, c, lbuf, fi.AccessRead)
	require.NoError(t, r.Read(lbuf, lmr.Desc(), fi.AddrUnspec, base+1000, tmr.Key(), ctx))
	got, e = c.next(t)
	require.Nil(t, e)
	require.Equal(t, fi.FlagRMA|fi.FlagRead, got.Flags)
	require.Equal(t, "read me back", string(lbuf))

	rbuf := make([]byte, 8)
	rmr := register(t, s, rbuf, fi.AccessRecv)
	rctx := &struct{ n int }{2}
	require.NoError(t, s.ep.(ep.Msg).Recv(rbuf, rmr.Desc(), fi.AddrUnspec, rctx))
	require.NoError(t, r.WriteData(data, dmr.Desc(), 0xc0ffee, fi.AddrUnspec, base+200, tmr.Key(), nil))
	got, e = s.next(t)
	require.Nil(t, e)
	require.Same(t, rctx, got.Context)
	require.Equal(t, fi.FlagRMA|fi.FlagRemoteWrite|fi.FlagRemoteCQData, got.Flags)
	require.Equal(t, uint64(0xc0ffee), got.Data)
	require.Equal(t, data, target[200:200+len(data)])
	_, e = c.next(t)
	require.Nil(t, e)

	big := make([]byte, 1024) // over the inline size: it needs a desc
	require.ErrorIs(t, r.Write(big, nil, fi.AddrUnspec, base, tmr.Key(), nil), fi.EINVAL, "no desc under FI_MR_LOCAL")
	require.NoError(t, r.Write(data, dmr.Desc(), fi.AddrUnspec, base, tmr.Key()+1, ctx))
	_, e = c.next(t)
	require.NotNil(t, e, "a write with a wrong key")
	require.Same(t, ctx, e.Context)
	require.Equal(t, fi.EACCES, e.Err, "%v", e)
}

// Posting a receive and a send allocates nothing (the slot tables and the
// C SGE arrays carry them), and blocking reads of the CQ park on the
// completion channel.
func TestEndpointPostAllocs(t *testing.T) {
	c, s := testPair(t)
	rbuf, sbuf := make([]byte, 4096), make([]byte, 2048) // sbuf over the inline size
	rdesc, sdesc := register(t, s, rbuf, fi.AccessRecv).Desc(), register(t, c, sbuf, fi.AccessSend).Desc()
	cm, sm := c.ep.(ep.Msg), s.ep.(ep.Msg)
	var ctx any = &struct{ n int }{3}
	const runs = 50
	allocs := testing.AllocsPerRun(runs, func() {
		if err := sm.Recv(rbuf, rdesc, fi.AddrUnspec, ctx); err != nil {
			t.Fatal(err)
		}
		if err := cm.Send(sbuf, sdesc, fi.AddrUnspec, ctx); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "allocations per Recv+Send")
	for range runs + 1 { // AllocsPerRun runs once more to warm up
		got, e := s.next(t)
		require.Nil(t, e)
		require.Equal(t, len(sbuf), got.Len)
		_, e = c.next(t)
		require.Nil(t, e)
	}
}

// When the peer closes its endpoint (rdma_disconnect, then its id and
// queue pair destroyed), every operation posted here completes once, as
// an error entry with its own context, and the endpoint reports one
// eq.Shutdown: receives waiting for data, sends stuck in RNR retry (the
// peer posted no receive) and RMA reads queued behind them. Nothing
// hangs: the CQ reads return, and Close returns.
func TestEndpointPeerDestroy(t *testing.T) {
	c, s := testPair(t)
	target := make([]byte, 4096)
	tmr := register(t, s, target, fi.AccessRemoteRead)
	base := uint64(bufAddr(target))
	m, r := c.ep.(ep.Msg), c.ep.(ep.RMA)
	buf := make([]byte, 1<<20)
	desc := register(t, c, buf, fi.AccessSend|fi.AccessRecv|fi.AccessRead).Desc()
	type op struct{ kind, i int }
	posted := map[any]bool{}
	post := func(kind int, f func(ctx any) error) int {
		n := 0
		for ; ; n++ {
			ctx := &op{kind, n}
			err := f(ctx)
			if err != nil {
				require.Equal(t, fi.EAGAIN, err, "a full queue answers a bare fi.EAGAIN")
				return n
			}
			posted[ctx] = true
		}
	}
	nr := post(0, func(ctx any) error { return m.Recv(buf[:4096], desc, fi.AddrUnspec, ctx) })
	ns := post(1, func(ctx any) error { return m.Send(buf[4096:8192], desc, fi.AddrUnspec, ctx) })
	t.Logf("posted %d receives and %d sends before fi.EAGAIN", nr, ns)
	require.Positive(t, nr)
	require.Positive(t, ns)
	// The send queue is full: read completions would make room, so
	// check instead that nothing has completed (the peer posted no
	// receive: the sends wait in RNR retry).
	var none [1]eq.Completion
	n, err := c.cq.Read(none[:])
	require.ErrorIs(t, err, fi.EAGAIN, "nothing completes while the peer has no receive (%d read)", n)
	require.ErrorIs(t, r.Read(buf[8192:8200], desc, fi.AddrUnspec, base, tmr.Key(), nil), fi.EAGAIN, "a read behind the full send queue")

	require.NoError(t, s.ep.Close(), "the peer closes its endpoint")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := c.eq.SRead(ctx)
	require.NoError(t, err)
	sd, ok := ev.(*eq.Shutdown)
	require.True(t, ok, "event %T after the peer closed", ev)
	require.Same(t, c.ep, sd.Fid)

	seen := map[any]bool{}
	for len(seen) < len(posted) {
		got, e := c.next(t)
		require.NotNil(t, e, "a success entry (%+v) after the peer closed", got)
		require.True(t, posted[e.Context], "error entry for an operation never posted: %v", e.Context)
		require.False(t, seen[e.Context], "second entry for %v", e.Context)
		require.NotEqual(t, fi.Errno(0), e.Err)
		seen[e.Context] = true
	}
	n, err = c.cq.Read(none[:])
	require.ErrorIs(t, err, fi.EAGAIN, "nothing more after every posted operation completed (%d read)", n)
	require.ErrorIs(t, m.Send(buf[:8], desc, fi.AddrUnspec, nil), fi.ESHUTDOWN, "a send after the Shutdown")
	done := make(chan error, 1)
	go func() { done <- c.ep.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs after the peer went")
	}
}

// BenchmarkPingPong bounces a message between two connected endpoints of
// one process, busy polling their CQs as fi_pingpong does: one op is a
// round trip (send, receive, repost, send back, receive, repost).
func BenchmarkPingPong(b *testing.B) {
	for _, n := range []int{64, 4096, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			c, s := testPair(b)
			cbuf, sbuf := make([]byte, n), make([]byte, n)
			access := fi.AccessSend | fi.AccessRecv
			cdesc, sdesc := register(b, c, cbuf, access).Desc(), register(b, s, sbuf, access).Desc()
			cm, sm := c.ep.(ep.Msg), s.ep.(ep.Msg)
			var comp [4]eq.Completion
			// recv polls q until a receive completes, taking the send
			// completions on the way.
			recv := func(q eq.CompletionQueue) {
				for {
					k, err := q.Read(comp[:])
					if err != nil && err != fi.EAGAIN {
						b.Fatal(err)
					}
					for _, x := range comp[:k] {
						if x.Flags&fi.FlagRecv != 0 {
							return
						}
					}
				}
			}
			post := func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			}
			post(cm.Recv(cbuf, cdesc, fi.AddrUnspec, nil))
			post(sm.Recv(sbuf, sdesc, fi.AddrUnspec, nil))
			b.SetBytes(int64(2 * n))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				post(cm.Send(cbuf, cdesc, fi.AddrUnspec, nil))
				recv(s.cq)
				post(sm.Recv(sbuf, sdesc, fi.AddrUnspec, nil))
				post(sm.Send(sbuf, sdesc, fi.AddrUnspec, nil))
				recv(c.cq)
				post(cm.Recv(cbuf, cdesc, fi.AddrUnspec, nil))
			}
		})
	}
}

// A refused connection tells a consumer reject from a transport failure:
// both are fi.ECONNREFUSED error entries, but a reject by the peer's
// application carries IB CM reject reason 28 (consumer defined) as
// ProvErrno and the rejecter's data, while a request nothing listens for
// carries reason 8 (invalid service ID) and no data.
func TestRejectReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	l := openListener(t, msgHints(false))

	connect := func(dest []byte) *eq.EQError {
		c := openSide(t, l.fab, l.info)
		require.NoError(t, c.ep.(ep.CM).Connect(dest, []byte("hi")))
		ev, err := c.eq.SRead(ctx)
		require.ErrorIs(t, err, fi.EAVAIL, "event %v where an error entry was due", ev)
		e, err := c.eq.ReadErr()
		require.NoError(t, err)
		return e
	}

	go func() {
		ev, err := l.eq.SRead(ctx)
		if err == nil {
			_ = l.pep.Reject(ev.(*eq.ConnReq).Info.Handle, []byte("not you"))
		}
	}()
	e := connect(l.name)
	require.Equal(t, fi.ECONNREFUSED, e.Err)
	require.Equal(t, 28, e.ProvErrno, "IB_CM_REJ_CONSUMER_DEFINED")
	require.Equal(t, "not you", string(e.ErrData))

	// The same address and the listener's port plus one, which nothing
	// listens on.
	free := bytes.Clone(l.name)
	port := binary.BigEndian.Uint16(free[2:4]) + 1
	binary.BigEndian.PutUint16(free[2:4], port)
	e = connect(free)
	require.Equal(t, fi.ECONNREFUSED, e.Err)
	require.NotEqual(t, 28, e.ProvErrno, "a transport failure is not a consumer reject")
	require.Empty(t, e.ErrData)
	t.Logf("nothing listening: %v (reason %d)", e, e.ProvErrno)
}

// A blocking read of a CQ, and a counter's Wait, that several endpoints
// feed wake for a completion on any of them: their wait hook has every
// bound endpoint arm its verbs CQ and wait on its completion channel.
func TestBlockingWaitSharedQueues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	l := openListener(t, msgHints(false))

	// The server side: one domain, EQ, CQ and receive counter for both
	// accepted endpoints.
	dom, err := l.fab.OpenDomain(l.info)
	require.NoError(t, err)
	closeAt(t, dom)
	seq, err := eq.OpenEQ(l.fab, &eq.Attr{})
	require.NoError(t, err)
	closeAt(t, seq)
	cq, err := eq.OpenCQ(dom, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	closeAt(t, cq)
	cntr, err := eq.OpenCounter(dom, &eq.CounterAttr{})
	require.NoError(t, err)
	closeAt(t, cntr)
	rbuf := make([]byte, 2*64)
	rmr, err := fi.RegisterMR(dom, &fi.MRAttr{Buf: rbuf, Access: fi.AccessRecv}, 0)
	require.NoError(t, err)
	closeAt(t, rmr)

	var clients [2]*tside
	for i := range clients {
		clients[i] = openSide(t, l.fab, l.info)
		require.NoError(t, clients[i].ep.(ep.CM).Connect(l.name, nil))
		req, ok := nextEvent(t, l.eq).(*eq.ConnReq)
		require.True(t, ok)
		s, err := ep.Open(dom, req.Info)
		require.NoError(t, err)
		closeAt(t, s)
		require.NoError(t, s.Bind(seq, 0))
		require.NoError(t, s.Bind(cq, fi.FlagSend|fi.FlagRecv))
		require.NoError(t, s.Bind(cntr, fi.FlagRecv))
		require.NoError(t, s.Enable())
		require.NoError(t, s.(ep.Msg).Recv(rbuf[64*i:64*(i+1)], rmr.Desc(), fi.AddrUnspec, i))
		require.NoError(t, s.(ep.CM).Accept(nil))
		require.IsType(t, &eq.Connected{}, nextEvent(t, seq))
		require.IsType(t, &eq.Connected{}, nextEvent(t, clients[i].eq))
	}

	// Each round blocks first, then the peer of one endpoint sends.
	for round, i := range []int{1, 0} {
		got := make(chan error, 1)
		var comp [1]eq.Completion
		go func() {
			_, err := cq.SRead(ctx, comp[:])
			got <- err
		}()
		time.Sleep(50 * time.Millisecond) // let SRead block
		msg := []byte("wake up")
		require.NoError(t, clients[i].ep.(ep.Msg).Inject(msg, fi.AddrUnspec))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatalf("round %d: SRead did not wake for endpoint %d's receive", round, i)
		}
		require.Equal(t, i, comp[0].Context, "the receive of endpoint %d", i)
		require.NoError(t, cntr.Wait(ctx, uint64(round+1)), "counter Wait")
	}
}

// Several RDMA reads in flight on one connection, as a rendezvous issues
// them: both queue pairs get the device's read depth (C's verbs asks
// librdmacm for RDMA_MAX_INIT_DEPTH and RDMA_MAX_RESP_RES), not 1, and 32
// reads posted at once all complete with the target's bytes.
func TestReadDepth(t *testing.T) {
	c, s := testPair(t)
	devs, err := queryDevices(defTxSize, defRxSize, defTxIOVLimit, defRxIOVLimit, defInlineSize)
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	dev := devs[0]
	for _, side := range []*tside{c, s} {
		e := side.ep.(*endpoint)
		e.mu.Lock()
		init, resp, err := qpReadDepth(e.dp.qp)
		e.mu.Unlock()
		require.NoError(t, err)
		if dev.maxReadInit > 1 && dev.maxReadResp > 1 {
			require.Greater(t, init, 1, "initiator depth (device allows %d)", dev.maxReadInit)
			require.Greater(t, resp, 1, "responder resources (device allows %d)", dev.maxReadResp)
		}
		require.LessOrEqual(t, init, dev.maxReadInit)
		require.LessOrEqual(t, resp, dev.maxReadResp)
	}

	const n, size = 32, 64 << 10
	target := make([]byte, n*size)
	for i := range target {
		target[i] = byte(i*7 + i>>12)
	}
	tmr := register(t, s, target, fi.AccessRemoteRead)
	local := make([]byte, n*size)
	lmr := register(t, c, local, fi.AccessRead)
	base := uint64(bufAddr(target))
	r := c.ep.(ep.RMA)
	ctxs := make([]int, n)
	posted := 0
	for posted < n {
		err := r.Read(local[posted*size:(posted+1)*size], lmr.Desc(), fi.AddrUnspec, base+uint64(posted*size), tmr.Key(), &ctxs[posted])
		if errors.Is(err, fi.EAGAIN) {
			break // the send queue is full: the rest after completions
		}
		require.NoError(t, err)
		posted++
	}
	require.Greater(t, posted, 1, "more than one read in flight")
	for done := 0; done < n; done++ {
		got, e := c.next(t)
		require.Nil(t, e, "read %d", done)
		require.Equal(t, fi.FlagRMA|fi.FlagRead, got.Flags)
		for posted < n {
			err := r.Read(local[posted*size:(posted+1)*size], lmr.Desc(), fi.AddrUnspec, base+uint64(posted*size), tmr.Key(), &ctxs[posted])
			if errors.Is(err, fi.EAGAIN) {
				break
			}
			require.NoError(t, err)
			posted++
		}
	}
	require.True(t, bytes.Equal(target, local), "the reads brought the target's bytes")
}

// A connecting endpoint opened with a source address has its queue pair
// from Enable on, so receives posted before Connect (as rxm preposts its
// bounce buffers) are taken and complete with the first messages.
func TestRecvBeforeConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hints := msgHints(true)
	l := openListener(t, hints)
	h := hints.Clone()
	h.AddrFormat, h.DestAddr = l.info.AddrFormat, l.name
	cinfos, err := fi.GetInfo(ctx, rdmaAddr(t).String(), "", 0, h)
	require.NoError(t, err)
	require.NotNil(t, cinfos[0].SrcAddr, "a node gives the entry a source address")
	cfab, err := fi.OpenFabric(cinfos[0])
	require.NoError(t, err)
	closeAt(t, cfab)
	c := openSide(t, cfab, cinfos[0])

	const n = 4
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, 64)
		mr := register(t, c, bufs[i], fi.AccessRecv)
		require.NoError(t, c.ep.(ep.Msg).Recv(bufs[i], mr.Desc(), fi.AddrUnspec, &bufs[i]), "receive %d before connect", i)
	}
	require.NoError(t, c.ep.(ep.CM).Connect(l.name, nil))
	ev, err := l.eq.SRead(ctx)
	require.NoError(t, err)
	s := openSide(t, l.fab, ev.(*eq.ConnReq).Info)
	require.NoError(t, s.ep.(ep.CM).Accept(nil))
	for _, side := range []*tside{c, s} {
		ev, err := side.eq.SRead(ctx)
		require.NoError(t, err)
		require.IsType(t, &eq.Connected{}, ev)
	}
	msg := make([]byte, 64)
	smr := register(t, s, msg, fi.AccessSend)
	for i := range n {
		binary.LittleEndian.PutUint64(msg, uint64(1000+i))
		require.NoError(t, s.ep.(ep.Msg).Send(msg, smr.Desc(), fi.AddrUnspec, nil))
		_, e := s.next(t)
		require.Nil(t, e)
		got, e := c.next(t)
		require.Nil(t, e)
		require.Same(t, &bufs[i], got.Context, "receives complete in posting order")
		require.Equal(t, uint64(1000+i), binary.LittleEndian.Uint64(bufs[i]))
	}
}
