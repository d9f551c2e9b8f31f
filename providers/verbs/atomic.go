//go:build verbs && cgo

package verbs

import (
	"encoding/binary"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Atomic operations (fi_atomic(3); vrb_msg_ep_atomic_ops and
// vrb_query_atomic in C's verbs_ep.c): the device's own, one 64-bit word
// each. The package documentation (doc.go, Atomics) says what is offered
// and where it parts from C 1.17. kit.AtomicOps vets every call; the
// pairs are kit.Atomics' matrix narrowed by Exclude (the 64-bit
// datatypes), MaxCount (1) and Refuse (atomicRefuse: the device's
// operations), so that the valid calls and the data calls agree.
// PostAtomic posts one fenced work request: an RDMA write for
// FI_ATOMIC_WRITE, an RDMA read for FI_ATOMIC_READ, the device's
// fetch-and-add or compare-and-swap, whose operands are values in the
// request (host order, as the device takes them) and whose previous
// value lands in the registered result buffer.

// atomicWord is the size of a device atomic's operand and result.
const atomicWord = 8

// atomicExclude is every datatype but the 64-bit ones the device handles.
const atomicExclude = ^(kit.AtomicTypes(1)<<ep.Int64 | kit.AtomicTypes(1)<<ep.Uint64 | kit.AtomicTypes(1)<<ep.Double)

// The reasons of atomicRefuse.
const (
	whyBase    = "of the base operations the device offers FI_ATOMIC_WRITE only (an RDMA write)"
	whyFetch   = "of the fetch operations the device offers FI_ATOMIC_READ (an RDMA read) and FI_SUM (fetch-and-add) only"
	whyCompare = "of the compare operations the device offers FI_CSWAP only (compare-and-swap)"
	whyDouble  = "the device adds and compares 64-bit integers, not doubles"
)

// newAtomics returns the endpoint's atomic adapter state: one word per
// operation, the pairs of the device (atomicRefuse) on the 64-bit
// datatypes.
func newAtomics(ops *kit.Ops, e *endpoint, d *domain) *kit.Atomics {
	a := kit.NewAtomics(ops, e, e.info, 2*atomicWord)
	a.MaxCount, a.Exclude = 1, atomicExclude
	a.Refuse = atomicRefuse(d.Info().DomainAttr.Name, d.atomicCap)
	return a
}

// atomicRefuse returns kit.Atomics.Refuse for a device named dev with
// atomic capability cap: the pairs of vrb_query_atomic, without FI_SUM
// and FI_CSWAP on doubles, and without them at all on a device without
// atomics.
func atomicRefuse(dev string, cap int) func(kit.AtomicKind, ep.Datatype, ep.AtomicOp) string {
	var none string
	if cap == atomicCapNone {
		none = "device " + dev + " has no atomics (atomic_cap IBV_ATOMIC_NONE); FI_ATOMIC_READ and FI_ATOMIC_WRITE, RDMA reads and writes, remain"
	}
	return func(kind kit.AtomicKind, dt ep.Datatype, op ep.AtomicOp) string {
		switch kind {
		case kit.AtomicBase:
			if op != ep.OpAtomicWrite {
				return whyBase
			}
			return ""
		case kit.AtomicFetch:
			if op == ep.OpAtomicRead {
				return ""
			}
			if op != ep.OpSum {
				return whyFetch
			}
		case kit.AtomicCompare:
			if op != ep.OpCSwap {
				return whyCompare
			}
		}
		// FI_SUM or FI_CSWAP: the device's atomics.
		if dt == ep.Double {
			return whyDouble
		}
		return none
	}
}

// atomicOne is the buffer and desc of the one element of a single-buffer
// call (b, desc) or of a vector (the entry of count 1).
func atomicOne(b []byte, desc any, iov []ep.IOC, descs []any, vec bool) ([]byte, any) {
	if !vec {
		return b, desc
	}
	for i := range iov {
		if iov[i].Count > 0 {
			var d any
			if i < len(descs) {
				d = descs[i]
			}
			return iov[i].Buf, d
		}
	}
	return nil, nil
}

// word is the host-order uint64 in b's first 8 bytes.
func word(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }

// PostAtomic posts an atomic operation of the adapter (kit.AtomicPoster):
// every form of fi_atomic (FI_ATOMIC_WRITE: IBV_WR_RDMA_WRITE, with
// fi.FlagRemoteCQData IBV_WR_RDMA_WRITE_WITH_IMM, which consumes a
// receive at the target as fi_writedata does), fi_fetch_atomic
// (FI_ATOMIC_READ: IBV_WR_RDMA_READ; FI_SUM:
// IBV_WR_ATOMIC_FETCH_AND_ADD) and fi_compare_atomic (FI_CSWAP:
// IBV_WR_ATOMIC_CMP_AND_SWP), vetted by the adapter to one element. It
// posts one fenced work request whose wr_id is a slot of the endpoint's
// table, without allocating, or returns bare fi.EAGAIN when the send
// queue is full. The completion carries FI_ATOMIC|FI_WRITE for
// fi_atomic and FI_ATOMIC|FI_READ for the fetch and compare calls, and
// counts on the write or read counter. fi_inject_atomic and
// fi.FlagInject send the operand inline (fi.EINVAL when the queue pair
// has no inline room for it); the fetch and compare calls copy their
// operands into the request anyway. fi.FlagRemoteCQData is for
// FI_ATOMIC_WRITE only (fi.EBADFLAGS otherwise: device atomics and RDMA
// reads carry no immediate data; C drops the data silently).
func (e *endpoint) PostAtomic(op kit.AtomicOp) error {
	if err := e.cs.CanSend(); err != nil {
		return err
	}
	if op.Flags&^txOpFlags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: %s: flags %v", op.Kind, op.Flags&^txOpFlags)
	}
	withData := op.Flags&fi.FlagRemoteCQData != 0
	if withData && op.Op != ep.OpAtomicWrite {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: %s: FI_REMOTE_CQ_DATA: only FI_ATOMIC_WRITE (an RDMA write) carries immediate data, device atomics and RDMA reads have none", op.Kind)
	}
	raddr, rkey := op.RAddr, op.Key
	for i := range op.RMAIOV {
		if op.RMAIOV[i].Count > 0 {
			raddr, rkey = op.RMAIOV[i].Addr, op.RMAIOV[i].Key
			break
		}
	}
	device := op.Op == ep.OpSum || op.Op == ep.OpCSwap
	if device && raddr%atomicWord != 0 {
		return errors.Wrapf(fi.EINVAL, "verbs: %s: remote address %#x is not 8-byte aligned, as the device's atomics need", op.Kind, raddr)
	}
	vec := op.Vector()
	buf, desc := atomicOne(op.Buf, op.Desc, op.IOV, op.Descs, vec)
	cqFlags, cnt := fi.FlagAtomic|fi.FlagWrite, int8(kit.CntrWrite)
	if op.Kind != kit.AtomicBase {
		cqFlags, cnt = fi.FlagAtomic|fi.FlagRead, int8(kit.CntrRead)
	}
	inject := op.Inject || op.Flags&fi.FlagInject != 0

	e.mu.Lock()
	defer e.mu.Unlock()
	d := &e.dp
	if d.qp == nil {
		return fi.ENOTCONN
	}
	fl := sendFence
	var sgeAddr uint64
	var lkey uint32
	if op.Op == ep.OpAtomicWrite {
		sgeAddr = bufAddr(buf)
		if atomicWord <= d.caps.inline {
			fl |= sendInline
		} else if inject {
			return errors.Wrapf(fi.EINVAL, "verbs: %s: inject of %d bytes, the inject size is %d", op.Kind, atomicWord, d.caps.inline)
		} else {
			r, _ := desc.(*memRegion)
			var ok bool
			if lkey, ok = r.lkeyFor(sgeAddr, atomicWord); !ok {
				return errors.Wrapf(fi.EINVAL, "verbs: %s: operand without the desc of a region that holds it (FI_MR_LOCAL)", op.Kind)
			}
		}
	} else {
		res, resDesc := atomicOne(op.Result, op.ResultDesc, op.ResultIOV, op.ResultDescs, vec)
		sgeAddr = bufAddr(res)
		r, _ := resDesc.(*memRegion)
		var ok bool
		if lkey, ok = r.lkeyFor(sgeAddr, atomicWord); !ok {
			return errors.Wrapf(fi.EINVAL, "verbs: %s: result buffer without the desc of a region that holds it (FI_MR_LOCAL)", op.Kind)
		}
	}
	setSGE(&d.ssge[0], sgeAddr, atomicWord, lkey)
	report := !op.Inject && (!e.TxSel || op.Flags&fi.FlagCompletion != 0)
	wrID, err := d.tx.put(txOp{ctx: op.Context, flags: cqFlags, report: report, cnt: cnt})
	if err != nil {
		return fi.EAGAIN
	}
	var errno syscall.Errno
	switch op.Op {
	case ep.OpAtomicWrite:
		kind := opWrite
		if withData {
			kind = opWriteWithImm
		}
		errno = postSendSGL(d.qp, kind, fl, wrID, d.ssge[:1], uint32(op.Data), raddr, uint32(rkey))
	case ep.OpAtomicRead:
		errno = postSendSGL(d.qp, opRead, fl, wrID, d.ssge[:1], 0, raddr, uint32(rkey))
	case ep.OpSum:
		errno = postAtomicC(d.qp, opAtomicFetchAdd, fl, wrID, &d.ssge[0], raddr, uint32(rkey), word(buf), 0)
	case ep.OpCSwap:
		cmp, _ := atomicOne(op.Compare, nil, op.CompareIOV, nil, vec)
		errno = postAtomicC(d.qp, opAtomicCmpSwp, fl, wrID, &d.ssge[0], raddr, uint32(rkey), word(cmp), word(buf))
	default: // the adapter lets no other operation through (atomicRefuse)
		d.tx.take(wrID)
		return fi.EOPNOTSUPP
	}
	if errno != 0 {
		d.tx.take(wrID)
		return postErr("ibv_post_send", errno)
	}
	return nil
}
