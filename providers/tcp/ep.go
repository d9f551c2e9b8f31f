//go:build linux

package tcp

import (
	"context"
	"golang.org/x/sys/unix"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/sockpoll"
	"github.com/gofabric/gofabric/kit"
)

// endpoint is a connected (FI_EP_MSG) endpoint (struct fid_ep;
// fi_endpoint(3), fi_cm(3), fi_msg(3), fi_rma(3)): one TCP connection,
// opened by Connect or accepted from a connection request. Safe for
// concurrent use.
type endpoint struct {
	domain *domain
	info   *fi.Info
	bind   kit.Bindings
	cs     ep.ConnState
	params params

	// The adapter gives the endpoint fi_msg(3), fi_rma(3) and the sends
	// of fi_tagged(3) over PostTx and PostRx (data.go), with the default
	// operation flags (fi_tx_attr.op_flags, fi_rx_attr.op_flags) for the
	// calls that take none. The tagged sends need FI_TAGGED in the Info
	// (fi.ENOSYS without), which GetInfo's entries never offer: a layer
	// over the provider (rxm) asks for it.
	kit.MsgOps
	kit.TaggedOps
	kit.RMAOps

	// Completion targets, fixed at Enable.
	kit.Completions[epSet]
	enabledAt   atomic.Bool
	closing     atomic.Bool
	recvStalled atomic.Bool   // the receive side waits for a posted buffer or tx room
	sendBlocked atomic.Bool   // queued sends wait for room in the socket
	streams     atomic.Bool   // messages stream in: the socket ran dry within the last (waits)
	cmMu        sync.Mutex    // guards the CM fields below
	localName   []byte        // SetName's address, or nil
	peerName    []byte        // the peer's address once known
	connName    []byte        // the socket's local address once connected
	req         *connReq      // the request the endpoint was opened for
	connTimeout time.Duration // OptConnTimeout, 0 for FI_TCP_CONN_TIMEOUT
	connRetries int           // OptConnRetries (TCP_SYNCNT), 0 for the kernel's
	cancelDial  context.CancelFunc
	cmWG        sync.WaitGroup // the connect goroutine
	// member is the connection's place in its domain's progress
	// (wait.go), nil before it and after the socket closed.
	member atomic.Pointer[sockpoll.Member]
	// progDone, set under mu when the socket closed, is closed once the
	// domain's progress goroutine that ended with it has (nil when it
	// goes on): Close waits for it.
	progDone <-chan struct{}
	// stallAt is when the stall watch of a connection in dynamic receive
	// mode falls due (monoNow's clock), 0 when it holds nothing
	// (stall.go).
	stallAt atomic.Int64
	// lostWith is the fi.Errno the connection's pending operations failed
	// with when it was lost (fi.ETIMEDOUT or fi.ECANCELED), 0 before.
	lostWith atomic.Int32
	// dynHeld says the dynamic receive handler holds a message (set
	// under mu), dynResume that Resume was called since (dynrecv.go).
	dynHeld, dynResume atomic.Bool

	// mu guards the data path: the socket and the transmit and receive
	// state (progress.go).
	mu sync.Mutex
	dp dataPath
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.CM       = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.Tagged   = (*endpoint)(nil)
	_ ep.RMA      = (*endpoint)(nil)
	_ ep.Opener   = (*domain)(nil)
)

// OpenEndpoint opens an active endpoint (fi_endpoint). With an Info from
// an eq.ConnReq event (Info.Handle set) the endpoint is the one that
// accepts that request; otherwise it connects with Connect. It returns
// fi.EINVAL for an Info that is not FI_EP_MSG (FI_EP_RDM endpoints are
// tcp;ofi_rxm's, providers/rxm over this provider) or a handle that is
// not a pending request of this provider.
func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	if info == nil {
		info = d.Info()
	}
	if info.EPAttr != nil && info.EPAttr.Type == fi.EPTypeRDM {
		return nil, errors.Wrapf(fi.EINVAL,
			"tcp: open endpoint: ep type FI_EP_RDM not supported (offers FI_EP_MSG); FI_EP_RDM is %s (providers/rxm over tcp)", rxmName)
	}
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeMsg {
		return nil, errors.Wrapf(fi.EINVAL, "tcp: open endpoint: ep type %v not supported (offers FI_EP_MSG)", info.EPAttr.Type)
	}
	req, err := kit.ConnRequest[*connReq]("tcp", info)
	if err != nil {
		return nil, err
	}
	txSize, rxSize, err := queueSizes(info, maxTxSize, maxRxSize, queueSize)
	if err != nil {
		return nil, err
	}
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	e := &endpoint{domain: d, info: kit.EndpointInfo(info, fi.EPTypeMsg, infoCaps), params: d.fabric.params}
	ops := kit.NewOps(e, "tcp", e.info)
	e.MsgOps, e.TaggedOps, e.RMAOps = kit.MsgOps{Ops: ops}, kit.TaggedOps{Ops: ops}, kit.RMAOps{Ops: ops}
	e.bind.Init(e.info)
	e.dp.init(txSize, rxSize)
	if req != nil {
		if err := req.pep.Backlog.Take(req); err != nil {
			d.Release(kit.KindEndpoint)
			return nil, errors.Wrap(err, "tcp: open endpoint")
		}
		if err := e.cs.RequestReceived(); err != nil {
			req.reject(nil, rejectConsumer)
			d.Release(kit.KindEndpoint)
			return nil, err
		}
		e.req = req
		e.peerName = req.peer
	}
	return e, nil
}

