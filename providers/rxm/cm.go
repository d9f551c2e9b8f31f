package rxm

import (
	"cmp"
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
)

// The connection management of the RDM endpoint (C's rxm_conn.c): the
// core event queue is read by progress. A peer's request is accepted
// with an accept record even when a connection to it exists or is being
// opened (simultaneous connect): every connection carries messages in,
// and the first one up carries ours out, so each direction keeps to one
// connection and its order.

// The pause before a refused connection attempt is tried again: it
// doubles from retryMin to retryMax.
const (
	retryMin = time.Millisecond
	retryMax = time.Second
)

// cmLoop is the endpoint's CM goroutine (C's rxm_cm_progress thread):
// it waits on the core event queue and handles its events, so that
// peers' connection requests are accepted while the application drives
// no progress here. Close ends it by cancelling ctx.
func (e *endpoint) cmLoop(ctx context.Context, q eq.EventQueue) {
	defer e.cmDone.Done()
	for {
		ev, err := q.SRead(ctx)
		if ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		switch {
		case !e.enabled:
		case err == nil:
			e.cmEvent(ev)
		case errors.Is(err, fi.EAVAIL):
			if ee, rerr := q.ReadErr(); rerr == nil && ee != nil {
				e.cmError(ee)
			}
		}
		e.unlock()
		// A reader blocked on the core completion queue looks again:
		// deferred operations may go now, a connection may have failed.
		e.Signal()
		if err != nil && !errors.Is(err, fi.EAVAIL) && !errors.Is(err, fi.EAGAIN) {
			return // the queue failed: nothing more comes
		}
	}
}

// cmInterval is how often progress reads the connections' event queue
// while no connection attempt of ours is under way (C's
// FI_OFI_RXM_CM_PROGRESS_INTERVAL default): reading it drives the core's
// data progress too, which the completion queue's read does already.
const cmInterval = 10 * time.Millisecond

// cmPollMask: progress looks at the clock for cmInterval once in
// cmPollMask+1 runs.
const cmPollMask = 63

// pollCM handles the events in q, the connections' event queue, read
// without mu (the core's progress may call Arrived) and handled with it;
// it reports whether there were any.
func (e *endpoint) pollCM(q eq.EventQueue) bool {
	got := false
	for {
		ev, err := q.Read()
		var ee *eq.EQError
		switch {
		case err == nil:
		case err == fi.EAVAIL:
			var rerr error
			if ee, rerr = q.ReadErr(); rerr != nil || ee == nil {
				return got
			}
		default:
			return got
		}
		got = true
		e.mu.Lock()
		if e.enabled && e.msgEQ == q {
			if ee != nil {
				e.cmError(ee)
			} else {
				e.cmEvent(ev)
			}
		}
		e.unlock()
	}
}

// cmEvent handles one connection event; mu is held.
func (e *endpoint) cmEvent(ev eq.Event) {
	switch x := ev.(type) {
	case *eq.ConnReq:
		e.onRequest(x)
	case *eq.Connected:
		c := e.conns[x.Fid]
		if c == nil {
			return
		}
		p := c.peer
		if p.out == c {
			var rec rxmwire.AcceptRecord
			if err := rxmwire.ParseAccept(x.Data, &rec); err != nil {
				fi.Logger(e.domain.fabric.Prov()).Warn("rxm: bad accept record", "peer", p.addr, "err", err)
				e.dropConn(c, fi.EIO)
				return
			}
			c.remoteID, c.idKnown = rxmwire.ConnIndex(rec.ConnID), true
			p.pid, p.pidKnown = rxmwire.ConnPID(rec.ConnID), true
			p.out = nil
			e.pending.Add(-1)
			p.endSeries()
		}
		c.connected = true
		if p.in == c {
			p.in = nil
			e.pending.Add(-1)
		}
		if p.send == nil {
			p.send = c
		}
	case *eq.Shutdown:
		if c := e.conns[x.Fid]; c != nil {
			fi.Logger(e.domain.fabric.Prov()).Debug("rxm: connection shut down", "peer", c.peer.addr, "connected", c.connected)
			e.dropConn(c, lostWith(c))
		}
	}
}

// cmError handles a failed connection attempt; mu is held.
func (e *endpoint) cmError(ee *eq.EQError) {
	c := e.conns[ee.Fid]
	if c == nil {
		return
	}
	code := ee.Err
	if code == 0 {
		code = fi.EIO
	}
	fi.Logger(e.domain.fabric.Prov()).Debug("rxm: connection error", "peer", c.peer.addr, "err", code, "prov_errno", ee.ProvErrno,
		"ours", c.peer.out == c)
	if p := c.peer; p != nil && p.out == c {
		e.attemptFailed(p, code)
	}
	e.dropConn(c, code)
}

