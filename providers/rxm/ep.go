package rxm

import (
	"context"
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

// The RDM endpoint over the core's FI_EP_MSG endpoints (C's struct
// rxm_ep, rxm_ep.c and rxm_conn.c): a listener for the peers' connection
// requests, one core event queue and completion queue for all its
// connections, and at most one connection per peer for sending, opened on
// the first send to it; every connection, opened or accepted, carries
// messages in. Step 2 of the layering: eager messages only (at most the
// eager limit), no rendezvous, no SAR, no RMA.

// bounceCount is how many bounce receives each connection keeps posted.
const bounceCount = 8

// epSet is rxm's set of driven endpoints, the type parameter of its kit
// objects: reading an rxm completion queue or counter reads the core
// completion queues of the endpoints bound to it (kit.Driver).
type epSet struct{ kit.Set[*endpoint] }

// Hooks gives rxm's queues the set's progress and wait hooks (kit.Driver).
func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }

// progress runs the progress of every endpoint in the set (C's
// rxm_ep_progress from util_cq's progress).
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.progress()
	}
}

// waitTick is how long a blocked reader of an rxm queue sleeps between
// two runs of progress: the core's queues are read, not waited on, in
// this step (C polls its core EQ every 10 ms likewise).
const waitTick = time.Millisecond

// wait is the queues' wait hook: it sleeps for a tick or until the queue
// wakes the reader.
func (s *epSet) wait(ctx context.Context) error {
	t := time.NewTimer(waitTick)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil
}

// peer is a remote rxm endpoint, by its name (its listener's address).
type peer struct {
	addr netip.AddrPort
	name []byte // addr as a sockaddr, as the AV holds it
	// index is ours for the peer: the low half of our conn ids.
	index uint32
	// send is the connection messages to the peer go on, nil until one
	// is connected; out is our connection attempt, nil when none runs.
	send, out *conn
	retryAt   time.Time
	backoff   time.Duration
}

// conn is one core FI_EP_MSG endpoint of the RDM endpoint.
type conn struct {
	ep        ep.Endpoint
	msg       ep.Msg
	cm        ep.CM
	peer      *peer
	remoteID  uint64 // ConnIndex of the peer's record: conn_id of our headers
	connected bool
	closed    bool
	rx        [bounceCount]rxBuf
}

// rxBuf is a bounce receive posted on a connection.
type rxBuf struct {
	c   *conn
	buf [rxmwire.HeaderSize + rxmwire.EagerLimit]byte
}

// txBuf is an eager send on its way: the rxm header as the first iov,
// the caller's buffers after it (C's direct send, rxm_msg.c).
type txBuf struct {
	hdr    [rxmwire.HeaderSize]byte
	iov    [1 + iovLimit][]byte
	msg    ep.Message
	ctx    any
	flags  fi.Flags
	report bool
	inline [rxmwire.HeaderSize + maxInject]byte
}

// maxInject is the most an inject carries here (inject_size is at most
// the core's less the header).
const maxInject = 256

// posted is a posted receive.
type posted struct {
	iov    [iovLimit][]byte
	niov   int
	ctx    any
	src    fi.Addr
	tag    uint64
	ignore uint64
	tagged bool
	report bool
}

// unexpected is a message that arrived before a receive matched it.
type unexpected struct {
	data   []byte
	src    fi.Addr
	tagged bool
	tag    uint64
	cqData uint64
	hasCQ  bool
}

// endpoint is an rxm FI_EP_RDM endpoint (struct fid_ep; C's struct
// rxm_ep). kit.MsgOps and kit.TaggedOps give it fi_msg(3) and
// fi_tagged(3) over PostTx and PostRx. Safe for concurrent use: mu
// guards its state.
type endpoint struct {
	kit.MsgOps
	kit.TaggedOps
	domain *domain
	info   *fi.Info
	b      kit.Bindings
	pid    uint32
	txSize int
	rxSize int
	closed atomic.Bool
	// cmStop ends the CM goroutine, cmDone says it ended.
	cmStop context.CancelFunc
	cmDone sync.WaitGroup

	mu      sync.Mutex
	enabled bool
	kit.Completions[epSet]
	av      *kit.AV
	msgEQ   eq.EventQueue
	msgCQ   eq.CompletionQueue
	pep     ep.PassiveEndpoint
	name    []byte
	self    netip.AddrPort
	msgInfo *fi.Info
	peers   map[netip.AddrPort]*peer
	npeers  uint32
	conns   map[fi.Fid]*conn
	free    []*txBuf
	recvs   []posted
	unexp   []unexpected
	entries [32]eq.Completion
	hdr     rxmwire.Header
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.Tagged   = (*endpoint)(nil)
	_ ep.Namer    = (*endpoint)(nil)
	_ kit.Poster  = (*endpoint)(nil)
)

