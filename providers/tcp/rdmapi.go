//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// The calls of RDM endpoints. They never block. A send to a peer with no
// connection yet starts one and returns bare fi.EAGAIN, as do later sends
// until it is up: the connection opens on its own goroutines, so an
// application that retries while reading its CQ (fi_pingpong's loop)
// never stalls. A refused attempt is retried (the sends keep returning
// fi.EAGAIN) until FI_TCP_CONN_TIMEOUT has passed; when the attempts
// fail for good (refused all that time, timed out, unreachable) the next
// send returns that error once, and the one after starts over.

// Send sends buf to dest (fi_send).
func (r *rdmEndpoint) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	a := rdmArgs{niov: 1, dest: dest, ctx: ctx, flags: r.txFlags}
	a.iov[0] = buf
	return r.send(&a)
}

// SendV sends a vector of up to 4 buffers (fi_sendv).
func (r *rdmEndpoint) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	a := rdmArgs{dest: dest, ctx: ctx, flags: r.txFlags}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	return r.send(&a)
}

// SendMsg sends with flags (fi_sendmsg): fi.FlagRemoteCQData,
// fi.FlagInject, fi.FlagCompletion, fi.FlagDeliveryComplete.
func (r *rdmEndpoint) SendMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "tcp: sendmsg: nil message")
	}
	a := rdmArgs{dest: msg.Addr, ctx: msg.Context, data: msg.Data, flags: flags}
	if err := a.setIOV(msg.IOV); err != nil {
		return err
	}
	return r.send(&a)
}

// Inject sends buf, at most 64 bytes, with no completion (fi_inject).
func (r *rdmEndpoint) Inject(buf []byte, dest fi.Addr) error {
	a := rdmArgs{niov: 1, dest: dest, inject: true}
	a.iov[0] = buf
	return r.send(&a)
}

// SendData sends buf with remote CQ data (fi_senddata).
func (r *rdmEndpoint) SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error {
	a := rdmArgs{niov: 1, dest: dest, ctx: ctx, data: data, flags: r.txFlags | fi.FlagRemoteCQData}
	a.iov[0] = buf
	return r.send(&a)
}

// InjectData injects buf with remote CQ data (fi_injectdata).
func (r *rdmEndpoint) InjectData(buf []byte, data uint64, dest fi.Addr) error {
	a := rdmArgs{niov: 1, dest: dest, inject: true, data: data, flags: fi.FlagRemoteCQData}
	a.iov[0] = buf
	return r.send(&a)
}

// TSend sends a tagged message (fi_tsend).
func (r *rdmEndpoint) TSend(buf []byte, desc any, dest fi.Addr, tag uint64, ctx any) error {
	a := rdmArgs{niov: 1, dest: dest, ctx: ctx, tag: tag, tagged: true, flags: r.txFlags}
	a.iov[0] = buf
	return r.send(&a)
}

// TSendV sends a vectored tagged message (fi_tsendv).
func (r *rdmEndpoint) TSendV(iov [][]byte, desc []any, dest fi.Addr, tag uint64, ctx any) error {
	a := rdmArgs{dest: dest, ctx: ctx, tag: tag, tagged: true, flags: r.txFlags}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	return r.send(&a)
}

// TSendMsg sends a tagged message with flags (fi_tsendmsg).
func (r *rdmEndpoint) TSendMsg(msg *ep.TaggedMessage, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "tcp: tsendmsg: nil message")
	}
	a := rdmArgs{dest: msg.Addr, ctx: msg.Context, data: msg.Data, tag: msg.Tag, tagged: true, flags: flags}
	if err := a.setIOV(msg.IOV); err != nil {
		return err
	}
	return r.send(&a)
}

// TInject injects a tagged message (fi_tinject).
func (r *rdmEndpoint) TInject(buf []byte, dest fi.Addr, tag uint64) error {
	a := rdmArgs{niov: 1, dest: dest, tag: tag, tagged: true, inject: true}
	a.iov[0] = buf
	return r.send(&a)
}

// TSendData sends a tagged message with remote CQ data (fi_tsenddata).
func (r *rdmEndpoint) TSendData(buf []byte, desc any, data uint64, dest fi.Addr, tag uint64, ctx any) error {
	a := rdmArgs{niov: 1, dest: dest, ctx: ctx, tag: tag, tagged: true, data: data, flags: r.txFlags | fi.FlagRemoteCQData}
	a.iov[0] = buf
	return r.send(&a)
}

// TInjectData injects a tagged message with remote CQ data
// (fi_tinjectdata).
func (r *rdmEndpoint) TInjectData(buf []byte, data uint64, dest fi.Addr, tag uint64) error {
	a := rdmArgs{niov: 1, dest: dest, tag: tag, tagged: true, inject: true, data: data, flags: fi.FlagRemoteCQData}
	a.iov[0] = buf
	return r.send(&a)
}