// attemptFailed takes the failure of our connection attempt to p: a
// refusal (nothing listens yet, the peer's backlog or rxm refuses) or a
// reset before the answer is tried again by a later send, after a pause
// that doubles from retryMin to retryMax, while the series of attempts
// is younger than the fabric's connect timeout; then, or for any other
// failure, the next send returns the error (C retries refusals without
// end). mu is held.
func (e *endpoint) attemptFailed(p *peer, code fi.Errno) {
	if code == fi.ECONNREFUSED || code == fi.ECONNRESET {
		p.backoff = min(max(2*p.backoff, retryMin), retryMax)
		now := time.Now()
		if now.Add(p.backoff).Sub(p.tryStart) < e.domain.fabric.connTimeout {
			p.retryAt = now.Add(p.backoff)
			return
		}
	}
	p.lastErr = code
	p.endSeries()
}

// endSeries forgets the series of connection attempts; mu is held.
func (p *peer) endSeries() {
	p.tryStart, p.retryAt, p.backoff = time.Time{}, time.Time{}, 0
}

// onRequest answers a peer's connection request (C's
// rxm_handle_conn_req; docs/wire-tcp.md §3.2, the acceptor's rules): a
// bad connect record is rejected with reason 1. While our own attempt to
// the peer is under way, the names decide: a peer whose name is lower
// than ours is rejected with reason 2 (ours wins), a higher one wins
// (our attempt is abandoned), our own name (a loopback connection) is
// accepted. A peer we have a connection with is rejected with reason 2
// when its process is the one we know or the connection is alive (a
// duplicate, or another process claiming its address); a restarted peer
// replaces its dead connection. Everything else is accepted with an
// accept record. mu is held.
func (e *endpoint) onRequest(req *eq.ConnReq) {
	var rec rxmwire.ConnectRecord
	if err := rxmwire.ParseConnect(req.Data, uint32(e.eager), &rec); err != nil {
		_ = e.pep.Reject(req.Info.Handle, rxmwire.AppendReject(nil, rxmwire.RejectRefused))
		return
	}
	ap, _, err := fi.AddrPortFromSockaddr(req.Info.DestAddr)
	if err != nil {
		_ = e.pep.Reject(req.Info.Handle, rxmwire.AppendReject(nil, rxmwire.RejectRefused))
		return
	}
	p := e.peerFor(netip.AddrPortFrom(ap.Addr().Unmap(), rec.Port))
	pid := rxmwire.ConnPID(rec.ConnID)
	switch {
	case p.out != nil:
		switch cmpName(p.addr, e.self) {
		case -1:
			_ = e.pep.Reject(req.Info.Handle, rxmwire.AppendReject(nil, rxmwire.RejectConnected))
			return
		case 1:
			e.dropConn(p.out, fi.ECANCELED) // theirs wins: ours goes quietly
			p.endSeries()
		}
	case p.send != nil || p.in != nil:
		old := p.send
		if old == nil {
			old = p.in
		}
		if (p.pidKnown && p.pid == pid) || alive(old) {
			_ = e.pep.Reject(req.Info.Handle, rxmwire.AppendReject(nil, rxmwire.RejectConnected))
			return
		}
		e.dropConn(old, fi.ECONNRESET) // the peer restarted
	}
	if e.dyn {
		req.Info.Caps |= fi.CapTagged // the raw tagged form, as our own connections
	}
	c, err := e.newConn(req.Info, p)
	if err != nil {
		_ = e.pep.Reject(req.Info.Handle, rxmwire.AppendReject(nil, rxmwire.RejectRefused))
		return
	}
	c.remoteID, c.idKnown = rxmwire.ConnIndex(rec.ConnID), true
	p.pid, p.pidKnown = pid, true
	acc := rxmwire.AcceptRecord{ConnID: rxmwire.MakeConnID(e.pid, p.index), RxSize: rxmwire.RxSize, FlowCtrl: rxmwire.FlowCtrlOff}
	if err := c.cm.Accept(rxmwire.AppendAccept(nil, &acc)); err != nil {
		e.dropConn(c, fi.ECANCELED)
		return
	}
	if p.send == nil && p.in == nil {
		p.in = c
		e.pending.Add(1)
	}
}

// cmpName compares two endpoint names as C's rxm compares the sockaddrs
// of a simultaneous connect (a memcmp of the address bytes, then of the
// port, both in network order): -1, 0 or 1.
func cmpName(a, b netip.AddrPort) int {
	if c := a.Addr().Unmap().Compare(b.Addr().Unmap()); c != 0 {
		return c
	}
	return cmp.Compare(a.Port(), b.Port())
}

// alive reports whether connection c still stands, as far as its core
// endpoint can tell without waiting for its eq.Shutdown (tcp: the
// socket's state); a core that cannot tell counts as alive. mu is held.
func alive(c *conn) bool {
	if c.closed {
		return false
	}
	a, ok := c.ep.(interface{ Alive() bool })
	return !ok || a.Alive()
}

// lostWith returns the code operations waiting on lost connection c fail
// with: the core endpoint's reason when it tells one (tcp: fi.ETIMEDOUT
// for a peer that stopped answering), else fi.ECANCELED.
func lostWith(c *conn) fi.Errno {
	if l, ok := c.ep.(interface{ LostWith() fi.Errno }); ok {
		if code := l.LostWith(); code != 0 {
			return code
		}
	}
	return fi.ECANCELED
}
