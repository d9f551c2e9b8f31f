//go:build verbs && cgo

package verbs

import (
	"context"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Data transfer calls (fi_msg(3), fi_rma(3); vrb_msg_ep_msg_ops,
// vrb_msg_ep_rma_ops). Each is one ibv_post_send or ibv_post_recv of up
// to the queue pair's SGE limit, with its wr_id a slot of a fixed table:
// no allocation, and a bare fi.EAGAIN when the queue is full (reading
// the CQ makes room). Under FI_MR_LOCAL every buffer needs the desc of a
// region registered with the domain that holds it, except sends and
// writes that fit the inline size (IBV_SEND_INLINE copies them at the
// post). Sends and RMA need a connected endpoint (fi.ENOTCONN before
// eq.Connected, fi.ESHUTDOWN after); receives may be posted from Enable
// on.

// rxBit marks the wr_id of a receive.
const rxBit = 1 << 63

// txOp is a posted send, write or read.
type txOp struct {
	ctx    any
	flags  fi.Flags
	report bool
	cnt    int8
}

// rxOp is a posted receive.
type rxOp struct {
	ctx    any
	report bool
}

// dataPath is an endpoint's verbs objects; guarded by the endpoint's mu.
type dataPath struct {
	vcq  *cq
	qp   qpC
	caps qpCaps
	// txIOV and rxIOV are the iov limits: the Info's, within the SGEs
	// the queue pair got.
	txIOV, rxIOV int
	tx           *slotTable[txOp]
	rx           *slotTable[rxOp]
	ssge, rsge   []sgeC // C memory, filled for each post
	wcs          [pollBatch]completion
}

// sizes returns the queue pair's wanted capacities from the Info
// (tx_attr and rx_attr size, iov_limit, inject_size).
func (e *endpoint) sizes() qpCaps {
	c := qpCaps{sendWR: defTxSize, recvWR: defRxSize, sendSGE: defTxIOVLimit, recvSGE: defRxIOVLimit, inline: defInlineSize}
	if a := e.info.TxAttr; a != nil {
		if a.Size > 0 {
			c.sendWR = a.Size
		}
		if a.IOVLimit > 0 {
			c.sendSGE = a.IOVLimit
		}
		c.inline = a.InjectSize
	}
	if a := e.info.RxAttr; a != nil {
		if a.Size > 0 {
			c.recvWR = a.Size
		}
		if a.IOVLimit > 0 {
			c.recvSGE = a.IOVLimit
		}
	}
	return c
}

// open creates the verbs CQ, deep enough for every send and receive of
// the queue pair, with its completion channel (ibv_create_comp_channel,
// ibv_create_cq).
func (d *dataPath) open(e *endpoint) error {
	if d.vcq != nil {
		return nil
	}
	want := e.sizes()
	c, err := newCQOn(e.domain.dev, want.sendWR+want.recvWR)
	if err != nil {
		return errors.Wrap(err, "verbs: enable")
	}
	d.vcq = c
	return nil
}

// createQP creates id's queue pair on the domain's protection domain,
// completing into the endpoint's CQ (rdma_create_qp), and the slot tables
// of its capacities.
func (d *dataPath) createQP(e *endpoint, id cmIDC) error {
	want := e.sizes()
	qp, caps, err := createQPOn(id, e.domain.pd, d.vcq.cq, want)
	if err != nil {
		return errors.Wrap(err, "verbs: create queue pair")
	}
	d.qp, d.caps = qp, caps
	d.txIOV, d.rxIOV = min(caps.sendSGE, want.sendSGE), min(caps.recvSGE, want.recvSGE)
	d.tx = newSlotTable[txOp](caps.sendWR)
	d.rx = newSlotTable[rxOp](caps.recvWR)
	d.ssge = newSGEs(max(caps.sendSGE, 1))
	d.rsge = newSGEs(max(caps.recvSGE, 1))
	return nil
}

// destroyQP destroys the queue pair (rdma_destroy_qp); its posted work
// stays in the tables for close.
func (d *dataPath) destroyQP(id cmIDC) {
	if d.qp != nil {
		destroyQPOf(id)
		d.qp = nil
	}
}

// close completes what the CQ still holds and, with fi.ECANCELED, what
// never completed, and frees the CQ and the scratch arrays.
func (d *dataPath) close(e *endpoint) {
	if d.vcq == nil {
		return
	}
	e.pollLocked()
	if d.tx != nil {
		d.tx.drain(func(op txOp) { e.txDone(op, nil, wcWRFlushErr) })
		d.rx.drain(func(op rxOp) { e.rxDone(op, nil, wcWRFlushErr) })
		freeSGEs(d.ssge)
		freeSGEs(d.rsge)
		d.ssge, d.rsge = nil, nil
	}
	_ = d.vcq.close()
	d.vcq = nil
}

// auto is the endpoint's waiting goroutine. Completions reach the bound
// queues and counters when the application reads them (their progress
// hook polls the verbs CQ, busy polling that costs no system call); only
// while a blocking read waits (SRead, Wait: epSet.wait kicks) does this
// goroutine arm the CQ (ibv_req_notify_cq), poll once more for what came
// before the arming, and park in the netpoller on the completion channel
// until the next completion or ctx's end. Arming on every completion
// instead would cost a channel event, its wake-up and two system calls
// per message.
func (e *endpoint) auto(ctx context.Context) {
	defer e.autoWG.Done()
	c := e.dp.vcq
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		}
		e.progress()
		if err := reqNotifyCQ(c.cq); err != nil {
			return
		}
		e.progress()
		if err := c.nextEvent(ctx); err != nil {
			return
		}
		e.progress()
	}
}

