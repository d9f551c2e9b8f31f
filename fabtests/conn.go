package fabtests

import (
	"errors"
	"runtime"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file holds the connection helpers of the cm and msg groups: the
// flow a libfabric application follows (fi_cm(3)), one step per helper so
// that tests can stop between steps.

// keep closes f at cleanup. Cleanups run in reverse order, so objects
// close children first. A Close that fails with anything but fi.EBADF
// (the test closed f itself) fails the test: an object still busy at the
// end means something was left open.
func keep(t testing.TB, f fi.Fid) {
	t.Cleanup(func() {
		if err := f.Close(); err != nil && !errors.Is(err, fi.EBADF) {
			t.Errorf("close %T at cleanup: %v", f, err)
		}
	})
}

// listener is a passive endpoint of the provider under test, with its own
// fabric and event queue: the server side of fi_cm(3)'s flow.
type listener struct {
	info   *fi.Info
	fabric fi.Fabric
	eq     eq.EventQueue
	pep    ep.PassiveEndpoint
	// name is the passive endpoint's address once listening (fi_getname).
	name []byte
}

// passive finds the provider's FI_EP_MSG Info for the suite's node with
// FI_SOURCE and opens a fabric, an event queue and a passive endpoint
// bound to it, not yet listening. It skips when the provider has no
// connected endpoints.
func (s *suite) passive(t testing.TB) *listener {
	t.Helper()
	infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, "", fi.FlagSource, s.hints(fi.EPTypeMsg))
	skipIfAbsent(t, err, "connected (FI_EP_MSG) endpoints")
	require.NotEmpty(t, infos)
	l := &listener{info: infos[0]}
	l.fabric, err = fi.OpenFabric(l.info)
	require.NoError(t, err, "open fabric")
	keep(t, l.fabric)
	l.eq, err = eq.OpenEQ(l.fabric, &eq.Attr{})
	skipIfAbsent(t, err, "event queues")
	keep(t, l.eq)
	l.pep, err = ep.OpenPassive(l.fabric, l.info)
	skipIfAbsent(t, err, "passive endpoints")
	keep(t, l.pep)
	require.NoError(t, l.pep.Bind(l.eq, 0), "bind the passive endpoint's event queue")
	return l
}

// listen is passive followed by Listen and Name.
func (s *suite) listen(t testing.TB) *listener {
	t.Helper()
	l := s.passive(t)
	require.NoError(t, l.pep.Listen(), "listen")
	l.name = name(t, l.pep)
	return l
}

// name returns n's full address (fi_getname).
func name(t testing.TB, n ep.Namer) []byte {
	t.Helper()
	buf := make([]byte, 512)
	k, err := n.Name(buf)
	require.NoError(t, err, "get name")
	require.Positive(t, k, "empty address")
	return buf[:k]
}

// peerName returns x's peer address (fi_getpeer).
func peerName(t testing.TB, x ep.CM) []byte {
	t.Helper()
	buf := make([]byte, 512)
	k, err := x.Peer(buf)
	require.NoError(t, err, "get peer")
	require.Positive(t, k, "empty peer address")
	return buf[:k]
}

// connReq waits for the next event on the listener's queue and requires a
// connection request from the passive endpoint.
func (l *listener) connReq(t testing.TB, s *suite) *eq.ConnReq {
	t.Helper()
	req := expectEvent[*eq.ConnReq](t, s, l.eq)
	require.NotNil(t, req.Info, "connection request without an Info")
	require.NotNil(t, req.Info.Handle, "connection request without a handle (fi_info.handle)")
	requireSameFid(t, l.pep, req.Fid, "the request's fid is the passive endpoint")
	return req
}

// epOpts tunes how a peer's endpoint is bound.
type epOpts struct {
	// selective binds the CQ for sends with fi.FlagSelectiveCompletion.
	selective bool
	// counters opens and binds a send and a receive counter.
	counters bool
	// wait is the wait object of the CQ and the counters (fi.WaitNone
	// when zero).
	wait fi.WaitObj
}

