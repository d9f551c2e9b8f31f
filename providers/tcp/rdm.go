//go:build linux

package tcp

import (
	"math"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// rdmEndpoint is a reliable unconnected endpoint (struct fid_ep;
// FI_EP_RDM, fi_endpoint(3), fi_msg(3), fi_tagged(3), fi_rma(3)) speaking
// ofi_rxm's protocol over this provider's own connections, as C libfabric
// layers tcp;ofi_rxm (docs/wire-tcp.md, §3): a passive endpoint whose
// address is the endpoint's name, and at most one connection per peer,
// opened on the first send to it or accepted from it. Safe for concurrent
// use.
type rdmEndpoint struct {
	domain  *domain
	info    *fi.Info
	msgInfo *fi.Info // what its connections are opened with
	bind    kit.Bindings
	// The adapter gives the endpoint fi_msg(3), fi_tagged(3) and
	// fi_rma(3) over PostTx and PostRx (rdmapi.go).
	kit.MsgOps
	kit.TaggedOps
	kit.RMAOps
	enabled, closed atomic.Bool
	pid             uint32
	rxSize          int // posted receives of each kind (rx_attr.size)

	// Fixed at Enable.
	av *kit.AV
	kit.Completions[epSet]

	pep  *passiveEP
	name []byte         // the listener's address, the endpoint's name
	self netip.AddrPort // name, parsed

	// cmMu guards the peers and connections.
	cmMu    sync.Mutex
	peers   map[netip.AddrPort]*rdmPeer
	byIndex []*rdmPeer
	conns   map[*endpoint]struct{}
	cache   atomic.Pointer[peerCache]
	closers sync.WaitGroup // connections being closed in the background

	// mu guards the matching state (rdmdata.go).
	mu sync.Mutex
	mt matcher

	// rndv are the rendezvous sends waiting for their read-done.
	rndvMu   sync.Mutex
	rndv     [queueSize]rndvSend
	rndvFree []uint16
	mrKey    uint64 // rxm's key counter (§3.5)
}

// rdmPeer is one peer address: its connection, once there is one.
type rdmPeer struct {
	addr  netip.AddrPort
	name  []byte // its sockaddr
	index uint32 // our index for it: the low half of our conn_ids
	// conn carries our sends to it (nil until connected); out is our own
	// connection attempt in flight.
	conn    atomic.Pointer[endpoint]
	out     *endpoint
	pid     uint32   // the peer process's id from its record, 0 before
	lastErr fi.Errno // why the last series of attempts failed, for the next send
	// A series of attempts: a refused one is tried again from retryAt,
	// backoff after the last, until FI_TCP_CONN_TIMEOUT after tryStart.
	tryStart, retryAt time.Time
	backoff           time.Duration
	// src caches the peer's fi.Addr in the AV (FI_SOURCE, directed
	// receives) for AV version srcVer-1.
	src    atomic.Uint64
	srcVer atomic.Uint64
}

// peerCache maps fi.Addr to peers for one AV version.
type peerCache struct {
	ver   uint64
	peers []*rdmPeer
}

var (
	_ ep.Endpoint = (*rdmEndpoint)(nil)
	_ ep.Namer    = (*rdmEndpoint)(nil)
	_ ep.Msg      = (*rdmEndpoint)(nil)
	_ ep.Tagged   = (*rdmEndpoint)(nil)
	_ ep.RMA      = (*rdmEndpoint)(nil)
)

// openRDM opens an RDM endpoint (fi_endpoint with FI_EP_RDM): its
// listener binds info's source address at once, so Name answers before
// Enable.
func (d *domain) openRDM(info *fi.Info) (*rdmEndpoint, error) {
	_, rxSize, err := queueSizes(info, rdmMaxTxSize, rdmMaxRxSize, rdmQueueSize)
	if err != nil {
		return nil, err
	}
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	r := &rdmEndpoint{domain: d, info: info.Clone(), pid: uint32(os.Getpid()), rxSize: rxSize,
		peers: make(map[netip.AddrPort]*rdmPeer), conns: make(map[*endpoint]struct{})}
	if r.info.Caps == 0 {
		r.info.Caps = rdmCaps
	}
	ops := kit.NewOps(r, "tcp", r.info)
	r.MsgOps, r.TaggedOps, r.RMAOps = kit.MsgOps{Ops: ops}, kit.TaggedOps{Ops: ops}, kit.RMAOps{Ops: ops}
	r.msgInfo = d.Info().Clone()
	r.msgInfo.Handle = nil
	r.msgInfo.SrcAddr = r.info.SrcAddr
	r.msgInfo.DestAddr = nil
	r.msgInfo.EPAttr = &fi.EPAttr{Type: fi.EPTypeMsg}
	r.msgInfo.Caps = infoCaps
	// The connections' own queues: the default transmit depth per peer,
	// and one receive (the RDM endpoint matches receives itself).
	r.msgInfo.TxAttr = &fi.TxAttr{Size: queueSize}
	r.msgInfo.RxAttr = &fi.RxAttr{Size: 1}
	r.msgInfo.AddrFormat = r.info.AddrFormat
	r.bind.Init(r.info)
	r.rndvFree = make([]uint16, queueSize)
	for i := range r.rndvFree {
		r.rndvFree[i] = uint16(queueSize - 1 - i)
	}
	r.mt.init()
	p, err := d.fabric.OpenPassive(r.msgInfo)
	if err != nil {
		d.Release(kit.KindEndpoint)
		return nil, errors.Wrap(err, "tcp: open rdm endpoint: listener")
	}
	r.pep = p.(*passiveEP)
	r.pep.onReq, r.pep.EQOptional = r.onRequest, true
	// Requests are answered as they are read, by at most maxHandshakes
	// readers at once: no backlog to refuse them from, whatever
	// net.core.somaxconn says.
	_ = r.pep.SetBacklog(math.MaxInt32)
	return r, nil
}

// Info returns the Info the endpoint was opened with.
func (r *rdmEndpoint) Info() *fi.Info { return r.info }

// Bind binds an address vector, completion queue or counter of this
// domain (fi_ep_bind); the rules are kit.Bindings'.
func (r *rdmEndpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&r.bind, "tcp", r.closed.Load(), obj, flags)
}

