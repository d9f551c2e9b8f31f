package fabnet

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// ListenConfig configures a Listener (fi_passive_ep(3) and fi_listen;
// librdmacm's rdma_listen; net.ListenConfig). The zero ListenConfig is
// ready to use.
type ListenConfig struct {
	// Hints are fi_getinfo(3)'s hints; the endpoint type is always
	// FI_EP_MSG, and prov, when not empty, replaces the provider name.
	// Nil asks for FI_MSG and FI_RMA, or FI_MSG alone where the provider
	// has no RMA.
	Hints *fi.Info
	// Backlog is the number of connection requests held before the
	// application takes them (fi_control FI_BACKLOG; listen(2)'s
	// backlog); zero keeps the provider's.
	Backlog int
	// OnRequest, when not nil, is asked by Accept about each request
	// before it is accepted, and sees the requester's private data and
	// address. An error rejects the request (fi_reject(3)), as the
	// return value of the kernel's rdma_cm event handler does; when the
	// error is, or wraps, a *RejectedError, its Data goes to the
	// requester with the reject. Accept then waits for the next request.
	OnRequest func(ctx context.Context, r *Request) error
	// Data is the private data Accept sends with each acceptance.
	Data []byte
	// Config tunes the objects opened for each accepted connection; nil
	// takes the defaults.
	Config *EndpointConfig
}

// Listen listens at addr with the zero ListenConfig: see
// ListenConfig.Listen.
func Listen(ctx context.Context, prov, addr string) (*Listener, error) {
	var lc ListenConfig
	return lc.Listen(ctx, prov, addr)
}

// Listen opens a passive endpoint of provider prov ("" for any) at addr,
// "host:port" (port "0" or none: one the provider picks; Addr tells
// which) or an fi_getinfo address string, and listens on it (fi_getinfo
// with FI_SOURCE, fi_fabric, fi_eq_open, fi_passive_ep, fi_pep_bind,
// fi_listen; net.ListenConfig's Listen). ctx bounds the lookup.
func (lc *ListenConfig) Listen(ctx context.Context, prov, addr string) (*Listener, error) {
	infos, err := getInfo(ctx, lc.Hints, prov, addr, fi.FlagSource, fi.EPTypeMsg)
	if err != nil {
		return nil, errors.Wrapf(err, "fabnet: listen %s %s", prov, addr)
	}
	var first error
	for _, info := range infos {
		l, err := lc.listenInfo(info)
		if err == nil {
			return l, nil
		}
		if first == nil {
			first = errors.Wrapf(err, "fabnet: listen %s %s", prov, addr)
		}
	}
	return nil, first
}

// listenInfo opens and starts a listener for info.
func (lc *ListenConfig) listenInfo(info *fi.Info) (_ *Listener, err error) {
	l := &Listener{Info: info, cfg: lc}
	var undo closers
	defer func() {
		if err != nil {
			_ = undo.run()
		}
	}()
	if l.Fabric, err = fi.OpenFabric(info); err != nil {
		return nil, errors.Wrap(err, "open fabric")
	}
	undo.push(l.Fabric)
	if l.EQ, err = eq.OpenEQ(l.Fabric, &eq.Attr{}); err != nil {
		return nil, errors.Wrap(err, "open eq")
	}
	undo.push(l.EQ)
	if l.PEP, err = ep.OpenPassive(l.Fabric, info); err != nil {
		return nil, errors.Wrap(err, "open passive endpoint")
	}
	undo.push(l.PEP)
	if err = l.PEP.Bind(l.EQ, 0); err != nil {
		return nil, errors.Wrap(err, "bind eq")
	}
	if lc.Backlog > 0 {
		b, ok := l.PEP.(ep.BacklogSetter)
		if !ok {
			return nil, errors.Wrapf(fi.ENOSYS, "backlog: %T does not set one", l.PEP)
		}
		if err = b.SetBacklog(lc.Backlog); err != nil {
			return nil, errors.Wrap(err, "backlog")
		}
	}
	if err = l.PEP.Listen(); err != nil {
		return nil, errors.Wrap(err, "listen")
	}
	name, err := nameOf(l.PEP)
	if err != nil {
		return nil, err
	}
	l.addr = &Addr{Prov: provName(info), Format: info.AddrFormat, Raw: name}
	l.refs.Store(1)
	return l, nil
}

