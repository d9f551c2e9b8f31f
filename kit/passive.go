package kit

import (
	"net/netip"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Passive is the base of a provider's passive endpoint (struct fid_pep;
// fi_passive_ep, fi_pep_bind, fi_listen, fi_reject, fi_setname,
// fi_getname; fi_cm(3)): the Info it was opened with, the reference it
// holds on its fabric, the event queue it reports connection requests
// on, its connection-management state and backlog (ep.Backlog), and the
// close rule. The provider embeds it and supplies the transport: a
// listening socket or id, bound by the callbacks it hands to SetNameWith,
// ListenWith and BeginClose, which run with Mu held.
//
// S is the provider's set type, as for Fabric: Bind takes only the
// provider's own event queues, FabricEQ[S].
//
// Passive gives the passive endpoint Info, Bind and SetBacklog as they
// are; the provider writes Listen, SetName, Name, Reject and Close as one
// call each of the methods named ...With, BeginClose and EndClose. Its
// methods are safe for concurrent use once Init has returned.
type Passive[S any] struct {
	// Backlog is the endpoint's CM state and its pending connection
	// requests: the provider's Add (through AddRequestLocked) when a
	// request arrives, Take when an endpoint accepts one.
	Backlog ep.Backlog
	// EQOptional says the provider takes the requests itself (the
	// listener of a layered RDM endpoint), so that Listen needs no bound
	// event queue. Set it before the endpoint is shared.
	EQOptional bool

	// Mu guards the base's state (the bound queue, closed) and whatever
	// provider state the provider puts under it; the provider's
	// callbacks run with it held.
	Mu     sync.Mutex
	fabric *Fabric[S]
	info   *fi.Info
	events *FabricEQ[S]
	closed bool
}

// Init opens the passive endpoint on fabric f for info (fi_passive_ep),
// before it is shared: info must be for connected endpoints (FI_EP_MSG;
// fi.EINVAL otherwise), and the endpoint holds a reference on f until it
// closes. bind then sets up the transport with the address to listen on:
// info's source address, or, when it has none, the wildcard address of
// info's sockaddr format (0.0.0.0 port 0, or [::] port 0 for
// FI_SOCKADDR_IN6; nil for a format that is not a sockaddr's). When bind
// fails Init undoes itself and returns its error.
func (p *Passive[S]) Init(f *Fabric[S], info *fi.Info, bind func(addr []byte) error) error {
	if info == nil {
		return errors.Wrapf(fi.EINVAL, "%s: open passive endpoint: nil info", f.prov)
	}
	if err := f.CheckEPType("open passive endpoint", info, fi.EPTypeMsg); err != nil {
		return err
	}
	if err := f.Acquire(KindPassiveEndpoint, "open passive endpoint"); err != nil {
		return err
	}
	p.fabric, p.info = f, info.Clone()
	addr := info.SrcAddr
	if addr == nil {
		addr = wildcard(info.AddrFormat)
	}
	if err := bind(addr); err != nil {
		f.Release(KindPassiveEndpoint)
		return err
	}
	return nil
}

// wildcard returns the wildcard sockaddr of format f, IPv4 unless f says
// IPv6, or nil for a format that is not a sockaddr's.
func wildcard(f fi.AddrFormat) []byte {
	a := netip.IPv4Unspecified()
	switch f {
	case fi.FormatSockaddrIn6:
		a = netip.IPv6Unspecified()
	case fi.FormatUnspec, fi.FormatSockaddr, fi.FormatSockaddrIn:
	default:
		return nil
	}
	_, b, _ := fi.SockaddrFromAddrPort(netip.AddrPortFrom(a, 0))
	return b
}

// Info returns the Info the passive endpoint was opened with.
func (p *Passive[S]) Info() *fi.Info { return p.info }

// Bind binds the event queue that gets the connection requests
// (fi_pep_bind): flags must be 0 (fi.EBADFLAGS), the queue one of the
// provider's own (fi.EINVAL), and only one may be bound (fi.EINVAL). The
// endpoint holds a reference on the queue until it closes.
func (p *Passive[S]) Bind(q eq.EventQueue, flags fi.Flags) error {
	prov := p.fabric.prov
	if flags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "%s: passive endpoint: bind: flags %v", prov, flags)
	}
	own, ok := q.(*FabricEQ[S])
	if !ok {
		return errors.Wrapf(fi.EINVAL, "%s: passive endpoint: bind: %T is not a %s event queue", prov, q, prov)
	}
	p.Mu.Lock()
	defer p.Mu.Unlock()
	switch {
	case p.closed:
		return errors.Wrapf(fi.EBADF, "%s: passive endpoint: bind: closed", prov)
	case p.events != nil:
		return errors.Wrapf(fi.EINVAL, "%s: passive endpoint: bind: an event queue is already bound", prov)
	}
	if err := own.Acquire(); err != nil {
		return errors.Wrapf(err, "%s: passive endpoint: bind", prov)
	}
	p.events = own
	return nil
}

