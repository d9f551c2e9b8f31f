//go:build linux

package shm

import "github.com/gofabric/gofabric/fi"

// The single-buffer calls an application makes most, written out so that
// they post without building a kit.Op: at 64 bytes shm's whole transfer
// takes about 330 ns, and handing a kit.Op through the adapter costs
// about 18 ns a call (BenchmarkPingPong/64: 645 ns an exchange this way,
// 750 ns through the adapter). They do exactly what the adapter's forms
// do (kit.MsgOps, kit.TaggedOps); every other call goes through it.

// Send sends buf to dest (fi_send).
func (e *endpoint) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	a := txArgs{niov: 1, dest: dest, ctx: ctx, flags: e.MsgOps.TxFlags}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// Inject sends buf, at most the inject size, with no completion
// (fi_inject).
func (e *endpoint) Inject(buf []byte, dest fi.Addr) error {
	a := txArgs{niov: 1, dest: dest, inject: true}
	a.iov[0] = buf
	return e.post(&a, txSend)
}

// TSend sends a tagged message (fi_tsend).
func (e *endpoint) TSend(buf []byte, desc any, dest fi.Addr, tag uint64, ctx any) error {
	a := txArgs{niov: 1, dest: dest, ctx: ctx, tag: tag, flags: e.MsgOps.TxFlags}
	a.iov[0] = buf
	return e.post(&a, txTSend)
}

// TInject injects a tagged message (fi_tinject).
func (e *endpoint) TInject(buf []byte, dest fi.Addr, tag uint64) error {
	a := txArgs{niov: 1, dest: dest, tag: tag, inject: true}
	a.iov[0] = buf
	return e.post(&a, txTSend)
}

// Recv posts a receive buffer (fi_recv); src other than fi.AddrUnspec
// matches only that sender (FI_DIRECTED_RECV). With FI_MULTI_RECV in
// the rx_attr op_flags it is a multi-receive buffer (multirecv.go).
func (e *endpoint) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	iov := [1][]byte{buf}
	return e.recv(iov[:], src, ctx, false, 0, 0, e.MsgOps.RxFlags)
}

// TRecv posts a tagged receive for tag under the ignore mask (fi_trecv).
func (e *endpoint) TRecv(buf []byte, desc any, src fi.Addr, tag, ignore uint64, ctx any) error {
	iov := [1][]byte{buf}
	return e.recv(iov[:], src, ctx, true, tag, ignore, e.TaggedOps.RxFlags)
}