// Recv posts a receive buffer (fi_recv); src other than fi.AddrUnspec
// matches only that sender when the endpoint has FI_DIRECTED_RECV.
func (r *rdmEndpoint) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	iov := [1][]byte{buf}
	return r.recv(iov[:], src, ctx, false, 0, 0, r.rxFlags)
}

// RecvV posts a vector of up to 4 buffers (fi_recvv).
func (r *rdmEndpoint) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	return r.recv(iov, src, ctx, false, 0, 0, r.rxFlags)
}

// RecvMsg posts a receive with flags (fi_recvmsg).
func (r *rdmEndpoint) RecvMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "tcp: recvmsg: nil message")
	}
	return r.recv(msg.IOV, msg.Addr, msg.Context, false, 0, 0, flags)
}

// TRecv posts a tagged receive for tag under the ignore mask (fi_trecv).
func (r *rdmEndpoint) TRecv(buf []byte, desc any, src fi.Addr, tag, ignore uint64, ctx any) error {
	iov := [1][]byte{buf}
	return r.recv(iov[:], src, ctx, true, tag, ignore, r.rxFlags)
}

// TRecvV posts a vectored tagged receive (fi_trecvv).
func (r *rdmEndpoint) TRecvV(iov [][]byte, desc []any, src fi.Addr, tag, ignore uint64, ctx any) error {
	return r.recv(iov, src, ctx, true, tag, ignore, r.rxFlags)
}

// TRecvMsg posts a tagged receive with flags (fi_trecvmsg).
func (r *rdmEndpoint) TRecvMsg(msg *ep.TaggedMessage, flags fi.Flags) error {
	if msg == nil {
		return errors.Wrap(fi.EINVAL, "tcp: trecvmsg: nil message")
	}
	return r.recv(msg.IOV, msg.Addr, msg.Context, true, msg.Tag, msg.Ignore, flags)
}

// Read reads len(buf) bytes at src's addr of its region key into buf
// (fi_read).
func (r *rdmEndpoint) Read(buf []byte, desc any, src fi.Addr, addr, key uint64, ctx any) error {
	a := rmaArgs(buf, addr, key, ctx, r.txFlags)
	return r.rma(&a, src, txRead)
}

// ReadV reads into a vector (fi_readv).
func (r *rdmEndpoint) ReadV(iov [][]byte, desc []any, src fi.Addr, addr, key uint64, ctx any) error {
	a := txArgs{ctx: ctx, flags: r.txFlags, nrma: 1}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	a.rma[0] = rmaIOV{addr: addr, len: uint64(a.length()), key: key}
	return r.rma(&a, src, txRead)
}

// ReadMsg reads with flags (fi_readmsg).
func (r *rdmEndpoint) ReadMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	a, err := rmaMsgArgs(msg, flags)
	if err != nil {
		return err
	}
	return r.rma(&a, msg.Addr, txRead)
}

// Write writes buf to dest's addr of its region key (fi_write); it
// completes once the target placed the data.
func (r *rdmEndpoint) Write(buf []byte, desc any, dest fi.Addr, addr, key uint64, ctx any) error {
	a := rmaArgs(buf, addr, key, ctx, r.txFlags)
	return r.rma(&a, dest, txWrite)
}

// WriteV writes a vector (fi_writev).
func (r *rdmEndpoint) WriteV(iov [][]byte, desc []any, dest fi.Addr, addr, key uint64, ctx any) error {
	a := txArgs{ctx: ctx, flags: r.txFlags, nrma: 1}
	if err := a.setIOV(iov); err != nil {
		return err
	}
	a.rma[0] = rmaIOV{addr: addr, len: uint64(a.length()), key: key}
	return r.rma(&a, dest, txWrite)
}

// WriteMsg writes with flags (fi_writemsg).
func (r *rdmEndpoint) WriteMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	a, err := rmaMsgArgs(msg, flags)
	if err != nil {
		return err
	}
	return r.rma(&a, msg.Addr, txWrite)
}

// InjectWrite writes buf, at most 128 bytes, with no completion
// (fi_inject_write).
func (r *rdmEndpoint) InjectWrite(buf []byte, dest fi.Addr, addr, key uint64) error {
	a := rmaArgs(buf, addr, key, nil, r.txFlags&^fi.FlagCompletion)
	a.inject = true
	return r.rma(&a, dest, txWrite)
}

// WriteData writes with remote CQ data (fi_writedata).
func (r *rdmEndpoint) WriteData(buf []byte, desc any, data uint64, dest fi.Addr, addr, key uint64, ctx any) error {
	a := rmaArgs(buf, addr, key, ctx, r.txFlags|fi.FlagRemoteCQData)
	a.data = data
	return r.rma(&a, dest, txWrite)
}

// InjectWriteData injects a write with remote CQ data
// (fi_inject_writedata).
func (r *rdmEndpoint) InjectWriteData(buf []byte, data uint64, dest fi.Addr, addr, key uint64) error {
	a := rmaArgs(buf, addr, key, nil, (r.txFlags&^fi.FlagCompletion)|fi.FlagRemoteCQData)
	a.inject, a.data = true, data
	return r.rma(&a, dest, txWrite)
}