// peer is one side of a connection: an active endpoint with its domain,
// event queue and completion queue (format data), bound and enabled.
type peer struct {
	role   string
	info   *fi.Info
	fabric fi.Fabric
	domain fi.Domain
	eq     eq.EventQueue
	cq     eq.CompletionQueue
	// txCntr and rxCntr count sends and receives; nil unless
	// epOpts.counters.
	txCntr, rxCntr eq.Counter
	ep             ep.Endpoint
	cm             ep.CM
	// got holds the entries poll read from cq and take has not returned
	// yet, in the order the CQ gave them.
	got []cqEntry
	// mrLocal says the domain requires local MR descriptors
	// (FI_MR_LOCAL).
	mrLocal bool
}

// cqEntry is a completion or an error completion.
type cqEntry struct {
	c   eq.Completion
	err *eq.CQError
}

// openPeer opens a domain of fabric for info, an event queue, a CQ and an
// endpoint, binds them and enables the endpoint. role names the side in
// failure messages.
func (s *suite) openPeer(t testing.TB, role string, fabric fi.Fabric, info *fi.Info, o epOpts) *peer {
	t.Helper()
	p := &peer{role: role, info: info, fabric: fabric}
	p.mrLocal = info.DomainAttr != nil && info.DomainAttr.MRMode&fi.MRModeLocal != 0
	var err error
	p.domain, err = fabric.OpenDomain(info)
	require.NoError(t, err, "%s: open domain", role)
	keep(t, p.domain)
	p.eq, err = eq.OpenEQ(fabric, &eq.Attr{})
	require.NoError(t, err, "%s: open eq", role)
	keep(t, p.eq)
	p.cq, err = eq.OpenCQ(p.domain, &eq.CQAttr{Format: eq.FormatData, WaitObj: o.wait})
	skipIfAbsent(t, err, "completion queues")
	keep(t, p.cq)
	p.ep, err = ep.Open(p.domain, info)
	skipIfAbsent(t, err, "active endpoints")
	keep(t, p.ep)
	cm, ok := p.ep.(ep.CM)
	if !ok {
		t.Skipf("provider's endpoint %T has no connection management (ep.CM)", p.ep)
	}
	p.cm = cm
	require.NoError(t, p.ep.Bind(p.eq, 0), "%s: bind eq", role)
	if o.selective {
		require.NoError(t, p.ep.Bind(p.cq, fi.FlagSend|fi.FlagSelectiveCompletion), "%s: bind cq for selective sends", role)
		require.NoError(t, p.ep.Bind(p.cq, fi.FlagRecv), "%s: bind cq for receives", role)
	} else {
		require.NoError(t, p.ep.Bind(p.cq, fi.FlagSend|fi.FlagRecv), "%s: bind cq", role)
	}
	if o.counters {
		p.bindCounters(t, o.wait)
	}
	require.NoError(t, p.ep.Enable(), "%s: enable", role)
	return p
}

// bindCounters opens a send and a receive counter with wait object wait
// on x's domain and binds them to x's endpoint, not yet enabled; it skips
// when the domain has no counters.
func (x *peer) bindCounters(t testing.TB, wait fi.WaitObj) {
	t.Helper()
	var err error
	x.txCntr, err = eq.OpenCounter(x.domain, &eq.CounterAttr{WaitObj: wait})
	skipIfAbsent(t, err, "counters")
	keep(t, x.txCntr)
	x.rxCntr, err = eq.OpenCounter(x.domain, &eq.CounterAttr{WaitObj: wait})
	require.NoError(t, err, "%s: open counter", x.role)
	keep(t, x.rxCntr)
	require.NoError(t, x.ep.Bind(x.txCntr, fi.FlagSend), "%s: bind send counter", x.role)
	require.NoError(t, x.ep.Bind(x.rxCntr, fi.FlagRecv), "%s: bind receive counter", x.role)
	// Cleanups run last-in first-out: the endpoint, opened before the
	// counters, must close before them.
	keep(t, x.ep)
}

// client opens the connecting side for the listener's address: GetInfo
// with the listener's name as destination, and its own fabric.
func (s *suite) client(t testing.TB, l *listener, o epOpts) *peer {
	t.Helper()
	return s.clientTo(t, l.info.AddrFormat, l.name, o)
}