// wake makes auto wait for the endpoint's next completion.
func (e *endpoint) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// progress moves the verbs CQ's completions into the bound queues and
// counters (ibv_poll_cq).
func (e *endpoint) progress() {
	e.mu.Lock()
	e.pollLocked()
	e.mu.Unlock()
}

func (e *endpoint) pollLocked() {
	d := &e.dp
	if d.vcq == nil {
		return
	}
	for {
		n, err := d.vcq.poll(d.wcs[:])
		if n <= 0 || err != nil {
			return
		}
		for i := range d.wcs[:n] {
			e.complete(&d.wcs[i])
		}
	}
}

// complete translates one work completion.
func (e *endpoint) complete(w *completion) {
	d := &e.dp
	if d.tx == nil {
		return
	}
	if w.wrID&rxBit != 0 {
		if op, ok := d.rx.take(w.wrID &^ rxBit); ok {
			e.rxDone(op, w, w.status)
		}
		return
	}
	if op, ok := d.tx.take(w.wrID); ok {
		e.txDone(op, w, w.status)
	}
}

// wcErrno maps a work completion's status to an fi.Errno.
func wcErrno(s wcStatus) fi.Errno {
	switch s {
	case wcWRFlushErr:
		return fi.ECANCELED
	case wcLocLenErr:
		return fi.ETRUNC
	case wcRemAccessErr, wcLocProtErr, wcLocAccessErr:
		return fi.EACCES
	case wcRemInvReqErr:
		return fi.EINVAL
	case wcRetryExcErr, wcRNRRetryExcErr:
		return fi.ETIMEDOUT
	case wcRemOpErr:
		return fi.EREMOTEIO
	}
	return fi.EIO
}

func (e *endpoint) count(k int8, ok bool) {
	if k < 0 {
		return
	}
	if c := e.Cntr[k]; c != nil {
		if ok {
			_ = c.Add(1)
		} else {
			_ = c.AddErr(1)
		}
	}
}

// txDone reports a send, write or read (w nil: never completed).
func (e *endpoint) txDone(op txOp, w *completion, st wcStatus) {
	if st != wcSuccess {
		e.count(op.cnt, false)
		if e.TxCQ != nil {
			_ = e.TxCQ.CompleteErr(&eq.CQError{Context: op.ctx, Flags: op.flags, Err: wcErrno(st), ProvErrno: int(st)})
		}
		return
	}
	e.count(op.cnt, true)
	if op.report && e.TxCQ != nil {
		c := eq.Completion{Context: op.ctx, Flags: op.flags}
		if op.flags&(fi.FlagRead|fi.FlagAtomic) == fi.FlagRead { // RMA reads; atomics report no length
			c.Len = int(w.byteLen)
		}
		_ = e.TxCQ.CompleteOverflow(c, fi.AddrUnspec)
	}
}

// rxDone reports a receive, or a remote write with immediate data that
// consumed one (IBV_WC_RECV_RDMA_WITH_IMM: FI_RX_CQ_DATA).
func (e *endpoint) rxDone(op rxOp, w *completion, st wcStatus) {
	if st != wcSuccess {
		e.count(kit.CntrRecv, false)
		if e.RxCQ != nil {
			_ = e.RxCQ.CompleteErr(&eq.CQError{Context: op.ctx, Flags: fi.FlagRecv | fi.FlagMsg, Err: wcErrno(st), ProvErrno: int(st)})
		}
		return
	}
	c := eq.Completion{Context: op.ctx, Flags: fi.FlagRecv | fi.FlagMsg, Len: int(w.byteLen)}
	k := int8(kit.CntrRecv)
	if w.opcode == wcOpRecvRDMAImm {
		c.Flags, k = fi.FlagRMA|fi.FlagRemoteWrite, kit.CntrRemoteWrite
	}
	if w.hasImm {
		c.Flags |= fi.FlagRemoteCQData
		c.Data = uint64(w.immData)
	}
	e.count(k, true)
	if op.report && e.RxCQ != nil {
		_ = e.RxCQ.CompleteOverflow(c, fi.AddrUnspec)
	}
}

