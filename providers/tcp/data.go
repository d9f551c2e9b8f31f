//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
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
	// form, §3.4); only RDM connections do.
	tagged bool
	tag    uint64
	// pre[:npre] goes out before the payload as part of it: the rxm
	// packet header (and rendezvous descriptor) of an RDM connection. An
	// array, not a slice, so that callers' stacks do not escape.
	pre  [rxmHeaderSize + rxmRndvDescSize]byte
	npre int
	// internal is an operation of the RDM layer (txEntry.internal);
	// locked says the caller holds the endpoint's mu.
	internal, locked bool
}

// setIOV copies a caller's vector; more than iovLimit entries is EINVAL.
func (a *txArgs) setIOV(iov [][]byte) error {
	if len(iov) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "tcp: %d iovecs, the limit is %d", len(iov), iovLimit)
	}
	a.niov = copy(a.iov[:], iov)
	return nil
}

func (a *txArgs) length() int {
	n := 0
	for _, b := range a.iov[:a.niov] {
		n += len(b)
	}
	return n
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
	// The RDM layer's own operations may answer data that arrived between
	// the connection's attach and its Connected state; the socket check
	// below covers them.
	if err := e.cs.CanSend(); err != nil && !a.internal {
		return err
	}
	if a.flags&^txOpFlags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "tcp: flags %v", a.flags&^txOpFlags)
	}
	n := a.length()
	// FI_INJECT applies to what carries a payload (fi_rma(3): not to
	// reads), also when it comes from the default op flags.
	inject := (a.inject || a.flags&fi.FlagInject != 0) && kind != txRead
	if inject && n > injectSize && !a.internal {
		return errors.Wrapf(fi.EINVAL, "tcp: inject of %d bytes, the inject size is %d", n, injectSize)
	}
	h := dataHeader{op: opMsg}
	var cqFlags fi.Flags
	cnt := int8(cntSend)
	switch kind {
	case txSend:
		cqFlags = fi.FlagSend | fi.FlagMsg
	case txWrite:
		h.op = opWrite
		cqFlags, cnt = fi.FlagRMA|fi.FlagWrite, cntWrite
	case txRead:
		h.op = opReadReq
		cqFlags, cnt = fi.FlagRMA|fi.FlagRead, cntRead
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
		h.setPayloadLen(uint64(a.npre + n))
	}

	if !a.locked {
		e.mu.Lock()
		defer e.mu.Unlock()
	}
	d := &e.dp
	if d.fd < 0 {
		if err := e.cs.CanSend(); err != nil {
			return err
		}
		return fi.ESHUTDOWN
	}
	if (d.appOps >= d.txSize && !a.internal) || d.nfree == 0 {
		return fi.EAGAIN
	}
	i := d.take()
	t := &d.pool[i]
	t.kind, t.ack, t.cnt, t.ctx, t.cqFlags = kind, ack, cnt, a.ctx, cqFlags
	t.inject = a.inject
	t.report = !a.inject && (!e.txSel || a.flags&fi.FlagCompletion != 0)
	t.internal = a.internal
	if a.internal {
		t.report, t.cnt = false, -1
	}
	t.hdrLen = d.codec.putDataHeader(t.hdr[:], &h)
	t.hdrLen += copy(t.hdr[t.hdrLen:], a.pre[:a.npre])
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

// Send sends buf (fi_send), with the endpoint's default transmit flags.
func (e *endpoint) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	a := txArgs{niov: 1, ctx: ctx, flags: e.txFlags}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// SendV sends a vector of up to 4 buffers (fi_sendv).
func (e *endpoint) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	a := txArgs{ctx: ctx, flags: e.txFlags}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	return e.post(&a, txSend)
}

// SendMsg sends with flags (fi_sendmsg): fi.FlagRemoteCQData sends
// msg.Data, fi.FlagDeliveryComplete completes once the peer has the
// message, fi.FlagInject copies the payload (128 bytes at most),
// fi.FlagCompletion reports under selective completion.
func (e *endpoint) SendMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "tcp: sendmsg: nil message")
	}
	a := txArgs{ctx: msg.Context, data: msg.Data, flags: flags}
	if err := a.setIOV(msg.IOV); err != nil {
		return err
	}
	return e.post(&a, txSend)
}

// Inject sends buf, at most 128 bytes, with no completion (fi_inject).
func (e *endpoint) Inject(buf []byte, dest fi.Addr) error {
	a := txArgs{niov: 1, inject: true, flags: injectFlags(e.txFlags)}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// SendData sends buf with remote CQ data (fi_senddata).
func (e *endpoint) SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error {
	a := txArgs{niov: 1, ctx: ctx, data: data, flags: e.txFlags | fi.FlagRemoteCQData}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// InjectData injects buf with remote CQ data (fi_injectdata).
func (e *endpoint) InjectData(buf []byte, data uint64, dest fi.Addr) error {
	a := txArgs{niov: 1, inject: true, data: data, flags: injectFlags(e.txFlags) | fi.FlagRemoteCQData}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// Recv posts a receive buffer (fi_recv).
func (e *endpoint) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	r := rxEntry{niov: 1, size: len(buf), ctx: ctx, report: !e.rxSel || e.rxFlags&fi.FlagCompletion != 0}
	r.iov[0] = buf
	return e.postRecv(&r)
}

// RecvV posts a vector of up to 4 buffers (fi_recvv).
func (e *endpoint) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	return e.recvVec(iov, ctx, e.rxFlags)
}

// RecvMsg posts a receive with flags (fi_recvmsg); fi.FlagCompletion
// reports under selective completion.
func (e *endpoint) RecvMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "tcp: recvmsg: nil message")
	}
	if flags&^(fi.FlagCompletion|fi.FlagMore) != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "tcp: recvmsg: flags %v", flags&^(fi.FlagCompletion|fi.FlagMore))
	}
	return e.recvVec(msg.IOV, msg.Context, flags)
}