// clientTo is client for any destination address dest of format f.
func (s *suite) clientTo(t testing.TB, f fi.AddrFormat, dest []byte, o epOpts) *peer {
	t.Helper()
	h := s.hints(fi.EPTypeMsg)
	h.AddrFormat, h.DestAddr = f, dest
	infos, err := fi.GetInfo(s.ctx(t), "", "", 0, h)
	require.NoError(t, err, "client getinfo for the listener's address")
	require.NotEmpty(t, infos)
	fabric, err := fi.OpenFabric(infos[0])
	require.NoError(t, err, "client: open fabric")
	keep(t, fabric)
	return s.openPeer(t, "client", fabric, infos[0], o)
}

// server opens the accepting side for req on the listener's fabric, bound
// and enabled but not yet accepted.
func (s *suite) server(t testing.TB, l *listener, req *eq.ConnReq, o epOpts) *peer {
	t.Helper()
	return s.openPeer(t, "server", l.fabric, req.Info, o)
}

// pair is a connected client and server.
type pair struct {
	l              *listener
	client, server *peer
}

// connect connects a new client to l, carrying cdata with Connect and
// adata with Accept, and checks the events and private data of fi_cm(3)'s
// flow on both sides.
func (s *suite) connect(t testing.TB, l *listener, o epOpts, cdata, adata []byte) *pair {
	t.Helper()
	return s.connectFrom(t, l, s.client(t, l, o), o, cdata, adata)
}

// connectFrom is connect for a client opened already.
func (s *suite) connectFrom(t testing.TB, l *listener, c *peer, o epOpts, cdata, adata []byte) *pair {
	t.Helper()
	require.NoError(t, c.cm.Connect(l.name, cdata), "connect")
	req := l.connReq(t, s)
	require.Equal(t, len(cdata), len(req.Data), "connection request's private data length")
	if len(cdata) > 0 {
		require.Equal(t, cdata, req.Data, "connection request's private data")
	}
	srv := s.server(t, l, req, o)
	require.NoError(t, srv.cm.Accept(adata), "accept")
	p := &pair{l: l, client: c, server: srv}
	p.connected(t, s, adata)
	return p
}

// connected waits for eq.Connected on both sides and checks the fids and
// the accept's private data at the client.
func (p *pair) connected(t testing.TB, s *suite, adata []byte) {
	t.Helper()
	sc := expectEvent[*eq.Connected](t, s, p.server.eq)
	requireSameFid(t, p.server.ep, sc.Fid, "server's Connected names the accepting endpoint")
	cc := expectEvent[*eq.Connected](t, s, p.client.eq)
	requireSameFid(t, p.client.ep, cc.Fid, "client's Connected names the connecting endpoint")
	require.Equal(t, len(adata), len(cc.Data), "accept's private data length at the client")
	if len(adata) > 0 {
		require.Equal(t, adata, cc.Data, "accept's private data at the client")
	}
}

// pair opens a listener and connects a client to it with no private data.
func (s *suite) pair(t testing.TB, o epOpts) *pair {
	t.Helper()
	return s.connect(t, s.listen(t), o, nil, nil)
}

// Close closes both endpoints (fi_close without fi_shutdown). After it
// returns no event or completion may be added to either side's queues: a
// closed endpoint writes none, and Close waits for the endpoint's work.
func (p *pair) Close(t testing.TB) {
	t.Helper()
	require.NoError(t, p.client.ep.Close(), "close client endpoint")
	require.NoError(t, p.server.ep.Close(), "close server endpoint")
}

// poll reads every completion and error entry both sides' CQs hold into
// their got lists. Reading drives progress under FI_PROGRESS_MANUAL.
func (p *pair) poll(t testing.TB) {
	t.Helper()
	p.client.poll(t)
	p.server.poll(t)
}

func (x *peer) poll(t testing.TB) {
	t.Helper()
	var buf [16]eq.Completion
	for {
		n, err := x.cq.Read(buf[:])
		for _, c := range buf[:n] {
			x.got = append(x.got, cqEntry{c: c})
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, fi.EAGAIN):
			return
		case errors.Is(err, fi.EAVAIL):
			e, rerr := x.cq.ReadErr()
			require.NoError(t, rerr, "%s: ReadErr after EAVAIL", x.role)
			x.got = append(x.got, cqEntry{err: e})
		default:
			require.NoError(t, err, "%s: cq read", x.role)
		}
	}
}

