package rxm

import (
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// Dynamic receive buffers (C's rxm over tcp with OFI_OPS_DYNAMIC_RBUF,
// rxm_get_dyn_rbuf; docs/wire-tcp.md §3.1 and §3.4): over a core whose
// FI_EP_MSG endpoints implement kit.DynRecv (tcp), a connection posts no
// bounce receives. The core reads each message's rxm header (or, for a
// raw tagged message, its tcp tag) and asks the endpoint, as its
// kit.DynRecvHandler, where the rest goes: an eager message straight
// into the receive it matches, or into a pooled buffer while unexpected;
// a rendezvous request's descriptor into a small buffer of its own.
// Matching happens then, in the order messages arrive; what needs the
// whole message (placing it into a receive posted later, starting the
// rendezvous reads, read-done) happens when its completion comes out of
// the core completion queue. Over such a core rxm sends tagged messages
// up to the eager limit in the core's raw tagged form (no rxm header, as
// C's rxm does over tcp) and no SAR (C turns SAR off with dynamic
// buffers); longer messages go by rendezvous.
//
// Locking: the core calls Arrived with its endpoint's lock held, while
// rxm calls the core with its own mu held. Arrived therefore only tries
// mu; when another goroutine holds it, Arrived asks for a Resume and
// answers fi.EAGAIN, which holds the message, and the holder resumes the
// connection when it lets mu go (unlock). Progress reads the core queue
// without mu, so that the core's calls of Arrived find it free.

// forceBounce makes endpoints use posted bounce receives over a core
// with dynamic receive buffers too (the tests' way to run that path
// over tcp).
var forceBounce bool

// unexpMax is how many unexpected eager messages an endpoint keeps in
// dynamic receive mode before a connection whose next message matches no
// receive waits for one (as tcp's built-in RDM endpoints did).
const unexpMax = 256

// dynKind is what a dynamically received message is.
type dynKind uint8

const (
	dynEager    dynKind = iota // an eager message, raw tagged or behind an rxm header
	dynRndv                    // a rendezvous request: its descriptor comes
	dynReadDone                // a read-done
	dynAtomic                  // an atomic request or response (atomic.go)
)

// dynRx is a message a connection in dynamic receive mode is placing:
// the context of its core completion. An eager message either goes to
// receive r (matched) or into buf, as the data of an unexpected entry
// that points here until the message is all in (done); a receive posted
// meanwhile claims it (matched, with buf still set) and the completion
// copies. Pooled.
type dynRx struct {
	kind    dynKind
	c       *conn
	matched bool
	done    bool
	// orphan says the connection was dropped while a rendezvous request
	// arrived unexpected: its entry is gone, and the completion only
	// frees it.
	orphan bool
	r      posted
	buf    []byte
	iov    [1][]byte
	src    fi.Addr
	tagged bool
	tag    uint64
	hasCQ  bool
	cqData uint64
	size   uint64
	msgID  uint64
	desc   rxmwire.RndvDesc
	small  [rxmwire.RndvDescSize]byte
	// hdr is an atomic packet's header.
	hdr rxmwire.Header
}

var _ kit.DynRecvHandler = (*endpoint)(nil)

// useDyn reports whether the endpoint's connections take their messages
// in dynamic receive mode: the core endpoint opened with info (FI_TAGGED
// added: rxm's tagged messages use the core's raw tagged form) has
// kit.DynRecv, and the core needs no registered buffers. The probe
// endpoint is closed unopened: it never connects. mu is held.
func (e *endpoint) useDyn(info *fi.Info) bool {
	if e.mrLocal || forceBounce {
		return false
	}
	in := info.Clone()
	in.Caps |= fi.CapTagged
	x, err := ep.Open(e.domain.core, in)
	if err != nil {
		return false
	}
	_, ok := x.(kit.DynRecv)
	_ = x.Close()
	return ok
}

// unlock releases mu and resumes the connections whose handler found mu
// taken (Arrived).
func (e *endpoint) unlock() {
	e.mu.Unlock()
	if e.resumeDue.Load() {
		e.resumeHeld()
	}
}

// resumeHeld resumes the connections that asked for it.
func (e *endpoint) resumeHeld() {
	e.resumeMu.Lock()
	if !e.resumeDue.Swap(false) {
		e.resumeMu.Unlock()
		return
	}
	list := e.resumeList
	e.resumeList = e.resumeSpare[:0]
	e.resumeSpare = nil
	e.resumeMu.Unlock()
	for i, c := range list {
		c.inResume.Store(false)
		c.dyn.Resume()
		list[i] = nil
	}
	e.resumeMu.Lock()
	if e.resumeSpare == nil {
		e.resumeSpare = list[:0]
	}
	e.resumeMu.Unlock()
}

// wantResume puts c on the list of connections to resume when mu is let
// go.
func (e *endpoint) wantResume(c *conn) {
	if c.inResume.Swap(true) {
		e.resumeDue.Store(true)
		return
	}
	e.resumeMu.Lock()
	e.resumeList = append(e.resumeList, c)
	e.resumeMu.Unlock()
	e.resumeDue.Store(true)
}

// Arrived tells the core where a message's payload goes (kit.DynRecvHandler;
// C's rxm_get_dyn_rbuf). It runs in the core's progress with the core
// endpoint's lock held: it never blocks on mu (fi.EAGAIN holds the
// message until the holder of mu resumes the connection) and calls no
// core operation. An error breaks the connection: a message that breaks
// the protocol.
func (e *endpoint) Arrived(a *kit.Arrival) ([][]byte, any, error) {
	c, _ := a.Cookie.(*conn)
	if c == nil {
		return nil, nil, fi.EINVAL
	}
	if !e.mu.TryLock() {
		e.wantResume(c)
		if !e.mu.TryLock() {
			return nil, nil, fi.EAGAIN
		}
	}
	defer e.unlock()
	if c.closed {
		return nil, nil, nil // dropped: the rest is discarded
	}
	d := e.getDyn()
	d.c, d.src = c, e.srcOf(c)
	if a.Tagged {
		// The raw tagged form: no rxm header, an eager payload.
		if a.Rest > e.eager {
			e.putDyn(d)
			return nil, nil, fi.EIO
		}
		d.kind, d.tagged, d.tag, d.size = dynEager, true, a.Tag, uint64(a.Rest)
		d.hasCQ, d.cqData = a.Flags&fi.FlagRemoteCQData != 0, a.Data
		return e.dynPlace(d)
	}
	var h rxmwire.Header
	if len(a.Prefix) < rxmwire.HeaderSize || rxmwire.ParseHeader(a.Prefix, uint64(a.Rest), &h) != nil {
		e.putDyn(d)
		return nil, nil, fi.EIO
	}
	if h.ConnID != uint64(c.peer.index) {
		// conn_id is our index for the peer, from our record.
		e.putDyn(d)
		return nil, nil, fi.EIO
	}
	d.tagged, d.tag, d.size = h.Op == rxmwire.OpTagged, h.Tag, h.Size
	d.hasCQ, d.cqData = h.HasCQData(), h.Data
	switch h.Type {
	case rxmwire.TypeEager:
		if h.Size > uint64(e.eager) {
			e.putDyn(d)
			return nil, nil, fi.EIO
		}
		d.kind = dynEager
		return e.dynPlace(d)
	case rxmwire.TypeRndvReq:
		if h.Size > uint64(maxInt) {
			e.putDyn(d)
			return nil, nil, fi.EIO
		}
		d.kind, d.msgID = dynRndv, h.MsgID
		// Matched now, in arrival order; read once the descriptor is in.
		if i := e.match(d.tagged, d.tag, d.src); i >= 0 {
			d.r, d.matched = e.takeRecv(i, d.size), true
		} else {
			e.unexp = append(e.unexp, unexpected{src: d.src, tagged: d.tagged, tag: d.tag, cqData: d.cqData,
				hasCQ: d.hasCQ, rndv: true, size: d.size, msgID: d.msgID, conn: c, dyn: d})
		}
		d.iov[0] = d.small[:a.Rest]
		return d.iov[:1], d, nil
	case rxmwire.TypeRndvReadDone:
		d.kind, d.msgID = dynReadDone, h.MsgID
		return nil, d, nil
	case rxmwire.TypeAtomic, rxmwire.TypeAtomicResp:
		return e.atomicArriving(d, &h, a.Rest)
	default:
		// SAR (C sends it only without dynamic buffers), credits, the
		// write rendezvous: not spoken here.
		e.putDyn(d)
		return nil, nil, fi.EIO
	}
}

// dynPlace gives eager message d its place: the receive it matches, or a
// pooled buffer behind an unexpected entry. mu is held.
func (e *endpoint) dynPlace(d *dynRx) ([][]byte, any, error) {
	if i := e.match(d.tagged, d.tag, d.src); i >= 0 {
		d.r, d.matched = e.takeRecv(i, d.size), true
		return d.r.iov[:d.r.niov], d, nil
	}
	if len(e.bufs) == 0 && e.nbufs >= unexpMax {
		// Out of unexpected buffers: the connection waits, and with it
		// the peer (TCP back-pressure), until a receive frees one.
		if !d.c.starved {
			d.c.starved = true
			e.starved = append(e.starved, d.c)
		}
		e.putDyn(d)
		return nil, nil, fi.EAGAIN
	}
	d.buf = e.getBuf()[:d.size]
	e.unexp = append(e.unexp, unexpected{data: d.buf, src: d.src, tagged: d.tagged, tag: d.tag,
		cqData: d.cqData, hasCQ: d.hasCQ, conn: d.c, dyn: d})
	d.iov[0] = d.buf
	return d.iov[:1], d, nil
}

// dynDone takes the core completion of message d: n bytes placed, code
// the error (0 for success). mu is held.
func (e *endpoint) dynDone(d *dynRx, n int, code fi.Errno) {
	if d.kind == dynAtomic {
		e.atomicDone(d, n, code)
		return
	}
	if d.orphan {
		e.putDyn(d)
		return
	}
	c := d.c
	if code != 0 {
		// The connection cut the message: its receive fails, its
		// unexpected entry goes; the connection's end comes as its own
		// event.
		switch {
		case d.kind == dynReadDone:
		case d.matched:
			e.recvFailed(&eq.CQError{Context: d.r.ctx, Flags: recvFlags(d.tagged), Err: code}, d.r.multi)
			if d.buf != nil {
				e.putBuf(d.buf)
			}
		default:
			e.dropUnexp(d)
		}
		e.putDyn(d)
		return
	}
	switch d.kind {
	case dynEager:
		switch {
		case d.matched && d.buf == nil:
			e.rxComplete(d.r.ctx, d.r.report, d.flags(), n, d.size, d.data(), d.tagOut(), d.src, d.r.multi, d.r.iov[0])
		case d.matched:
			// A receive claimed the message while it arrived.
			e.deliver(&d.r, d.buf[:n], d.src, d.tagged, d.tag, d.hasCQ, d.cqData)
			e.putBuf(d.buf)
		default:
			d.done = true // the unexpected entry is whole: a receive takes it
			return
		}
	case dynRndv:
		if rxmwire.ParseRndv(d.small[:n], d.size, &d.desc) != nil {
			// A bad descriptor breaks the connection; the receive it
			// matched waits for another message, first in line again.
			if d.matched {
				e.repostFront(&d.r)
			} else {
				e.dropUnexp(d)
			}
			e.putDyn(d)
			e.dropConn(c, fi.EIO)
			return
		}
		if !d.matched {
			d.done = true
			return
		}
		if c.closed {
			e.recvFailed(&eq.CQError{Context: d.r.ctx, Flags: recvFlags(d.tagged), Err: fi.ECANCELED}, d.r.multi)
		} else {
			m := d.unexpected()
			e.startRndv(c, &d.r, &m)
		}
	case dynReadDone:
		if !e.readDoneArrived(c, d.msgID) {
			e.dropConn(c, fi.EIO)
		}
	}
	e.putDyn(d)
}

// takeDyn gives receive r the unexpected message u that arrived
// dynamically: a whole one is delivered (eager) or read (rendezvous);
// one still arriving is claimed, and its completion delivers it or
// starts the reads. mu is held.
func (e *endpoint) takeDyn(u *unexpected, r *posted) {
	d := u.dyn
	if !d.done {
		d.r, d.matched = *r, true
		return
	}
	if d.kind == dynRndv {
		m := d.unexpected()
		e.putDyn(d)
		e.startRndv(m.conn, r, &m)
		return
	}
	e.deliver(r, d.buf, d.src, d.tagged, d.tag, d.hasCQ, d.cqData)
	e.putBuf(d.buf)
	e.putDyn(d)
}

// unexpected returns rendezvous request d as an unexpected entry.
func (d *dynRx) unexpected() unexpected {
	return unexpected{src: d.src, tagged: d.tagged, tag: d.tag, cqData: d.cqData, hasCQ: d.hasCQ,
		rndv: true, size: d.size, desc: d.desc, msgID: d.msgID, conn: d.c}
}

func (d *dynRx) flags() fi.Flags {
	if d.hasCQ {
		return recvFlags(d.tagged) | fi.FlagRemoteCQData
	}
	return recvFlags(d.tagged)
}

func (d *dynRx) data() uint64 {
	if d.hasCQ {
		return d.cqData
	}
	return 0
}

func (d *dynRx) tagOut() uint64 {
	if d.tagged {
		return d.tag
	}
	return 0
}

// dropUnexp removes the unexpected entry of message d, which its
// connection lost, and frees its buffer. mu is held.
func (e *endpoint) dropUnexp(d *dynRx) {
	for i := range e.unexp {
		if e.unexp[i].dyn == d {
			e.unexp = append(e.unexp[:i], e.unexp[i+1:]...)
			e.unexp[len(e.unexp):cap(e.unexp)][0] = unexpected{}
			break
		}
	}
	if d.buf != nil {
		e.putBuf(d.buf)
	}
}

// getDyn takes a free dynRx; mu is held.
func (e *endpoint) getDyn() *dynRx {
	if k := len(e.dynFree); k > 0 {
		d := e.dynFree[k-1]
		e.dynFree = e.dynFree[:k-1]
		return d
	}
	return &dynRx{}
}

// putDyn frees d; mu is held.
func (e *endpoint) putDyn(d *dynRx) {
	*d = dynRx{}
	e.dynFree = append(e.dynFree, d)
}

// sendRawTagged sends tagged message op, at most the eager limit, over c
// in the core's raw tagged form (no rxm header: C's rxm over tcp), as
// transmit operation tx; mu is held.
func (e *endpoint) sendRawTagged(c *conn, tx *txBuf, op *kit.Op, inject bool) error {
	n := 0
	switch {
	case inject:
		// The caller's buffer is its own again on return: copy it.
		tx.iov[0], n = tx.inline[:copyOut(tx.inline[:], op)], 1
	case op.IOV == nil:
		tx.iov[0], n = op.Buf, 1
	default:
		n = copy(tx.iov[:], op.IOV)
	}
	tx.tmsg = ep.TaggedMessage{IOV: tx.iov[:n], Addr: fi.AddrUnspec, Tag: op.Tag, Context: tx}
	var flags fi.Flags
	if op.Flags&fi.FlagRemoteCQData != 0 {
		flags, tx.tmsg.Data = fi.FlagRemoteCQData, op.Data
	}
	if !op.Inject {
		flags |= op.Flags & (fi.FlagDeliveryComplete | fi.FlagTransmitComplete)
	}
	if err := c.tag.TSendMsg(&tx.tmsg, flags); err != nil {
		e.putTx(tx)
		return transient(err)
	}
	return nil
}

// DynCompleted takes the completion of a matched eager message at once
// (kit.DynRecvCompleter), when mu is free and none of its connection's
// earlier messages waits in the core completion queue (viaCQ), so that
// their order holds; otherwise the core queue brings it. It runs in the
// core's progress with the core endpoint's lock held, as Arrived does.
func (e *endpoint) DynCompleted(ctx any, n int) bool {
	d, ok := ctx.(*dynRx)
	if !ok {
		return false
	}
	// d's fields are the receive side's (takeDyn matches d under mu from
	// a Recv that another goroutine posts): read them with mu held.
	if !e.mu.TryLock() {
		d.c.viaCQ.Add(1)
		return false
	}
	if d.kind != dynEager || !d.matched || d.buf != nil || d.c.viaCQ.Load() != 0 {
		d.c.viaCQ.Add(1)
		e.unlock()
		return false
	}
	e.rxComplete(d.r.ctx, d.r.report, d.flags(), n, d.size, d.data(), d.tagOut(), d.src, d.r.multi, d.r.iov[0])
	e.putDyn(d)
	e.unlock()
	return true
}