// Listener is a listening passive endpoint with its fabric and event
// queue (struct fid_pep after fi_listen; librdmacm's listening
// rdma_cm_id; net.Listener). Connections accepted from it share its
// fabric, which closes when the listener and all of them have closed. A
// Listener is safe for concurrent use.
type Listener struct {
	// Info is the fi_getinfo(3) entry the listener was opened from.
	Info   *fi.Info
	Fabric fi.Fabric
	// EQ receives the connection requests (FI_CONNREQ); Next reads it.
	EQ  eq.EventQueue
	PEP ep.PassiveEndpoint

	cfg    *ListenConfig
	addr   *Addr
	closed atomic.Bool
	// refs counts the listener (until Close) and its accepted
	// connections: the users of Fabric, closed when the last goes.
	refs atomic.Int32
}

// Addr returns the address the listener listens on, in the form Dial
// takes (fi_getname(3); net.Listener's Addr).
func (l *Listener) Addr() net.Addr { return l.addr }

// Next waits for the next connection request (fi_eq_sread until
// FI_CONNREQ; rdma_get_request(3)) and returns it for the application to
// Accept or Reject. A request that is neither waits in the provider's
// backlog until the listener closes. When the listener is closed, Next
// returns an error matching net.ErrClosed; when ctx ends, fi.ContextError's
// error.
func (l *Listener) Next(ctx context.Context) (*Request, error) {
	for {
		if l.closed.Load() {
			return nil, closedListener()
		}
		ev, err := l.EQ.SRead(ctx)
		switch {
		case err == nil:
			if cr, ok := ev.(*eq.ConnReq); ok {
				return &Request{Data: cr.Data, Info: cr.Info, l: l}, nil
			}
		case l.closed.Load():
			return nil, closedListener()
		case fi.Code(err) == fi.EAVAIL:
			if ee, err := l.EQ.ReadErr(); err == nil {
				return nil, errors.Wrap(ee, "fabnet: listener")
			}
		case ctx.Err() != nil:
			return nil, ctxErr(ctx, "accept")
		default:
			return nil, errors.Wrap(err, "fabnet: accept")
		}
	}
}

// Accept waits for the next connection request, asks OnRequest about it,
// and accepts it with ListenConfig.Data (Next, then Request.Accept;
// net.Listener's Accept with a context). A request that OnRequest refuses
// is rejected, and one whose acceptance fails (the requester went away)
// is dropped: Accept returns only established connections, and waits for
// the next request meanwhile. Errors are Next's.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	for {
		r, err := l.Next(ctx)
		if err != nil {
			return nil, err
		}
		if l.cfg.OnRequest != nil {
			if err := l.cfg.OnRequest(ctx, r); err != nil {
				var rej *RejectedError
				var data []byte
				if errors.As(err, &rej) {
					data = rej.Data
				}
				_ = r.Reject(data)
				continue
			}
		}
		c, err := r.Accept(ctx, l.cfg.Data)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil || l.closed.Load() {
			return nil, err
		}
		fi.Logger("fabnet").Debug("fabnet: accept failed", "err", err)
	}
}

// Close stops listening (fi_close(3) on the passive endpoint, which
// rejects the requests still pending, then on its event queue) and wakes
// the calls waiting in Next and Accept, which return an error matching
// net.ErrClosed. Connections accepted earlier stay open; the fabric
// closes with the last of them. A second Close returns fi.EBADF.
func (l *Listener) Close() error {
	if l.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "fabnet: close: listener already closed")
	}
	err := l.PEP.Close()
	if qerr := l.EQ.Close(); err == nil {
		err = qerr
	}
	if rerr := l.release(); err == nil {
		err = rerr
	}
	if err != nil {
		return errors.Wrap(err, "fabnet: close listener")
	}
	return nil
}