// Enable checks the bindings (an AV, and a CQ or counter for each
// direction) and starts listening for peers (fi_enable).
func (r *rdmEndpoint) Enable() error {
	if err := r.bind.CheckEnableOpen("tcp", r.closed.Load()); err != nil {
		return err
	}
	if r.enabled.Load() {
		return nil
	}
	b := &r.bind
	r.av = b.AV.(*addrVector).AV
	r.Resolve(b)
	n, err := r.pep.Name(nil)
	if err != nil && !errors.Is(err, fi.ETOOSMALL) {
		return err
	}
	r.name = make([]byte, n)
	if _, err := r.pep.Name(r.name); err != nil {
		return err
	}
	r.self, _, _ = fi.AddrPortFromSockaddr(r.name)
	if err := r.pep.Listen(); err != nil {
		return errors.Wrap(err, "tcp: enable rdm endpoint")
	}
	r.enabled.Store(true)
	return nil
}

// Name copies the endpoint's address (its listener's sockaddr) into buf
// (fi_getname), with the ETOOSMALL rule of ep.Namer.
func (r *rdmEndpoint) Name(buf []byte) (int, error) {
	if r.closed.Load() {
		return 0, errors.Wrap(fi.EBADF, "tcp: getname: endpoint closed")
	}
	return r.pep.Name(buf)
}

// SetName binds the endpoint to addr (fi_setname) before Enable; port 0
// picks one.
func (r *rdmEndpoint) SetName(addr []byte) error {
	if r.enabled.Load() {
		return errors.Wrap(fi.EOPBADSTATE, "tcp: setname: endpoint already enabled")
	}
	return r.pep.SetName(addr)
}

// Cancel cancels the posted receive with context ctx (fi_cancel): it
// completes with an fi.ECANCELED error entry; fi.ENOENT when there is none.
func (r *rdmEndpoint) Cancel(ctx any) error {
	return kit.Canceled(r.mt.cancel(r, ctx))
}

// Close closes the endpoint (fi_close): the listener stops, every
// connection is cut (peers see it end and fail what they had pending with
// us), and pending operations complete with fi.ECANCELED error entries.
// A second Close returns fi.EBADF.
func (r *rdmEndpoint) Close() error {
	if r.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "tcp: close endpoint: already closed")
	}
	_ = r.pep.Close()
	r.cmMu.Lock()
	conns := make([]*endpoint, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.cmMu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	r.closers.Wait()
	r.failRndv(nil, fi.ECANCELED)
	r.mt.flush(r, fi.ECANCELED)
	r.bind.Release()
	r.domain.Release(kit.KindEndpoint)
	return nil
}

