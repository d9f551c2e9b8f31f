package ep

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Endpoint is an active endpoint (struct fid_ep; fi_endpoint(3)). Its
// data-transfer and connection abilities are the optional interfaces Msg,
// Tagged, RMA, Atomic, CM and Joiner, found by type assertion; a provider
// implements one only if it can ever support it, and a call outside the
// endpoint's negotiated capabilities returns fi.ENOSYS.
//
// Endpoints are safe for concurrent use. Data-transfer calls never block
// and never allocate; when they cannot proceed they return bare fi.EAGAIN.
type Endpoint interface {
	fi.Fid
	// Bind associates an event queue, completion queue, counter or address
	// vector with the endpoint (fi_ep_bind). For CQs and counters flags
	// select the operations reported (fi.FlagSend, fi.FlagRecv,
	// fi.FlagSelectiveCompletion...).
	Bind(obj fi.Fid, flags fi.Flags) error
	// Enable enables the endpoint for data transfer (fi_enable).
	Enable() error
	// Cancel cancels the pending operation posted with context ctx
	// (fi_cancel); it completes with an fi.ECANCELED error entry.
	Cancel(ctx any) error
	// Info returns the Info the endpoint was opened with.
	Info() *fi.Info
}

// PassiveEndpoint is a listening endpoint (struct fid_pep; fi_endpoint(3),
// fi_cm(3)). Connection requests arrive as eq.ConnReq events on the event
// queue bound to it. Safe for concurrent use.
type PassiveEndpoint interface {
	fi.Fid
	// Bind binds the event queue that receives connection requests
	// (fi_pep_bind).
	Bind(q eq.EventQueue, flags fi.Flags) error
	// Listen starts listening for connection requests (fi_listen).
	Listen() error
	// Reject rejects the connection request handle (from
	// ConnReq.Info.Handle), sending data to the requester (fi_reject).
	Reject(handle fi.Fid, data []byte) error
	Namer
	// Info returns the Info the passive endpoint was opened with.
	Info() *fi.Info
}

// Namer is implemented by objects with a fabric address (fi_setname,
// fi_getname).
type Namer interface {
	// SetName assigns the local address (fi_setname). An address without a
	// service (port) gets one allocated by the provider.
	SetName(addr []byte) error
	// Name copies the local address into buf and returns its full length
	// (fi_getname). If buf is too small, the address is truncated to fit,
	// and the full length is returned with fi.ETOOSMALL.
	Name(buf []byte) (int, error)
}

// CM is the connection-management ability of an active endpoint
// (fi_cm(3)).
type CM interface {
	Namer
	// Connect starts connecting to addr with private data (fi_connect). The
	// result arrives on the bound event queue: eq.Connected, or an
	// *eq.EQError (fi.ECONNREFUSED for a reject, with the reject's data in
	// ErrData). It may be called once per endpoint.
	Connect(addr []byte, data []byte) error
	// Accept accepts the connection request the endpoint was opened for
	// (its Info.Handle) with private data (fi_accept).
	Accept(data []byte) error
	// Shutdown closes the connection (fi_shutdown); flags must be 0. Each
	// endpoint gets exactly one terminal event: eq.Shutdown after
	// eq.Connected, or an error event when the attempt failed.
	Shutdown(flags fi.Flags) error
	// Peer copies the peer's address into buf with Name's ETOOSMALL rule
	// (fi_getpeer).
	Peer(buf []byte) (int, error)
	// CMDataSize is the largest private data Connect, Accept and Reject
	// carry (FI_OPT_CM_DATA_SIZE).
	CMDataSize() int
}

// BacklogSetter is implemented by passive endpoints whose listen backlog
// can be changed (fi_control with FI_BACKLOG).
type BacklogSetter interface {
	SetBacklog(n int) error
}

// MulticastGroup is a joined multicast group (struct fid_mc; fi_join(3)).
// Closing it leaves the group.
type MulticastGroup interface {
	fi.Fid
	// Addr returns the fi.Addr to send to the group with fi.FlagMulticast
	// (fi_mc_addr).
	Addr() fi.Addr
}

// Joiner is implemented by endpoints that join multicast groups.
type Joiner interface {
	// Join joins the group at addr (fi_join); flags may restrict the
	// membership to fi.FlagSend or fi.FlagRecv. It completes with an
	// eq.JoinComplete event on the endpoint's event queue.
	Join(addr []byte, flags fi.Flags, ctx any) (MulticastGroup, error)
}

// Opener is implemented by domains that open active endpoints.
type Opener interface {
	OpenEndpoint(info *fi.Info) (Endpoint, error)
}

// Open opens an active endpoint on d from info (fi_endpoint). To accept a
// connection request, pass the Info of its eq.ConnReq event. It returns
// ENOSYS when the domain has no endpoints.
func Open(d fi.Domain, info *fi.Info) (Endpoint, error) {
	o, ok := d.(Opener)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "ep: open: domain %T has no endpoints", d)
	}
	if info == nil {
		info = d.Info()
	}
	return o.OpenEndpoint(info)
}

// PassiveOpener is implemented by fabrics that open passive endpoints.
type PassiveOpener interface {
	OpenPassive(info *fi.Info) (PassiveEndpoint, error)
}

// OpenPassive opens a passive endpoint on fabric f (fi_passive_ep). It
// returns ENOSYS when the fabric has none.
func OpenPassive(f fi.Fabric, info *fi.Info) (PassiveEndpoint, error) {
	o, ok := f.(PassiveOpener)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "ep: open passive: fabric %T has no passive endpoints", f)
	}
	if info == nil {
		return nil, errors.Wrap(fi.EINVAL, "ep: open passive: nil info")
	}
	return o.OpenPassive(info)
}
