//go:build verbs && cgo

package verbs

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// cmTimeoutMS bounds rdma_resolve_addr and rdma_resolve_route
// (VERBS_RESOLVE_TIMEOUT in C) unless the endpoint's ep.OptConnTimeout
// is set.
const cmTimeoutMS = 2000

// cmRetryDefault is the transport retry count Connect passes
// (rdma_conn_param.retry_count) unless ep.OptConnRetries is set: 15, as
// C's vrb_msg_ep_connect; the kernel's rdma_cm sends at most 7
// (cma_connect_ib), which is what the queue pairs get.
const cmRetryDefault = 15

// cmRetryMax is the most retries the CM carries (a 3-bit field of the
// REQ).
const cmRetryMax = 7

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
	// The connection options (ep.OptLevelCM): connTimeout in ms, 0 for
	// the provider's timeouts; connRetries, the retry count Connect
	// passes. deadline ends a Connect with connTimeout set.
	connTimeout int
	connRetries int
	deadline    *time.Timer
	// timewaitExit is set when rdma_cm reported TIMEWAIT_EXIT: the
	// connection's time-wait is over (cmEvent).
	timewaitExit atomic.Bool

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
	_ ep.Stater   = (*endpoint)(nil)
	_ ep.Options  = (*endpoint)(nil)
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
	e := &endpoint{domain: d, info: kit.EndpointInfo(info, fi.EPTypeMsg, msgCaps), cm: d.fabric.cm, kick: make(chan struct{}, 1),
		connRetries: cmRetryDefault}
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

// SetName binds the endpoint to the source address addr, a sockaddr,
// before Connect (fi_setname; vrb_msg_ep_setname): as an rdma_cm id binds
// once, a new id is created and bound (rdma_create_id, rdma_bind_addr)
// and replaces the endpoint's, and Connect's request leaves from addr
// (the peer's eq.ConnReq shows it as its Info's DestAddr); port 0 lets
// rdma_cm pick one. After Enable the queue pair moves to the new id,
// which needs it idle: with work posted SetName returns fi.EBUSY. addr
// must belong to the endpoint's device (fi.EINVAL), and the endpoint
// must not have connected, or been opened from a connection request
// (fi.EOPBADSTATE; fi.EBADF once closed).
func (e *endpoint) SetName(addr []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "verbs: setname")
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	switch s := e.cs.State(); s {
	case ep.CMIdle:
	case ep.CMClosed:
		return errors.Wrap(fi.EBADF, "verbs: setname: endpoint closed")
	default:
		return errors.Wrapf(fi.EOPBADSTATE, "verbs: setname: endpoint is %v (set the name before Connect)", s)
	}
	e.mu.Lock()
	busy := e.dp.qp != nil && (e.dp.tx.inUse() > 0 || e.dp.rx.inUse() > 0)
	e.mu.Unlock()
	if busy {
		return errors.Wrap(fi.EBUSY, "verbs: setname: work is posted on the queue pair (set the name before posting)")
	}
	id, err := e.cm.newID(e)
	if err != nil {
		return errors.Wrap(err, "verbs: setname")
	}
	if err := bindAddr(id, ap); err != nil {
		e.cm.destroy(id)
		return errors.Wrapf(err, "verbs: setname %v", ap)
	}
	if c := idContext(id); c != nil && c != e.domain.dev {
		e.cm.destroy(id)
		return errors.Wrapf(fi.EINVAL, "verbs: setname: %v is not on the endpoint's device %s", ap, e.domain.Info().DomainAttr.Name)
	}
	e.mu.Lock()
	if e.dp.qp != nil {
		e.dp.destroyQP(e.id)
		freeSGEs(e.dp.ssge)
		freeSGEs(e.dp.rsge)
		e.dp.ssge, e.dp.rsge = nil, nil
	}
	old := e.id
	e.id = id
	if e.enabledAt.Load() && e.dp.vcq != nil && idContext(id) != nil {
		err = e.dp.createQP(e, id)
	}
	e.mu.Unlock()
	e.cm.destroy(old)
	e.info.SrcAddr = append([]byte(nil), addr...)
	if err != nil {
		return errors.Wrap(err, "verbs: setname")
	}
	return nil
}

// CMState returns the endpoint's connection state (ep.Stater; ep.State).
func (e *endpoint) CMState() ep.CMState { return e.cs.State() }

