//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Data transfer calls (fi_msg(3), fi_tagged(3), fi_rma(3)). They never
// block and, on success, do not allocate. A message of up to 192 bytes
// (the inject size) goes inline in one slot of the peer's ring and
// completes at once; a longer one is read by the receiver from the
// sender's memory with process_vm_readv (one copy), or, where
// cross-memory attach is not permitted, streamed through the bounce
// buffers of the sender's entry in 16 KiB chunks, and completes when the
// receiver has it (CMA) or when its last chunk is out (SAR). With
// FI_DELIVERY_COMPLETE (on the call, or as a default op flag) every
// message completes when the receiver has it in a receive buffer: inline
// and SAR ones then ask for an answer (flagAck), which it sends once it
// placed them. RMA is answered by the target after it checked key, range
// and rights. A full ring or queue, or a peer whose inbox does not exist
// (yet), gives bare fi.EAGAIN.

// txArgs are one transmit call's arguments, built on the caller's stack.
type txArgs struct {
	iov    [iovLimit][]byte
	niov   int
	dest   fi.Addr
	ctx    any
	data   uint64
	tag    uint64
	flags  fi.Flags
	inject bool
	key    uint64
	addr   uint64
}

// post queues a transmit operation.
func (e *endpoint) post(a *txArgs, kind txKind) error {
	if !e.enabled.Load() {
		if e.closed.Load() {
			return fi.EBADF
		}
		return fi.EOPBADSTATE
	}
	size := kit.IOVLen(a.iov[:a.niov])
	inject := a.inject || a.flags&fi.FlagInject != 0
	if inject && size > injectSize {
		return errors.Wrapf(fi.EINVAL, "shm: inject of %d bytes, the inject size is %d", size, injectSize)
	}
	var cqFlags fi.Flags
	cnt := kit.CntrSend
	switch kind {
	case txSend:
		cqFlags = fi.FlagSend | fi.FlagMsg
	case txTSend:
		cqFlags = fi.FlagSend | fi.FlagTagged
	case txWrite:
		cqFlags, cnt = fi.FlagRMA|fi.FlagWrite, kit.CntrWrite
	case txRead:
		cqFlags, cnt = fi.FlagRMA|fi.FlagRead, kit.CntrRead
	}
	report := !a.inject && (!e.TxSel || a.flags&fi.FlagCompletion != 0)
	cqData := a.flags&fi.FlagRemoteCQData != 0
	// FI_DELIVERY_COMPLETE: the send completes once the target has the
	// message in a receive buffer, which it says with an answer. The
	// fi_inject calls have no completion to delay (C ignores the flag
	// there too); CMA messages and RMA are answered anyway.
	dc := !a.inject && a.flags&fi.FlagDeliveryComplete != 0 && (kind == txSend || kind == txTSend)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return fi.EBADF
	}
	d := &e.dp
	p, err := d.peerFor(e, a.dest)
	if err != nil {
		return err
	}
	if (kind == txSend || kind == txTSend) && size <= inlineMax && len(p.out) == 0 && !dc {
		s := p.q.reserve()
		if s == nil {
			if p.q.bad {
				d.abandon(e, p, "the ring head went backwards or past the tail")
				return fi.ECONNRESET
			}
			return fi.EAGAIN
		}
		op := byte(opMsg)
		if kind == txTSend {
			op = opTagged
		}
		h := slotHeader{op: op, proto: protoInline, inlineLen: uint32(size), size: uint64(size), tag: a.tag, data: a.data}
		if cqData {
			h.flags = flagCQData
		}
		h.put(s)
		gather(s[slotHdr:], a.iov[:a.niov])
		p.q.commit()
		e.ringPeer(p)
		if !a.inject {
			e.completeTx(a.ctx, cqFlags, report, cnt)
		} else if c := e.Cntr[cnt]; c != nil {
			_ = c.Add(1)
		}
		return nil
	}
	if (kind == txSend || kind == txTSend) && size <= bufMax && !inject && len(p.out) == 0 && !dc {
		if k := p.freeChunk(); k >= 0 {
			if s := p.q.reserve(); s != nil {
				busy, chunk := p.r.sarChunkMem(p.off, k)
				gather(chunk[:size], a.iov[:a.niov])
				p.r.word64(busy).Store(chunkBusy)
				op := byte(opMsg)
				if kind == txTSend {
					op = opTagged
				}
				h := slotHeader{op: op, proto: protoBuf, inlineLen: uint32(size), size: uint64(size), tag: a.tag, data: a.data,
					aux: uint32(k)}
				if cqData {
					h.flags = flagCQData
				}
				h.put(s)
				p.chunkAt[k], p.chunkUsed = p.q.tail, p.chunkUsed|1<<k
				p.chunk = uint64(k) + 1
				p.q.commit()
				e.ringPeer(p)
				e.completeTx(a.ctx, cqFlags, report, cnt)
				p.warm(size)
				return nil
			} else if p.q.bad {
				d.abandon(e, p, "the ring head went backwards or past the tail")
				return fi.ECONNRESET
			}
		}
	}
	if len(d.txFree) == 0 || len(p.out) == cap(p.out) {
		return fi.EAGAIN
	}
	i := d.txFree[len(d.txFree)-1]
	d.txFree = d.txFree[:len(d.txFree)-1]
	t := &d.tx[i]
	t.idx = i
	t.kind, t.peer, t.size, t.ctx, t.cqFlags, t.report, t.inject, t.cnt = kind, p, size, a.ctx, cqFlags, report, a.inject, cnt
	t.tag, t.data, t.cqData, t.key, t.addr, t.dc = a.tag, a.data, cqData, a.key, a.addr, dc
	if inject {
		t.iov[0], t.niov = t.inline[:size], 1
		gather(t.inline[:size], a.iov[:a.niov])
	} else {
		t.iov, t.niov = a.iov, a.niov
	}
	p.out = append(p.out, i)
	d.pushOut(e, p)
	e.setBusy(d.pending())
	return nil
}