// until polls both sides until cond holds, failing at the suite's
// timeout with what.
func (p *pair) until(t testing.TB, s *suite, what string, cond func() bool) {
	t.Helper()
	ctx := s.ctx(t)
	for {
		p.poll(t)
		if cond() {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s (client has %d entries, server %d)", what, len(p.client.got), len(p.server.got))
		}
		runtime.Gosched()
	}
}

// post calls op until it returns something other than fi.EAGAIN, polling
// both sides meanwhile, and requires success.
func (p *pair) post(t testing.TB, s *suite, what string, op func() error) {
	t.Helper()
	ctx := s.ctx(t)
	for {
		err := op()
		if !errors.Is(err, fi.EAGAIN) {
			require.NoError(t, err, what)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: still fi.EAGAIN at the timeout", what)
		}
		p.poll(t)
		runtime.Gosched()
	}
}

// take polls until x has n entries and returns them, removed from x.got.
func (p *pair) take(t testing.TB, s *suite, x *peer, n int) []cqEntry {
	t.Helper()
	p.until(t, s, x.role+" completions", func() bool { return len(x.got) >= n })
	out := append([]cqEntry(nil), x.got[:n]...)
	x.got = x.got[n:]
	return out
}

// completions is take requiring no error entry among them.
func (p *pair) completions(t testing.TB, s *suite, x *peer, n int) []eq.Completion {
	t.Helper()
	out := make([]eq.Completion, 0, n)
	for i, e := range p.take(t, s, x, n) {
		require.Nil(t, e.err, "%s: completion %d is an error entry: %v", x.role, i, e.err)
		out = append(out, e.c)
	}
	return out
}

// completion is completions for one entry.
func (p *pair) completion(t testing.TB, s *suite, x *peer) eq.Completion {
	t.Helper()
	return p.completions(t, s, x, 1)[0]
}

// cqError takes x's next entry and requires an error entry.
func (p *pair) cqError(t testing.TB, s *suite, x *peer) *eq.CQError {
	t.Helper()
	e := p.take(t, s, x, 1)[0]
	require.NotNil(t, e.err, "%s: got completion %+v, want an error entry", x.role, e.c)
	return e.err
}

// requireCQEmpty polls x's CQ once and requires that it held nothing and
// that nothing read earlier is left untaken.
func (x *peer) requireCQEmpty(t testing.TB) {
	t.Helper()
	x.poll(t)
	require.Empty(t, x.got, "%s: unexpected completions", x.role)
}

// desc returns the local descriptor for buf: nil unless the domain
// requires local registration (FI_MR_LOCAL), in which case buf is
// registered for the life of the test.
func (x *peer) desc(t testing.TB, buf []byte) any {
	t.Helper()
	if !x.mrLocal {
		return nil
	}
	mr, err := fi.RegisterMR(x.domain, &fi.MRAttr{Buf: buf,
		Access: fi.AccessSend | fi.AccessRecv | fi.AccessRead | fi.AccessWrite}, 0)
	require.NoError(t, err, "%s: register a local buffer (FI_MR_LOCAL)", x.role)
	keep(t, mr)
	return mr.Desc()
}

// event waits for the next event or error entry on q.
func (s *suite) event(t testing.TB, q eq.EventQueue) (eq.Event, *eq.EQError) {
	t.Helper()
	ev, err := q.SRead(s.ctx(t))
	if errors.Is(err, fi.EAVAIL) {
		e, rerr := q.ReadErr()
		require.NoError(t, rerr, "ReadErr after EAVAIL")
		return nil, e
	}
	require.NoError(t, err, "waiting for an event")
	return ev, nil
}

// expectEvent waits for the next entry on q and requires an event of type
// T.
func expectEvent[T eq.Event](t testing.TB, s *suite, q eq.EventQueue) T {
	t.Helper()
	ev, e := s.event(t, q)
	var want T
	if e != nil {
		t.Fatalf("got error event %v (prov_errno %d, err data %q), want %T", e.Err, e.ProvErrno, e.ErrData, want)
	}
	got, ok := ev.(T)
	require.True(t, ok, "got %T (%v), want %T", ev, ev.Type(), want)
	return got
}

