package rxm

import (
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// Atomics (fi_atomic(3); C's rxm_atomic.c), in software, with C's
// protocol (docs/wire-tcp.md, §3.11): the initiator sends an atomic
// request on the peer's connection, the target checks it against the
// registrations its domain recorded (domain.atomicMRs), applies it with
// kit.ApplyAtomicExclusive and answers with an atomic response, and the
// initiator completes the operation when the response arrives, whatever
// completion level was asked: every atomic is delivery complete.
// kit.AtomicOps gives the endpoint the whole fi_atomic(3) surface and
// vets its arguments; the valid queries answer as C's rxm built with
// compiler atomics does (kit.BuiltinAtomicsExclude). Over a core with
// the device's atomics (verbs) rxm still applies them itself, as C does:
// device and CPU atomics on the same memory are not atomic with respect
// to each other, so the two are never mixed.

// respLimit is how many atomic responses one connection may have on their
// way (applied, not yet sent): a peer that sends more requests without
// reading the responses waits (dynamic receive mode) or, over bounce
// receives, loses the connection.
const respLimit = 1024

// atomicBufMax is how many atomic packet bodies an endpoint in dynamic
// receive mode holds while they arrive; one more waits for one to free.
const atomicBufMax = 64

// atomicKind returns the adapter's kind of a request op (6, 7 or 8):
// the kinds count from 0 in the ops' order.
func atomicKind(op rxmwire.Op) kit.AtomicKind { return kit.AtomicKind(op - rxmwire.OpAtomic) }

// newAtomics returns the endpoint's atomic adapter: at most the eager
// limit less the request's fixed part per operation (§3.11.7), and none
// at all without FI_ATOMIC (fi.ENOSYS, as C's).
func (e *endpoint) newAtomics(ops *kit.Ops) *kit.Atomics {
	a := kit.NewAtomics(ops, e, e.info, e.eager-rxmwire.AtomicReqFixed)
	a.Exclude = kit.BuiltinAtomicsExclude
	if e.info.Caps&fi.CapAtomic == 0 {
		a.Off = "the endpoint was opened without FI_ATOMIC"
	}
	return a
}

// PostAtomic sends an atomic request (kit.AtomicPoster; C's
// rxm_atomic_common) on the connection to op.Addr, opened if need be
// (fi.EAGAIN until it is up). The operand and compare bytes are copied
// into the request, so the caller's buffers are free on return; the
// result buffers are filled when the response arrives. Errors: fi.EINVAL
// for remote CQ data (C refuses it too) or
// more than iov_limit local or rma_iov_limit remote segments; bare
// fi.EAGAIN when tx_attr.size operations are in flight or the core's
// queue is full.
func (e *endpoint) PostAtomic(op kit.AtomicOp) error {
	err := e.postAtomic(&op)
	if err == fi.EAGAIN {
		e.progress()
	}
	return err
}

// postAtomic is PostAtomic but for progress.
func (e *endpoint) postAtomic(op *kit.AtomicOp) error {
	prov := e.domain.fabric.Prov()
	switch {
	case op.Flags&fi.FlagRemoteCQData != 0:
		return errors.Wrapf(fi.EINVAL, "%s: %s: atomics carry no remote CQ data", prov, op.Kind)
	case len(op.RMAIOV) > rxmwire.AtomicIOCLimit || len(op.IOV) > iovLimit || len(op.CompareIOV) > iovLimit ||
		len(op.ResultIOV) > iovLimit:
		return errors.Wrapf(fi.EINVAL, "%s: %s: more than %d segments", prov, op.Kind, iovLimit)
	}
	e.mu.Lock()
	defer e.unlock()
	c, tx, err := e.txStart(op.Addr)
	if err != nil {
		return err
	}
	if err := e.bounceOf(tx); err != nil {
		e.putTx(tx)
		return err
	}
	aop := rxmwire.OpAtomic + rxmwire.Op(op.Kind) // atomicKind's inverse
	n := op.Bytes()
	b := tx.bounce
	k := rxmwire.HeaderSize
	var iocs [rxmwire.AtomicIOCLimit]rxmwire.AtomicIOC
	nioc := 1
	if op.RMAIOV != nil {
		nioc = len(op.RMAIOV)
		for i, s := range op.RMAIOV {
			iocs[i] = rxmwire.AtomicIOC{Addr: s.Addr, Count: uint64(s.Count), Key: s.Key}
		}
	} else {
		iocs[0] = rxmwire.AtomicIOC{Addr: op.RAddr, Count: uint64(op.Count), Key: op.Key}
	}
	k += rxmwire.PutAtomicIOCs(b[k:], iocs[:nioc])
	if op.Op != ep.OpAtomicRead {
		k += gatherIOC(b[k:], op.Buf, op.IOV)
	}
	if op.Kind == kit.AtomicCompare {
		k += gatherIOC(b[k:], op.Compare, op.CompareIOV)
	}
	h := &e.hdr
	*h = rxmwire.Header{Type: rxmwire.TypeAtomic, ConnID: c.remoteID, MsgID: uint64(tx.gen)<<32 | uint64(tx.idx),
		Op: aop, Size: uint64(k - rxmwire.HeaderSize), Tag: rxmwire.AtomicTag(op.Datatype, op.Op, nioc)}
	rxmwire.PutHeader(b, h)

	tx.kind, tx.ctx, tx.conn, tx.aop = txAtomic, op.Context, c, aop
	tx.report = !op.Inject && (!e.TxSel || op.Flags&fi.FlagCompletion != 0)
	tx.flags, tx.cntr = fi.FlagAtomic|fi.FlagWrite, kit.CntrWrite
	if op.Kind != kit.AtomicBase {
		tx.flags, tx.cntr, tx.resLen = fi.FlagAtomic|fi.FlagRead, kit.CntrRead, n
		if op.Vector() {
			for i := range op.ResultIOV {
				tx.res[i] = op.ResultIOV[i].Buf
			}
			tx.nres = len(op.ResultIOV)
		} else {
			tx.res[0], tx.nres = op.Result, 1
		}
	}
	tx.iov[0] = b[:k]
	tx.msg = ep.Message{IOV: tx.iov[:1], Addr: fi.AddrUnspec, Context: tx}
	if tx.bdesc != nil {
		tx.desc[0] = tx.bdesc
		tx.msg.Desc = tx.desc[:1]
	}
	if err := c.msg.SendMsg(&tx.msg, 0); err != nil {
		e.putTx(tx)
		return transient(err)
	}
	tx.awaitsPeer = true
	e.rndvOut++
	return nil
}

// gatherIOC copies buf, or the buffers of iov, into dst and returns the
// bytes copied.
func gatherIOC(dst, buf []byte, iov []ep.IOC) int {
	if iov == nil {
		return copy(dst, buf)
	}
	k := 0
	for i := range iov {
		k += copy(dst[k:], iov[i].Buf)
	}
	return k
}

// atomicRespArrived completes the atomic operation whose response, header
// h and body, came over c (§3.11.5 and §3.11.8): false when no atomic of
// ours waits for it there, or the response is malformed, which breaks the
// connection. A response whose result has the wrong length completes its
// operation with fi.EIO, as C does, and breaks the connection too. mu is
// held.
func (e *endpoint) atomicRespArrived(c *conn, h *rxmwire.Header, body []byte) bool {
	status, result, err := rxmwire.ParseAtomicResp(h, body)
	if err != nil {
		return false
	}
	idx, gen := uint32(h.MsgID), uint32(h.MsgID>>32)
	if int(idx) >= len(e.txs) {
		return false
	}
	tx := e.txs[idx]
	if !tx.inUse || tx.kind != txAtomic || tx.gen != gen || tx.conn != c || tx.done || tx.aop != h.Op {
		return false
	}
	tx.done = true
	ok := true
	switch {
	case status < 0:
		tx.err = fi.Errno(-status)
	case len(result) != tx.resLen:
		tx.err, ok = fi.EIO, false
	default:
		for _, r := range tx.res[:tx.nres] {
			result = result[copy(r, result):]
		}
	}
	// The response ends the operation, as in C, whether or not the
	// request's send has completed yet (a device may report that later:
	// Soft-RoCE acknowledges lazily); the buffer the core sent from stays
	// taken until it has.
	if tx.awaitsPeer {
		tx.awaitsPeer = false
		e.rndvOut--
	}
	e.txReport(tx.ctx, tx.report, tx.flags, tx.cntr, tx.err)
	if tx.sent {
		e.putTx(tx)
	}
	return ok
}

// takeAtomic takes an atomic packet, header h and body, that came over c
// into a bounce receive: a request is served, a response completes its
// operation. False: the packet breaks the protocol. mu is held.
func (e *endpoint) takeAtomic(c *conn, h *rxmwire.Header, body []byte) bool {
	if h.Type == rxmwire.TypeAtomicResp {
		return e.atomicRespArrived(c, h, body)
	}
	if c.respOut >= respLimit {
		return false // a peer that does not take its responses
	}
	c.respOut++
	return e.serveAtomic(c, h, body)
}

// serveAtomic checks, applies and answers the atomic request, header h
// and body, that came over c, whose response is already counted in
// c.respOut (§3.11.4 and §3.11.8): false when it is malformed, which
// breaks the connection. mu is held.
func (e *endpoint) serveAtomic(c *conn, h *rxmwire.Header, body []byte) bool {
	r := &e.atomReq
	if rxmwire.ParseAtomicReq(h, body, e.eager-rxmwire.AtomicReqFixed, r) != nil {
		c.respOut--
		return false
	}
	tx := e.getResp()
	if err := e.bounceOf(tx); err != nil {
		e.putResp(tx)
		c.respOut--
		e.dropConn(c, fi.Code(err))
		return true
	}
	k := rxmwire.HeaderSize + rxmwire.AtomicRespFixed
	status := e.applyAtomic(r, tx.bounce[k:])
	resLen := 0
	if status == 0 && r.Op != rxmwire.OpAtomic {
		resLen = r.Bytes
	}
	rh := rxmwire.Header{Type: rxmwire.TypeAtomicResp, MsgID: h.MsgID, Op: h.Op,
		Size: uint64(rxmwire.AtomicRespFixed + resLen), Tag: rxmwire.AtomicTag(r.Datatype, r.AtomicOp, 0)}
	rxmwire.PutHeader(tx.bounce, &rh)
	rxmwire.PutAtomicResp(tx.bounce[rxmwire.HeaderSize:], status, resLen)
	tx.kind, tx.conn = txAtomicResp, c
	tx.iov[0] = tx.bounce[:k+resLen]
	tx.msg = ep.Message{IOV: tx.iov[:1], Addr: fi.AddrUnspec, Context: tx}
	if tx.bdesc != nil {
		tx.desc[0] = tx.bdesc
		tx.msg.Desc = tx.desc[:1]
	}
	if len(c.deferred) > 0 || e.sendResp(tx) {
		tx.queued = true
		e.deferOp(c, deferredOp{resp: tx})
	}
	return true
}

// applyAtomic checks request r against the domain's registrations and the
// operations the endpoint offers and, when it may, applies it, writing
// the old values of the fetch and compare ops to old: the response's
// status, 0 or a negative errno (-FI_EACCES for a registration that
// refuses any segment, -FI_EOPNOTSUPP for a pair the endpoint does not
// offer, -FI_EINVAL for a segment whose memory is not aligned for the
// datatype: kit.AtomicAligned; nothing is applied then). mu is held.
func (e *endpoint) applyAtomic(r *rxmwire.AtomicReq, old []byte) int32 {
	size, err := kit.AtomicSize(r.Datatype)
	if err != nil {
		return -int32(fi.EOPNOTSUPP)
	}
	access := fi.AccessRemoteWrite
	switch {
	case r.AtomicOp == ep.OpAtomicRead:
		access = fi.AccessRemoteRead
	case r.Op != rxmwire.OpAtomic:
		access |= fi.AccessRemoteRead
	}
	mrs := e.domain.atomicMRs
	for i, s := range r.IOCs() {
		if mrs == nil {
			return -int32(fi.EACCES)
		}
		mem, err := mrs.Verify(s.Key, s.Addr, int(s.Count)*size, access)
		if err != nil {
			clear(e.atomMem[:i])
			return -int32(fi.EACCES)
		}
		e.atomMem[i] = mem
	}
	if _, err := e.Atomics.Valid(atomicKind(r.Op), r.Datatype, r.AtomicOp); err != nil {
		clear(e.atomMem[:r.NIOC])
		return -int32(fi.EOPNOTSUPP)
	}
	for i := range r.NIOC {
		if !kit.AtomicAligned(e.atomMem[i], r.Datatype) {
			clear(e.atomMem[:r.NIOC])
			return -int32(fi.EINVAL)
		}
	}
	off := 0
	for i := range r.NIOC {
		mem := e.atomMem[i]
		e.atomMem[i] = nil
		n := len(mem)
		var src, cmp, res []byte
		if r.Operand != nil {
			src = r.Operand[off : off+n]
		}
		if r.Compare != nil {
			cmp = r.Compare[off : off+n]
		}
		if r.Op != rxmwire.OpAtomic {
			res = old[off : off+n]
		}
		if n > 0 {
			if err := kit.ApplyAtomicExclusive(r.AtomicOp, r.Datatype, mem, src, cmp, res); err != nil {
				return -int32(fi.Code(err))
			}
		}
		off += n
	}
	slot := kit.CntrRemoteWrite
	if r.Op != rxmwire.OpAtomic {
		slot = kit.CntrRemoteRead
	}
	if k := e.Cntr[slot]; k != nil {
		_ = k.Add(1)
	}
	return 0
}

// sendResp hands response tx to the core, with the connection's conn_id
// in its header: true when it must wait in the deferred queue (the core's
// queue is full, the peer's conn_id is not known yet, or the core has not
// seen the connection established yet: notYet). A core that
// refuses it otherwise breaks the connection, which frees tx with the
// rest of its deferred queue when tx is queued there. mu is held.
func (e *endpoint) sendResp(tx *txBuf) bool {
	c := tx.conn
	if !c.idKnown {
		return true
	}
	binary.LittleEndian.PutUint64(tx.bounce[8:], c.remoteID) // conn_id (§3.3)
	switch err := c.msg.SendMsg(&tx.msg, 0); {
	case notYet(err):
		return true
	case err != nil:
		fi.Logger(e.domain.fabric.Prov()).Debug("rxm: atomic response refused by the core", "peer", c.peer.addr, "err", err)
		if !tx.queued {
			e.putResp(tx)
		}
		e.dropConn(c, fi.Code(err))
	}
	return false
}

// getResp takes a transmit buffer for an atomic response, from a pool of
// their own: responses do not count against tx_attr.size (c.respOut
// bounds them per connection). mu is held.
func (e *endpoint) getResp() *txBuf {
	var tx *txBuf
	if k := len(e.respFree); k > 0 {
		tx = e.respFree[k-1]
		e.respFree = e.respFree[:k-1]
	} else {
		tx = &txBuf{}
	}
	tx.inUse = true
	return tx
}

// putResp frees response tx and lets its connection's peer send more
// requests. mu is held.
func (e *endpoint) putResp(tx *txBuf) {
	if c := tx.conn; c != nil {
		c.respOut--
		if c.starved {
			e.unstarve()
		}
	}
	tx.reset()
	e.respFree = append(e.respFree, tx)
}

// getAtomBuf returns an empty buffer for an atomic packet's body arriving
// in dynamic receive mode, nil when atomicBufMax are taken. mu is held.
func (e *endpoint) getAtomBuf() []byte {
	if k := len(e.atomBufs); k > 0 {
		b := e.atomBufs[k-1]
		e.atomBufs = e.atomBufs[:k-1]
		return b
	}
	if e.natomBufs >= atomicBufMax {
		return nil
	}
	e.natomBufs++
	return make([]byte, 0, e.eager)
}

// putAtomBuf returns an atomic body's buffer to the pool. mu is held.
func (e *endpoint) putAtomBuf(b []byte) {
	e.atomBufs = append(e.atomBufs, b[:0])
	e.unstarve()
}

// atomicArriving tells the core where the body of atomic packet d, whose
// header is h, goes in dynamic receive mode (Arrived): a pooled buffer.
// A request waits (fi.EAGAIN, its connection starved) while its
// connection has respLimit responses on their way or the pool is empty.
// mu is held.
func (e *endpoint) atomicArriving(d *dynRx, h *rxmwire.Header, rest int) ([][]byte, any, error) {
	c := d.c
	if rest > e.eager {
		e.putDyn(d)
		return nil, nil, fi.EIO
	}
	req := h.Type == rxmwire.TypeAtomic
	var b []byte
	if !req || c.respOut < respLimit {
		b = e.getAtomBuf()
	}
	if b == nil {
		if !c.starved {
			c.starved = true
			e.starved = append(e.starved, c)
		}
		e.putDyn(d)
		return nil, nil, fi.EAGAIN
	}
	if req {
		c.respOut++
	}
	d.kind, d.hdr, d.buf = dynAtomic, *h, b[:rest]
	d.iov[0] = d.buf
	return d.iov[:1], d, nil
}

// atomicDone takes the completion of atomic packet d (dynDone): code 0
// serves the request or completes with the response; an error only
// frees it, as its connection's end comes as its own event. mu is held.
func (e *endpoint) atomicDone(d *dynRx, n int, code fi.Errno) {
	c, h := d.c, &d.hdr
	switch {
	case code != 0 || d.orphan || c.closed:
		if h.Type == rxmwire.TypeAtomic {
			c.respOut--
		}
	case h.Type == rxmwire.TypeAtomicResp:
		if !e.atomicRespArrived(c, h, d.buf[:n]) {
			e.dropConn(c, fi.EIO)
		}
	default:
		if !e.serveAtomic(c, h, d.buf[:n]) {
			e.dropConn(c, fi.EIO)
		}
	}
	e.putAtomBuf(d.buf)
	e.putDyn(d)
}

// unstarve resumes the connections that wait for a buffer or a response
// slot; they take their next message again when mu is let go. mu is held.
func (e *endpoint) unstarve() {
	for i, c := range e.starved {
		c.starved = false
		e.wantResume(c)
		e.starved[i] = nil
	}
	e.starved = e.starved[:0]
}