// peerFor returns the peer behind fi.Addr dest, creating its entry; nil
// when dest is not in the AV. It does not allocate once the peer is known.
func (r *rdmEndpoint) peerFor(dest fi.Addr) *rdmPeer {
	ver := r.av.Version()
	if c := r.cache.Load(); c != nil && c.ver == ver && uint64(dest) < uint64(len(c.peers)) {
		if p := c.peers[dest]; p != nil {
			return p
		}
	}
	name, ok := r.av.Addr(dest)
	if !ok {
		return nil
	}
	ap, _, err := fi.AddrPortFromSockaddr(name)
	if err != nil {
		return nil
	}
	r.cmMu.Lock()
	defer r.cmMu.Unlock()
	p := r.peerLocked(ap)
	c := r.cache.Load()
	var peers []*rdmPeer
	if c != nil && c.ver == ver {
		peers = c.peers
	}
	if uint64(dest) >= uint64(len(peers)) {
		peers = append(append([]*rdmPeer(nil), peers...), make([]*rdmPeer, int(dest)+1-len(peers))...)
	} else {
		peers = append([]*rdmPeer(nil), peers...)
	}
	peers[dest] = p
	r.cache.Store(&peerCache{ver: ver, peers: peers})
	return p
}

// peerLocked returns the entry of address ap, creating it; cmMu is held.
func (r *rdmEndpoint) peerLocked(ap netip.AddrPort) *rdmPeer {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if p := r.peers[ap]; p != nil {
		return p
	}
	_, name, _ := fi.SockaddrFromAddrPort(ap)
	if r.self.Addr().Is6() && ap.Addr().Is4() {
		_, name, _ = fi.SockaddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(ap.Addr().As16()), ap.Port()))
	}
	p := &rdmPeer{addr: ap, name: name, index: uint32(len(r.byIndex))}
	r.peers[ap] = p
	r.byIndex = append(r.byIndex, p)
	return p
}

// source returns the fi.Addr of peer p in the AV, fi.AddrUnspec when it is
// not there; cached per AV version.
func (r *rdmEndpoint) source(p *rdmPeer) fi.Addr {
	if p == nil {
		return fi.AddrUnspec
	}
	ver := r.av.Version() + 1
	if p.srcVer.Load() == ver {
		return fi.Addr(p.src.Load())
	}
	fa := r.av.Find(p.name)
	p.src.Store(uint64(fa))
	p.srcVer.Store(ver)
	return fa
}

// connFor returns the connection that carries sends to p, starting one
// when there is none: fi.EAGAIN until it is up (reading the CQ lets the
// connection proceed; the CM runs on its own goroutines), or the error
// that ended the last attempt, once.
func (r *rdmEndpoint) connFor(p *rdmPeer) (*endpoint, error) {
	if c := p.conn.Load(); c != nil {
		return c, nil
	}
	r.cmMu.Lock()
	defer r.cmMu.Unlock()
	if c := p.conn.Load(); c != nil {
		return c, nil
	}
	if p.out != nil {
		return nil, fi.EAGAIN
	}
	if code := p.lastErr; code != 0 {
		p.lastErr = 0
		return nil, errors.Wrapf(code, "tcp: rdm: connection to %v failed", p.addr)
	}
	if r.closed.Load() {
		return nil, fi.EBADF
	}
	now := time.Now()
	if now.Before(p.retryAt) {
		return nil, fi.EAGAIN
	}
	if p.tryStart.IsZero() {
		p.tryStart = now
	}
	c, err := r.newConn(nil, p)
	if err != nil {
		return nil, err
	}
	rec := rxmwire.ConnectRecord{Port: r.self.Port(), FlowCtrl: rxmwire.FlowCtrlOff, EagerLimit: rxmwire.EagerLimit,
		RxSize: rxmwire.RxSize, ConnID: rxmwire.MakeConnID(r.pid, p.index)}
	if err := c.Connect(p.name, rxmwire.AppendConnect(nil, &rec)); err != nil {
		delete(r.conns, c)
		r.closeLater(c)
		return nil, errors.Wrap(err, "tcp: rdm: connect")
	}
	p.out = c
	return nil, fi.EAGAIN
}