// expectEQError waits for the next entry on q and requires an error
// entry.
func (s *suite) expectEQError(t testing.TB, q eq.EventQueue) *eq.EQError {
	t.Helper()
	ev, e := s.event(t, q)
	if e == nil {
		t.Fatalf("got %T (%v), want an error event", ev, ev.Type())
	}
	return e
}

// requireNoEvent requires q to be empty now.
func requireNoEvent(t testing.TB, q eq.EventQueue) {
	t.Helper()
	ev, err := q.Read()
	if err == nil {
		t.Fatalf("unexpected event %T (%v)", ev, ev.Type())
	}
	require.ErrorIs(t, err, fi.EAGAIN, "an empty event queue")
}

// pattern returns n bytes that differ from one seed to the next.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

// requireSameFid requires got to be the object want (interface identity,
// not deep equality: objects hold live state).
func requireSameFid(t testing.TB, want, got fi.Fid, what string) {
	t.Helper()
	if want != got {
		t.Fatalf("%s: got %T %p, want %T %p", what, got, got, want, want)
	}
}

// The two-process connection helpers: the parent holds the listener and
// the accepting side, the peer process the connecting side.

// listen2 listens, starts the peer process of the current "2proc" test
// and sends it the listener's address format and name.
func (s *suite) listen2(t *testing.T) (*listener, *link) {
	t.Helper()
	l := s.listen(t)
	lk := s.spawn(t, nil)
	lk.sendU64(t, "format", uint64(l.info.AddrFormat))
	lk.send(t, "name", l.name)
	return l, lk
}

// client2 is the peer process's client: it reads the listener's format
// and name from lk, opens a client for them and has lk drive its
// progress. It returns the client and the listener's name.
func (s *suite) client2(t testing.TB, lk *link, o epOpts) (*peer, []byte) {
	t.Helper()
	f := fi.AddrFormat(lk.recvU64(t, "format"))
	dest := lk.recv(t, "name")
	c := s.clientTo(t, f, dest, o)
	lk.poll = c.poll
	return c, dest
}

// accept2 is the parent's side of a connection with the peer process:
// it reads the private data the peer announced ("cdata"), requires it on
// the next connection request, opens the server, announces ("adata") and
// accepts with adata(max), max being the server's CMDataSize, and waits
// for eq.Connected. lk drives the server's progress from then on.
func (s *suite) accept2(t testing.TB, l *listener, lk *link, o epOpts, adata func(max int) []byte) *peer {
	t.Helper()
	cdata := lk.recv(t, "cdata")
	req := l.connReq(t, s)
	require.Equal(t, len(cdata), len(req.Data), "connection request's private data length")
	if len(cdata) > 0 {
		require.Equal(t, cdata, req.Data, "connection request's private data")
	}
	srv := s.server(t, l, req, o)
	lk.poll = srv.poll
	data := adata(srv.cm.CMDataSize())
	lk.send(t, "adata", data)
	require.NoError(t, srv.cm.Accept(data), "accept")
	sc := expectEvent[*eq.Connected](t, s, srv.eq)
	requireSameFid(t, srv.ep, sc.Fid, "server's Connected names the accepting endpoint")
	return srv
}

// connect2 is the peer process's side of accept2: it announces
// cdata(max), max being c's CMDataSize, connects c to dest with it, and
// waits for eq.Connected with the private data the parent announced.
func (s *suite) connect2(t testing.TB, lk *link, c *peer, dest []byte, cdata func(max int) []byte) {
	t.Helper()
	data := cdata(c.cm.CMDataSize())
	lk.send(t, "cdata", data)
	require.NoError(t, c.cm.Connect(dest, data), "connect")
	adata := lk.recv(t, "adata")
	cc := expectEvent[*eq.Connected](t, s, c.eq)
	requireSameFid(t, c.ep, cc.Fid, "client's Connected names the connecting endpoint")
	require.Equal(t, len(adata), len(cc.Data), "accept's private data length at the client")
	if len(adata) > 0 {
		require.Equal(t, adata, cc.Data, "accept's private data at the client")
	}
}

// alone is a pair whose both sides are x: the pair's helpers (post,
// take, completions) for the one side a process of a two-process test
// holds.
func alone(x *peer) *pair {
	return &pair{client: x, server: x}
}
