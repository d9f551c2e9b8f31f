//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Data transfer calls (fi_msg(3), fi_rma(3)). They never block and, on
// success, never allocate: an operation is queued in a fixed-size entry
// and written to the socket at once as far as it takes it; the rest goes
// out from progress. A full queue gives bare fi.EAGAIN; reading the CQ
// makes room. Sends and RMA need a connected endpoint (fi.ENOTCONN
// before eq.Connected, fi.ESHUTDOWN after the connection ended); receives
// may be posted from the endpoint's opening on.

// txArgs are one transmit call's arguments, built on the caller's stack.
type txArgs struct {
	iov   [iovLimit][]byte
	niov  int
	ctx   any
	data  uint64
	flags fi.Flags
	// inject is fi_inject's no-completion contract.
	inject bool
	rma    [iovLimit]rmaIOV
	nrma   int
	// tagged sends op 0 with the tag flag and tag (rxm's raw tagged
	// form, §3.4): tagged sends of endpoints opened with FI_TAGGED.
	tagged bool
	tag    uint64
}

// txOpFlags are the flags a transmit call may carry.
const txOpFlags = fi.FlagCompletion | fi.FlagInject | fi.FlagDeliveryComplete | fi.FlagTransmitComplete |
	fi.FlagInjectComplete | fi.FlagRemoteCQData | fi.FlagMore | fi.FlagFence | fi.FlagCommitComplete

// ackFlags are the completion levels a send waits for the peer's ACK
// for (the tcp flag 0x4, §2.5.1).
const ackFlags = fi.FlagDeliveryComplete | fi.FlagCommitComplete | fi.FlagTransmitComplete

// injectFlags are the default flags of fi_inject and fi_injectdata: no
// completion, so neither FI_COMPLETION nor a completion level (C's tcp
// does not ask for an ACK on injects either).
func injectFlags(def fi.Flags) fi.Flags { return def &^ (fi.FlagCompletion | ackFlags) }

// post queues a transmit operation of kind (txSend, txWrite, txRead).
func (e *endpoint) post(a *txArgs, kind txKind) error {
	if err := e.cs.CanSend(); err != nil {
		return err
	}
	if a.flags&^txOpFlags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "tcp: flags %v", a.flags&^txOpFlags)
	}
	n := kit.IOVLen(a.iov[:a.niov])
	// FI_INJECT applies to what carries a payload (fi_rma(3): not to
	// reads), also when it comes from the default op flags.
	inject := (a.inject || a.flags&fi.FlagInject != 0) && kind != txRead
	if inject && n > injectSize {
		return errors.Wrapf(fi.EINVAL, "tcp: inject of %d bytes, the inject size is %d", n, injectSize)
	}
	h := dataHeader{op: opMsg}
	var cqFlags fi.Flags
	cnt := int8(kit.CntrSend)
	switch kind {
	case txSend:
		cqFlags = fi.FlagSend | fi.FlagMsg
	case txWrite:
		h.op = opWrite
		cqFlags, cnt = fi.FlagRMA|fi.FlagWrite, kit.CntrWrite
	case txRead:
		h.op = opReadReq
		cqFlags, cnt = fi.FlagRMA|fi.FlagRead, kit.CntrRead
	}
	if kind != txSend {
		if a.nrma == 0 || a.nrma > iovLimit {
			return errors.Wrapf(fi.EINVAL, "tcp: %d rma iovecs (1 to %d)", a.nrma, iovLimit)
		}
		room := uint64(0)
		for _, v := range a.rma[:a.nrma] {
			room += v.len
		}
		if room != uint64(n) {
			return errors.Wrapf(fi.EINVAL, "tcp: rma of %d local bytes to %d remote bytes", n, room)
		}
		h.rmaIOVCnt = uint8(a.nrma)
		h.rmaIOV = a.rma
	}
	if a.flags&fi.FlagRemoteCQData != 0 && kind != txRead {
		h.flags |= flagCQData
		h.cqData = a.data
	}
	if a.tagged && kind == txSend {
		h.flags |= flagTagged
		h.tag = a.tag
		cqFlags = fi.FlagSend | fi.FlagTagged
	}
	// Writes always ask for the target's ACK, so that a write the target
	// refuses (bad key, range or rights: it drops the connection, §2.5.3)
	// completes with an error here instead of success.
	// FI_TRANSMIT_COMPLETE asks for the same, as in the C provider: a
	// message is out of the sender's hands only once the peer has it.
	ack := kind == txWrite || (kind == txSend && a.flags&ackFlags != 0)
	if ack {
		h.flags |= flagDeliveryComplete
	}
	if kind == txRead {
		h.setPayloadLen(0)
	} else {
		h.setPayloadLen(uint64(n))
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	d := &e.dp
	if d.fd < 0 {
		if err := e.cs.CanSend(); err != nil {
			return err
		}
		return fi.ESHUTDOWN
	}
	if d.appOps >= d.txSize || d.nfree == 0 {
		return fi.EAGAIN
	}
	i := d.take()
	t := &d.pool[i]
	t.kind, t.ack, t.cnt, t.ctx, t.cqFlags = kind, ack, cnt, a.ctx, cqFlags
	t.inject = a.inject
	t.report = !a.inject && (!e.TxSel || a.flags&fi.FlagCompletion != 0)
	t.hdrLen = d.codec.putDataHeader(t.hdr[:], &h)
	t.total = int(h.size)
	t.rlen = 0
	if kind == txRead {
		t.rlen = n
	}
	if inject {
		for _, b := range a.iov[:a.niov] {
			t.hdrLen += copy(t.hdr[t.hdrLen:], b)
		}
		t.niov = 0
	} else {
		t.iov, t.niov = a.iov, a.niov
	}
	d.appOps++
	if kind == txRead {
		if d.reads++; d.reads == 1 {
			d.readsStarted(e)
		}
	}
	d.enqueue(e, i)
	return nil
}