// newConn opens a connection endpoint for peer p, for request req or, with
// req nil, to connect from the IP of the endpoint's name; cmMu is held or
// the endpoint not yet shared.
func (r *rdmEndpoint) newConn(req *connReq, p *rdmPeer) (*endpoint, error) {
	info := r.msgInfo
	if req != nil {
		info = info.Clone()
		info.Handle = req
	}
	x, err := r.domain.OpenEndpoint(info)
	if err != nil {
		return nil, err
	}
	c := x.(*endpoint)
	c.rdm, c.peer = r, p
	c.dp.rdm, c.dp.tagged, c.dp.watched = r, true, true
	c.dp.rx.ourID = uint64(p.index)
	c.Completions = r.Completions
	if req == nil && !r.self.Addr().IsUnspecified() {
		_, c.localName, _ = fi.SockaddrFromAddrPort(netip.AddrPortFrom(r.self.Addr(), 0))
	}
	c.enabledAt.Store(true)
	for _, s := range c.Sets {
		s.Add(c)
	}
	r.conns[c] = struct{}{}
	return c, nil
}

// closeLater closes connection c on a goroutine of its own: its events
// arrive with its lock held.
func (r *rdmEndpoint) closeLater(c *endpoint) {
	r.closers.Add(1)
	go func() {
		defer r.closers.Done()
		_ = c.Close()
	}()
}

// connEvent takes the CM events of connection c (instead of an event
// queue): ev, or an error code with the reject's data.
func (r *rdmEndpoint) connEvent(c *endpoint, ev eq.Event, code fi.Errno, data []byte) {
	r.cmMu.Lock()
	defer r.cmMu.Unlock()
	p := c.peer
	switch ev.(type) {
	case *eq.Connected:
		if c.req != nil {
			return // accepted: onRequest set it up
		}
		if p.out != c {
			r.dropLocked(c)
			return
		}
		p.out = nil
		p.pid = c.dp.rx.peerPID
		p.endSeries()
		p.lastErr = 0
		if old := p.conn.Load(); old != nil && old != c {
			return // the peer's own connection won meanwhile; ours only receives
		}
		p.conn.Store(c)
	case *eq.Shutdown:
		r.dropLocked(c)
	default: // an error: refused, timed out, unreachable
		if p.out == c {
			p.out = nil
			r.attemptFailedLocked(p, code)
		}
		r.dropLocked(c)
	}
}

// The pause before a refused connection attempt is tried again: it
// doubles from retryMin to retryMax.
const (
	retryMin = time.Millisecond
	retryMax = time.Second
)

// attemptFailedLocked takes the failure of our connection attempt to p
// (cmMu held). A refusal (nothing listening yet, a backlog or the peer's
// rxm refusing, "already connected" while the peer's own connection wins)
// or a reset before the answer (a listener flooded with silent sockets
// closes the oldest) is tried again by a later send, after a pause, as
// long as the series is younger than FI_TCP_CONN_TIMEOUT; then, or for
// any other failure, the next send reports the error, once.
func (r *rdmEndpoint) attemptFailedLocked(p *rdmPeer, code fi.Errno) {
	if code == fi.ECONNREFUSED || code == fi.ECONNRESET {
		p.backoff = min(max(2*p.backoff, retryMin), retryMax)
		now := time.Now()
		if now.Add(p.backoff).Sub(p.tryStart) < r.domain.fabric.params.connTimeout {
			p.retryAt = now.Add(p.backoff)
			return
		}
	}
	p.lastErr = code
	p.endSeries()
}

// endSeries forgets the series of connection attempts (cmMu held).
func (p *rdmPeer) endSeries() {
	p.tryStart, p.retryAt, p.backoff = time.Time{}, time.Time{}, 0
}

// accepted checks the accept record of connection c's attempt and keeps
// the peer's index for the headers, before the connection carries data.
func (r *rdmEndpoint) accepted(c *endpoint, data []byte) bool {
	var rec rxmwire.AcceptRecord
	if err := rxmwire.ParseAccept(data, &rec); err != nil {
		fi.Logger(provName).Warn("tcp: rdm: bad accept record", "peer", c.peer.addr, "err", err)
		return false
	}
	c.dp.rx.connID = rxmwire.ConnIndex(rec.ConnID)
	c.dp.rx.peerPID = rxmwire.ConnPID(rec.ConnID)
	return true
}

// dropLocked forgets connection c and closes it; cmMu is held.
func (r *rdmEndpoint) dropLocked(c *endpoint) {
	if _, ok := r.conns[c]; !ok {
		return
	}
	delete(r.conns, c)
	if p := c.peer; p != nil {
		p.conn.CompareAndSwap(c, nil)
		if p.out == c {
			p.out = nil
		}
	}
	code := fi.ECANCELED
	if fi.Errno(c.lostWith.Load()) == fi.ETIMEDOUT {
		code = fi.ETIMEDOUT // the peer stopped answering
	}
	r.failRndv(c, code)
	r.mu.Lock()
	r.mt.dropConn(c)
	r.mu.Unlock()
	r.closeLater(c)
}

