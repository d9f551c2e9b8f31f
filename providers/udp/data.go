//go:build linux

package udp

import (
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Data transfer calls (fi_msg(3)). A send is one datagram, handed to the
// socket at once: it completes when the kernel has taken it (there is no
// reliability: a lost datagram is not reported), and a socket buffer that
// is full gives bare fi.EAGAIN. Payloads go out as they are, with no
// header, so C and Go peers interoperate. Messages above max_msg_size
// (1472 bytes) give fi.EMSGSIZE. The calls never block and, on success,
// never allocate (but for a send that opens a peer socket, peer.go,
// once per destination); they need an enabled endpoint (fi.EOPBADSTATE
// before, fi.EBADF after Close). Errors are bare fi.Errno values.

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
	fd, connected := e.fd, false
	if flags&fi.FlagMulticast == 0 {
		fd, connected = e.sendFD(sa)
	}
	err := e.sendOn(fd, iov, sa, connected)
	if connected && err != nil && asyncError(err) {
		// An ICMP report for an earlier datagram, now cleared.
		err = e.sendOn(fd, iov, sa, connected)
	}
	if err != nil {
		return errnoOf(err)
	}
	if inject {
		return nil
	}
	if e.TxCQ != nil && (!e.TxSel || flags&fi.FlagCompletion != 0) {
		_ = e.TxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: fi.FlagSend | fi.FlagMsg | flags&fi.FlagMulticast}, fi.AddrUnspec)
	}
	return nil
}

// sendOn sends iov as one datagram from fd: to sa, or, from a connected
// peer socket, to its peer.
func (e *endpoint) sendOn(fd int, iov [][]byte, sa []byte, connected bool) error {
	if connected {
		sa = nil
	}
	if len(iov) == 1 {
		return sendTo(fd, iov[0], sa)
	}
	e.txMu.Lock()
	err := e.tx.sendMsg(fd, iov, sa)
	e.txMu.Unlock()
	return err
}

// PostTx sends an operation of the adapter (kit.Poster): fi_send,
// fi_sendv, fi_inject and fi_sendmsg. fi_sendmsg's fi.FlagMulticast sends
// to the group whose Addr is msg.Addr (joined with send permission),
// fi.FlagCompletion reports under selective completion; fi.FlagInject and
// the completion-level flags are accepted and change nothing, since every
// send completes once the kernel has the datagram. fi.FlagRemoteCQData is
// refused (fi.EBADFLAGS): the provider carries no CQ data.
func (e *endpoint) PostTx(op kit.Op) error {
	if op.Kind != kit.OpSend {
		return fi.ENOSYS
	}
	if !op.Vector() {
		iov := [1][]byte{op.Buf}
		return e.send(iov[:], op.Addr, op.Context, op.Flags, op.Inject)
	}
	return e.send(op.IOV, op.Addr, op.Context, op.Flags, op.Inject)
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

// PostRx posts a receive of the adapter (kit.Poster): fi_recv, fi_recvv
// and fi_recvmsg. The source is ignored: any sender's datagram fills the
// oldest posted receive. fi.FlagCompletion reports under selective
// completion.
func (e *endpoint) PostRx(op kit.Op) error {
	if op.Kind != kit.OpRecv {
		return fi.ENOSYS
	}
	if op.Flags&^rxOpFlags != 0 {
		return fi.EBADFLAGS
	}
	x := rxEntry{ctx: op.Context, report: !e.RxSel || op.Flags&fi.FlagCompletion != 0}
	n, err := op.CopyIOV(x.iov[:], "udp")
	if err != nil {
		return fi.EINVAL
	}
	x.niov = n
	x.size = kit.IOVLen(x.iov[:n])
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
	return e.posted1()
}

// postRecv1 is postRecv of a receive of one buffer (fi_recv).
func (e *endpoint) postRecv1(buf []byte, ctx any, report bool) error {
	if err := e.ready(); err != nil {
		return err
	}
	e.mu.Lock()
	if err := e.rx.post1(buf, ctx, report); err != nil {
		e.mu.Unlock()
		return err
	}
	return e.posted1()
}

// posted1 counts a receive just posted, lets mu go and wakes the
// background progress if it sleeps for want of one.
func (e *endpoint) posted1() error {
	first := e.posted.Add(1) == 1
	e.mu.Unlock()
	if first {
		e.auto.Want()
	}
	return nil
}
