package loopback

import (
	"net/netip"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// endpoint is an active endpoint (struct fid_ep; fi_endpoint(3)): an
// FI_EP_RDM endpoint as it is, and the core of an FI_EP_MSG one
// (connEndpoint, cm.go). kit.MsgOps gives it the whole of ep.Msg (Send,
// SendV, SendMsg, Inject, SendData, InjectData and the receives), each
// reduced to a kit.Op and handed to PostTx or PostRx.
//
// Safe for concurrent use: Bindings, Ref and ConnState lock themselves,
// and everything else is guarded by wire.mu.
type endpoint struct {
	kit.MsgOps
	// b records and checks the bindings (fi_ep_bind, fi_enable).
	b kit.Bindings
	// ref gives Close its fi.EBADF rule; nothing binds to an endpoint.
	ref    kit.Ref
	domain *domain
	info   *fi.Info
	// conn is the FI_EP_MSG endpoint this is the core of, nil for
	// FI_EP_RDM.
	conn *connEndpoint

	// The rest is guarded by wire.mu.

	// name is the endpoint's address, bound to port on the wire.
	name   []byte
	port   uint16
	closed bool
	// enabled is set by Enable, with what the data path needs from the
	// bindings: the queues and counters to complete to (nil where none
	// is bound), whether the CQs report only operations with
	// FI_COMPLETION (FI_SELECTIVE_COMPLETION), and the AV.
	enabled bool
	eq      *eventQueue
	kit.Completions[epSet]
	av *addressVector
	// recvs are the posted receives no message has matched yet, at most
	// rx_attr.size.
	recvs ring[recv]
	// inbox holds the messages sent here before a receive was posted, at
	// most rx_attr.size.
	inbox ring[message]
	// queued counts this endpoint's messages waiting in inboxes, at most
	// txSize (tx_attr.size).
	queued, txSize int
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.Namer    = (*endpoint)(nil)
	_ kit.Poster  = (*endpoint)(nil)
)

// newEndpoint opens an endpoint of d for info, bound to info's source
// port when it names one (FI_EP_RDM), else to a free one, with the queue
// sizes info asks for (queueSize at most). conn is the FI_EP_MSG
// endpoint it is the core of, nil for FI_EP_RDM.
func newEndpoint(d *domain, info *fi.Info, conn *connEndpoint) (*endpoint, error) {
	tx, rx, err := kit.QueueSizes(provName, info, queueSize, queueSize, queueSize)
	if err != nil {
		return nil, err
	}
	var want netip.AddrPort
	if info.EPAttr.Type == fi.EPTypeRDM && len(info.SrcAddr) > 0 {
		ap, err := parseName(info.SrcAddr)
		if err != nil {
			return nil, errors.Wrapf(err, "%s: open endpoint: source address", provName)
		}
		want = ap
	}
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	x := &endpoint{domain: d, info: info.Clone(), conn: conn, txSize: tx,
		recvs: newRing[recv](rx), inbox: newRing[message](rx)}
	x.Ops = kit.NewOps(x, provName, x.info)
	x.b.Init(x.info)
	wire.mu.Lock()
	defer wire.mu.Unlock()
	port, err := bindPort(want.Port(), x)
	if err != nil {
		d.Release(kit.KindEndpoint)
		return nil, errors.Wrapf(err, "%s: open endpoint", provName)
	}
	x.port, x.name = port, makeName(want.Addr(), port)
	return x, nil
}

// Info returns the Info the endpoint was opened with.
func (x *endpoint) Info() *fi.Info { return x.info }

// Bind binds an event queue, completion queue, counter or address vector
// (fi_ep_bind), with kit.Bindings' checks. Objects of another provider
// give fi.EINVAL (kit.BindOwn): completions are written into the kit's
// queues.
func (x *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&x.b, provName, x.isClosed(), obj, flags)
}

// isClosed reports whether Close has run.
func (x *endpoint) isClosed() bool {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	return x.closed
}

// Enable enables the endpoint (fi_enable) once kit.Bindings finds what it
// needs bound: an EQ for FI_EP_MSG, an AV for FI_EP_RDM, and a CQ or
// counter for each direction.
func (x *endpoint) Enable() error {
	if err := x.b.CheckEnable(); err != nil {
		return err
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if x.closed {
		return errors.Wrapf(fi.EBADF, "%s: enable: endpoint closed", provName)
	}
	b := &x.b
	x.eq, _ = b.EQ.(*eventQueue)
	x.Resolve(b)
	x.av, _ = b.AV.(*addressVector)
	x.enabled = true
	return nil
}

// Name copies the endpoint's address into buf (fi_getname), with
// fi.ETOOSMALL and the full length when buf is too short.
func (x *endpoint) Name(buf []byte) (int, error) {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	return kit.CopyName(buf, x.name)
}

// SetName moves the endpoint to addr (fi_setname), or to a free port when
// addr's port is 0, before it is enabled; afterwards it gives
// fi.EOPBADSTATE.
func (x *endpoint) SetName(addr []byte) error {
	ap, err := parseName(addr)
	if err != nil {
		return errors.Wrapf(err, "%s: setname", provName)
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if x.closed || x.enabled {
		return errors.Wrapf(fi.EOPBADSTATE, "%s: setname: endpoint is enabled or closed", provName)
	}
	port := ap.Port()
	if port != x.port {
		if port, err = bindPort(port, x); err != nil {
			return errors.Wrapf(err, "%s: setname", provName)
		}
		delete(wire.bound, x.port)
	}
	x.port, x.name = port, makeName(ap.Addr(), port)
	return nil
}

// Close closes the endpoint (fi_close): its receives still posted and its
// messages still waiting complete with fi.ECANCELED error entries, the
// messages waiting in its inbox fail at their senders with
// fi.ECONNRESET, and its address is free again. It releases what is
// bound to it and lets the domain close. A second Close gives bare
// fi.EBADF.
func (x *endpoint) Close() error {
	if err := x.ref.BeginClose(); err != nil {
		return err
	}
	wire.mu.Lock()
	x.closed = true
	if wire.bound[x.port] == any(x) {
		delete(wire.bound, x.port)
	}
	for x.recvs.len() > 0 {
		x.rxFailed(&eq.CQError{Context: x.recvs.front().ctx, Flags: recvFlags, Err: fi.ECANCELED})
		x.recvs.pop()
	}
	for x.inbox.len() > 0 {
		m := x.inbox.front()
		m.from.queued--
		m.from.txFailed(m, fi.ECONNRESET)
		x.inbox.pop()
	}
	x.unqueue(func(*message) bool { return true })
	wire.mu.Unlock()
	x.b.Release()
	x.domain.Release(kit.KindEndpoint)
	return nil
}
