//go:build verbs && cgo

package verbs

import (
	"net/netip"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// listenBacklog is rdma_listen's backlog; the application-level backlog
// (requests reported and not yet accepted or rejected) is ep.Backlog's.
const listenBacklog = 1024

// Private data: rdma_cm hands back the IB CM message's whole private data
// field (56 bytes in a REQ, 196 in a REP, 148 in a REJ, zero-padded), so
// the provider puts the application's length in a one-byte header in front
// of its data (C's verbs provider does the same, struct vrb_cm_data_hdr {
// uint8_t size; char data[]; }). The limit is the smallest field, a REQ's,
// less the header.
const (
	cmHdrSize     = 1
	cmMaxDataSize = 56 - cmHdrSize
)

// cmData returns data behind its header, for rdma_connect, rdma_accept
// and rdma_reject.
func cmData(data []byte) []byte {
	out := make([]byte, cmHdrSize+len(data))
	out[0] = byte(len(data))
	copy(out[cmHdrSize:], data)
	return out
}

// cmPayload returns the application's data of an event's private data.
func cmPayload(raw []byte) []byte {
	if len(raw) < cmHdrSize || raw[0] == 0 {
		return nil
	}
	n := min(int(raw[0]), len(raw)-cmHdrSize)
	return append([]byte(nil), raw[cmHdrSize:cmHdrSize+n]...)
}

// passiveEP is a listening endpoint (struct fid_pep; fi_passive_ep,
// fi_listen, fi_reject; vrb_pep): an rdma_cm id bound when it opens (so
// that Name gives the port before Listen), listening from Listen on.
// Each CONNECT_REQUEST becomes an eq.ConnReq event whose Info.Handle is
// a *connReq holding the request's new id. Safe for concurrent use.
type passiveEP struct {
	fabric  *fabric
	info    *fi.Info
	backlog ep.Backlog

	mu        sync.Mutex // guards the fields below
	id        cmIDC
	events    *eventQueue
	listening bool
	closed    bool
}

var (
	_ ep.PassiveEndpoint = (*passiveEP)(nil)
	_ ep.BacklogSetter   = (*passiveEP)(nil)
	_ ep.PassiveOpener   = (*fabric)(nil)
)

// OpenPassive opens a passive endpoint (fi_passive_ep; rdma_create_id,
// rdma_bind_addr) bound to info's source address, or to the wildcard
// address of info's format; port 0 lets rdma_cm pick one.
func (f *fabric) OpenPassive(info *fi.Info) (ep.PassiveEndpoint, error) {
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeMsg {
		return nil, errors.Wrapf(fi.EINVAL, "verbs: open passive endpoint: ep type %v not supported (offers FI_EP_MSG)", info.EPAttr.Type)
	}
	ap := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if info.AddrFormat == fi.FormatSockaddrIn6 {
		ap = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	}
	if info.SrcAddr != nil {
		var err error
		if ap, _, err = fi.AddrPortFromSockaddr(info.SrcAddr); err != nil {
			return nil, errors.Wrap(err, "verbs: open passive endpoint: source address")
		}
	}
	if err := f.ref.Acquire(); err != nil {
		return nil, errors.Wrap(err, "verbs: open passive endpoint: fabric closed")
	}
	p := &passiveEP{fabric: f, info: info.Clone()}
	if err := p.bindTo(ap); err != nil {
		f.ref.Release()
		return nil, err
	}
	return p, nil
}

// bindTo replaces the endpoint's id by one bound to ap (rdma_create_id,
// rdma_bind_addr). Called with mu held or before the endpoint is shared.
func (p *passiveEP) bindTo(ap netip.AddrPort) error {
	id, err := p.fabric.cm.newID(p)
	if err != nil {
		return errors.Wrap(err, "verbs: passive endpoint")
	}
	if err := bindAddr(id, ap); err != nil {
		p.fabric.cm.destroy(id)
		return errors.Wrap(err, "verbs: passive endpoint")
	}
	if p.id != nil {
		p.fabric.cm.destroy(p.id)
	}
	p.id = id
	return nil
}

// Info returns the Info the passive endpoint was opened with.
func (p *passiveEP) Info() *fi.Info { return p.info }

// Bind binds the event queue that gets the connection requests
// (fi_pep_bind); flags must be 0 and the queue this provider's.
func (p *passiveEP) Bind(q eq.EventQueue, flags fi.Flags) error {
	if flags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: passive endpoint: bind: flags %v", flags)
	}
	eqq, ok := q.(*eventQueue)
	if !ok {
		return errors.Wrapf(fi.EINVAL, "verbs: passive endpoint: bind: %T is not a verbs event queue", q)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errors.Wrap(fi.EBADF, "verbs: passive endpoint: bind: closed")
	case p.events != nil:
		return errors.Wrap(fi.EINVAL, "verbs: passive endpoint: bind: an event queue is already bound")
	}
	if err := eqq.Acquire(); err != nil {
		return errors.Wrap(err, "verbs: passive endpoint: bind")
	}
	p.events = eqq
	return nil
}

// SetBacklog sets how many requests may wait for Accept or Reject
// (fi_control FI_BACKLOG); more are rejected.
func (p *passiveEP) SetBacklog(n int) error { return p.backlog.SetBacklog(n) }

// SetName rebinds the endpoint to addr (fi_setname) before Listen: a new
// id, as an rdma_cm id binds once.
func (p *passiveEP) SetName(addr []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "verbs: passive endpoint: setname")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errors.Wrap(fi.EBADF, "verbs: passive endpoint: setname: closed")
	case p.listening:
		return errors.Wrap(fi.EOPBADSTATE, "verbs: passive endpoint: setname: already listening")
	}
	return p.bindTo(ap)
}

