//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
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

func (a *txArgs) setIOV(iov [][]byte) error {
	if len(iov) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "shm: %d iovecs, the limit is %d", len(iov), iovLimit)
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

// post queues a transmit operation.
func (e *endpoint) post(a *txArgs, kind txKind) error {
	if !e.enabled.Load() {
		if e.closed.Load() {
			return fi.EBADF
		}
		return fi.EOPBADSTATE
	}
	size := a.length()
	inject := a.inject || a.flags&fi.FlagInject != 0
	if inject && size > injectSize {
		return errors.Wrapf(fi.EINVAL, "shm: inject of %d bytes, the inject size is %d", size, injectSize)
	}
	var cqFlags fi.Flags
	cnt := cntSend
	switch kind {
	case txSend:
		cqFlags = fi.FlagSend | fi.FlagMsg
	case txTSend:
		cqFlags = fi.FlagSend | fi.FlagTagged
	case txWrite:
		cqFlags, cnt = fi.FlagRMA|fi.FlagWrite, cntWrite
	case txRead:
		cqFlags, cnt = fi.FlagRMA|fi.FlagRead, cntRead
	}
	report := !a.inject && (!e.txSel || a.flags&fi.FlagCompletion != 0)
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
		} else if c := e.cntr[cnt]; c != nil {
			_ = c.Add(1)
		}
		return nil
	}
	if len(d.txFree) == 0 || len(p.out) == cap(p.out) {
		return fi.EAGAIN
	}
	i := d.txFree[len(d.txFree)-1]
	d.txFree = d.txFree[:len(d.txFree)-1]
	t := &d.tx[i]
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

// Send sends buf to dest (fi_send).
func (e *endpoint) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	a := txArgs{niov: 1, dest: dest, ctx: ctx, flags: e.txFlags}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// SendV sends a vector of up to 4 buffers (fi_sendv).
func (e *endpoint) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	a := txArgs{dest: dest, ctx: ctx, flags: e.txFlags}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	return e.post(&a, txSend)
}

// SendMsg sends with flags (fi_sendmsg): fi.FlagRemoteCQData,
// fi.FlagInject, fi.FlagCompletion, fi.FlagDeliveryComplete (completes
// once the message is in the target's receive buffer);
// fi.FlagTransmitComplete and fi.FlagInjectComplete change nothing (a
// message in the target's ring no longer depends on the sender), as in
// C's shm.
func (e *endpoint) SendMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "shm: sendmsg: nil message")
	}
	a := txArgs{dest: msg.Addr, ctx: msg.Context, data: msg.Data, flags: flags}
	if err := a.setIOV(msg.IOV); err != nil {
		return err
	}
	return e.post(&a, txSend)
}

