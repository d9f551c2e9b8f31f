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
// messages in. Messages up to the eager limit go eager, longer ones by
// the read-based rendezvous (rndv.go); RMA passes through to the peer's
// connection (rma.go). Messages above the eager limit up to the SAR limit
// go in segments of eager-limit bytes (sar.go). Over a core that needs
// registered buffers (FI_MR_LOCAL, as verbs), the bounce buffers come
// from slabs registered once (mrlocal.go).

// bounceCount is how many bounce receives each connection keeps posted
// over a core with flow control of its own (tcp). Over a core that needs
// registered buffers (verbs) a connection keeps FI_OFI_RXM_MSG_RX_SIZE
// posted (128), as C's rxm does: an RC queue pair whose peer finds no
// receive posted waits out an RNR timer before it sends again.
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
// two runs of progress when it cannot wait on a core completion queue:
// the queue drives several endpoints, or the one it drives is not
// enabled or its core queue failed.
const waitTick = time.Millisecond

// ticks counts the waits that slept a tick (for the tests).
var ticks atomic.Int64

// wait is the queues' wait hook (kit.WaitFunc; C's rxm_ep_trywait and
// the poll on its core queues' descriptors): with one endpoint in the
// set, it blocks on that endpoint's core completion queue until an entry
// is there (which the next progress takes), ctx ends (an rxm entry,
// Signal, Close) or the CM goroutine signals a connection event; with
// more, it sleeps a tick.
func (s *epSet) wait(ctx context.Context) error {
	if eps := s.Load(); len(eps) == 1 && eps[0].waitCore(ctx) {
		return nil
	}
	ticks.Add(1)
	t := time.NewTimer(waitTick)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil
}

// waitCore blocks on the endpoint's core completion queue until it holds
// an entry or ctx ends: it calls SRead with no room for entries, which in
// the kit's queues (those of gofabric's core providers) waits for an
// entry and leaves it queued, so that progress takes the entries in
// their order; while a connection is being set up or a rendezvous send
// waits for its peer it also ends every cmInterval, so that progress
// reads the connections' events. It reports false when it could not
// wait: the core queue is gone or failed, operations wait in the deferred queue, or the last
// such wait ended with nothing for progress to take (a core whose SRead
// does not wait without room: the caller sleeps a tick rather than
// spin).
func (e *endpoint) waitCore(ctx context.Context) bool {
	e.mu.Lock()
	cq, ok := e.msgCQ, e.enabled && len(e.deferConns) == 0 && !(e.woke && e.wokeAt == e.taken)
	taken, timed := e.taken, e.rndvOut > 0 || e.pending.Load() > 0
	e.unlock()
	if !ok || cq == nil {
		return false
	}
	wctx := ctx
	if timed {
		// The connections' events are read by progress: a connection
		// being set up, or a peer gone, which ends the rendezvous sends
		// waiting for it. Wake for them every cmInterval while they
		// matter; otherwise the core's completions wake the reader (a
		// lost connection fails what the core had queued on it), and a
		// blocked reader makes no timer and no allocation.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, cmInterval)
		defer cancel()
	}
	_, err := cq.SRead(wctx, e.noEntries[:0])
	woke := err == nil || err == fi.EAVAIL
	if !woke && ctx.Err() == nil {
		e.cmDue.Store(true) // the timed wake: progress reads the events
	}
	e.mu.Lock()
	e.woke, e.wokeAt = woke && ctx.Err() == nil, taken
	e.unlock()
	return woke || wctx.Err() != nil
}

// coreRefs are the core queues progress reads.
type coreRefs struct {
	cq eq.CompletionQueue
	rw eq.Counter
	eq eq.EventQueue
}