// acquire takes a reference on the listener's fabric for a connection;
// false once the listener and its connections have all closed.
func (l *Listener) acquire() bool {
	for {
		n := l.refs.Load()
		if n == 0 {
			return false
		}
		if l.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference and closes the fabric with the last.
func (l *Listener) release() error {
	if l.refs.Add(-1) == 0 {
		return l.Fabric.Close()
	}
	return nil
}

// closedListener is the error of a call on a closed listener.
func closedListener() error {
	return errors.Wrap(fi.EBADF, "fabnet: accept: use of closed listener")
}

// Request is a connection request (an FI_CONNREQ event; librdmacm's
// rdma_cm_id from rdma_get_request), shown to the application before it
// decides: the requester's private data and address. Call Accept or
// Reject once.
type Request struct {
	// Data is the private data the requester sent with its connect
	// (fi_eq_cm_entry's data).
	Data []byte
	// Info describes the requested connection; Info.Handle names the
	// request (fi_info's handle).
	Info *fi.Info
	l    *Listener
	once sync.Once
}

// RemoteAddr returns the requester's address (the request's
// fi_info dest_addr), nil when the provider does not give it.
func (r *Request) RemoteAddr() net.Addr {
	if r.Info == nil || len(r.Info.DestAddr) == 0 {
		return nil
	}
	return &Addr{Prov: provName(r.Info), Format: r.Info.AddrFormat, Raw: r.Info.DestAddr}
}

// take marks the request decided; false when it already was.
func (r *Request) take() bool {
	first := false
	r.once.Do(func() { first = true })
	return first
}

// Accept accepts the request with private data and waits until the
// connection is up (fi_domain and fi_endpoint from the request's Info,
// fi_ep_bind, fi_enable, fi_accept(3), then fi_eq_sread until
// FI_CONNECTED; rdma_accept(3)). The connection has its own domain,
// queues and event queue on the listener's fabric. When ctx ends first,
// the endpoint is closed (the requester sees the connection end) and the
// error is fi.ContextError's.
func (r *Request) Accept(ctx context.Context, data []byte) (*Conn, error) {
	if !r.take() {
		return nil, errors.Wrap(fi.EINVAL, "fabnet: accept: request already accepted or rejected")
	}
	l := r.l
	if !l.acquire() {
		return nil, closedListener()
	}
	e, err := openOn(l.Fabric, l.release, r.Info, r.Info, l.cfg.Config)
	if err != nil {
		_ = l.PEP.Reject(r.Info.Handle, nil) // frees the request where the endpoint never took it
		_ = l.release()
		return nil, errors.Wrap(err, "fabnet: accept")
	}
	if err := ep.CheckCMData(data, e.cm.CMDataSize()); err != nil {
		_ = e.Close()
		return nil, errors.Wrap(err, "fabnet: accept: private data")
	}
	if err := e.cm.Accept(data); err != nil {
		_ = e.Close()
		return nil, errors.Wrap(err, "fabnet: accept")
	}
	if _, err := e.awaitConnected(ctx); err != nil {
		_ = e.Close()
		if ctx.Err() != nil {
			return nil, ctxErr(ctx, "accept")
		}
		return nil, errors.Wrap(err, "fabnet: accept")
	}
	return e.conn(r.Data), nil
}

// Reject refuses the request, sending data to the requester, whose Dial
// returns a *RejectedError with it (fi_reject(3); rdma_reject(3)).
func (r *Request) Reject(data []byte) error {
	if !r.take() {
		return errors.Wrap(fi.EINVAL, "fabnet: reject: request already accepted or rejected")
	}
	if err := r.l.PEP.Reject(r.Info.Handle, data); err != nil {
		return errors.Wrap(err, "fabnet: reject")
	}
	return nil
}