// Inject sends buf, at most the inject size, with no completion
// (fi_inject).
func (e *endpoint) Inject(buf []byte, dest fi.Addr) error {
	a := txArgs{niov: 1, dest: dest, inject: true}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// SendData sends buf with remote CQ data (fi_senddata).
func (e *endpoint) SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error {
	a := txArgs{niov: 1, dest: dest, ctx: ctx, data: data, flags: e.txFlags | fi.FlagRemoteCQData}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// InjectData injects buf with remote CQ data (fi_injectdata).
func (e *endpoint) InjectData(buf []byte, data uint64, dest fi.Addr) error {
	a := txArgs{niov: 1, dest: dest, inject: true, data: data, flags: fi.FlagRemoteCQData}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// TSend sends a tagged message (fi_tsend).
func (e *endpoint) TSend(buf []byte, desc any, dest fi.Addr, tag uint64, ctx any) error {
	a := txArgs{niov: 1, dest: dest, ctx: ctx, tag: tag, flags: e.txFlags}
	a.iov[0] = buf
	return e.post(&a, txTSend)
}

// TSendV sends a vectored tagged message (fi_tsendv).
func (e *endpoint) TSendV(iov [][]byte, desc []any, dest fi.Addr, tag uint64, ctx any) error {
	a := txArgs{dest: dest, ctx: ctx, tag: tag, flags: e.txFlags}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	return e.post(&a, txTSend)
}

// TSendMsg sends a tagged message with flags (fi_tsendmsg).
func (e *endpoint) TSendMsg(msg *ep.TaggedMessage, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "shm: tsendmsg: nil message")
	}
	a := txArgs{dest: msg.Addr, ctx: msg.Context, data: msg.Data, tag: msg.Tag, flags: flags}
	if err := a.setIOV(msg.IOV); err != nil {
		return err
	}
	return e.post(&a, txTSend)
}

// TInject injects a tagged message (fi_tinject).
func (e *endpoint) TInject(buf []byte, dest fi.Addr, tag uint64) error {
	a := txArgs{niov: 1, dest: dest, tag: tag, inject: true}
	a.iov[0] = buf
	return e.post(&a, txTSend)
}

// TSendData sends a tagged message with remote CQ data (fi_tsenddata).
func (e *endpoint) TSendData(buf []byte, desc any, data uint64, dest fi.Addr, tag uint64, ctx any) error {
	a := txArgs{niov: 1, dest: dest, ctx: ctx, tag: tag, data: data, flags: e.txFlags | fi.FlagRemoteCQData}
	a.iov[0] = buf
	return e.post(&a, txTSend)
}

// TInjectData injects a tagged message with remote CQ data
// (fi_tinjectdata).
func (e *endpoint) TInjectData(buf []byte, data uint64, dest fi.Addr, tag uint64) error {
	a := txArgs{niov: 1, dest: dest, tag: tag, inject: true, data: data, flags: fi.FlagRemoteCQData}
	a.iov[0] = buf
	return e.post(&a, txTSend)
}

// recv posts a receive.
func (e *endpoint) recv(iov [][]byte, src fi.Addr, ctx any, tagged bool, tag, ignore uint64, flags fi.Flags) error {
	if len(iov) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "shm: recv: %d iovecs, the limit is %d", len(iov), iovLimit)
	}
	if !e.enabled.Load() {
		if e.closed.Load() {
			return fi.EBADF
		}
		return fi.EOPBADSTATE
	}
	r := rxEntry{ctx: ctx, src: src, tagged: tagged, tag: tag, ignore: ignore,
		report: !e.rxSel || flags&fi.FlagCompletion != 0}
	r.niov = copy(r.iov[:], iov)
	for _, b := range iov {
		r.size += len(b)
	}
	if e.info.Caps&fi.CapDirectedRecv == 0 {
		r.src = fi.AddrUnspec
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return fi.EBADF
	}
	err := e.dp.postRecv(e, &r)
	e.setBusy(e.dp.pending())
	return err
}

// Recv posts a receive buffer (fi_recv); src other than fi.AddrUnspec
// matches only that sender (FI_DIRECTED_RECV).
func (e *endpoint) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	iov := [1][]byte{buf}
	return e.recv(iov[:], src, ctx, false, 0, 0, e.rxFlags)
}

// RecvV posts a vector of up to 4 buffers (fi_recvv).
func (e *endpoint) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	return e.recv(iov, src, ctx, false, 0, 0, e.rxFlags)
}

// RecvMsg posts a receive with flags (fi_recvmsg).
func (e *endpoint) RecvMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "shm: recvmsg: nil message")
	}
	return e.recv(msg.IOV, msg.Addr, msg.Context, false, 0, 0, flags)
}

// TRecv posts a tagged receive for tag under the ignore mask (fi_trecv).
func (e *endpoint) TRecv(buf []byte, desc any, src fi.Addr, tag, ignore uint64, ctx any) error {
	iov := [1][]byte{buf}
	return e.recv(iov[:], src, ctx, true, tag, ignore, e.rxFlags)
}

// TRecvV posts a vectored tagged receive (fi_trecvv).
func (e *endpoint) TRecvV(iov [][]byte, desc []any, src fi.Addr, tag, ignore uint64, ctx any) error {
	return e.recv(iov, src, ctx, true, tag, ignore, e.rxFlags)
}

// TRecvMsg posts a tagged receive with flags (fi_trecvmsg).
func (e *endpoint) TRecvMsg(msg *ep.TaggedMessage, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "shm: trecvmsg: nil message")
	}
	return e.recv(msg.IOV, msg.Addr, msg.Context, true, msg.Tag, msg.Ignore, flags)
}