// peer is a remote rxm endpoint, by its name (its listener's address).
type peer struct {
	addr netip.AddrPort
	name []byte // addr as a sockaddr, as the AV holds it
	// index is ours for the peer: the low half of our conn ids. pid is
	// the peer's process id from its last record (pidKnown).
	index    uint32
	pid      uint32
	pidKnown bool
	// send is the connection messages to the peer go on, nil until one
	// is connected; out is our connection attempt, nil when none runs;
	// in is the peer's accepted connection while it is not yet
	// connected and there is no send (a send waits for it, as C's).
	send, out, in *conn
	// A series of connection attempts: a refused one is tried again
	// from retryAt, backoff after the last, until the fabric's connect
	// timeout after tryStart; lastErr is why the last series failed, for
	// the next send to return.
	tryStart, retryAt time.Time
	backoff           time.Duration
	lastErr           fi.Errno
}

// conn is one core FI_EP_MSG endpoint of the RDM endpoint.
type conn struct {
	ep        ep.Endpoint
	msg       ep.Msg
	cm        ep.CM
	peer      *peer
	remoteID  uint64 // ConnIndex of the peer's record: conn_id of our headers
	rma       ep.RMA // nil when the core endpoint has no fi_rma(3)
	connected bool
	// idKnown says remoteID is set: from the peer's connect record
	// (accepted) or accept record (opened).
	idKnown bool
	closed  bool
	// deferred are rxm's own operations the core refused with
	// fi.EAGAIN, or that wait for remoteID (C's deferred_tx_queue), in
	// order; progress posts them again.
	deferred []deferredOp
	// sars are the segmented messages arriving over the connection,
	// first segment seen, last not yet.
	sars []*sarRx
	// slab is the registration of the bounce receives' memory over a
	// core with FI_MR_LOCAL.
	slab fi.MR
	rx   []rxBuf
	// dyn is the core endpoint in dynamic receive mode, tag its tagged
	// operations (the raw tagged form); nil with bounce receives.
	// inResume says it is on the endpoint's resume list (dynrecv.go).
	dyn      kit.DynRecv
	tag      ep.Tagged
	inResume atomic.Bool
	// viaCQ counts its messages whose completions wait in the core
	// completion queue (DynCompleted declined them).
	viaCQ atomic.Int32
	// starved says a message waits for an unexpected buffer, an
	// atomic body's buffer or a response slot.
	starved bool
	// respOut counts the peer's atomic requests taken whose responses
	// are not sent yet (at most respLimit).
	respOut int
	// src is the peer's AV address (srcOf) while the AV's version is
	// srcVer-1.
	src    fi.Addr
	srcVer uint64
}

// deferredOp is an operation in a connection's deferred queue: a
// rendezvous receive's next step, the rest of a segmented send, or an
// atomic response.
type deferredOp struct {
	rr   *rndvRecv
	sar  *txBuf
	resp *txBuf
}

// rxBuf is a bounce receive posted on a connection: a header and an
// eager payload.
type rxBuf struct {
	c    *conn
	buf  []byte
	desc any // the core's descriptor of buf under FI_MR_LOCAL
}

// txKind is what a txBuf carries.
type txKind uint8

const (
	txEager      txKind = iota // an eager message
	txRndv                     // a rendezvous request; the send ends at read-done
	txRMA                      // an RMA operation passed to the core
	txSAR                      // a segmented message; it ends when its segments are sent
	txSeg                      // one segment of a txSAR, sent from the bounce buffer
	txAtomic                   // an atomic request; the operation ends at its response
	txAtomicResp               // an atomic response to a peer's request (atomic.go)
)