// queueSizes returns the transmit and receive queue depths info asks for
// (tx_attr.size, rx_attr.size; def for 0), or fi.EINVAL beyond maxTx or
// maxRx.
func queueSizes(info *fi.Info, maxTx, maxRx, def int) (tx, rx int, err error) {
	tx, rx = def, def
	if info.TxAttr != nil && info.TxAttr.Size != 0 {
		tx = info.TxAttr.Size
	}
	if info.RxAttr != nil && info.RxAttr.Size != 0 {
		rx = info.RxAttr.Size
	}
	switch {
	case tx < 0 || tx > maxTx:
		return 0, 0, errors.Wrapf(fi.EINVAL, "tcp: open endpoint: tx size %d (1 to %d)", tx, maxTx)
	case rx < 0 || rx > maxRx:
		return 0, 0, errors.Wrapf(fi.EINVAL, "tcp: open endpoint: rx size %d (1 to %d)", rx, maxRx)
	}
	return tx, rx, nil
}

// Info returns the Info the endpoint was opened with.
func (e *endpoint) Info() *fi.Info { return e.info }

// Bind binds an event queue, completion queue or counter of this provider
// (fi_ep_bind). Objects of other providers give fi.EINVAL; the rest of the
// rules are kit.Bindings'.
func (e *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&e.bind, "tcp", e.closing.Load(), obj, flags)
}

// Enable checks the bindings (fi_enable: an event queue, and a CQ or
// counter for each direction) and attaches the endpoint to the queues
// that drive its progress.
func (e *endpoint) Enable() error {
	if err := e.bind.CheckEnableOpen("tcp", e.closing.Load()); err != nil {
		return err
	}
	if e.enabledAt.Swap(true) {
		return nil
	}
	b := &e.bind
	e.Sets = append(e.Sets, &b.EQ.(*eventQueue).Eps)
	e.Resolve(b)
	for _, s := range e.Sets {
		s.Add(e)
	}
	return nil
}

// Cancel cancels the posted receive with context ctx (fi_cancel): it
// completes with an fi.ECANCELED error entry. Sends and RMA already handed
// to the socket cannot be cancelled; for them, and for an unknown
// context, it returns fi.ENOENT.
func (e *endpoint) Cancel(ctx any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return kit.Canceled(e.dp.cancelRecv(e, ctx))
}

// CMDataSize is the most private data Connect, Accept and Reject carry
// (FI_OPT_CM_DATA_SIZE): 256 bytes.
func (e *endpoint) CMDataSize() int { return cmMaxDataSize }

// SetName sets the local address Connect binds to (fi_setname): a
// sockaddr of the endpoint's address format; port 0 lets the kernel pick.
// It must come before Connect (fi.EOPBADSTATE after).
func (e *endpoint) SetName(addr []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "tcp: setname")
	}
	if !ap.Addr().IsValid() {
		return errors.Wrap(fi.EINVAL, "tcp: setname: no address")
	}
	if s := e.cs.State(); s != ep.CMIdle {
		return stateErr("setname", s)
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	e.localName = append([]byte(nil), addr...)
	return nil
}

// Name copies the endpoint's local address into buf (fi_getname): the
// socket's address once connected, else the SetName address, else the
// Info's source address (port 0). A buffer too small for it gets a
// truncated copy, the full length and bare fi.ETOOSMALL.
func (e *endpoint) Name(buf []byte) (int, error) {
	e.cmMu.Lock()
	name := e.connName
	if name == nil {
		name = e.localName
	}
	e.cmMu.Unlock()
	if name == nil {
		name = e.info.SrcAddr
	}
	if name == nil {
		return 0, errors.Wrap(fi.EADDRNOTAVAIL, "tcp: getname: the endpoint has no address yet (no source address, SetName or connection)")
	}
	return copyName(buf, name)
}

