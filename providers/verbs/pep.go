//go:build verbs && cgo

package verbs

import (
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
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
// fi_listen, fi_reject; vrb_pep) on kit.Passive, which binds its event
// queue, keeps its backlog and gives it its close rule: an rdma_cm id
// bound when it opens (so that Name gives the port before Listen),
// listening from Listen on. Each CONNECT_REQUEST becomes an eq.ConnReq
// event whose Info.Handle is a *connReq holding the request's new id.
// Safe for concurrent use.
type passiveEP struct {
	kit.Passive[epSet]
	fabric *fabric
	id     cmIDC // guarded by Passive.Mu
	// events is the bound event queue, for the endpoint's error events
	// (DEVICE_REMOVAL); guarded by Passive.Mu.
	events *eventQueue
}

var (
	_ ep.PassiveEndpoint = (*passiveEP)(nil)
	_ ep.BacklogSetter   = (*passiveEP)(nil)
	_ ep.Stater          = (*passiveEP)(nil)
	_ ep.Options         = (*passiveEP)(nil)
	_ ep.PassiveOpener   = (*fabric)(nil)
)

// OpenPassive opens a passive endpoint (fi_passive_ep; rdma_create_id,
// rdma_bind_addr) bound to info's source address, or to the wildcard
// address of info's format; port 0 lets rdma_cm pick one.
func (f *fabric) OpenPassive(info *fi.Info) (ep.PassiveEndpoint, error) {
	p := &passiveEP{fabric: f}
	if err := p.Init(&f.Fabric, info, p.bindTo); err != nil {
		return nil, err
	}
	return p, nil
}

// SetName rebinds the endpoint to addr (fi_setname) before Listen: a new
// id, as an rdma_cm id binds once.
func (p *passiveEP) SetName(addr []byte) error { return p.SetNameWith(addr, p.bindTo) }

// bindTo replaces the endpoint's id by one bound to addr, a sockaddr
// (rdma_create_id, rdma_bind_addr). Called with Mu held or before the
// endpoint is shared.
func (p *passiveEP) bindTo(addr []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return errors.Wrap(err, "verbs: passive endpoint: address")
	}
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

// Bind binds the event queue that gets the connection requests and the
// endpoint's error events (fi_pep_bind); the rules are kit.Passive's.
func (p *passiveEP) Bind(q eq.EventQueue, flags fi.Flags) error {
	if err := p.Passive.Bind(q, flags); err != nil {
		return err
	}
	p.Mu.Lock()
	p.events, _ = q.(*eventQueue)
	p.Mu.Unlock()
	return nil
}

// CMState returns the passive endpoint's state: ep.CMIdle, ep.CMListening
// or ep.CMClosed (ep.Stater; ep.State).
func (p *passiveEP) CMState() ep.CMState { return p.Backlog.State() }

// GetOpt reads an option (fi_getopt; C's verbs answers the passive
// endpoint with vrb_ep_getopt): FI_OPT_CM_DATA_SIZE (55) at
// ep.OptLevelEndpoint, ep.OptConnState at ep.OptLevelCM; others give
// fi.ENOPROTOOPT.
func (p *passiveEP) GetOpt(level ep.OptLevel, name ep.OptName) (int, error) {
	switch {
	case level == ep.OptLevelEndpoint && name == ep.OptCMDataSize:
		return cmMaxDataSize, nil
	case level == ep.OptLevelCM && name == ep.OptConnState:
		return int(p.CMState()), nil
	}
	return 0, errors.Wrapf(fi.ENOPROTOOPT, "verbs: passive endpoint: getopt: level %#x option %d not supported", int(level), int(name))
}

// SetOpt (fi_setopt): a passive endpoint has no option to set
// (fi.ENOPROTOOPT), as in C.
func (p *passiveEP) SetOpt(level ep.OptLevel, name ep.OptName, val int) error {
	return errors.Wrapf(fi.ENOPROTOOPT, "verbs: passive endpoint: setopt: level %#x option %d cannot be set", int(level), int(name))
}

// CMDataSize is the most private data a connection request to this
// passive endpoint, and its accept or reject, carry
// (fi_getopt(FI_OPT_CM_DATA_SIZE) on a passive endpoint): 55 bytes, as its endpoints.
func (p *passiveEP) CMDataSize() int { return cmMaxDataSize }

// Name copies the bound address into buf (fi_getname;
// rdma_get_local_addr), with the ETOOSMALL rule of ep.Namer.
func (p *passiveEP) Name(buf []byte) (int, error) {
	return p.NameWith(buf, func() []byte { return idAddr(p.id, false) })
}

// copyName copies name into buf with fi_getname's rule (kit.CopyName).
func copyName(buf, name []byte) (int, error) { return kit.CopyName(buf, name) }

// Listen starts listening (fi_listen; rdma_listen): it needs a bound event
// queue (fi.ENOEQ) and may be called once (fi.EOPBADSTATE after).
func (p *passiveEP) Listen() error {
	return p.ListenWith(func() error { return listen(p.id, listenBacklog) })
}

// cmEvent takes the listening id's events: a CONNECT_REQUEST becomes a
// pending request and an eq.ConnReq event, or is rejected when the
// backlog is full (eq.ReasonBacklogFull at a gofabric requester) or the
// endpoint closed (eq.ReasonNoListener); a DEVICE_REMOVAL becomes an
// error event (fi.ENODEV, eq.ReasonTransport), as in C.
func (p *passiveEP) cmEvent(ev cmEventC) {
	switch ev.typ {
	case evConnectRequest:
	case evDeviceRemoval:
		// The device goes once its ids are destroyed: the application
		// closes the endpoint.
		code, prov, reason := connFailure(ev.typ, ev.status, nil)
		p.Mu.Lock()
		q := p.events
		p.Mu.Unlock()
		if q != nil {
			_ = q.PostErr(&eq.EQError{Fid: p, Err: code, ProvErrno: prov, Reason: reason})
		}
		return
	default:
		fi.Logger(provName).Debug("verbs: passive endpoint: rdma_cm event ignored", "event", eventName(ev.typ), "status", ev.status)
		return
	}
	d := p.fabric.cm
	r := &connReq{pep: p, cm: d, id: ev.id}
	d.setOwner(ev.id, r)
	p.Mu.Lock()
	err := p.AddRequestLocked(r)
	p.Mu.Unlock()
	if err != nil {
		fi.Logger(provName).Debug("verbs: refused a connection request", "err", err)
		reason := eq.ReasonNoListener
		if errors.Is(err, fi.ECONNREFUSED) {
			reason = eq.ReasonBacklogFull
		}
		r.rejectRaw(providerReject(reason))
		return
	}
	info := p.RequestInfo(r, idAddr(ev.id, false), idAddr(ev.id, true))
	p.PostRequest(p, info, cmPayload(ev.data))
}

// Reject rejects the request handle with private data (fi_reject;
// rdma_reject): the requester gets an error event with fi.ECONNREFUSED
// and data. Data over CMDataSize is refused with fi.EINVAL; a handle that
// is not a pending request of this endpoint gives fi.EINVAL.
func (p *passiveEP) Reject(handle fi.Fid, data []byte) error {
	return p.RejectWith(handle, data, cmMaxDataSize, rejectReq)
}

// rejectReq refuses the request handle with data (Reject, CloseRequest,
// EndClose).
func rejectReq(h fi.Fid, data []byte) { h.(*connReq).reject(data) }

// Close stops listening (fi_close; rdma_destroy_id): pending requests are
// rejected, and the event queue and fabric are released. A second Close
// returns fi.EBADF. Connections accepted from it live on.
func (p *passiveEP) Close() error {
	err := p.BeginClose(func() {
		p.fabric.cm.destroy(p.id)
		p.id = nil
	})
	if err != nil {
		return err
	}
	p.EndClose(rejectReq)
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
func (r *connReq) Close() error { return r.pep.CloseRequest(r, rejectReq) }

// reject rejects the request with data and destroys its id (rdma_reject,
// rdma_destroy_id).
func (r *connReq) reject(data []byte) { r.rejectRaw(cmData(data)) }

// rejectRaw rejects the request with private data raw, the provider's
// header included, and destroys its id.
func (r *connReq) rejectRaw(raw []byte) {
	r.once.Do(func() {
		if err := reject(r.id, raw); err != nil {
			fi.Logger(provName).Debug("verbs: rdma_reject failed", "err", err)
		}
		r.cm.destroy(r.id)
	})
}