// txBuf is an application's transmit operation on its way (C's struct
// rxm_tx_buf): an eager message with the rxm header as the first iov and
// the caller's buffers after it (C's direct send, rxm_msg.c), a
// rendezvous request with the memory it registered, or an RMA operation.
// The endpoint keeps at most tx_attr.size of them, pooled.
type txBuf struct {
	kind txKind
	// inUse is set while the operation is on its way; idx is its place in
	// endpoint.txs and gen counts its uses: a rendezvous request's msg_id
	// is gen<<32 | idx.
	inUse  bool
	idx    uint32
	gen    uint32
	hdr    [rxmwire.HeaderSize + rxmwire.RndvDescSize]byte
	iov    [1 + iovLimit][]byte
	desc   [iovLimit]any
	msg    ep.Message
	rmsg   ep.RMAMessage
	tmsg   ep.TaggedMessage // a raw tagged send (dynrecv.go)
	rmaIOV [iovLimit]ep.RMAIOV
	ctx    any
	flags  fi.Flags
	report bool
	cntr   int // the counter slot it counts in
	inline [rxmwire.HeaderSize + maxInject]byte
	// A rendezvous send: the connection it went on, the memory
	// registered for the peer's reads, whether the request's send
	// completed (sent) and the read-done arrived (done).
	conn       *conn
	mrs        [iovLimit]fi.MR
	sent, done bool
	// awaitsPeer: a rendezvous request counted in the endpoint's
	// rndvOut until the operation ends.
	awaitsPeer bool
	// bounce is the tx buffer's registered copy space (header and an
	// eager payload), made at its first use; bdesc the core's
	// descriptor of it (nil when the core needs none).
	bounce []byte
	bdesc  any
	// A segmented send (txSAR): the caller's buffers (src), its
	// header, nseg segments of which next are posted and pending not
	// yet completed, the first error, and whether it waits in its
	// connection's deferred queue. A segment (txSeg) has its parent.
	src        [iovLimit][]byte
	nsrc       int
	sarHdr     rxmwire.Header
	nseg, next int
	pending    int
	err        fi.Errno
	queued     bool
	parent     *txBuf
	// An atomic request (txAtomic): its op, and where the response's
	// result goes (res, resLen bytes in all). It uses conn, sent, done,
	// err and awaitsPeer as a rendezvous send does; err is the
	// response's verdict.
	aop    rxmwire.Op
	res    [iovLimit][]byte
	nres   int
	resLen int
}

// maxInject is the most an inject carries here (inject_size is at most
// the core's less the header).
const maxInject = 256

// posted is a posted receive.
type posted struct {
	iov    [iovLimit][]byte
	desc   [iovLimit]any // the core's descriptors of iov, nil where none given
	niov   int
	ctx    any
	src    fi.Addr
	tag    uint64
	ignore uint64
	tagged bool
	report bool
	// multi is a multi-receive buffer (multirecv.go): the buffer itself
	// while it is posted, or the buffer a message's part belongs to.
	multi *multiRecv
}

// unexpected is a message that arrived before a receive matched it: an
// eager one with its payload in a pooled buffer, or a rendezvous request
// with its descriptor, to be read over the connection it came on.
type unexpected struct {
	data   []byte
	src    fi.Addr
	tagged bool
	tag    uint64
	cqData uint64
	hasCQ  bool
	rndv   bool
	size   uint64
	desc   rxmwire.RndvDesc
	msgID  uint64
	conn   *conn
	// sar is a segmented message's reassembly: its data so far.
	sar *sarRx
	// dyn is the message as a connection in dynamic receive mode
	// places it (dynrecv.go): it may still be arriving.
	dyn *dynRx
}