// txOpFlags are the flags a transmit call may carry.
const txOpFlags = fi.FlagCompletion | fi.FlagInject | fi.FlagDeliveryComplete | fi.FlagTransmitComplete |
	fi.FlagInjectComplete | fi.FlagRemoteCQData | fi.FlagMore | fi.FlagFence | fi.FlagCommitComplete

// txArgs are one transmit call's arguments, on the caller's stack: one
// buffer (one, oneDesc) or a vector (iov, desc).
type txArgs struct {
	op      sendOp
	cqFlags fi.Flags
	cnt     int8
	one     []byte
	oneDesc any
	iov     [][]byte
	desc    []any
	vec     bool
	ctx     any
	flags   fi.Flags
	data    uint64
	raddr   uint64
	rkey    uint64
	rlen    int // the remote segment's length; -1 for sends
	inject  bool
}

func (a *txArgs) nseg() int {
	if !a.vec {
		return 1
	}
	return len(a.iov)
}

func (a *txArgs) seg(i int) ([]byte, any) {
	if !a.vec {
		return a.one, a.oneDesc
	}
	var d any
	if i < len(a.desc) {
		d = a.desc[i]
	}
	return a.iov[i], d
}

// bufAddr is the address of b's first byte.
func bufAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// postTx posts a send, write or read (ibv_post_send).
func (e *endpoint) postTx(a *txArgs) error {
	if err := e.cs.CanSend(); err != nil {
		return err
	}
	if a.flags&^txOpFlags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: flags %v", a.flags&^txOpFlags)
	}
	n := a.nseg()
	total := 0
	for i := range n {
		b, _ := a.seg(i)
		total += len(b)
	}
	if a.rlen >= 0 && a.rlen != total {
		return errors.Wrapf(fi.EINVAL, "verbs: rma of %d local bytes to %d remote bytes", total, a.rlen)
	}
	inject := a.inject || a.flags&fi.FlagInject != 0
	e.mu.Lock()
	defer e.mu.Unlock()
	d := &e.dp
	if d.qp == nil {
		return fi.ENOTCONN
	}
	if n > d.txIOV {
		return errors.Wrapf(fi.EINVAL, "verbs: %d iovecs, the limit is %d", n, d.txIOV)
	}
	inline := a.op != opRead && total <= d.caps.inline
	if inject && !inline {
		return errors.Wrapf(fi.EINVAL, "verbs: inject of %d bytes, the inject size is %d", total, d.caps.inline)
	}
	k := 0
	for i := range n {
		b, desc := a.seg(i)
		if len(b) == 0 {
			continue
		}
		addr, lkey := bufAddr(b), uint32(0)
		if !inline {
			r, _ := desc.(*memRegion)
			var ok bool
			if lkey, ok = r.lkeyFor(addr, len(b)); !ok {
				return errors.Wrap(fi.EINVAL, "verbs: buffer without the desc of a region that holds it (FI_MR_LOCAL)")
			}
		}
		setSGE(&d.ssge[k], addr, uint32(len(b)), lkey)
		k++
	}
	// fi_inject and fi_injectdata give no completion; FI_INJECT on
	// fi_sendmsg only frees the buffer at once.
	report := !a.inject && (!e.TxSel || a.flags&fi.FlagCompletion != 0)
	wrID, err := d.tx.put(txOp{ctx: a.ctx, flags: a.cqFlags, report: report, cnt: a.cnt})
	if err != nil {
		return fi.EAGAIN
	}
	fl := 0
	if inline {
		fl = sendInline
	}
	if errno := postSendSGL(d.qp, a.op, fl, wrID, d.ssge[:k], uint32(a.data), a.raddr, uint32(a.rkey)); errno != 0 {
		d.tx.take(wrID)
		return postErr("ibv_post_send", errno)
	}
	return nil
}

