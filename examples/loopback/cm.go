package loopback

import (
	"bytes"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// connEndpoint is an FI_EP_MSG endpoint: an endpoint with a connection
// (fi_cm(3)). ep.ConnState decides every step, so that misuse gets
// fi_cm(3)'s errors and each endpoint exactly one terminal event;
// connEndpoint only carries the steps out on the wire. Safe for
// concurrent use.
type connEndpoint struct {
	*endpoint
	cm ep.ConnState

	// peer is the other end once connected, and req the request an
	// accepting endpoint was opened from. Guarded by wire.mu.
	peer *connEndpoint
	req  *connReq
}

var _ ep.CM = (*connEndpoint)(nil)

// connReq is a connection request (the handle of fi_info in an
// eq.ConnReq event): the connecting endpoint, waiting in the backlog of
// the passive endpoint it asked until that accepts or rejects it.
type connReq struct {
	from *connEndpoint
	pep  *passiveEP
}

// Close drops a request the application opens no endpoint for: it is
// rejected without data (kit.Passive.CloseRequest).
func (r *connReq) Close() error { return r.pep.CloseRequest(r, refuse) }

// newConnEndpoint opens an FI_EP_MSG endpoint: to connect, or, when
// info.Handle is a connection request, to accept it (fi_endpoint with
// the Info of an eq.ConnReq). Taking the request from the passive
// endpoint's backlog fails when it was taken already or the passive
// endpoint closed.
func newConnEndpoint(d *domain, info *fi.Info) (*connEndpoint, error) {
	req, _ := info.Handle.(*connReq)
	if info.Handle != nil && req == nil {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open endpoint: handle %T is not a connection request of this provider", provName, info.Handle)
	}
	if req != nil {
		if err := req.pep.Backlog.Take(req); err != nil {
			return nil, errors.Wrapf(err, "%s: open endpoint", provName)
		}
	}
	c := &connEndpoint{}
	x, err := newEndpoint(d, info, c)
	if err != nil {
		if req != nil {
			wire.mu.Lock()
			req.from.failed(fi.ECONNREFUSED)
			wire.mu.Unlock()
		}
		return nil, err
	}
	c.endpoint = x
	if req != nil {
		_ = c.cm.RequestReceived() // a new endpoint is idle
		wire.mu.Lock()
		c.req = req
		wire.mu.Unlock()
	}
	return c, nil
}

// CMDataSize returns the most private data Connect, Accept and Reject
// carry (FI_OPT_CM_DATA_SIZE).
func (c *connEndpoint) CMDataSize() int { return cmDataSize }

// Connect asks the passive endpoint at addr for a connection, with
// private data (fi_connect). The answer comes on the endpoint's event
// queue: eq.Connected with the acceptor's data, or an *eq.EQError with
// fi.ECONNREFUSED (no listener at addr, its backlog full, or a reject,
// whose data is ErrData). It enables the endpoint first, as fi_connect
// does.
func (c *connEndpoint) Connect(addr, data []byte) error {
	if err := ep.CheckCMData(data, cmDataSize); err != nil {
		return errors.Wrapf(err, "%s: connect", provName)
	}
	ap, err := parseName(addr)
	if err != nil {
		return errors.Wrapf(err, "%s: connect", provName)
	}
	if err := c.Enable(); err != nil {
		return err
	}
	if err := c.cm.Connect(); err != nil {
		return err
	}
	// The passive endpoint's lock comes before wire.mu: find it, let go
	// of the wire, then ask it.
	wire.mu.Lock()
	l, _ := wire.bound[ap.Port()].(*passiveEP)
	from := bytes.Clone(c.name)
	wire.mu.Unlock()
	if l != nil {
		req := &connReq{from: c, pep: l}
		l.Mu.Lock()
		err := l.AddRequestLocked(req) // fails when not listening, closed, or the backlog is full
		to := bytes.Clone(l.name)
		l.Mu.Unlock()
		if err == nil {
			l.PostRequest(l, l.RequestInfo(req, to, from), bytes.Clone(data))
			return nil
		}
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	c.failed(fi.ECONNREFUSED)
	return nil
}

// rejected ends a connection attempt that the passive side rejected,
// with an fi.ECONNREFUSED error event carrying the reject's data, unless
// the endpoint moved on meanwhile (ep.ConnState.Rejected). wire.mu is
// held.
func (c *connEndpoint) rejected(data []byte) {
	if c.cm.Rejected() == nil {
		_ = c.eq.PostErr(&eq.EQError{Fid: c, Err: fi.ECONNREFUSED, ErrData: bytes.Clone(data)})
	}
}

// failed ends a connection attempt that failed otherwise, with an error
// event of code, unless the endpoint moved on meanwhile
// (ep.ConnState.Failed). wire.mu is held.
func (c *connEndpoint) failed(code fi.Errno) {
	if c.cm.Failed() == nil {
		_ = c.eq.PostErr(&eq.EQError{Fid: c, Err: code})
	}
}

// Accept accepts the request the endpoint was opened from, with private
// data (fi_accept): both ends get eq.Connected, the connecting one with
// data. It enables the endpoint first. If the connecting endpoint gave
// up meanwhile, this one gets an fi.ECONNABORTED error event instead.
func (c *connEndpoint) Accept(data []byte) error {
	if err := ep.CheckCMData(data, cmDataSize); err != nil {
		return errors.Wrapf(err, "%s: accept", provName)
	}
	if err := c.Enable(); err != nil {
		return err
	}
	if err := c.cm.Accept(); err != nil {
		return err
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	client := c.req.from
	if client.cm.Established() != nil {
		c.failed(fi.ECONNABORTED)
		return nil
	}
	if c.cm.Established() != nil { // shut down or closed meanwhile
		client.hangUp()
		return nil
	}
	c.peer, client.peer = client, c
	_ = c.eq.Post(&eq.Connected{Fid: c})
	_ = client.eq.Post(&eq.Connected{Fid: client, Data: bytes.Clone(data)})
	return nil
}

// Shutdown ends the connection (fi_shutdown): this endpoint and the peer
// each get one eq.Shutdown, and sends fail with fi.ESHUTDOWN from then
// on. Before a connection it gives fi.ENOTCONN.
func (c *connEndpoint) Shutdown(flags fi.Flags) error {
	if flags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "%s: shutdown: flags %v (want 0)", provName, flags)
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	emit, err := c.cm.Shutdown()
	if err != nil {
		return err
	}
	if emit {
		_ = c.eq.Post(&eq.Shutdown{Fid: c})
	}
	c.peerGone()
	return nil
}

// peerGone tells the peer that this end is gone: its one eq.Shutdown,
// unless it has had it. wire.mu is held.
func (c *connEndpoint) peerGone() {
	if p := c.peer; p != nil && p.cm.PeerGone() {
		_ = p.eq.Post(&eq.Shutdown{Fid: p})
	}
}

// hangUp is peerGone seen from the peer: the connecting side of an
// accept that failed halfway. wire.mu is held.
func (c *connEndpoint) hangUp() {
	if c.cm.PeerGone() {
		_ = c.eq.Post(&eq.Shutdown{Fid: c})
	}
}

// Peer copies the peer's address into buf (fi_getpeer), with fi_getname's
// fi.ETOOSMALL rule; fi.ENOTCONN before a connection.
func (c *connEndpoint) Peer(buf []byte) (int, error) {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if c.peer == nil {
		return 0, errors.Wrapf(fi.ENOTCONN, "%s: getpeer: not connected", provName)
	}
	return kit.CopyName(buf, c.peer.name)
}

// Close closes the endpoint (fi_close): a connected peer gets its
// eq.Shutdown, a request the endpoint was opened from and never accepted
// is rejected, and then it closes as any endpoint. A second Close gives
// fi.EBADF.
func (c *connEndpoint) Close() error {
	prev, err := c.cm.Close()
	if err != nil {
		return err
	}
	wire.mu.Lock()
	if prev == ep.CMReqReceived {
		c.req.from.rejected(nil)
	}
	c.peerGone()
	wire.mu.Unlock()
	return c.endpoint.Close()
}
