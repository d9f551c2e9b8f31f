//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Atomic operations (fi_atomic(3)). kit.AtomicOps gives the endpoint the
// whole surface and vets every call; PostAtomic sends one request slot
// (opAtomic) with the operand and compare bytes inline, to one remote
// segment. The target checks key, range and rights as it does for RMA
// (FI_REMOTE_WRITE for the operations that write, FI_REMOTE_READ for
// FI_ATOMIC_READ, both for the fetch and compare operations that write),
// applies the operation with kit.ApplyAtomic and answers with its status
// and, for fetch and compare, the old values; the initiator completes
// when the answer arrives (fi_inject_atomic too, without a CQ entry).
// A refused access completes with an fi.EACCES error entry and changes
// nothing.

// atomicMax is the most operand bytes one atomic operation carries
// (kit.Atomics.MaxSize): a slot's inline payload, which must hold the
// operand and, for a compare, the compare operand (so compare calls carry
// half as many elements), and the answer's the old values.
const atomicMax = inlineMax

// atomicTag packs an atomic request's operation, datatype and family
// into the slot's tag word.
func atomicTag(kind kit.AtomicKind, op ep.AtomicOp, dt ep.Datatype) uint64 {
	return uint64(op)&0xff | uint64(dt)&0xff<<8 | uint64(kind)<<16
}

// PostAtomic queues an atomic operation of the adapter (kit.AtomicPoster):
// every form of fi_atomic, fi_fetch_atomic and fi_compare_atomic, vetted.
// It takes one remote segment (rma_iov_limit 1) and up to iovLimit local
// ones per buffer. The operand and compare bytes are copied at once, so
// the caller's buffers are free when it returns; the result buffers are
// filled when the answer arrives. It takes fi.FlagRemoteCQData,
// fi.FlagCompletion and fi.FlagInject.
func (e *endpoint) PostAtomic(op kit.AtomicOp) error {
	if !e.enabled.Load() {
		if e.closed.Load() {
			return fi.EBADF
		}
		return fi.EOPBADSTATE
	}
	if op.RMAIOV != nil && len(op.RMAIOV) != rmaIOVLimit {
		return errors.Wrapf(fi.EINVAL, "shm: atomic: %d remote segments, the provider takes %d", len(op.RMAIOV), rmaIOVLimit)
	}
	n := op.Bytes()
	if n <= 0 || n > atomicMax || op.Kind == kit.AtomicCompare && 2*n > atomicMax {
		return errors.Wrapf(fi.EMSGSIZE, "shm: atomic: %d bytes, at most %d", n, atomicMax)
	}
	vec := op.Vector()
	if vec && (len(op.IOV) > iovLimit || len(op.CompareIOV) > iovLimit || len(op.ResultIOV) > iovLimit) {
		return errors.Wrapf(fi.EINVAL, "shm: atomic: more than %d local segments", iovLimit)
	}
	cqFlags, cnt := fi.FlagAtomic|fi.FlagWrite, kit.CntrWrite
	if op.Kind != kit.AtomicBase {
		cqFlags, cnt = fi.FlagAtomic|fi.FlagRead, kit.CntrRead
	}
	report := !op.Inject && (!e.TxSel || op.Flags&fi.FlagCompletion != 0)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return fi.EBADF
	}
	d := &e.dp
	p, err := d.peerFor(e, op.Addr)
	if err != nil {
		return err
	}
	if len(d.txFree) == 0 || len(p.out) == cap(p.out) {
		return fi.EAGAIN
	}
	i := d.txFree[len(d.txFree)-1]
	d.txFree = d.txFree[:len(d.txFree)-1]
	t := &d.tx[i]
	t.idx = i
	t.kind, t.peer, t.size, t.ctx, t.cqFlags, t.report, t.inject, t.cnt = txAtomic, p, n, op.Context, cqFlags, report, op.Inject, cnt
	t.tag, t.data, t.cqData, t.key, t.addr = atomicTag(op.Kind, op.Op, op.Datatype), op.Data, op.Flags&fi.FlagRemoteCQData != 0, op.Key, op.RAddr
	t.alen = 0
	if op.Op != ep.OpAtomicRead {
		if vec {
			t.alen = gatherIOC(t.inline[:n], op.IOV)
		} else {
			t.alen = copy(t.inline[:n], op.Buf)
		}
	}
	if op.Kind == kit.AtomicCompare {
		if vec {
			t.alen += gatherIOC(t.inline[n:2*n], op.CompareIOV)
		} else {
			t.alen += copy(t.inline[n:2*n], op.Compare)
		}
	}
	t.niov = 0
	if op.Kind != kit.AtomicBase {
		if vec {
			for _, r := range op.ResultIOV {
				t.iov[t.niov] = r.Buf
				t.niov++
			}
		} else {
			t.iov[0], t.niov = op.Result, 1
		}
	}
	p.out = append(p.out, i)
	d.pushOut(e, p)
	e.setBusy(d.pending())
	return nil
}

