package rxm

import (
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// RMA (fi_rma(3); C's rxm_rma.c) passes through to the peer's connection:
// the application's keys and remote addresses go to the core unchanged,
// its descriptors become the core regions' own, and the core's
// completion becomes rxm's, with the application's context. A write with
// remote CQ data completes at the target as the core reports it, on
// rxm's receive queue; the remote-write counter counts what the core
// counts.

// rmaFlags are the operation flags rxm passes to the core's RMA calls.
const rmaFlags = fi.FlagRemoteCQData | fi.FlagDeliveryComplete | fi.FlagTransmitComplete

// postRMA posts fi_read, fi_write and their forms (kit.RMAOps) on the
// connection to op.Addr, opened if need be (fi.EAGAIN until it is up).
// Bare errors: fi.EINVAL for more than rma_iov_limit or iov_limit
// segments or an inject above inject_size, fi.EAGAIN when tx_attr.size
// operations are in flight or the core's queue is full.
func (e *endpoint) postRMA(op *kit.Op) error {
	if len(op.IOV) > iovLimit || len(op.RMAIOV) > iovLimit {
		return fi.EINVAL
	}
	size := op.Len()
	inject := op.Inject || op.Flags&fi.FlagInject != 0
	if inject && (size > e.info.TxAttr.InjectSize || size > maxInject) {
		return fi.EINVAL
	}
	e.mu.Lock()
	defer e.unlock()
	c, tx, err := e.txStart(op.Addr)
	if err != nil {
		return err
	}
	if c.rma == nil {
		e.putTx(tx)
		return fi.ENOSYS
	}
	tx.kind, tx.ctx = txRMA, op.Context
	tx.report = !op.Inject && (!e.TxSel || op.Flags&fi.FlagCompletion != 0)
	tx.flags, tx.cntr = fi.FlagRMA|fi.FlagWrite, kit.CntrWrite
	if op.Kind == kit.OpRead {
		tx.flags, tx.cntr = fi.FlagRMA|fi.FlagRead, kit.CntrRead
	}
	n, hasDesc := 0, false
	switch {
	case inject && e.mrLocal:
		// Copied into the tx buffer's registered space, which the core
		// sends from.
		if err := e.bounceOf(tx); err != nil {
			e.putTx(tx)
			return err
		}
		k := copyOut(tx.bounce, op)
		tx.iov[0], tx.desc[0], n, hasDesc = tx.bounce[:k], tx.bdesc, 1, true
	case inject:
		// The caller's buffer is its own again on return: copy it.
		tx.iov[0], n = tx.inline[:copyOut(tx.inline[:], op)], 1
	case op.IOV == nil:
		tx.iov[0], n = op.Buf, 1
		tx.desc[0] = coreDesc(op.Desc)
		hasDesc = tx.desc[0] != nil
	default:
		n = copy(tx.iov[:iovLimit], op.IOV)
		for i := range min(n, len(op.Descs)) {
			tx.desc[i] = coreDesc(op.Descs[i])
			hasDesc = hasDesc || tx.desc[i] != nil
		}
	}
	if e.mrLocal && !inject {
		// Buffers the application gave no descriptor for are registered
		// for this operation (C's rxm_rma.c), until it completes.
		for i, b := range tx.iov[:n] {
			if len(b) == 0 || tx.desc[i] != nil {
				continue
			}
			mr, err := e.domain.registerInternal(b, fi.AccessRead|fi.AccessWrite)
			if err != nil {
				e.putTx(tx)
				return fi.Code(err)
			}
			tx.mrs[i], tx.desc[i] = mr, mr.Desc()
		}
		hasDesc = true
	}
	var rma []ep.RMAIOV
	if op.RMAIOV != nil {
		rma = tx.rmaIOV[:copy(tx.rmaIOV[:], op.RMAIOV)]
	} else {
		tx.rmaIOV[0] = ep.RMAIOV{Addr: op.RAddr, Len: size, Key: op.Key}
		rma = tx.rmaIOV[:1]
	}
	tx.rmsg = ep.RMAMessage{IOV: tx.iov[:n], Addr: fi.AddrUnspec, RMAIOV: rma, Context: tx, Data: op.Data}
	if hasDesc {
		tx.rmsg.Desc = tx.desc[:n]
	}
	if op.Kind == kit.OpRead {
		err = c.rma.ReadMsg(&tx.rmsg, op.Flags&rmaFlags)
	} else {
		err = c.rma.WriteMsg(&tx.rmsg, op.Flags&rmaFlags)
	}
	if err != nil {
		e.putTx(tx)
		return transient(err)
	}
	return nil
}

// coreDesc returns the core's descriptor of an rxm memory region's
// descriptor, nil for anything else.
func coreDesc(d any) any {
	if m, ok := d.(*memRegion); ok {
		return m.core.Desc()
	}
	return nil
}