// rma builds and posts a one-segment RMA operation.
func (e *endpoint) rma(iov [][]byte, peer fi.Addr, addr, key uint64, ctx any, flags fi.Flags, data uint64, kind txKind, inject bool) error {
	a := txArgs{dest: peer, ctx: ctx, flags: flags, data: data, key: key, addr: addr, inject: inject}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	return e.post(&a, kind)
}

// Read reads len(buf) bytes at offset addr of the peer's region key
// (fi_read).
func (e *endpoint) Read(buf []byte, desc any, src fi.Addr, addr, key uint64, ctx any) error {
	iov := [1][]byte{buf}
	return e.rma(iov[:], src, addr, key, ctx, e.txFlags, 0, txRead, false)
}

// ReadV reads into a vector (fi_readv).
func (e *endpoint) ReadV(iov [][]byte, desc []any, src fi.Addr, addr, key uint64, ctx any) error {
	return e.rma(iov, src, addr, key, ctx, e.txFlags, 0, txRead, false)
}

// ReadMsg reads with flags (fi_readmsg); one remote segment.
func (e *endpoint) ReadMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	v, err := oneRMA(msg)
	if err != nil {
		return err
	}
	return e.rma(msg.IOV, msg.Addr, v.Addr, v.Key, msg.Context, flags, 0, txRead, false)
}

// Write writes buf at offset addr of the peer's region key (fi_write); it
// completes once the target placed the data.
func (e *endpoint) Write(buf []byte, desc any, dest fi.Addr, addr, key uint64, ctx any) error {
	iov := [1][]byte{buf}
	return e.rma(iov[:], dest, addr, key, ctx, e.txFlags, 0, txWrite, false)
}

// WriteV writes a vector (fi_writev).
func (e *endpoint) WriteV(iov [][]byte, desc []any, dest fi.Addr, addr, key uint64, ctx any) error {
	return e.rma(iov, dest, addr, key, ctx, e.txFlags, 0, txWrite, false)
}

// WriteMsg writes with flags (fi_writemsg): fi.FlagRemoteCQData gives the
// target a completion with msg.Data.
func (e *endpoint) WriteMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	v, err := oneRMA(msg)
	if err != nil {
		return err
	}
	return e.rma(msg.IOV, msg.Addr, v.Addr, v.Key, msg.Context, flags, msg.Data, txWrite, false)
}

// InjectWrite writes buf with no completion (fi_inject_write).
func (e *endpoint) InjectWrite(buf []byte, dest fi.Addr, addr, key uint64) error {
	iov := [1][]byte{buf}
	return e.rma(iov[:], dest, addr, key, nil, 0, 0, txWrite, true)
}

// WriteData writes with remote CQ data (fi_writedata).
func (e *endpoint) WriteData(buf []byte, desc any, data uint64, dest fi.Addr, addr, key uint64, ctx any) error {
	iov := [1][]byte{buf}
	return e.rma(iov[:], dest, addr, key, ctx, e.txFlags|fi.FlagRemoteCQData, data, txWrite, false)
}

// InjectWriteData injects a write with remote CQ data
// (fi_inject_writedata).
func (e *endpoint) InjectWriteData(buf []byte, data uint64, dest fi.Addr, addr, key uint64) error {
	iov := [1][]byte{buf}
	return e.rma(iov[:], dest, addr, key, nil, fi.FlagRemoteCQData, data, txWrite, true)
}

// oneRMA checks an RMA message's single remote segment against its local
// length.
func oneRMA(msg *ep.RMAMessage) (ep.RMAIOV, error) {
	if msg == nil {
		return ep.RMAIOV{}, errors.Wrap(fi.EINVAL, "shm: rma: nil message")
	}
	if len(msg.RMAIOV) != rmaIOVLimit {
		return ep.RMAIOV{}, errors.Wrapf(fi.EINVAL, "shm: rma: %d remote segments, the provider takes %d", len(msg.RMAIOV), rmaIOVLimit)
	}
	n := 0
	for _, b := range msg.IOV {
		n += len(b)
	}
	if msg.RMAIOV[0].Len != n {
		return ep.RMAIOV{}, errors.Wrapf(fi.EINVAL, "shm: rma: %d local bytes for a remote segment of %d", n, msg.RMAIOV[0].Len)
	}
	return msg.RMAIOV[0], nil
}