// onRequest answers a peer's connection request (§3.2): a bad record is
// rejected with reason 1; a peer we are connecting to at the same time is
// accepted or rejected with reason 2 by comparing addresses as rxm does. A
// request for a peer we have a connection with replaces that connection
// if it is gone (the peer closed or died and came back, maybe as another
// process); while it is alive the request is rejected with reason 2,
// whichever process it names: rxm's rule, for the same process, and
// unlike rxm (which takes another process's record as a restart and
// replaces the connection) for another one, so that a process on the
// peer's host cannot take over a live peer's connection by naming its
// address. A peer that really restarted while its old connection still
// looks alive (its host rebooted, the FIN was lost) is refused until that
// connection fails (FI_TCP_USER_TIMEOUT, or a send on it); it retries
// meanwhile, as C's rxm and this provider do after a reason-2 reject.
func (r *rdmEndpoint) onRequest(req *connReq, data []byte) {
	reject := func(reason rxmwire.RejectReason) {
		if err := req.pep.Backlog.Take(req); err == nil {
			req.reject(rxmwire.AppendReject(nil, reason))
		}
	}
	var rec rxmwire.ConnectRecord
	if err := rxmwire.ParseConnect(data, rxmwire.EagerLimit, &rec); err != nil {
		fi.Logger(provName).Warn("tcp: rdm: refused a connection request", "err", err)
		reject(rxmwire.RejectRefused)
		return
	}
	ip, _, err := fi.AddrPortFromSockaddr(req.peer)
	if err != nil || r.closed.Load() {
		reject(rxmwire.RejectRefused)
		return
	}
	key := netip.AddrPortFrom(ip.Addr().Unmap(), rec.Port)
	// Whether the connection we have with the peer is alive: looked at
	// outside cmMu (alive takes the connection's lock, which is held
	// when its events take cmMu).
	r.cmMu.Lock()
	p := r.peerLocked(key)
	old := p.conn.Load()
	r.cmMu.Unlock()
	live := old != nil && old.Alive()
	r.cmMu.Lock()
	if cur := p.conn.Load(); cur != old {
		live = cur != nil // changed meanwhile: a new one is alive
	}
	pid := rxmwire.ConnPID(rec.ConnID)
	var drop []*endpoint
	if p.out != nil {
		switch cmpAddrPort(key, r.self) {
		case -1:
			r.cmMu.Unlock()
			reject(rxmwire.RejectConnected)
			return
		case 1:
			drop = append(drop, p.out)
			p.out = nil
		}
	} else if cur := p.conn.Load(); cur != nil {
		if live {
			if pid != p.pid {
				fi.Logger(provName).Warn("tcp: rdm: refused a connection request naming a peer whose connection is alive",
					"peer", key, "pid", pid, "connected pid", p.pid)
			}
			r.cmMu.Unlock()
			reject(rxmwire.RejectConnected)
			return
		}
		drop = append(drop, cur)
	}
	for _, c := range drop {
		r.dropLocked(c)
	}
	c, err := r.newConn(req, p)
	if err != nil {
		r.cmMu.Unlock()
		reject(rxmwire.RejectRefused)
		return
	}
	c.dp.rx.connID = rxmwire.ConnIndex(rec.ConnID)
	c.dp.rx.peerPID = pid
	p.pid = pid
	// The connection carries our sends from now on: until Accept has put
	// it up they get fi.ENOTCONN, which send turns into fi.EAGAIN, rather
	// than a connection attempt of our own.
	if p.conn.Load() == nil {
		p.conn.Store(c)
	}
	p.endSeries()
	p.lastErr = 0
	r.cmMu.Unlock()
	acc := rxmwire.AcceptRecord{ConnID: rxmwire.MakeConnID(r.pid, p.index), RxSize: rxmwire.RxSize, FlowCtrl: rxmwire.FlowCtrlOff}
	if err := c.Accept(rxmwire.AppendAccept(nil, &acc)); err != nil || c.cs.State() != ep.CMConnected {
		r.cmMu.Lock()
		r.dropLocked(c)
		r.cmMu.Unlock()
	}
}

// cmpAddrPort orders two addresses as rxm's memcmp of sockaddrs does: the
// address bytes, then the port, in network order.
func cmpAddrPort(a, b netip.AddrPort) int {
	if c := a.Addr().Unmap().Compare(b.Addr().Unmap()); c != 0 {
		return c
	}
	switch {
	case a.Port() < b.Port():
		return -1
	case a.Port() > b.Port():
		return 1
	}
	return 0
}
