//go:build linux

package tcp

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// The calls of RDM endpoints. They never block. A send to a peer with no
// connection yet starts one and returns bare fi.EAGAIN, as do later sends
// until it is up: the connection opens on its own goroutines, so an
// application that retries while reading its CQ (fi_pingpong's loop)
// never stalls. A refused attempt is retried (the sends keep returning
// fi.EAGAIN) until FI_TCP_CONN_TIMEOUT has passed; when the attempts
// fail for good (refused all that time, timed out, unreachable) the next
// send returns that error once, and the one after starts over.

// PostTx queues a transmit operation of the adapter (kit.Poster): every
// form of fi_send, fi_tsend, fi_write and fi_read. The message forms take
// fi.FlagRemoteCQData, fi.FlagInject, fi.FlagCompletion and
// fi.FlagDeliveryComplete; the inject calls copy at most 64 bytes
// (messages) or 128 bytes (writes). A write completes once the target
// placed the data.
func (r *rdmEndpoint) PostTx(op kit.Op) error {
	switch op.Kind {
	case kit.OpSend, kit.OpTSend:
		a := rdmArgs{dest: op.Addr, ctx: op.Context, data: op.Data, tag: op.Tag, tagged: op.Kind == kit.OpTSend,
			flags: op.Flags, inject: op.Inject}
		if op.Inject {
			a.flags &= fi.FlagRemoteCQData
		}
		n, err := op.CopyIOV(a.iov[:], "tcp")
		if err != nil {
			return err
		}
		a.niov = n
		return r.send(&a)
	case kit.OpWrite, kit.OpRead:
		a := txArgs{ctx: op.Context, data: op.Data, flags: op.Flags, inject: op.Inject}
		if op.Inject {
			a.flags &^= fi.FlagInject
		}
		n, err := op.CopyIOV(a.iov[:], "tcp")
		if err != nil {
			return err
		}
		a.niov = n
		if err := a.setRMA(&op); err != nil {
			return err
		}
		kind := txWrite
		if op.Kind == kit.OpRead {
			kind = txRead
		}
		return r.rma(&a, op.Addr, kind)
	}
	return fi.ENOSYS
}

// PostRx posts a receive of the adapter (kit.Poster): every form of
// fi_recv and fi_trecv. A source other than fi.AddrUnspec matches only
// that sender when the endpoint has FI_DIRECTED_RECV.
func (r *rdmEndpoint) PostRx(op kit.Op) error {
	if op.Vector() {
		return r.recv(op.IOV, op.Addr, op.Context, op.Kind == kit.OpTRecv, op.Tag, op.Ignore, op.Flags)
	}
	iov := [1][]byte{op.Buf}
	return r.recv(iov[:], op.Addr, op.Context, op.Kind == kit.OpTRecv, op.Tag, op.Ignore, op.Flags)
}
