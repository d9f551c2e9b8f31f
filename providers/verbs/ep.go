//go:build verbs && cgo

package verbs

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// cmTimeoutMS bounds rdma_resolve_addr and rdma_resolve_route
// (VERBS_RESOLVE_TIMEOUT in C).
const cmTimeoutMS = 2000

// endpoint is a connected (FI_EP_MSG) endpoint (struct fid_ep;
// fi_endpoint(3), fi_cm(3), fi_msg(3), fi_rma(3), fi_atomic(3); vrb_ep):
// an rdma_cm id with an RC queue pair on the domain's protection domain,
// completing into a verbs CQ of its own whose completion channel a
// goroutine waits on in the netpoller. Its id is created when it opens (or is the
// request's), bound to the Info's source address so that the device is
// known and the queue pair exists from Enable on, and receives can be
// posted before the connection is up. Safe for concurrent use.
type endpoint struct {
	domain *domain
	info   *fi.Info
	bind   kit.Bindings
	cs     ep.ConnState
	cm     *cmDispatch

	// The adapter gives the endpoint fi_msg(3) and fi_rma(3) over PostTx
	// and PostRx (data.go), and fi_atomic(3) over PostAtomic (atomic.go).
	kit.MsgOps
	kit.RMAOps
	kit.AtomicOps

	enabledAt atomic.Bool

	// cmMu guards the id's use against Close: every rdma_cm call on id
	// happens with it held, and Close destroys the id with it held.
	cmMu     sync.Mutex
	id       cmIDC
	idGone   bool
	req      *connReq // the request the endpoint was opened for
	peerName []byte   // the destination Connect was given
	connData []byte   // Connect's private data with its header

	// mu guards the data path: the queue pair, the verbs CQ, the slot
	// tables and the SGE scratch arrays (data.go).
	mu sync.Mutex
	dp dataPath

	kit.Completions[epSet]
	stop   context.CancelFunc
	kick   chan struct{} // auto's wake-ups (wake), buffered 1
	autoWG sync.WaitGroup
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.CM       = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.RMA      = (*endpoint)(nil)
	_ ep.Atomic   = (*endpoint)(nil)
	_ ep.Opener   = (*domain)(nil)
)

// OpenEndpoint opens an active endpoint (fi_endpoint; vrb_open_ep). With
// an Info from an eq.ConnReq event (Info.Handle set) it takes that
// request's id and accepts with Accept; otherwise it creates an id
// (rdma_create_id), binds it to the Info's source address
// (rdma_bind_addr) and connects with Connect.
func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	if info == nil {
		info = d.Info()
	}
	if info.EPAttr != nil && info.EPAttr.Type == fi.EPTypeDgram {
		return d.openUD(info) // ud.go
	}
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeMsg {
		return nil, errors.Wrapf(fi.EINVAL, "verbs: open endpoint: ep type %v not supported (offers FI_EP_MSG)", info.EPAttr.Type)
	}
	req, err := kit.ConnRequest[*connReq]("verbs", info)
	if err != nil {
		return nil, err
	}
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	e := &endpoint{domain: d, info: kit.EndpointInfo(info, fi.EPTypeMsg, msgCaps), cm: d.fabric.cm, kick: make(chan struct{}, 1)}
	ops := kit.NewOps(e, "verbs", e.info)
	// Of the default receive flags, a receive takes these two.
	ops.RxFlags &= fi.FlagCompletion | fi.FlagMore
	e.MsgOps, e.RMAOps = kit.MsgOps{Ops: ops}, kit.RMAOps{Ops: ops}
	e.AtomicOps = kit.AtomicOps{Atomics: newAtomics(ops, e, d)}
	e.bind.Init(e.info)
	if req != nil {
		if err := req.pep.Backlog.Take(req); err != nil {
			d.Release(kit.KindEndpoint)
			return nil, errors.Wrap(err, "verbs: open endpoint")
		}
		_ = e.cs.RequestReceived()
		e.req, e.id, e.cm = req, req.id, req.cm
		e.cm.setOwner(e.id, e)
		return e, nil
	}
	id, err := e.cm.newID(e)
	if err != nil {
		d.Release(kit.KindEndpoint)
		return nil, errors.Wrap(err, "verbs: open endpoint")
	}
	e.id = id
	src, ok := netip.AddrPort{}, false
	if e.info.SrcAddr != nil {
		if ap, _, err := fi.AddrPortFromSockaddr(e.info.SrcAddr); err == nil {
			src, ok = ap, true
		}
	}
	if !ok {
		src, ok = d.srcFor(e.info.AddrFormat)
	}
	if ok {
		if err := bindAddr(id, src); err != nil {
			e.cm.destroy(id)
			d.Release(kit.KindEndpoint)
			return nil, errors.Wrap(err, "verbs: open endpoint: source address")
		}
	}
	return e, nil
}

