//go:build linux

package udp

import (
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Data transfer calls (fi_msg(3)). A send is one datagram, handed to the
// socket at once: it completes when the kernel has taken it (there is no
// reliability: a lost datagram is not reported), and a socket buffer that
// is full gives bare fi.EAGAIN. Payloads go out as they are, with no
// header, so C and Go peers interoperate. Messages above max_msg_size
// (1472 bytes) give fi.EMSGSIZE. The calls never block and, on success,
// never allocate; they need an enabled endpoint (fi.EOPBADSTATE before,
// fi.EBADF after Close). Errors are bare fi.Errno values.

// txOpFlags are the flags a send may carry.
const txOpFlags = fi.FlagCompletion | fi.FlagInject | fi.FlagInjectComplete | fi.FlagTransmitComplete |
	fi.FlagDeliveryComplete | fi.FlagMulticast | fi.FlagMore

// rxOpFlags are the flags a receive may carry.
const rxOpFlags = fi.FlagCompletion | fi.FlagMore

// ready reports why the endpoint cannot transfer data, nil when it can.
func (e *endpoint) ready() error {
	switch {
	case e.ref.Closed():
		return fi.EBADF
	case !e.enabled.Load():
		return fi.EOPBADSTATE
	}
	return nil
}

// send sends iov as one datagram to dest: an AV address, or with
// fi.FlagMulticast a joined group's Addr.
func (e *endpoint) send(iov [][]byte, dest fi.Addr, ctx any, flags fi.Flags, inject bool) error {
	if err := e.ready(); err != nil {
		return err
	}
	if flags&^txOpFlags != 0 {
		return fi.EBADFLAGS
	}
	if len(iov) > iovLimit {
		return fi.EINVAL
	}
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	if n > maxMsgSize {
		return fi.EMSGSIZE
	}
	var sa []byte
	if flags&fi.FlagMulticast != 0 {
		g := e.group(dest)
		if g == nil || !g.send {
			return fi.EINVAL
		}
		sa = g.sockaddr
	} else {
		var ok bool
		if sa, ok = e.av.Addr(dest); !ok {
			return fi.EINVAL
		}
	}
	var err error
	if len(iov) == 1 {
		err = sendTo(e.fd, iov[0], sa)
	} else {
		e.txMu.Lock()
		err = e.tx.sendMsg(e.fd, iov, sa)
		e.txMu.Unlock()
	}
	if err != nil {
		return errnoOf(err)
	}
	if inject {
		return nil
	}
	if e.txcq != nil && (!e.txSel || flags&fi.FlagCompletion != 0) {
		_ = e.txcq.CompleteOverflow(eq.Completion{Context: ctx, Flags: fi.FlagSend | fi.FlagMsg | flags&fi.FlagMulticast}, fi.AddrUnspec)
	}
	return nil
}

// Send sends buf to dest (fi_send), with the endpoint's default transmit
// flags.
func (e *endpoint) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	iov := [1][]byte{buf}
	return e.send(iov[:], dest, ctx, e.txFlags, false)
}

// SendV sends a vector of up to 4 buffers as one datagram (fi_sendv).
func (e *endpoint) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	return e.send(iov, dest, ctx, e.txFlags, false)
}

// SendMsg sends with flags (fi_sendmsg): fi.FlagMulticast sends to the
// group whose Addr is msg.Addr (joined with send permission),
// fi.FlagCompletion reports under selective completion; fi.FlagInject and
// the completion-level flags are accepted and change nothing, since every
// send completes once the kernel has the datagram. fi.FlagRemoteCQData is
// refused (fi.EBADFLAGS): the provider carries no CQ data.
func (e *endpoint) SendMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return fi.EINVAL
	}
	return e.send(msg.IOV, msg.Addr, msg.Context, flags, false)
}

// Inject sends buf, at most 1472 bytes, with no completion (fi_inject).
func (e *endpoint) Inject(buf []byte, dest fi.Addr) error {
	iov := [1][]byte{buf}
	return e.send(iov[:], dest, nil, e.txFlags&^fi.FlagCompletion, true)
}

// SendData returns bare fi.ENOSYS, as the C provider's fi_senddata does:
// datagrams carry no remote CQ data (cq_data_size is 0).
func (e *endpoint) SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error {
	return fi.ENOSYS
}

// InjectData returns bare fi.ENOSYS, as SendData does (fi_injectdata).
func (e *endpoint) InjectData(buf []byte, data uint64, dest fi.Addr) error {
	return fi.ENOSYS
}

// Recv posts a receive buffer (fi_recv). src is ignored: any sender's
// datagram fills the oldest posted receive.
func (e *endpoint) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	x := rxEntry{niov: 1, size: len(buf), ctx: ctx, report: !e.rxSel || e.rxFlags&fi.FlagCompletion != 0}
	x.iov[0] = buf
	return e.postRecv(&x)
}

// RecvV posts a vector of up to 4 buffers (fi_recvv).
func (e *endpoint) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	return e.recvVec(iov, ctx, e.rxFlags)
}

// RecvMsg posts a receive with flags (fi_recvmsg); fi.FlagCompletion
// reports under selective completion.
func (e *endpoint) RecvMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return fi.EINVAL
	}
	if flags&^rxOpFlags != 0 {
		return fi.EBADFLAGS
	}
	return e.recvVec(msg.IOV, msg.Context, flags)
}

func (e *endpoint) recvVec(iov [][]byte, ctx any, flags fi.Flags) error {
	if len(iov) > iovLimit {
		return fi.EINVAL
	}
	x := rxEntry{ctx: ctx, report: !e.rxSel || flags&fi.FlagCompletion != 0}
	x.niov = copy(x.iov[:], iov)
	for _, b := range iov {
		x.size += len(b)
	}
	return e.postRecv(&x)
}

// postRecv queues x; bare fi.EAGAIN when 1024 receives are posted.
func (e *endpoint) postRecv(x *rxEntry) error {
	if err := e.ready(); err != nil {
		return err
	}
	e.mu.Lock()
	if err := e.rx.post(x); err != nil {
		e.mu.Unlock()
		return err
	}
	first := e.posted.Add(1) == 1
	e.mu.Unlock()
	if first {
		e.auto.Kick() // the background progress may wait for a receive
	}
	return nil
}