// Peer copies the peer's address into buf (fi_getpeer), with Name's
// ETOOSMALL rule. Before a connection attempt there is none: fi.ENOTCONN.
func (e *endpoint) Peer(buf []byte) (int, error) {
	e.cmMu.Lock()
	name := e.peerName
	e.cmMu.Unlock()
	if name == nil {
		return 0, errors.Wrap(fi.ENOTCONN, "tcp: getpeer: not connected")
	}
	return copyName(buf, name)
}

func stateErr(op string, s ep.CMState) error {
	code := fi.EOPBADSTATE
	if s == ep.CMClosed {
		code = fi.EBADF
	}
	return errors.Wrapf(code, "tcp: %s: endpoint is %s", op, s)
}

// Shutdown closes the connection (fi_shutdown; flags must be 0): what the
// socket takes at once of the queued sends goes out, the rest and every
// operation still pending complete with fi.ECANCELED error entries, the
// socket is shut down (the peer sees a TCP FIN and reports eq.Shutdown),
// and the endpoint's own eq.Shutdown event is queued unless the peer's
// disconnect already produced it.
func (e *endpoint) Shutdown(flags fi.Flags) error {
	if flags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "tcp: shutdown: flags %v (want 0)", flags)
	}
	emit, err := e.cs.Shutdown()
	if err != nil {
		return errors.Wrap(err, "tcp: shutdown")
	}
	e.stopDial()
	e.mu.Lock()
	e.dp.shutdown(e)
	e.mu.Unlock()
	if emit {
		e.postEvent(&eq.Shutdown{Fid: e})
	}
	return nil
}

// LostWith returns why the connection was lost: fi.ETIMEDOUT when the peer
// stopped answering (FI_TCP_USER_TIMEOUT, keepalive), fi.ECANCELED for
// any other loss, 0 while it stands. The eq.Shutdown of a lost connection
// carries no reason; a layer over this provider (providers/rxm) fails the
// operations it had waiting on the connection with this one, as the
// endpoint's own pending operations failed.
func (e *endpoint) LostWith() fi.Errno { return fi.Errno(e.lostWith.Load()) }

// Alive reports whether the connection may still carry data: it is being
// set up (connecting, or opened for a request and not yet accepted or
// accepting), or its socket has neither an error nor the peer's end of
// stream (a zero-timeout poll; the end of stream counts even while data
// before it is unread). libfabric has no call for it: C's rxm, deciding
// whether a peer's new connection request replaces the connection it has
// (rxm_conn.c), looks at its own connection state; a layer over this
// provider (providers/rxm) asks this instead of waiting for the
// connection's eq.Shutdown, which a restarted peer's request may come
// before. It takes the endpoint's lock: do not call it from a
// kit.DynRecvHandler of the same endpoint.
func (e *endpoint) Alive() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dp.fd < 0 {
		switch e.cs.State() {
		case ep.CMConnecting, ep.CMReqReceived, ep.CMAccepting:
			return true
		}
		return false
	}
	return !peerGone(e.dp.fd)
}

// postEvent queues ev on the bound event queue.
func (e *endpoint) postEvent(ev eq.Event) {
	if q := e.eventQueue(); q != nil {
		_ = q.Post(ev)
	}
}

// postError queues an error event about the endpoint: code, the socket's
// errno when a system call failed (ProvErrno, 0 otherwise), a reject's
// data, and why the connection failed (eq.ConnReason).
func (e *endpoint) postError(code fi.Errno, provErrno int, data []byte, reason eq.ConnReason) {
	if q := e.eventQueue(); q != nil {
		_ = q.PostErr(&eq.EQError{Fid: e, Err: code, ProvErrno: provErrno, ErrData: data, Reason: reason})
	}
}

// eventQueue is where the endpoint posts its connection events.
func (e *endpoint) eventQueue() *eventQueue { return kit.BoundEQ[epSet](&e.bind) }

// stopDial cancels a connection attempt in progress and waits for its
// goroutine.
func (e *endpoint) stopDial() {
	e.cmMu.Lock()
	cancel := e.cancelDial
	e.cmMu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.cmWG.Wait()
}