// SetOpt sets an option (fi_setopt; vrb_ep_setopt answers none):
// ep.OptLevelCM's ep.OptConnTimeout (ms, 0 for the provider's timeouts;
// fi.EINVAL when negative) and ep.OptConnRetries (0 to 7, fi.EINVAL
// outside), before Connect (fi.EOPBADSTATE after, and on an endpoint
// opened from a connection request). ep.OptConnState and
// FI_OPT_CM_DATA_SIZE are read-only, and other options unknown: both
// give fi.ENOPROTOOPT.
func (e *endpoint) SetOpt(level ep.OptLevel, name ep.OptName, val int) error {
	if level != ep.OptLevelCM || (name != ep.OptConnTimeout && name != ep.OptConnRetries) {
		return errors.Wrapf(fi.ENOPROTOOPT, "verbs: setopt: level %#x option %d cannot be set (OptLevelCM's OptConnTimeout and OptConnRetries can)", int(level), int(name))
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	if s := e.cs.State(); s != ep.CMIdle {
		return errors.Wrapf(fi.EOPBADSTATE, "verbs: setopt: endpoint is %v (connection options are set before Connect)", s)
	}
	switch name {
	case ep.OptConnTimeout:
		if val < 0 {
			return errors.Wrapf(fi.EINVAL, "verbs: setopt: connect timeout %d ms is negative", val)
		}
		e.connTimeout = val
	default:
		if val < 0 || val > cmRetryMax {
			return errors.Wrapf(fi.EINVAL, "verbs: setopt: connect retries %d outside 0..%d (the CM carries 3 bits)", val, cmRetryMax)
		}
		e.connRetries = val
	}
	return nil
}

// GetOpt reads an option (fi_getopt; vrb_ep_getopt): FI_OPT_CM_DATA_SIZE
// (55) at ep.OptLevelEndpoint, and at ep.OptLevelCM ep.OptConnTimeout (0
// until set: the provider's timeouts), ep.OptConnRetries (7 until set:
// C's 15 as the kernel sends it) and ep.OptConnState (an ep.CMState).
// Others give fi.ENOPROTOOPT.
func (e *endpoint) GetOpt(level ep.OptLevel, name ep.OptName) (int, error) {
	switch {
	case level == ep.OptLevelEndpoint && name == ep.OptCMDataSize:
		return cmMaxDataSize, nil
	case level == ep.OptLevelCM && name == ep.OptConnState:
		return int(e.cs.State()), nil
	case level == ep.OptLevelCM && name == ep.OptConnTimeout:
		e.cmMu.Lock()
		defer e.cmMu.Unlock()
		return e.connTimeout, nil
	case level == ep.OptLevelCM && name == ep.OptConnRetries:
		e.cmMu.Lock()
		defer e.cmMu.Unlock()
		return min(e.connRetries, cmRetryMax), nil
	}
	return 0, errors.Wrapf(fi.ENOPROTOOPT, "verbs: getopt: level %#x option %d not supported", int(level), int(name))
}

// Name copies the endpoint's local address into buf (fi_getname;
// rdma_get_local_addr), with the ETOOSMALL rule of ep.Namer.
func (e *endpoint) Name(buf []byte) (int, error) {
	e.cmMu.Lock()
	var name []byte
	if !e.idGone {
		name = idAddr(e.id, false)
	}
	if name == nil {
		name = e.info.SrcAddr
	}
	e.cmMu.Unlock()
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
	if e.idGone {
		e.failed(fi.EBADF)
		return nil
	}
	if err := routeCheck(idAddr(e.id, false), dest); err != nil {
		fi.Logger(provName).Debug("verbs: connect: no route", "dest", dest, "err", err)
		e.failed(fi.Code(err))
		return nil
	}
	if err := resolveAddr(e.id, dest, e.resolveTimeout()); err != nil {
		e.failed(fi.Code(err))
		return nil
	}
	if e.connTimeout > 0 {
		e.deadline = time.AfterFunc(time.Duration(e.connTimeout)*time.Millisecond, e.connectTimedOut)
	}
	return nil
}

// routeCheck fails with fi.ENETUNREACH or fi.EHOSTUNREACH when the
// host's routing has no route to dest from src (the id's bound address,
// a sockaddr; nil for none): the lookup connect(2) makes, here of a UDP
// socket, which sends nothing. rdma_cm cannot tell: an id bound to a
// device resolves with that device as the output interface, for which
// Linux takes any address without a route to be on the link, so that
// its address resolution would wait for an ARP answer until the
// resolution timeout. Any other outcome is left to rdma_cm.
func routeCheck(src []byte, dest netip.AddrPort) error {
	var laddr *net.UDPAddr
	if src != nil {
		if ap, _, err := fi.AddrPortFromSockaddr(src); err == nil && ap.Addr().Is4() == dest.Addr().Is4() {
			laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr(), 0))
		}
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(dest))
	if err == nil {
		_ = c.Close()
		return nil
	}
	for _, no := range []syscall.Errno{syscall.ENETUNREACH, syscall.EHOSTUNREACH} {
		if errors.Is(err, no) {
			return errors.Wrapf(fi.Code(no), "verbs: connect: no route to %v", dest.Addr())
		}
	}
	return nil
}

// resolveTimeout is the timeout of rdma_resolve_addr and
// rdma_resolve_route: the endpoint's connect timeout when set, else
// cmTimeoutMS.
func (e *endpoint) resolveTimeout() int {
	if e.connTimeout > 0 {
		return e.connTimeout
	}
	return cmTimeoutMS
}