// OpenEndpoint opens an rxm endpoint (fi_endpoint; C's rxm_endpoint):
// FI_EP_RDM only.
func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	prov := d.fabric.Prov()
	if info == nil || info.EPAttr == nil || info.EPAttr.Type != fi.EPTypeRDM {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open endpoint: rxm opens FI_EP_RDM endpoints only", prov)
	}
	tx, rx, err := kit.QueueSizes(prov, info, 16384, 65536, 128)
	if err != nil {
		return nil, err
	}
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	e := &endpoint{domain: d, info: kit.EndpointInfo(info, fi.EPTypeRDM, d.Info().Caps), pid: uint32(os.Getpid()),
		txSize: tx, rxSize: rx, peers: map[netip.AddrPort]*peer{}, conns: map[fi.Fid]*conn{}}
	ops := kit.NewOps(e, prov, e.info)
	e.MsgOps, e.TaggedOps = kit.MsgOps{Ops: ops}, kit.TaggedOps{Ops: ops}
	e.b.Init(e.info)
	e.free = make([]*txBuf, tx)
	for i := range e.free {
		e.free[i] = &txBuf{}
	}
	e.recvs = make([]posted, 0, rx)
	return e, nil
}

// Info returns the Info the endpoint was opened with.
func (e *endpoint) Info() *fi.Info { return e.info }

// Bind binds an rxm event queue, completion queue, counter or address
// vector (fi_ep_bind), with kit.Bindings' checks.
func (e *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&e.b, e.domain.fabric.Prov(), e.closed.Load(), obj, flags)
}

// Enable enables the endpoint (fi_enable; C's rxm_ep_ctrl FI_ENABLE):
// it opens the core event queue, completion queue and listener, whose
// address becomes the endpoint's name.
func (e *endpoint) Enable() error {
	prov := e.domain.fabric.Prov()
	if err := e.b.CheckEnableOpen(prov, e.closed.Load()); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enabled {
		return nil
	}
	if err := e.openCore(); err != nil {
		e.closeCore()
		return errors.Wrapf(err, "%s: enable", prov)
	}
	e.Resolve(&e.b)
	if a, ok := e.b.AV.(*kit.DomainAV[epSet]); ok {
		e.av = a.AV
	}
	e.enabled = true
	for _, s := range e.Sets {
		s.Add(e)
	}
	ctx, stop := context.WithCancel(context.Background())
	e.cmStop = stop
	e.cmDone.Add(1)
	go e.cmLoop(ctx, e.msgEQ)
	return nil
}

// openCore opens the core objects (C's rxm_ep_msg_res_open and
// rxm_start_listen); mu is held.
func (e *endpoint) openCore() error {
	var err error
	if e.msgEQ, err = eq.OpenEQ(e.domain.fabric.core, &eq.Attr{}); err != nil {
		return errors.Wrap(err, "core event queue")
	}
	if e.msgCQ, err = eq.OpenCQ(e.domain.core, &eq.CQAttr{Format: eq.FormatTagged, Size: 4096}); err != nil {
		return errors.Wrap(err, "core completion queue")
	}
	li := e.domain.coreInfo.Clone()
	li.DestAddr = nil
	if len(e.info.SrcAddr) > 0 {
		li.SrcAddr = append([]byte(nil), e.info.SrcAddr...)
	}
	if e.pep, err = ep.OpenPassive(e.domain.fabric.core, li); err != nil {
		return errors.Wrap(err, "core passive endpoint")
	}
	if err = e.pep.Bind(e.msgEQ, 0); err != nil {
		return errors.Wrap(err, "core passive endpoint")
	}
	if bs, ok := e.pep.(ep.BacklogSetter); ok {
		_ = bs.SetBacklog(1 << 16)
	}
	if err = e.pep.Listen(); err != nil {
		return errors.Wrap(err, "listen")
	}
	nm, ok := e.pep.(ep.Namer)
	if !ok {
		return errors.Wrap(fi.ENOSYS, "core passive endpoint has no name")
	}
	buf := make([]byte, 128)
	n, err := nm.Name(buf)
	if err != nil {
		return errors.Wrap(err, "listener name")
	}
	e.name = buf[:n]
	if e.self, _, err = fi.AddrPortFromSockaddr(e.name); err != nil {
		return errors.Wrap(err, "listener name")
	}
	e.msgInfo = e.domain.coreInfo.Clone()
	e.msgInfo.DestAddr = nil
	e.msgInfo.SrcAddr = nil
	if !e.self.Addr().IsUnspecified() {
		_, e.msgInfo.SrcAddr, _ = fi.SockaddrFromAddrPort(netip.AddrPortFrom(e.self.Addr(), 0))
	}
	return nil
}