// SetBacklog sets how many connection requests may wait for Accept or
// Reject (fi_control FI_BACKLOG); more are refused.
func (p *Passive[S]) SetBacklog(n int) error { return p.Backlog.SetBacklog(n) }

// ClosedLocked reports whether Close has begun; Mu is held.
func (p *Passive[S]) ClosedLocked() bool { return p.closed }

// SetNameWith is fi_setname for the provider's SetName: before Listen,
// bind rebinds the endpoint to addr, with Mu held; fi.EBADF once closed,
// fi.EOPBADSTATE once listening.
func (p *Passive[S]) SetNameWith(addr []byte, bind func(addr []byte) error) error {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	switch {
	case p.closed:
		return errors.Wrapf(fi.EBADF, "%s: passive endpoint: setname: closed", p.fabric.prov)
	case p.Backlog.State() != ep.CMIdle:
		return errors.Wrapf(fi.EOPBADSTATE, "%s: passive endpoint: setname: already listening", p.fabric.prov)
	}
	return bind(addr)
}

// NameWith is fi_getname for the provider's Name: it copies the address
// name returns, called with Mu held, into buf with CopyName's rule;
// fi.EBADF once closed.
func (p *Passive[S]) NameWith(buf []byte, name func() []byte) (int, error) {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.closed {
		return 0, errors.Wrapf(fi.EBADF, "%s: passive endpoint: getname: closed", p.fabric.prov)
	}
	return CopyName(buf, name())
}

// CopyName copies name into buf with fi_getname's rule (ep.Namer): it
// returns the full length, with bare fi.ETOOSMALL and a truncated copy
// when buf is too small.
func CopyName(buf, name []byte) (int, error) {
	n := copy(buf, name)
	if n < len(name) {
		return len(name), fi.ETOOSMALL
	}
	return len(name), nil
}

// ListenWith is fi_listen for the provider's Listen: it needs a bound
// event queue (fi.ENOEQ, unless EQOptional) and may be called once
// (fi.EOPBADSTATE after, fi.EBADF once closed); then start, with Mu held,
// starts the transport listening, and its error is Listen's.
func (p *Passive[S]) ListenWith(start func() error) error {
	prov := p.fabric.prov
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.closed {
		return errors.Wrapf(fi.EBADF, "%s: listen: closed", prov)
	}
	if p.events == nil && !p.EQOptional {
		return errors.Wrapf(fi.ENOEQ, "%s: listen: no event queue bound", prov)
	}
	// The state is checked first and changed last, so that a start that
	// fails (listen(2) refused) leaves the endpoint idle, to listen again.
	if p.Backlog.State() == ep.CMIdle {
		if err := start(); err != nil {
			return err
		}
	}
	if err := p.Backlog.Listen(); err != nil {
		return errors.Wrapf(err, "%s: listen", prov)
	}
	return nil
}

// AddRequestLocked records an arrived connection request, named by its
// handle (ep.Backlog.Add), with Mu held; an error (the endpoint closed or
// not listening, the backlog full) means the provider must refuse the
// request instead of reporting it.
func (p *Passive[S]) AddRequestLocked(handle fi.Fid) error {
	if p.closed {
		return errors.Wrapf(fi.EBADF, "%s: passive endpoint closed", p.fabric.prov)
	}
	return p.Backlog.Add(handle)
}