// connectTimedOut ends a connection attempt still under way when the
// endpoint's connect timeout expires: its queue pair and id are
// destroyed (rdma_destroy_qp, rdma_destroy_id; the CM rejects the
// request at the peer, if it got there, with reason RejectTimeout), and
// the attempt fails with fi.ETIMEDOUT and eq.ReasonTimedOut.
func (e *endpoint) connectTimedOut() {
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	if e.idGone || e.cs.State() != ep.CMConnecting {
		return
	}
	if e.cs.Failed() != nil {
		return
	}
	e.mu.Lock()
	e.dp.destroyQP(e.id)
	e.mu.Unlock()
	e.cm.destroy(e.id)
	e.idGone = true
	e.postError(fi.ETIMEDOUT, int(syscall.ETIMEDOUT), nil, eq.ReasonTimedOut)
}

// stopDeadline stops the connect timer once the attempt is over; cmMu
// is held.
func (e *endpoint) stopDeadline() {
	if e.deadline != nil && e.cs.State() != ep.CMConnecting {
		e.deadline.Stop()
		e.deadline = nil
	}
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
	defer e.stopDeadline()
	switch ev.typ {
	case evAddrResolved:
		if err := resolveRoute(e.id, e.resolveTimeout()); err != nil {
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
			err = connect(e.id, e.connData, e.connRetries)
		}
		if err != nil {
			e.failed(fi.Code(err))
		}
	case evAddrError, evRouteError, evUnreachable, evConnectError:
		code, prov, reason := connFailure(ev.typ, ev.status, ev.data)
		if e.cs.Failed() == nil {
			e.postError(code, prov, nil, reason)
		}
	case evRejected:
		code, prov, reason := connFailure(ev.typ, ev.status, ev.data)
		if reason == eq.ReasonRejected && e.cs.State() == ep.CMConnecting {
			// The peer application's fi_reject, with its data.
			if e.cs.Rejected() == nil {
				e.postError(code, prov, cmPayload(ev.data), reason)
			}
			return
		}
		// No listener (reason 8), the peer's full backlog, stale
		// connection, timeout: the request was refused before an
		// application saw it; or an accept the connector's side refused.
		if e.cs.Failed() == nil {
			e.postError(code, prov, nil, reason)
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
		code, prov, reason := connFailure(ev.typ, ev.status, nil)
		if e.cs.Failed() == nil {
			e.postError(code, prov, nil, reason)
		} else if e.cs.PeerGone() {
			e.postEvent(&eq.Shutdown{Fid: e})
		}
	case evAddrChange:
		// The local address moved under the id (a bonding failover). As
		// C's verbs provider, an error entry with fi.EADDRNOTAVAIL: an
		// attempt under way fails; a connection is left as it is (the
		// queue pair may still carry it), for the application to shut
		// down or keep.
		code, prov, reason := connFailure(ev.typ, ev.status, nil)
		if e.cs.State() == ep.CMConnecting || e.cs.State() == ep.CMAccepting {
			if e.cs.Failed() == nil {
				e.postError(code, prov, nil, eq.ReasonUnreachable)
			}
			return
		}
		e.postError(code, prov, nil, reason)
	case evTimewaitExit:
		// The connection's time-wait is over: the CM will not use its
		// queue pair number again, so the queue pair and the id may be
		// released or reused. The endpoint keeps them until Close (which
		// rdma_cm allows at any time); no event, as in C.
		e.timewaitExit.Store(true)
		fi.Logger(provName).Debug("verbs: connection time-wait over", "state", e.cs.State())
	default:
		fi.Logger(provName).Debug("verbs: rdma_cm event ignored", "event", eventName(ev.typ), "status", ev.status, "state", e.cs.State())
	}
}

// failed reports a connection attempt that failed at a call with code,
// once.
func (e *endpoint) failed(code fi.Errno) {
	if code == fi.EOTHER {
		code = fi.EIO
	}
	prov := 0
	if code < 256 {
		prov = int(code) // the call's errno
	}
	if e.cs.Failed() == nil {
		e.postError(code, prov, nil, codeReason(code))
	}
}

// postEvent queues ev on the bound event queue.
func (e *endpoint) postEvent(ev eq.Event) {
	if q := e.eventQueue(); q != nil {
		_ = q.Post(ev)
	}
}

// postError queues an error event about the endpoint.
func (e *endpoint) postError(code fi.Errno, provErr int, data []byte, reason eq.ConnReason) {
	if q := e.eventQueue(); q != nil {
		_ = q.PostErr(&eq.EQError{Fid: e, Err: code, ProvErrno: provErr, ErrData: data, Reason: reason})
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
	if e.deadline != nil {
		e.deadline.Stop()
		e.deadline = nil
	}
	switch {
	case e.idGone:
	case prev == ep.CMReqReceived:
		if err := reject(e.id, cmData(nil)); err != nil {
			fi.Logger(provName).Debug("verbs: rdma_reject failed", "err", err)
		}
	case prev == ep.CMConnecting || prev == ep.CMAccepting || prev == ep.CMConnected ||
		prev == ep.CMShutdownRemote || prev == ep.CMShutdownLocal:
		_ = disconnect(e.id)
	}
	if !e.idGone {
		e.mu.Lock()
		e.dp.destroyQP(e.id)
		e.mu.Unlock()
		e.cm.destroy(e.id)
		e.idGone = true
	}
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