// closeCore closes the core objects that are open; mu is held.
func (e *endpoint) closeCore() {
	for _, c := range e.conns {
		c.closed = true
		_ = c.ep.Close()
	}
	e.conns = map[fi.Fid]*conn{}
	if e.pep != nil {
		_ = e.pep.Close()
		e.pep = nil
	}
	if e.msgCQ != nil {
		_ = e.msgCQ.Close()
		e.msgCQ = nil
	}
	if e.msgEQ != nil {
		_ = e.msgEQ.Close()
		e.msgEQ = nil
	}
}

// Name copies the endpoint's name, its listener's address, into buf
// (fi_getname).
func (e *endpoint) Name(buf []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.name == nil {
		return 0, errors.Wrapf(fi.EOPBADSTATE, "%s: getname: endpoint not enabled", e.domain.fabric.Prov())
	}
	return kit.CopyName(buf, e.name)
}

// SetName is not supported (fi_setname): the name is the listener's.
func (e *endpoint) SetName([]byte) error {
	return errors.Wrapf(fi.ENOSYS, "%s: setname", e.domain.fabric.Prov())
}

// Close closes the endpoint (fi_close; C's rxm_ep_close): its
// connections and listener close, posted receives complete with
// fi.ECANCELED, and what was bound is released. A second Close gives
// fi.EBADF.
func (e *endpoint) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return fi.EBADF
	}
	e.mu.Lock()
	stop := e.cmStop
	e.mu.Unlock()
	if stop != nil {
		stop()
		e.cmDone.Wait()
	}
	e.mu.Lock()
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.closeCore()
	for _, r := range e.recvs {
		e.rxFailed(&eq.CQError{Context: r.ctx, Flags: recvFlags(r.tagged), Err: fi.ECANCELED})
	}
	e.recvs = e.recvs[:0]
	e.enabled = false
	e.mu.Unlock()
	e.b.Release()
	e.domain.Release(kit.KindEndpoint)
	return nil
}

// Cancel cancels the receive posted with ctx (fi_cancel): it completes
// with an fi.ECANCELED error entry; fi.ENOENT says none waits.
func (e *endpoint) Cancel(ctx any) error {
	if e.closed.Load() {
		return fi.EBADF
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.recvs {
		if kit.SameContext(e.recvs[i].ctx, ctx) {
			r := e.recvs[i]
			e.recvs = append(e.recvs[:i], e.recvs[i+1:]...)
			e.rxFailed(&eq.CQError{Context: r.ctx, Flags: recvFlags(r.tagged), Err: fi.ECANCELED})
			return nil
		}
	}
	return fi.ENOENT
}

func recvFlags(tagged bool) fi.Flags {
	if tagged {
		return fi.FlagRecv | fi.FlagTagged
	}
	return fi.FlagRecv | fi.FlagMsg
}

func sendFlags(tagged bool) fi.Flags {
	if tagged {
		return fi.FlagSend | fi.FlagTagged
	}
	return fi.FlagSend | fi.FlagMsg
}

// rxFailed reports a receive that ended in error; mu is held.
func (e *endpoint) rxFailed(ce *eq.CQError) {
	if e.RxCQ != nil {
		_ = e.RxCQ.CompleteErr(ce)
	}
	if e.Cntr[kit.CntrRecv] != nil {
		_ = e.Cntr[kit.CntrRecv].AddErr(1)
	}
}