// gatherIOC copies the buffers of iov into dst and returns the bytes
// copied.
func gatherIOC(dst []byte, iov []ep.IOC) int {
	n := 0
	for k := range iov {
		n += copy(dst[n:], iov[k].Buf)
	}
	return n
}

// pushAtomic sends an atomic request; false when it must wait (ring full
// or answer credits spent).
func (d *dataPath) pushAtomic(p *peer, t *txEntry) bool {
	if p.busy >= answerCredits {
		return false
	}
	s := p.q.reserve()
	if s == nil {
		return false
	}
	h := slotHeader{op: opAtomic, proto: protoInline, inlineLen: uint32(t.alen), size: uint64(t.size), tag: t.tag,
		key: t.key, addr: t.addr, msgID: d.msgID(t)}
	if t.cqData {
		h.flags, h.data = flagCQData, t.data
	}
	h.put(s)
	copy(s[slotHdr:], t.inline[:t.alen])
	p.q.commit()
	t.hdr, t.sent, t.acks = true, t.size, 1
	p.busy++
	return true
}

// serveAtomic validates and applies an atomic operation from entry i and
// queues its answer: done is false when no answer fits now (the slot
// waits), bad when the request is one no correct peer sends (the peer is
// cut off).
func (d *dataPath) serveAtomic(e *endpoint, i int, h *slotHeader, s []byte) (done, bad bool) {
	if d.ackN == ackQSize {
		return false, false
	}
	kind := kit.AtomicKind(h.tag >> 16)
	op, dt := ep.AtomicOp(h.tag&0xff), ep.Datatype(h.tag>>8&0xff)
	size, err := kit.AtomicSize(dt)
	n := int(h.size)
	isCmp := op >= ep.OpCSwap && op <= ep.OpMSwap
	switch {
	case err != nil || n%size != 0 || kind > kit.AtomicCompare || isCmp != (kind == kit.AtomicCompare):
		return false, true
	case op == ep.OpAtomicRead && (kind != kit.AtomicFetch || h.inlineLen != 0):
		return false, true
	case op != ep.OpAtomicRead && int(h.inlineLen) != n*(1+int(kind)/2):
		return false, true
	}
	access := fi.AccessRemoteWrite
	switch {
	case op == ep.OpAtomicRead:
		access = fi.AccessRemoteRead
	case kind != kit.AtomicBase:
		access |= fi.AccessRemoteRead
	}
	mem, err := e.domain.mrs.Verify(h.key, h.addr, n, access)
	if err != nil {
		d.queueAck(i, h.msgID, uint32(fi.EACCES), h.addr, nil)
		return true, false
	}
	if !kit.AtomicAligned(mem, dt) {
		d.queueAck(i, h.msgID, uint32(fi.EINVAL), h.addr, nil)
		return true, false
	}
	var src, cmp, old []byte
	if op != ep.OpAtomicRead {
		src = s[slotHdr : slotHdr+n]
	}
	if isCmp {
		cmp = s[slotHdr+n : slotHdr+2*n]
	}
	if kind != kit.AtomicBase {
		old = d.old[:n]
	}
	// Serialized with every other software target of the process:
	// another endpoint may serve the same memory.
	err = kit.ApplyAtomicExclusive(op, dt, mem, src, cmp, old)
	if err != nil {
		code := fi.EOPNOTSUPP
		if !errors.Is(err, fi.EOPNOTSUPP) {
			code = fi.EINVAL
		}
		d.queueAck(i, h.msgID, uint32(code), h.addr, nil)
		return true, false
	}
	if op != ep.OpAtomicRead && h.flags&flagCQData != 0 && e.RxCQ != nil {
		_ = e.RxCQ.CompleteOverflow(eq.Completion{Flags: fi.FlagAtomic | fi.FlagRemoteWrite | fi.FlagRemoteCQData,
			Len: n, Data: h.data}, d.source(e, &d.ins[i]))
	}
	// The remote counters count as fi_endpoint(3) says, and C's util
	// (ofi_ep_rx_cntr_inc_funcs) does: the base calls on FI_REMOTE_WRITE,
	// the fetch and compare calls on FI_REMOTE_READ, whether they write
	// or not.
	cntr := kit.CntrRemoteWrite
	if kind != kit.AtomicBase {
		cntr = kit.CntrRemoteRead
	}
	if c := e.Cntr[cntr]; c != nil {
		_ = c.Add(1)
	}
	d.queueAck(i, h.msgID, 0, h.addr, old)
	return true, false
}