// RequestInfo returns the Info of a connection request's eq.ConnReq
// event: the endpoint's, with the request's handle and addresses, and
// the address format of src when it is a sockaddr.
func (p *Passive[S]) RequestInfo(handle fi.Fid, src, dest []byte) *fi.Info {
	info := p.info.Clone()
	info.Handle = handle
	info.SrcAddr, info.DestAddr = src, dest
	if _, f, err := fi.AddrPortFromSockaddr(src); err == nil {
		info.AddrFormat = f
	}
	return info
}

// PostRequest reports a connection request that AddRequestLocked took:
// an eq.ConnReq event from the passive endpoint self (the provider's
// object, the Fid the application holds) with the request's Info and
// private data, on the bound event queue. Without one (EQOptional) it
// does nothing.
func (p *Passive[S]) PostRequest(self fi.Fid, info *fi.Info, data []byte) {
	p.Mu.Lock()
	q := p.events
	p.Mu.Unlock()
	if q != nil {
		_ = q.Post(&eq.ConnReq{Fid: self, Info: info, Data: data})
	}
}

// RejectWith is fi_reject for the provider's Reject: data may be at most
// maxData bytes (ep.CheckCMData: fi.EINVAL), and handle must be a pending
// request of this endpoint (fi.EINVAL otherwise), which it takes from the
// backlog and hands to reject, the transport's refusal with data.
func (p *Passive[S]) RejectWith(handle fi.Fid, data []byte, maxData int, reject func(handle fi.Fid, data []byte)) error {
	if err := ep.CheckCMData(data, maxData); err != nil {
		return errors.Wrapf(err, "%s: reject", p.fabric.prov)
	}
	if err := p.Backlog.Take(handle); err != nil {
		return errors.Wrapf(err, "%s: reject", p.fabric.prov)
	}
	reject(handle, data)
	return nil
}

// CloseRequest is the Close of a request's handle (the fi.Fid in the
// eq.ConnReq event's Info.Handle), by which the application drops a
// request it opens no endpoint for: as fi_reject without data, it takes
// the request from the backlog (fi.EINVAL when it is not pending) and
// hands it to reject.
func (p *Passive[S]) CloseRequest(handle fi.Fid, reject func(handle fi.Fid, data []byte)) error {
	if err := p.Backlog.Take(handle); err != nil {
		return errors.Wrapf(err, "%s: close connection request", p.fabric.prov)
	}
	reject(handle, nil)
	return nil
}

// BeginClose starts fi_close for the provider's Close: it marks the
// endpoint closed and runs stop, with Mu held, to stop the transport (no
// request is added after). A second Close returns fi.EBADF. The provider
// then waits for its goroutines, if any, and calls EndClose.
func (p *Passive[S]) BeginClose(stop func()) error {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.closed {
		return errors.Wrapf(fi.EBADF, "%s: close passive endpoint: already closed", p.fabric.prov)
	}
	p.closed = true
	if stop != nil {
		stop()
	}
	return nil
}

// EndClose ends fi_close after BeginClose: the pending requests go to
// reject without data, and the endpoint releases its event queue and its
// fabric.
func (p *Passive[S]) EndClose(reject func(handle fi.Fid, data []byte)) {
	pending, _ := p.Backlog.Close()
	for _, h := range pending {
		reject(h, nil)
	}
	p.Mu.Lock()
	q := p.events
	p.events = nil
	p.Mu.Unlock()
	if q != nil {
		q.Release()
	}
	p.fabric.Release(KindPassiveEndpoint)
}

// ConnRequest returns the connection request an Info names (its Handle,
// from an eq.ConnReq event; fi_endpoint opening the endpoint that will
// accept it) as the provider's request type R: the zero R when the Info
// names none, fi.EINVAL when the handle is not one of the provider's.
func ConnRequest[R fi.Fid](prov string, info *fi.Info) (R, error) {
	var zero R
	if info.Handle == nil {
		return zero, nil
	}
	r, ok := info.Handle.(R)
	if !ok {
		return zero, errors.Wrapf(fi.EINVAL, "%s: open endpoint: handle %T is not a %s connection request", prov, info.Handle, prov)
	}
	return r, nil
}