// postRx posts a receive (ibv_post_recv).
func (e *endpoint) postRx(a *txArgs) error {
	if e.cs.State() == ep.CMClosed {
		return fi.EBADF
	}
	if a.flags&^(fi.FlagCompletion|fi.FlagMore) != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: recv flags %v", a.flags&^(fi.FlagCompletion|fi.FlagMore))
	}
	n := a.nseg()
	e.mu.Lock()
	defer e.mu.Unlock()
	d := &e.dp
	if d.qp == nil {
		return errors.Wrap(fi.EOPBADSTATE, "verbs: recv: endpoint has no queue pair yet (Enable it)")
	}
	if n > d.rxIOV {
		return errors.Wrapf(fi.EINVAL, "verbs: recv: %d iovecs, the limit is %d", n, d.rxIOV)
	}
	k := 0
	for i := range n {
		b, desc := a.seg(i)
		if len(b) == 0 {
			continue
		}
		addr := bufAddr(b)
		r, _ := desc.(*memRegion)
		lkey, ok := r.lkeyFor(addr, len(b))
		if !ok {
			return errors.Wrap(fi.EINVAL, "verbs: recv: buffer without the desc of a region that holds it (FI_MR_LOCAL)")
		}
		setSGE(&d.rsge[k], addr, uint32(len(b)), lkey)
		k++
	}
	report := !e.RxSel || a.flags&fi.FlagCompletion != 0
	wrID, err := d.rx.put(rxOp{ctx: a.ctx, report: report})
	if err != nil {
		return fi.EAGAIN
	}
	if errno := postRecvSGL(d.qp, wrID|rxBit, d.rsge[:k]); errno != 0 {
		d.rx.take(wrID)
		return postErr("ibv_post_recv", errno)
	}
	return nil
}

const (
	sendCQFlags  = fi.FlagSend | fi.FlagMsg
	writeCQFlags = fi.FlagRMA | fi.FlagWrite
	readCQFlags  = fi.FlagRMA | fi.FlagRead
)

func sendArgs(buf []byte, desc any, ctx any, flags fi.Flags) txArgs {
	return txArgs{op: opSend, cqFlags: sendCQFlags, cnt: kit.CntrSend, one: buf, oneDesc: desc, ctx: ctx, flags: flags, rlen: -1}
}

// PostTx posts a transmit operation of the adapter (kit.Poster): every
// form of fi_send (IBV_WR_SEND), fi_write (IBV_WR_RDMA_WRITE) and
// fi_read (IBV_WR_RDMA_READ). fi.FlagRemoteCQData sends the data as
// immediate data (IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM,
// which consumes a receive at the target: FI_RX_CQ_DATA); fi.FlagInject
// and the inject calls send inline (IBV_SEND_INLINE: the buffer is the
// caller's again at once); fi.FlagCompletion reports under selective
// completion. RMA takes one remote segment.
func (e *endpoint) PostTx(op kit.Op) error {
	var a txArgs
	data := op.Flags&fi.FlagRemoteCQData != 0
	switch op.Kind {
	case kit.OpSend:
		a = sendArgs(op.Buf, op.Desc, op.Context, op.Flags)
		if data {
			a.op = opSendWithImm
		}
	case kit.OpWrite, kit.OpRead:
		kind := opRead
		if op.Kind == kit.OpWrite {
			kind = opWrite
			if data {
				kind = opWriteWithImm
			}
		}
		a = rmaArgs(kind, op.Buf, op.Desc, op.RAddr, op.Key, op.Context, op.Flags)
		if op.Vector() {
			a.rlen = kit.IOVLen(op.IOV)
		}
		if op.RMAIOV != nil {
			if len(op.RMAIOV) != 1 {
				return errors.Wrapf(fi.EINVAL, "verbs: rma: %d remote segments (the limit is 1)", len(op.RMAIOV))
			}
			a.rlen = op.RMAIOV[0].Len
		}
	default:
		return fi.ENOSYS
	}
	if op.Vector() {
		a.iov, a.desc, a.vec = op.IOV, op.Descs, true
	}
	a.data, a.inject = op.Data, op.Inject
	if op.Inject {
		a.flags &^= fi.FlagInject
	}
	return e.postTx(&a)
}

// PostRx posts a receive of the adapter (kit.Poster): fi_recv, fi_recvv
// and fi_recvmsg (ibv_post_recv), whose flags may be fi.FlagCompletion
// (reports under selective completion) and fi.FlagMore.
func (e *endpoint) PostRx(op kit.Op) error {
	if op.Kind != kit.OpRecv {
		return fi.ENOSYS
	}
	a := txArgs{one: op.Buf, oneDesc: op.Desc, ctx: op.Context, flags: op.Flags}
	if op.Vector() {
		a.iov, a.desc, a.vec = op.IOV, op.Descs, true
	}
	return e.postRx(&a)
}

func rmaArgs(op sendOp, buf []byte, desc any, addr, key uint64, ctx any, flags fi.Flags) txArgs {
	a := txArgs{op: op, cqFlags: writeCQFlags, cnt: kit.CntrWrite, one: buf, oneDesc: desc, ctx: ctx, flags: flags,
		raddr: addr, rkey: key, rlen: len(buf)}
	if op == opRead {
		a.cqFlags, a.cnt = readCQFlags, kit.CntrRead
	}
	return a
}