// endpoint is an rxm FI_EP_RDM endpoint (struct fid_ep; C's struct
// rxm_ep). kit.MsgOps and kit.TaggedOps give it fi_msg(3) and
// fi_tagged(3) over PostTx and PostRx. Safe for concurrent use: mu
// guards its state.
type endpoint struct {
	kit.MsgOps
	kit.TaggedOps
	kit.RMAOps
	kit.AtomicOps
	domain *domain
	info   *fi.Info
	b      kit.Bindings
	pid    uint32
	txSize int
	rxSize int
	// eager is the eager limit (FI_OFI_RXM_BUFFER_SIZE): longer messages
	// go in segments up to sarLimit (FI_OFI_RXM_SAR_LIMIT), then by
	// rendezvous.
	eager    int
	sarLimit int
	// mrLocal says the core needs registered buffers (FI_MR_LOCAL): rxm
	// copies through registered bounce buffers and registers what the
	// application gave no descriptor for. coreIOV is the core's
	// iov_limit.
	mrLocal bool
	coreIOV int
	// bounces is how many bounce receives each connection keeps posted.
	bounces int
	// nrecv counts the posted receives, untagged and tagged.
	nrecv [2]int
	// dyn says the connections take their messages in dynamic receive
	// mode (dynrecv.go), decided at Enable.
	dyn    bool
	closed atomic.Bool
	// progMu serializes progress, which reads the core completion queue
	// without mu (dynrecv.go) and handles its entries in order; Close
	// takes it before mu.
	progMu sync.Mutex
	// The connections whose handler found mu taken, to resume when it
	// is let go (dynrecv.go): resumeDue says the list has some.
	resumeDue               atomic.Bool
	resumeMu                sync.Mutex
	resumeList, resumeSpare []*conn
	dynFree                 []*dynRx
	// nbufs counts the unexpected buffers made (bufs holds the free
	// ones); in dynamic receive mode at most unexpMax are, and starved
	// are the connections waiting for one.
	nbufs   int
	starved []*conn
	// cmStop ends the CM goroutine, cmDone says it ended.
	cmStop context.CancelFunc
	cmDone sync.WaitGroup

	mu      sync.Mutex
	enabled bool
	kit.Completions[epSet]
	av *kit.AV
	// peerCache maps AV addresses to their peers (connFor) while the AV
	// is at version peerCacheVer.
	peerCache    []*peer
	peerCacheVer uint64
	// msgEQ takes the connections' events, which progress reads (cm.go);
	// pepEQ the listener's requests, which the CM goroutine waits for.
	msgEQ eq.EventQueue
	pepEQ eq.EventQueue
	// pending counts the connections under way, ours and accepted ones
	// (peers' out and in): progress reads msgEQ each time while there
	// are some, else every cmInterval (lastCM).
	pending atomic.Int32
	// Progress's own state, under progMu: the core queues it reads
	// (refs, set at Enable, nil once closed), its count of runs (polls)
	// and when it last read msgEQ (lastCM); cmDue asks the next run to
	// read it (a blocked reader's timed wake).
	refs    atomic.Pointer[coreRefs]
	polls   uint32
	lastCM  time.Time
	cmDue   atomic.Bool
	msgCQ   eq.CompletionQueue
	pep     ep.PassiveEndpoint
	name    []byte
	self    netip.AddrPort
	msgInfo *fi.Info
	peers   map[netip.AddrPort]*peer
	npeers  uint32
	conns   map[fi.Fid]*conn
	// txs are the transmit buffers made so far (at most txSize), free
	// those not in use.
	txs   []*txBuf
	free  []*txBuf
	recvs []posted
	unexp []unexpected
	// bufs are free buffers for unexpected eager payloads; rrs free
	// rendezvous receives.
	bufs [][]byte
	rrs  []*rndvRecv
	// sarFree are free reassemblies, sarBufs free buffers for the data
	// of unexpected segmented messages.
	sarFree []*sarRx
	sarBufs [][]byte
	// txSlabs are the registrations of the tx buffers' bounce memory;
	// slabFree the bounce buffers of the last slab not yet given out.
	txSlabs  []fi.MR
	slabFree [][]byte
	slabDesc any
	// segFree are free segment buffers of segmented sends.
	segFree []*txBuf
	// deferConns are the connections with deferred operations.
	deferConns []*conn
	// coreRW counts the core's remote writes when a remote-write counter
	// is bound (coreRWSeen of them reported).
	coreRW     eq.Counter
	coreRWSeen uint64
	entries    [32]eq.Completion
	noEntries  [1]eq.Completion
	// taken counts the core completions progress took; woke says the
	// last wait on the core queue ended with an entry there, when taken
	// was wokeAt.
	taken  uint64
	woke   bool
	wokeAt uint64
	// rndvOut counts the rendezvous sends on their way: only the peer's
	// read-done ends them, and only the connection's events tell that
	// the peer is gone, so a blocked reader wakes for those events
	// while there are any.
	rndvOut int
	hdr     rxmwire.Header
	// The target's side of atomics (atomic.go): free response buffers,
	// free atomic body buffers (natomBufs made), the request being
	// served and its segments' memory.
	respFree  []*txBuf
	atomBufs  [][]byte
	natomBufs int
	atomReq   rxmwire.AtomicReq
	atomMem   [rxmwire.AtomicIOCLimit][]byte
	// minMulti is FI_OPT_MIN_MULTI_RECV; multiFree are free
	// multi-receive buffers (multirecv.go).
	minMulti  int
	multiFree []*multiRecv
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.Tagged   = (*endpoint)(nil)
	_ ep.RMA      = (*endpoint)(nil)
	_ ep.Atomic   = (*endpoint)(nil)
	_ ep.Options  = (*endpoint)(nil)
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
		txSize: tx, rxSize: rx, eager: d.fabric.params.bufferSize, peers: map[netip.AddrPort]*peer{}, conns: map[fi.Fid]*conn{}}
	e.sarLimit = d.fabric.params.sarLimit
	e.minMulti = e.eager // C's rxm_ep_settings_init
	if e.eager > maxSegSize {
		e.sarLimit = e.eager // seg_size is 16 bits: no SAR (C's rxm_ep_settings_init)
	}
	e.mrLocal = forceMRLocal || d.coreInfo.Mode&fi.ModeLocalMR != 0 ||
		(d.coreInfo.DomainAttr != nil && d.coreInfo.DomainAttr.MRMode&fi.MRModeLocal != 0)
	e.coreIOV = iovLimit + 1
	if ta := d.coreInfo.TxAttr; ta != nil {
		e.coreIOV = ta.IOVLimit
	}
	e.bounces = bounceCount
	if e.mrLocal {
		e.bounces = d.fabric.params.msgRx
		if ra := d.coreInfo.RxAttr; ra != nil && ra.Size > 0 {
			e.bounces = min(e.bounces, ra.Size)
		}
	}
	ops := kit.NewOps(e, prov, e.info)
	e.MsgOps, e.TaggedOps, e.RMAOps = kit.MsgOps{Ops: ops}, kit.TaggedOps{Ops: ops}, kit.RMAOps{Ops: ops}
	e.AtomicOps = kit.AtomicOps{Atomics: e.newAtomics(ops)}
	e.b.Init(e.info)
	e.recvs = make([]posted, 0, min(rx, 256))
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
	defer e.unlock()
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
	if e.Cntr[kit.CntrRemoteWrite] != nil {
		// The core counts the peers' writes into its connections; a
		// core that cannot leaves the counter to the writes with CQ data.
		if k, err := eq.OpenCounter(e.domain.core, &eq.CounterAttr{}); err == nil {
			e.coreRW = k
		}
	}
	e.enabled = true
	e.refs.Store(&coreRefs{cq: e.msgCQ, rw: e.coreRW, eq: e.msgEQ})
	for _, s := range e.Sets {
		s.Add(e)
	}
	ctx, stop := context.WithCancel(context.Background())
	e.cmStop = stop
	e.cmDone.Add(1)
	go e.cmLoop(ctx, e.pepEQ)
	return nil
}