func (e *endpoint) recvVec(iov [][]byte, ctx any, flags fi.Flags) error {
	if len(iov) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "tcp: recv: %d iovecs, the limit is %d", len(iov), iovLimit)
	}
	r := rxEntry{ctx: ctx, report: !e.rxSel || flags&fi.FlagCompletion != 0}
	r.niov = copy(r.iov[:], iov)
	for _, b := range iov {
		r.size += len(b)
	}
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
	switch e.cs.State() {
	case ep.CMShutdownLocal, ep.CMShutdownRemote, ep.CMDisconnected, ep.CMRejected, ep.CMFailed:
		if e.dp.fd < 0 {
			e.dp.recvFailed(e, r, fi.ECANCELED)
			return nil
		}
	}
	return e.dp.postRecv(e, r)
}

// rmaArgs builds the arguments of a one-segment RMA call.
func rmaArgs(buf []byte, addr, key uint64, ctx any, flags fi.Flags) txArgs {
	a := txArgs{niov: 1, ctx: ctx, flags: flags, nrma: 1}
	a.iov[0] = buf
	a.rma[0] = rmaIOV{addr: addr, len: uint64(len(buf)), key: key}
	return a
}

// Read reads len(buf) bytes at the peer's addr of its region key into buf
// (fi_read).
func (e *endpoint) Read(buf []byte, desc any, src fi.Addr, addr, key uint64, ctx any) error {
	a := rmaArgs(buf, addr, key, ctx, e.txFlags)
	return e.post(&a, txRead)
}

// ReadV reads into a vector (fi_readv).
func (e *endpoint) ReadV(iov [][]byte, desc []any, src fi.Addr, addr, key uint64, ctx any) error {
	a := txArgs{ctx: ctx, flags: e.txFlags, nrma: 1}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	a.rma[0] = rmaIOV{addr: addr, len: uint64(a.length()), key: key}
	return e.post(&a, txRead)
}

// ReadMsg reads with flags (fi_readmsg).
func (e *endpoint) ReadMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	a, err := rmaMsgArgs(msg, flags)
	if err != nil {
		return err
	}
	return e.post(&a, txRead)
}

// Write writes buf to the peer's addr of its region key (fi_write). It
// completes once the peer has placed the data.
func (e *endpoint) Write(buf []byte, desc any, dest fi.Addr, addr, key uint64, ctx any) error {
	a := rmaArgs(buf, addr, key, ctx, e.txFlags)
	return e.post(&a, txWrite)
}

// WriteV writes a vector (fi_writev).
func (e *endpoint) WriteV(iov [][]byte, desc []any, dest fi.Addr, addr, key uint64, ctx any) error {
	a := txArgs{ctx: ctx, flags: e.txFlags, nrma: 1}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	a.rma[0] = rmaIOV{addr: addr, len: uint64(a.length()), key: key}
	return e.post(&a, txWrite)
}

// WriteMsg writes with flags (fi_writemsg); fi.FlagRemoteCQData gives the
// target a completion with msg.Data.
func (e *endpoint) WriteMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	a, err := rmaMsgArgs(msg, flags)
	if err != nil {
		return err
	}
	return e.post(&a, txWrite)
}

// InjectWrite writes buf, at most 128 bytes, with no completion
// (fi_inject_write).
func (e *endpoint) InjectWrite(buf []byte, dest fi.Addr, addr, key uint64) error {
	a := rmaArgs(buf, addr, key, nil, e.txFlags&^fi.FlagCompletion)
	a.inject = true
	return e.post(&a, txWrite)
}

// WriteData writes with remote CQ data (fi_writedata).
func (e *endpoint) WriteData(buf []byte, desc any, data uint64, dest fi.Addr, addr, key uint64, ctx any) error {
	a := rmaArgs(buf, addr, key, ctx, e.txFlags|fi.FlagRemoteCQData)
	a.data = data
	return e.post(&a, txWrite)
}

// InjectWriteData injects a write with remote CQ data
// (fi_inject_writedata).
func (e *endpoint) InjectWriteData(buf []byte, data uint64, dest fi.Addr, addr, key uint64) error {
	a := rmaArgs(buf, addr, key, nil, (e.txFlags&^fi.FlagCompletion)|fi.FlagRemoteCQData)
	a.inject, a.data = true, data
	return e.post(&a, txWrite)
}

func rmaMsgArgs(msg *ep.RMAMessage, flags fi.Flags) (txArgs, error) {
	if msg == nil {
		return txArgs{}, errors.Wrap(fi.EINVAL, "tcp: rma: nil message")
	}
	a := txArgs{ctx: msg.Context, data: msg.Data, flags: flags}
	if err := a.setIOV(msg.IOV); err != nil {
		return a, err
	}
	if len(msg.RMAIOV) > iovLimit {
		return a, errors.Wrapf(fi.EINVAL, "tcp: rma: %d rma iovecs, the limit is %d", len(msg.RMAIOV), iovLimit)
	}
	for i, v := range msg.RMAIOV {
		if v.Len < 0 {
			return a, errors.Wrapf(fi.EINVAL, "tcp: rma: negative length %d", v.Len)
		}
		a.rma[i] = rmaIOV{addr: v.Addr, len: uint64(v.Len), key: v.Key}
	}
	a.nrma = len(msg.RMAIOV)
	return a, nil
}