// Info returns the Info the endpoint was opened with.
func (e *endpoint) Info() *fi.Info { return e.info }

// Bind binds an event queue, completion queue or counter of this provider
// (fi_ep_bind); the rules are kit.Bindings'.
func (e *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&e.bind, "verbs", e.cs.State() == ep.CMClosed, obj, flags)
}

// Enable checks the bindings (fi_enable; vrb_ep_enable) and creates the
// endpoint's verbs CQ with its completion channel (ibv_create_cq) and,
// when the id is bound to a device already, its queue pair
// (rdma_create_qp); then the goroutine that moves completions into the
// bound queues starts.
func (e *endpoint) Enable() error {
	if err := e.bind.CheckEnableOpen("verbs", e.cs.State() == ep.CMClosed); err != nil {
		return err
	}
	if e.enabledAt.Load() {
		return nil
	}
	e.cmMu.Lock()
	e.mu.Lock()
	err := e.dp.open(e)
	if err == nil && !e.idGone && idContext(e.id) != nil {
		err = e.dp.createQP(e, e.id)
	}
	e.mu.Unlock()
	e.cmMu.Unlock()
	if err != nil {
		return err
	}
	b := &e.bind
	e.Resolve(b)
	for _, s := range e.Sets {
		s.Add(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	e.autoWG.Add(1)
	go e.auto(ctx)
	e.enabledAt.Store(true)
	return nil
}

// Cancel (fi_cancel): verbs cannot take back posted work; it returns
// fi.ENOENT.
func (e *endpoint) Cancel(ctx any) error { return fi.ENOENT }

// CMDataSize is the most private data Connect, Accept and Reject carry
// (FI_OPT_CM_DATA_SIZE): 55 bytes, a REQ's private data less the
// provider's header.
func (e *endpoint) CMDataSize() int { return cmMaxDataSize }

// SetName is not supported: the endpoint's id is bound to its Info's
// source address when it opens (set SrcAddr in the Info instead).
func (e *endpoint) SetName(addr []byte) error {
	return errors.Wrap(fi.ENOSYS, "verbs: setname on an active endpoint: give the source address in the Info")
}

// Name copies the endpoint's local address into buf (fi_getname;
// rdma_get_local_addr), with the ETOOSMALL rule of ep.Namer.
func (e *endpoint) Name(buf []byte) (int, error) {
	e.cmMu.Lock()
	var name []byte
	if !e.idGone {
		name = idAddr(e.id, false)
	}
	e.cmMu.Unlock()
	if name == nil {
		name = e.info.SrcAddr
	}
	if name == nil {
		return 0, errors.Wrap(fi.EADDRNOTAVAIL, "verbs: getname: the endpoint has no address yet")
	}
	return copyName(buf, name)
}

// Peer copies the peer's address into buf (fi_getpeer;
// rdma_get_peer_addr): fi.ENOTCONN before a connection attempt.
func (e *endpoint) Peer(buf []byte) (int, error) {
	e.cmMu.Lock()
	name := e.peerName
	if e.req != nil && !e.idGone {
		name = idAddr(e.id, true)
	}
	e.cmMu.Unlock()
	if name == nil {
		return 0, errors.Wrap(fi.ENOTCONN, "verbs: getpeer: not connected")
	}
	return copyName(buf, name)
}

// Connect starts connecting to addr with private data (fi_connect;
// vrb_msg_ep_connect): rdma_resolve_addr now, then, from the events,
// rdma_resolve_route, the queue pair, and rdma_connect. The outcome
// arrives on the bound event queue: eq.Connected with the accept's data,
// or an *eq.EQError: fi.ECONNREFUSED for a reject (its data in ErrData)
// or nothing listening, else the failure's code.
func (e *endpoint) Connect(addr []byte, data []byte) error {
	dest, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "verbs: connect: destination")
	}
	if !dest.Addr().IsValid() || dest.Port() == 0 {
		return errors.Wrapf(fi.EINVAL, "verbs: connect: destination %v has no address or port", dest)
	}
	if err := ep.CheckCMData(data, cmMaxDataSize); err != nil {
		return errors.Wrap(err, "verbs: connect")
	}
	if !e.enabledAt.Load() {
		if s := e.cs.State(); s == ep.CMClosed || s == ep.CMReqReceived {
			return errors.Wrap(e.cs.Connect(), "verbs: connect")
		}
		return errors.Wrap(fi.EOPBADSTATE, "verbs: connect: endpoint not enabled (bind an event queue and CQs, then Enable)")
	}
	if err := e.cs.Connect(); err != nil {
		return errors.Wrap(err, "verbs: connect")
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	e.peerName = append([]byte(nil), addr...)
	e.connData = cmData(data)
	if err := resolveAddr(e.id, dest, cmTimeoutMS); err != nil {
		e.failed(fi.Code(err))
	}
	return nil
}

// Accept accepts the connection request the endpoint was opened for, with
// private data (fi_accept; rdma_accept). eq.Connected follows when the
// connection is established (RDMA_CM_EVENT_ESTABLISHED).
func (e *endpoint) Accept(data []byte) error {
	if err := ep.CheckCMData(data, cmMaxDataSize); err != nil {
		return errors.Wrap(err, "verbs: accept")
	}
	if !e.enabledAt.Load() && e.cs.State() == ep.CMReqReceived {
		return errors.Wrap(fi.EOPBADSTATE, "verbs: accept: endpoint not enabled (bind an event queue and CQs, then Enable)")
	}
	if err := e.cs.Accept(); err != nil {
		return errors.Wrap(err, "verbs: accept")
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	if err := accept(e.id, cmData(data)); err != nil {
		e.failed(fi.Code(err))
	}
	return nil
}

// Shutdown closes the connection (fi_shutdown; rdma_disconnect; flags
// must be 0): the queue pair goes to the error state, so that posted work
// completes with fi.ECANCELED error entries, the peer gets
// RDMA_CM_EVENT_DISCONNECTED and reports eq.Shutdown, and the endpoint's
// own eq.Shutdown is queued unless the peer's disconnect already gave it.
func (e *endpoint) Shutdown(flags fi.Flags) error {
	if flags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: shutdown: flags %v (want 0)", flags)
	}
	emit, err := e.cs.Shutdown()
	if err != nil {
		return errors.Wrap(err, "verbs: shutdown")
	}
	e.cmMu.Lock()
	if !e.idGone {
		_ = disconnect(e.id)
	}
	e.cmMu.Unlock()
	if emit {
		e.postEvent(&eq.Shutdown{Fid: e})
	}
	return nil
}

// cmEvent handles the events of the endpoint's id (vrb_eq_cm_process_event
// in C), on the fabric's rdma_cm goroutine.
func (e *endpoint) cmEvent(ev cmEventC) {
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	if e.idGone {
		return
	}
	switch ev.typ {
	case evAddrResolved:
		if err := resolveRoute(e.id, cmTimeoutMS); err != nil {
			e.failed(fi.Code(err))
		}
	case evRouteResolved:
		e.mu.Lock()
		var err error
		if e.dp.qp == nil {
			err = e.dp.createQP(e, e.id)
		}
		e.mu.Unlock()
		if err == nil {
			err = connect(e.id, e.connData)
		}
		if err != nil {
			e.failed(fi.Code(err))
		}
	case evAddrError, evRouteError:
		e.failed(statusCode(ev.status, fi.EHOSTUNREACH))
	case evUnreachable, evConnectError:
		e.failed(statusCode(ev.status, fi.ETIMEDOUT))
	case evRejected:
		if ev.status == rejConsumer {
			if e.cs.Rejected() == nil {
				e.postError(fi.ECONNREFUSED, ev.status, cmPayload(ev.data))
			}
			return
		}
		// No listener (reason 8), stale connection, timeout: the request
		// was refused before an application saw it.
		if e.cs.Failed() == nil {
			e.postError(fi.ECONNREFUSED, ev.status, nil)
		}
	case evEstablished:
		if e.cs.Established() == nil {
			var data []byte
			if e.req == nil {
				data = cmPayload(ev.data)
			}
			e.postEvent(&eq.Connected{Fid: e, Info: e.info, Data: data})
		}
	case evDisconnected:
		// Answer the peer's DREQ, so that its side completes at once.
		_ = disconnect(e.id)
		if e.cs.PeerGone() {
			e.postEvent(&eq.Shutdown{Fid: e})
		}
	case evDeviceRemoval:
		if e.cs.Failed() == nil {
			e.postError(fi.ENODEV, ev.status, nil)
		} else if e.cs.PeerGone() {
			e.postEvent(&eq.Shutdown{Fid: e})
		}
	}
}

// statusCode is an rdma_cm event's status as an fi.Errno: a negative
// errno's code, else def.
func statusCode(status int, def fi.Errno) fi.Errno {
	if status < 0 {
		if c := fi.Code(syscall.Errno(-status)); c != fi.EOTHER {
			return c
		}
	}
	return def
}

// failed reports a failed connection attempt, once.
func (e *endpoint) failed(code fi.Errno) {
	if code == fi.EOTHER {
		code = fi.EIO
	}
	if e.cs.Failed() == nil {
		e.postError(code, 0, nil)
	}
}

// postEvent queues ev on the bound event queue.
func (e *endpoint) postEvent(ev eq.Event) {
	if q := e.eventQueue(); q != nil {
		_ = q.Post(ev)
	}
}

// postError queues an error event about the endpoint.
func (e *endpoint) postError(code fi.Errno, provErr int, data []byte) {
	if q := e.eventQueue(); q != nil {
		_ = q.PostErr(&eq.EQError{Fid: e, Err: code, ProvErrno: provErr, ErrData: data})
	}
}

// eventQueue is where the endpoint posts its connection events.
func (e *endpoint) eventQueue() *eventQueue { return kit.BoundEQ[epSet](&e.bind) }

// Close closes the endpoint (fi_close; rdma_disconnect, rdma_destroy_qp,
// rdma_destroy_id, ibv_destroy_cq): a connection is cut (the peer gets
// eq.Shutdown), a request the endpoint was opened for and never accepted
// is rejected, work still posted completes with fi.ECANCELED error
// entries, and the endpoint lets go of its queues, counters and domain.
// A second Close returns fi.EBADF.
func (e *endpoint) Close() error {
	prev, err := e.cs.Close()
	if err != nil {
		return errors.Wrap(fi.EBADF, "verbs: close endpoint: already closed")
	}
	e.cmMu.Lock()
	switch prev {
	case ep.CMReqReceived:
		if err := reject(e.id, cmData(nil)); err != nil {
			fi.Logger(provName).Debug("verbs: rdma_reject failed", "err", err)
		}
	case ep.CMConnecting, ep.CMAccepting, ep.CMConnected, ep.CMShutdownRemote, ep.CMShutdownLocal:
		_ = disconnect(e.id)
	}
	e.mu.Lock()
	e.dp.destroyQP(e.id)
	e.mu.Unlock()
	e.cm.destroy(e.id)
	e.idGone = true
	e.cmMu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	e.autoWG.Wait()
	e.mu.Lock()
	e.dp.close(e)
	e.mu.Unlock()
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.bind.Release()
	e.domain.Release(kit.KindEndpoint)
	return nil
}