// PostTx queues a transmit operation of the adapter (kit.Poster): every
// form of fi_send, fi_tsend, fi_write and fi_read. The message forms
// take fi.FlagRemoteCQData, fi.FlagInject, fi.FlagCompletion and
// fi.FlagDeliveryComplete (completes once the message is in the target's
// receive buffer); fi.FlagTransmitComplete and fi.FlagInjectComplete
// change nothing (a message in the target's ring no longer depends on the
// sender), as in C's shm. RMA takes one remote segment, of the local
// length; a write completes once the target placed the data.
func (e *endpoint) PostTx(op kit.Op) error {
	a := txArgs{dest: op.Addr, ctx: op.Context, data: op.Data, tag: op.Tag, flags: op.Flags, inject: op.Inject}
	n, err := op.CopyIOV(a.iov[:], "shm")
	if err != nil {
		return err
	}
	a.niov = n
	var kind txKind
	switch op.Kind {
	case kit.OpSend:
		kind = txSend
	case kit.OpTSend:
		kind = txTSend
	case kit.OpWrite, kit.OpRead:
		kind = txWrite
		if op.Kind == kit.OpRead {
			kind = txRead
		}
		if op.RMAIOV != nil {
			if err := oneRMA(op.RMAIOV, kit.IOVLen(a.iov[:a.niov])); err != nil {
				return err
			}
		}
		a.key, a.addr = op.Key, op.RAddr
	default:
		return fi.ENOSYS
	}
	return e.post(&a, kind)
}

// recv posts a receive; with fi.FlagMultiRecv, an untagged one of one
// segment, a multi-receive buffer (multirecv.go).
func (e *endpoint) recv(iov [][]byte, src fi.Addr, ctx any, tagged bool, tag, ignore uint64, flags fi.Flags) error {
	if len(iov) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "shm: recv: %d iovecs, the limit is %d", len(iov), iovLimit)
	}
	multi := flags&fi.FlagMultiRecv != 0
	if multi {
		switch {
		case tagged:
			return errors.Wrap(fi.EINVAL, "shm: trecv: FI_MULTI_RECV applies to untagged receives only (as in C 1.17's shm)")
		case len(iov) != 1:
			return errors.Wrapf(fi.EINVAL, "shm: recv: an FI_MULTI_RECV buffer is one segment, not %d", len(iov))
		}
	}
	if !e.enabled.Load() {
		if e.closed.Load() {
			return fi.EBADF
		}
		return fi.EOPBADSTATE
	}
	r := rxEntry{ctx: ctx, src: src, tagged: tagged, tag: tag, ignore: ignore,
		report: !e.RxSel || flags&fi.FlagCompletion != 0}
	r.niov = copy(r.iov[:], iov)
	r.size = kit.IOVLen(iov)
	if e.info.Caps&fi.CapDirectedRecv == 0 {
		r.src = fi.AddrUnspec
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return fi.EBADF
	}
	err := e.dp.postRecv(e, &r, multi)
	e.setBusy(e.dp.pending())
	return err
}

// PostRx posts a receive of the adapter (kit.Poster): every form of
// fi_recv and fi_trecv; a source other than fi.AddrUnspec matches only
// that sender (FI_DIRECTED_RECV). An untagged receive of one segment
// with fi.FlagMultiRecv (fi_recvmsg's flags, or the rx_attr op_flags
// default) is a multi-receive buffer (FI_MULTI_RECV): one smaller than
// FI_OPT_MIN_MULTI_RECV, of more segments, or tagged (fi_trecvmsg; C's
// shm has no tagged multi-receive) is fi.EINVAL.
func (e *endpoint) PostRx(op kit.Op) error {
	if op.Vector() {
		return e.recv(op.IOV, op.Addr, op.Context, op.Kind == kit.OpTRecv, op.Tag, op.Ignore, op.Flags)
	}
	iov := [1][]byte{op.Buf}
	return e.recv(iov[:], op.Addr, op.Context, op.Kind == kit.OpTRecv, op.Tag, op.Ignore, op.Flags)
}

// oneRMA checks an RMA message's remote segments: one, of the local
// length n.
func oneRMA(rma []ep.RMAIOV, n int) error {
	if len(rma) != rmaIOVLimit {
		return errors.Wrapf(fi.EINVAL, "shm: rma: %d remote segments, the provider takes %d", len(rma), rmaIOVLimit)
	}
	if rma[0].Len != n {
		return errors.Wrapf(fi.EINVAL, "shm: rma: %d local bytes for a remote segment of %d", n, rma[0].Len)
	}
	return nil
}
