package hook

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// endpoint wraps an active endpoint: binding unwraps the hook's queues,
// Close forgets the wrapper.
type endpoint struct {
	inner ep.Endpoint
	h     *hooks
	fm    *faultMsg // the message faults, nil without
}

func (e *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	if q, ok := obj.(*completionQueue); ok && e.fm != nil && flags&fi.FlagSend != 0 {
		e.fm.mu.Lock()
		e.fm.txcq = q
		e.fm.mu.Unlock()
	}
	return e.inner.Bind(unwrap(obj), flags)
}
func (e *endpoint) Enable() error        { return e.inner.Enable() }
func (e *endpoint) Cancel(ctx any) error { return e.inner.Cancel(ctx) }
func (e *endpoint) Info() *fi.Info       { return e.inner.Info() }
func (e *endpoint) Close() error {
	err := e.inner.Close()
	if e.h.f.CloseTwiceOK && errors.Is(err, fi.EBADF) {
		return nil
	}
	if err == nil {
		e.h.forget(e.inner)
		if e.fm != nil {
			e.h.unregister(e.fm)
		}
	}
	return err
}

// connected is a wrapped FI_EP_MSG endpoint: connection management with
// the private-data fault, messages and RMA.
type connected struct {
	endpoint
	cm  ep.CM
	msg ep.Msg
	ep.RMA
}

func (c *connected) Connect(addr, data []byte) error { return c.cm.Connect(addr, c.h.cmData(data)) }
func (c *connected) Accept(data []byte) error        { return c.cm.Accept(c.h.cmData(data)) }
func (c *connected) Shutdown(flags fi.Flags) error   { return c.cm.Shutdown(flags) }
func (c *connected) Peer(buf []byte) (int, error)    { return c.cm.Peer(buf) }
func (c *connected) CMDataSize() int                 { return c.cm.CMDataSize() }
func (c *connected) Name(buf []byte) (int, error)    { return c.cm.Name(buf) }
func (c *connected) SetName(addr []byte) error       { return c.cm.SetName(addr) }

// unconnected is a wrapped FI_EP_RDM or FI_EP_DGRAM endpoint.
type unconnected struct {
	endpoint
	ep.Namer
	ep.Tagged
	ep.RMA
}

// wrapEndpoint wraps e in the type that offers what e offers: a
// connection-managed endpoint needs ep.CM, ep.Msg and ep.RMA; an
// unconnected one ep.Namer, ep.Msg, ep.Tagged and ep.RMA. Others are
// wrapped as bare endpoints.
func wrapEndpoint(e ep.Endpoint, h *hooks) ep.Endpoint {
	base := endpoint{inner: e, h: h}
	cm, isCM := e.(ep.CM)
	m, isMsg := e.(ep.Msg)
	if isMsg && h.f.faulty() {
		base.fm = &faultMsg{inner: m, e: e, h: h}
		h.register(base.fm)
		m = base.fm
	}
	if isMsg && h.f.IOVLimitIgnored {
		m = clipIOV{Msg: m, limit: e.Info().TxAttr.IOVLimit}
	}
	r, isRMA := e.(ep.RMA)
	if isCM && isMsg && isRMA {
		return &connectedMsg{connected: connected{endpoint: base, cm: cm, msg: m, RMA: r}, Msg: m}
	}
	n, isNamer := e.(ep.Namer)
	g, isTagged := e.(ep.Tagged)
	if isNamer && isMsg && isTagged && isRMA {
		return &unconnectedMsg{unconnected: unconnected{endpoint: base, Namer: n, Tagged: g, RMA: r}, Msg: m}
	}
	if j, isJoiner := e.(ep.Joiner); isNamer && isMsg && isJoiner {
		return &datagram{endpoint: base, Namer: n, Msg: m, Joiner: j}
	}
	return &base
}

// datagram is a wrapped FI_EP_DGRAM endpoint with multicast.
type datagram struct {
	endpoint
	ep.Namer
	ep.Msg
	ep.Joiner
}

// clipIOV drops the segments beyond the limit (IOVLimitIgnored).
type clipIOV struct {
	ep.Msg
	limit int
}

func (c clipIOV) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	if c.limit > 0 && len(iov) > c.limit {
		iov = iov[:c.limit]
	}
	return c.Msg.SendV(iov, nil, dest, ctx)
}

func (c clipIOV) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	if c.limit > 0 && len(iov) > c.limit {
		iov = iov[:c.limit]
	}
	return c.Msg.RecvV(iov, nil, src, ctx)
}

type connectedMsg struct {
	connected
	ep.Msg
}

type unconnectedMsg struct {
	unconnected
	ep.Msg
}

// passive wraps a passive endpoint: binding unwraps the hook's event
// queue, Reject carries the private-data fault.
type passive struct {
	inner ep.PassiveEndpoint
	h     *hooks
}

func (p *passive) Bind(q eq.EventQueue, flags fi.Flags) error {
	w, ok := q.(*eventQueue)
	if !ok {
		return errors.Wrapf(fi.EINVAL, "hook: bind: %T is not this hook's event queue", q)
	}
	return p.inner.Bind(w.inner, flags)
}
func (p *passive) Listen() error                      { return p.inner.Listen() }
func (p *passive) Reject(h fi.Fid, data []byte) error { return p.inner.Reject(h, p.h.cmData(data)) }
func (p *passive) SetName(addr []byte) error          { return p.inner.SetName(addr) }
func (p *passive) Name(buf []byte) (int, error)       { return p.inner.Name(buf) }
func (p *passive) Info() *fi.Info                     { return p.inner.Info() }
func (p *passive) Close() error {
	err := p.inner.Close()
	if err == nil {
		p.h.forget(p.inner)
	}
	return err
}

// SetBacklog passes FI_BACKLOG on when the inner endpoint takes it.
func (p *passive) SetBacklog(n int) error {
	if b, ok := p.inner.(ep.BacklogSetter); ok {
		return b.SetBacklog(n)
	}
	return errors.Wrap(fi.ENOSYS, "hook: the inner passive endpoint has no backlog control")
}