// Close closes the endpoint (fi_close). A connection is cut (the peer
// sees it end), a connection attempt is abandoned, a request the endpoint
// was opened for and never accepted is rejected; operations still pending
// complete with fi.ECANCELED error entries; then the endpoint lets go of
// its queues, counters and domain. A second Close returns fi.EBADF.
func (e *endpoint) Close() error {
	prev, err := e.cs.Close()
	if err != nil {
		return errors.Wrap(fi.EBADF, "tcp: close endpoint: already closed")
	}
	e.closing.Store(true)
	e.stopDial()
	if prev == ep.CMReqReceived && e.req != nil {
		e.req.reject(nil, rejectConsumer)
	}
	e.mu.Lock()
	e.dp.shutdown(e)
	done := e.progDone
	e.mu.Unlock()
	if done != nil {
		<-done
	}
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.bind.Release()
	e.domain.Release(kit.KindEndpoint)
	return nil
}

// attach makes conn's socket the endpoint's connection: it is called with
// the CM exchange done, marks the endpoint connected and queues up, its
// eq.Connected event, before the data path first runs (it needs e.mu, held
// here): a peer that shuts down at once must not have its eq.Shutdown
// reach the queue first, or the application never sees the connection
// (fi_cm(3): FI_CONNECTED precedes FI_SHUTDOWN). The
// endpoint keeps a duplicate of the descriptor outside the runtime's
// netpoller and closes conn: polled sockets must not wake the netpoller's
// thread for every message (see internal/sockpoll). It returns false, leaving
// conn to the caller, when the endpoint was shut down or closed meanwhile
// (want is the state the attempt must still be in) or the descriptor
// cannot be duplicated.
func (e *endpoint) attach(conn *net.TCPConn, codec dataCodec, want ep.CMState, up *eq.Connected) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	if !e.params.nodelay {
		_ = conn.SetNoDelay(false)
	}
	if err := setLiveness(rc, e.params.userTimeout); err != nil {
		fi.Logger(provName).Warn("tcp: cannot bound the connection's liveness; it keeps the kernel's retransmission limits",
			"param", paramUserTimeout.Name, "err", err)
	}
	if cc := e.params.congestion; cc != "" {
		var serr error
		err := rc.Control(func(s uintptr) {
			serr = unix.SetsockoptString(int(s), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			// EPERM: not in net.ipv4.tcp_allowed_congestion_control for
			// an unprivileged process. The connection keeps the system's.
			fi.Logger(provName).Warn("tcp: cannot set the congestion control; the connection keeps the system's",
				"param", paramCongestion.Name, "value", cc, "err", err)
		}
	}
	e.cmMu.Lock()
	e.connName = sockaddrOf(conn.LocalAddr())
	e.peerName = sockaddrOf(conn.RemoteAddr())
	e.cmMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cs.State() != want {
		return false
	}
	fd, err := dupFD(rc)
	if err != nil {
		fi.Logger(provName).Warn("tcp: cannot take over the connection's socket", "err", err)
		return false
	}
	m, err := e.domain.join(e, fd)
	if err != nil {
		fi.Logger(provName).Warn("tcp: cannot watch the connection for progress", "err", err)
		_ = unix.Close(fd)
		return false
	}
	_ = conn.Close() // the duplicate keeps the connection open
	e.dp.attach(fd, codec)
	e.member.Store(m)
	if e.cs.Established() == nil {
		e.postEvent(up)
	}
	return true
}

// localBind returns the address Connect binds to: SetName's, else the
// Info's source address with port 0 kept as given.
func (e *endpoint) localBind() (*net.TCPAddr, error) {
	e.cmMu.Lock()
	name := e.localName
	e.cmMu.Unlock()
	if name == nil {
		name = e.info.SrcAddr
	}
	if name == nil {
		return nil, nil
	}
	ap, _, err := fi.AddrPortFromSockaddr(name)
	if err != nil {
		return nil, errors.Wrap(err, "tcp: connect: source address")
	}
	if ap.Addr().IsUnspecified() && ap.Port() == 0 {
		return nil, nil
	}
	return net.TCPAddrFromAddrPort(ap), nil
}

// peerAddr parses a destination sockaddr for Connect.
func peerAddr(addr []byte) (netip.AddrPort, error) {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return netip.AddrPort{}, errors.Wrap(err, "tcp: connect: destination")
	}
	if !ap.Addr().IsValid() || ap.Port() == 0 {
		return netip.AddrPort{}, errors.Wrapf(fi.EINVAL, "tcp: connect: destination %v has no address or port", ap)
	}
	return ap, nil
}