// PostTx queues a transmit operation of the adapter (kit.Poster): every
// form of fi_send, fi_write and fi_read, and of fi_tsend on an endpoint
// whose Info has FI_TAGGED. The message forms take fi.FlagRemoteCQData
// (sends msg.Data), fi.FlagDeliveryComplete (completes once the peer has
// the message), fi.FlagInject (copies the payload, 128 bytes at most) and
// fi.FlagCompletion (reports under selective completion). A write
// completes once the peer has placed the data. Tagged sends go in rxm's
// raw tagged form (op 0 with the tag flag, docs/wire-tcp.md §3.4), which
// only a peer in dynamic receive mode (kit.DynRecv) takes: C's tcp
// provider sends them so for C's rxm (fi_tsend on its FI_EP_MSG
// endpoints).
func (e *endpoint) PostTx(op kit.Op) error {
	a := txArgs{ctx: op.Context, data: op.Data, flags: op.Flags, inject: op.Inject}
	n, err := op.CopyIOV(a.iov[:], "tcp")
	if err != nil {
		return err
	}
	a.niov = n
	kind := txSend
	switch op.Kind {
	case kit.OpSend:
		if op.Inject {
			a.flags = injectFlags(op.Flags) &^ fi.FlagInject
		}
	case kit.OpTSend:
		if e.info.Caps&fi.CapTagged == 0 {
			return errors.Wrap(fi.ENOSYS, "tcp: tsend: the endpoint was opened without FI_TAGGED")
		}
		a.tagged, a.tag = true, op.Tag
		if op.Inject {
			a.flags = injectFlags(op.Flags) &^ fi.FlagInject
		}
	case kit.OpWrite, kit.OpRead:
		kind = txWrite
		if op.Kind == kit.OpRead {
			kind = txRead
		}
		if op.Inject {
			a.flags &^= fi.FlagInject
		}
		if err := a.setRMA(&op); err != nil {
			return err
		}
	default:
		return fi.ENOSYS
	}
	return e.post(&a, kind)
}

// PostRx posts a receive of the adapter (kit.Poster): fi_recv, fi_recvv
// and fi_recvmsg, whose flags may be fi.FlagCompletion (reports under
// selective completion) and fi.FlagMore. There are no tagged receives
// (fi_trecv: fi.ENOSYS): tagged messages reach an FI_EP_MSG endpoint only
// in dynamic receive mode, through its handler.
func (e *endpoint) PostRx(op kit.Op) error {
	if op.Kind != kit.OpRecv {
		if op.Kind == kit.OpTRecv {
			return errors.Wrap(fi.ENOSYS, "tcp: trecv: FI_EP_MSG endpoints have no tagged receives; "+
				"tagged messages reach one only through a dynamic receive handler (kit.DynRecv)")
		}
		return fi.ENOSYS
	}
	if op.Vector() && op.Flags&^(fi.FlagCompletion|fi.FlagMore) != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "tcp: recvmsg: flags %v", op.Flags&^(fi.FlagCompletion|fi.FlagMore))
	}
	r := rxEntry{ctx: op.Context, report: !e.RxSel || op.Flags&fi.FlagCompletion != 0}
	n, err := op.CopyIOV(r.iov[:], "tcp")
	if err != nil {
		return err
	}
	r.niov = n
	r.size = kit.IOVLen(r.iov[:n])
	return e.postRecv(&r)
}

// postRecv queues r. A receive posted once the connection is over (as
// C's fi_pingpong does after its last message) is accepted, like the C
// provider does, and completes at once with an fi.ECANCELED error entry.
func (e *endpoint) postRecv(r *rxEntry) error {
	if e.cs.State() == ep.CMClosed {
		return fi.EBADF
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dp.dyn != nil {
		return errors.Wrap(fi.ENOSYS, "tcp: recv: the endpoint's messages go to its dynamic receive handler (kit.DynRecv)")
	}
	switch e.cs.State() {
	case ep.CMShutdownLocal, ep.CMShutdownRemote, ep.CMDisconnected, ep.CMRejected, ep.CMFailed:
		if e.dp.fd < 0 {
			e.dp.recvFailed(e, r, fi.ECANCELED)
			return nil
		}
	}
	return e.dp.postRecv(e, r)
}

// setRMA sets the remote segments of an RMA operation: the message
// forms' vector, else one segment of the local length.
func (a *txArgs) setRMA(op *kit.Op) error {
	if op.RMAIOV == nil {
		a.rma[0] = rmaIOV{addr: op.RAddr, len: uint64(kit.IOVLen(a.iov[:a.niov])), key: op.Key}
		a.nrma = 1
		return nil
	}
	if len(op.RMAIOV) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "tcp: rma: %d rma iovecs, the limit is %d", len(op.RMAIOV), iovLimit)
	}
	for i, v := range op.RMAIOV {
		if v.Len < 0 {
			return errors.Wrapf(fi.EINVAL, "tcp: rma: negative length %d", v.Len)
		}
		a.rma[i] = rmaIOV{addr: v.Addr, len: uint64(v.Len), key: v.Key}
	}
	a.nrma = len(op.RMAIOV)
	return nil
}