// CMDataSize is the most private data a connection request to this
// passive endpoint, and its accept or reject, carry
// (fi_getopt(FI_OPT_CM_DATA_SIZE) on a passive endpoint): 55 bytes, as its endpoints.
func (p *passiveEP) CMDataSize() int { return cmMaxDataSize }

// Name copies the bound address into buf (fi_getname;
// rdma_get_local_addr), with the ETOOSMALL rule of ep.Namer.
func (p *passiveEP) Name(buf []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, errors.Wrap(fi.EBADF, "verbs: passive endpoint: getname: closed")
	}
	return copyName(buf, idAddr(p.id, false))
}

// copyName copies name into buf: its length, with bare fi.ETOOSMALL and
// a truncated copy when buf is too small.
func copyName(buf, name []byte) (int, error) {
	n := copy(buf, name)
	if n < len(name) {
		return len(name), fi.ETOOSMALL
	}
	return len(name), nil
}

// Listen starts listening (fi_listen; rdma_listen): it needs a bound event
// queue (fi.ENOEQ) and may be called once (fi.EOPBADSTATE after).
func (p *passiveEP) Listen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.Wrap(fi.EBADF, "verbs: listen: closed")
	}
	if p.events == nil {
		return errors.Wrap(fi.ENOEQ, "verbs: listen: no event queue bound")
	}
	if err := p.backlog.Listen(); err != nil {
		return errors.Wrap(err, "verbs: listen")
	}
	if err := listen(p.id, listenBacklog); err != nil {
		return err
	}
	p.listening = true
	return nil
}

// cmEvent takes the listening id's events: a CONNECT_REQUEST becomes a
// pending request and an eq.ConnReq event, or is rejected when the
// backlog is full or the endpoint closed.
func (p *passiveEP) cmEvent(ev cmEventC) {
	if ev.typ != evConnectRequest {
		return
	}
	d := p.fabric.cm
	r := &connReq{pep: p, cm: d, id: ev.id}
	d.setOwner(ev.id, r)
	p.mu.Lock()
	err := errors.Wrap(fi.EBADF, "verbs: passive endpoint closed")
	if !p.closed {
		err = p.backlog.Add(r)
	}
	q := p.events
	p.mu.Unlock()
	if err != nil {
		fi.Logger(provName).Debug("verbs: refused a connection request", "err", err)
		r.reject(nil)
		return
	}
	info := p.info.Clone()
	info.Handle = r
	info.SrcAddr = idAddr(ev.id, false)
	info.DestAddr = idAddr(ev.id, true)
	if len(info.SrcAddr) > 16 {
		info.AddrFormat = fi.FormatSockaddrIn6
	} else if info.SrcAddr != nil {
		info.AddrFormat = fi.FormatSockaddrIn
	}
	_ = q.Post(&eq.ConnReq{Fid: p, Info: info, Data: cmPayload(ev.data)})
}

// Reject rejects the request handle with private data (fi_reject;
// rdma_reject): the requester gets an error event with fi.ECONNREFUSED
// and data. Data over CMDataSize is refused with fi.EINVAL; a handle that
// is not a pending request of this endpoint gives fi.EINVAL.
func (p *passiveEP) Reject(handle fi.Fid, data []byte) error {
	if err := ep.CheckCMData(data, cmMaxDataSize); err != nil {
		return errors.Wrap(err, "verbs: reject")
	}
	r, ok := handle.(*connReq)
	if !ok || r.pep != p {
		return errors.Wrapf(fi.EINVAL, "verbs: reject: %T is not a request of this passive endpoint", handle)
	}
	if err := p.backlog.Take(r); err != nil {
		return errors.Wrap(err, "verbs: reject")
	}
	r.reject(data)
	return nil
}

// Close stops listening (fi_close; rdma_destroy_id): pending requests are
// rejected, and the event queue and fabric are released. A second Close
// returns fi.EBADF. Connections accepted from it live on.
func (p *passiveEP) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.Wrap(fi.EBADF, "verbs: close passive endpoint: already closed")
	}
	p.closed = true
	p.fabric.cm.destroy(p.id)
	p.id = nil
	q := p.events
	p.mu.Unlock()
	pending, _ := p.backlog.Close()
	for _, h := range pending {
		h.(*connReq).reject(nil)
	}
	if q != nil {
		q.Release()
	}
	p.fabric.ref.Release()
	return nil
}

// connReq is a connection request (the handle in a ConnReq event's Info;
// vrb_connreq): the new id of a CONNECT_REQUEST, until an endpoint takes
// it (fi_endpoint with the Info) or it is rejected.
type connReq struct {
	pep  *passiveEP
	cm   *cmDispatch
	id   cmIDC
	once sync.Once
}

// cmEvent ignores the events of a request no endpoint has taken yet.
func (r *connReq) cmEvent(cmEventC) {}

// Close rejects the request without data, as Reject(handle, nil) does.
func (r *connReq) Close() error {
	if err := r.pep.backlog.Take(r); err != nil {
		return errors.Wrap(err, "verbs: close connection request")
	}
	r.reject(nil)
	return nil
}

// reject rejects the request with data and destroys its id (rdma_reject,
// rdma_destroy_id).
func (r *connReq) reject(data []byte) {
	r.once.Do(func() {
		if err := reject(r.id, cmData(data)); err != nil {
			fi.Logger(provName).Debug("verbs: rdma_reject failed", "err", err)
		}
		r.cm.destroy(r.id)
	})
}