// openCore opens the core objects (C's rxm_ep_msg_res_open and
// rxm_start_listen); mu is held.
func (e *endpoint) openCore() error {
	var err error
	if e.msgEQ, err = eq.OpenEQ(e.domain.fabric.core, &eq.Attr{}); err != nil {
		return errors.Wrap(err, "core event queue")
	}
	if e.pepEQ, err = eq.OpenEQ(e.domain.fabric.core, &eq.Attr{}); err != nil {
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
	if err = e.pep.Bind(e.pepEQ, 0); err != nil {
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
	if e.dyn = e.useDyn(e.msgInfo); e.dyn {
		// Tagged messages in the core's raw tagged form; no bounce
		// receives; no SAR (C's rxm with dynamic receive buffers).
		e.msgInfo.Caps |= fi.CapTagged
		e.bounces = 0
		e.sarLimit = e.eager
	}
	return nil
}

// closeCore closes the core objects that are open; mu is held. Closing
// the connections makes the core complete what they had queued with
// errors, which are taken before the core completion queue closes: the
// receives reading rendezvous messages and the sends waiting for
// read-done complete with fi.ECANCELED.
func (e *endpoint) closeCore() {
	for _, c := range e.conns {
		e.dropConn(c, fi.ECANCELED)
	}
	e.conns = map[fi.Fid]*conn{}
	if e.msgCQ != nil {
		e.drainCore()
	}
	e.deferConns = nil
	for _, tx := range e.txs {
		if tx.inUse {
			closeMRs(&tx.mrs)
		}
	}
	e.closeSlabs()
	if e.coreRW != nil {
		_ = e.coreRW.Close()
		e.coreRW = nil
	}
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
	if e.pepEQ != nil {
		_ = e.pepEQ.Close()
		e.pepEQ = nil
	}
}

// drainCore takes what the core completion queue holds (C's
// rxm_ep_do_progress reading its core CQ); mu is held.
func (e *endpoint) drainCore() {
	for {
		n, err := e.msgCQ.Read(e.entries[:])
		e.taken += uint64(max(n, 0))
		for i := range e.entries[:n] {
			e.completed(&e.entries[i])
			e.entries[i] = eq.Completion{}
		}
		if err == fi.EAVAIL {
			ce, rerr := e.msgCQ.ReadErr()
			if rerr != nil || ce == nil {
				return
			}
			e.taken++
			e.failed(ce)
			continue
		}
		if n < len(e.entries) {
			return
		}
	}
}

// Name copies the endpoint's name, its listener's address, into buf
// (fi_getname).
func (e *endpoint) Name(buf []byte) (int, error) {
	e.mu.Lock()
	defer e.unlock()
	if e.name == nil {
		return 0, errors.Wrapf(fi.EOPBADSTATE, "%s: getname: endpoint not enabled", e.domain.fabric.Prov())
	}
	return kit.CopyName(buf, e.name)
}

// SetName sets the address the endpoint listens on, its name, before
// Enable (fi_setname; C's rxm binds its listener there): a sockaddr of
// the core's format, port 0 for one of the system's choosing.
// fi.EOPBADSTATE once enabled, fi.EINVAL for an address that is no
// sockaddr.
func (e *endpoint) SetName(addr []byte) error {
	prov := e.domain.fabric.Prov()
	if e.closed.Load() {
		return fi.EBADF
	}
	if _, _, err := fi.AddrPortFromSockaddr(addr); err != nil {
		return errors.Wrapf(fi.EINVAL, "%s: setname: %v", prov, err)
	}
	e.mu.Lock()
	defer e.unlock()
	if e.enabled {
		return errors.Wrapf(fi.EOPBADSTATE, "%s: setname: the endpoint is enabled (its listener is bound)", prov)
	}
	e.info.SrcAddr = append([]byte(nil), addr...)
	return nil
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
	e.unlock()
	if stop != nil {
		stop()
		e.cmDone.Wait()
	}
	e.progMu.Lock()
	defer e.progMu.Unlock()
	e.refs.Store(nil)
	e.mu.Lock()
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.closeCore()
	for _, r := range e.recvs {
		if r.multi != nil {
			e.cancelMulti(r.multi)
			continue
		}
		e.rxFailed(&eq.CQError{Context: r.ctx, Flags: recvFlags(r.tagged), Err: fi.ECANCELED})
	}
	e.recvs = e.recvs[:0]
	e.nrecv = [2]int{}
	e.unexp = e.unexp[:0]
	e.enabled = false
	e.unlock()
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
	defer e.unlock()
	for i := range e.recvs {
		if kit.SameContext(e.recvs[i].ctx, ctx) {
			r := e.unpost(i)
			if r.multi != nil {
				e.cancelMulti(r.multi)
				return nil
			}
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
