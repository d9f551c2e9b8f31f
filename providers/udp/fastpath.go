//go:build linux

package udp

import (
	"github.com/gofabric/gofabric/fi"
)

// The single-buffer calls an application makes most, written out so that
// they post without building a kit.Op (as shm's are): they do exactly what
// the adapter's forms do (kit.MsgOps), which every other call goes through.

// Send sends buf to dest as one datagram (fi_send).
func (e *endpoint) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	iov := [1][]byte{buf}
	return e.send(iov[:], dest, ctx, e.MsgOps.TxFlags, false)
}

// Inject sends buf to dest with no completion (fi_inject).
func (e *endpoint) Inject(buf []byte, dest fi.Addr) error {
	iov := [1][]byte{buf}
	return e.send(iov[:], dest, nil, e.MsgOps.TxFlags&^fi.FlagCompletion|fi.FlagInject, true)
}

// Recv posts a receive buffer (fi_recv); src is ignored, as PostRx's.
func (e *endpoint) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	if e.MsgOps.RxFlags&^rxOpFlags != 0 {
		return fi.EBADFLAGS
	}
	return e.postRecv1(buf, ctx, !e.RxSel || e.MsgOps.RxFlags&fi.FlagCompletion != 0)
}
