//go:build cgo && linux

package main

/*
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// The data path: struct fi_ops_msg, fi_ops_tagged and fi_ops_rma. Buffers
// are views of the application's C memory; contexts travel as
// unsafe.Pointer; the message structs and iovec arrays of the vector and
// msg forms come from a pool. Nothing here allocates.

// maxIOV bounds the iovecs of one operation (gofabric's providers take
// at most 4).
const maxIOV = 16

// opScratch holds what one vector or msg operation needs.
type opScratch struct {
	iov  [maxIOV][]byte
	desc [maxIOV]any
	rma  [maxIOV]ep.RMAIOV
	msg  ep.Message
	tmsg ep.TaggedMessage
	rmsg ep.RMAMessage
}

var opPool = sync.Pool{New: func() any { return new(opScratch) }}

// put returns s to the pool without the references it held.
func (s *opScratch) put() {
	clear(s.desc[:])
	s.msg, s.tmsg, s.rmsg = ep.Message{}, ep.TaggedMessage{}, ep.RMAMessage{}
	opPool.Put(s)
}

// epOf returns the endpoint behind h, or nil.
func epOf(h C.uintptr_t) *epObj {
	if h == 0 {
		return nil
	}
	e, _ := cgo.Handle(h).Value().(*epObj)
	return e
}

// noAbility is the result of a call on a missing endpoint or ability.
func noAbility(e *epObj) C.ssize_t {
	if e == nil {
		return -C.FI_EINVAL
	}
	return -C.FI_ENOSYS
}

// status converts a data-path result.
func status(err error) C.ssize_t {
	if err == nil {
		return 0
	}
	return -C.ssize_t(errnoOf(err))
}

// descOf returns the Go descriptor of an MR handle (0: none).
func descOf(h C.uintptr_t) any {
	if h == 0 {
		return nil
	}
	m, _ := cgo.Handle(h).Value().(*mrObj)
	if m == nil {
		return nil
	}
	return m.desc
}

// descAt returns the Go descriptor of a C descriptor (an MR of this
// library, else none).
func descAt(p unsafe.Pointer) any {
	if p == nil {
		return nil
	}
	m := (*C.struct_gfi_mr)(p)
	if m.mr.fid.ops != C.gfi_mr_fi_ops_ptr {
		return nil
	}
	return descOf(m.h)
}

// buffer is a view of (p, n), or ok false for a NULL pointer with a
// length.
func buffer(p unsafe.Pointer, n C.size_t) ([]byte, bool) {
	if p == nil && n > 0 {
		return nil, false
	}
	return bytesAt(p, uintptr(n)), true
}

// iovs fills s with the views of a C iovec array and its descriptors.
func (s *opScratch) iovs(iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t) ([][]byte, []any, bool) {
	if count > maxIOV || (iov == nil && count > 0) {
		return nil, nil, false
	}
	v := unsafe.Slice(iov, count)
	var ds []unsafe.Pointer
	if desc != nil {
		ds = unsafe.Slice(desc, count)
	}
	for i := range v {
		b, ok := buffer(v[i].iov_base, v[i].iov_len)
		if !ok {
			return nil, nil, false
		}
		s.iov[i] = b
		if ds != nil {
			s.desc[i] = descAt(ds[i])
		}
	}
	if ds == nil {
		return s.iov[:count], nil, true
	}
	return s.iov[:count], s.desc[:count], true
}

// message fills s.msg from a struct fi_msg.
func (s *opScratch) message(m *C.struct_fi_msg) (*ep.Message, bool) {
	if m == nil {
		return nil, false
	}
	iov, desc, ok := s.iovs(m.msg_iov, m.desc, m.iov_count)
	s.msg = ep.Message{IOV: iov, Desc: desc, Addr: fi.Addr(m.addr), Context: ctxOf(m.context), Data: uint64(m.data)}
	return &s.msg, ok
}

// tagged fills s.tmsg from a struct fi_msg_tagged.
func (s *opScratch) tagged(m *C.struct_fi_msg_tagged) (*ep.TaggedMessage, bool) {
	if m == nil {
		return nil, false
	}
	iov, desc, ok := s.iovs(m.msg_iov, m.desc, m.iov_count)
	s.tmsg = ep.TaggedMessage{IOV: iov, Desc: desc, Addr: fi.Addr(m.addr), Tag: uint64(m.tag),
		Ignore: uint64(m.ignore), Context: ctxOf(m.context), Data: uint64(m.data)}
	return &s.tmsg, ok
}

// rmaMessage fills s.rmsg from a struct fi_msg_rma.
func (s *opScratch) rmaMessage(m *C.struct_fi_msg_rma) (*ep.RMAMessage, bool) {
	if m == nil || m.rma_iov_count > maxIOV || (m.rma_iov == nil && m.rma_iov_count > 0) {
		return nil, false
	}
	iov, desc, ok := s.iovs(m.msg_iov, m.desc, m.iov_count)
	for i, r := range unsafe.Slice(m.rma_iov, m.rma_iov_count) {
		s.rma[i] = ep.RMAIOV{Addr: uint64(r.addr), Len: goSize(r.len), Key: uint64(r.key)}
	}
	s.rmsg = ep.RMAMessage{IOV: iov, Desc: desc, Addr: fi.Addr(m.addr), RMAIOV: s.rma[:m.rma_iov_count],
		Context: ctxOf(m.context), Data: uint64(m.data)}
	return &s.rmsg, ok
}

// ---- fi_ops_msg ----

//export goRecv
func goRecv(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, src C.fi_addr_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_recv")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.Recv(b, descOf(desc), fi.Addr(src), ctxOf(ctx)))
}

//export goRecvv
func goRecvv(h C.uintptr_t, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t, src C.fi_addr_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_recvv")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	v, d, ok := s.iovs(iov, desc, count)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.RecvV(v, d, fi.Addr(src), ctxOf(ctx)))
}

//export goRecvmsg
func goRecvmsg(h C.uintptr_t, msg *C.struct_fi_msg, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_recvmsg")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	m, ok := s.message(msg)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.RecvMsg(m, fi.Flags(flags)))
}

//export goSend
func goSend(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, dest C.fi_addr_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_send")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.Send(b, descOf(desc), fi.Addr(dest), ctxOf(ctx)))
}

//export goSendv
func goSendv(h C.uintptr_t, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t, dest C.fi_addr_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_sendv")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	v, d, ok := s.iovs(iov, desc, count)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.SendV(v, d, fi.Addr(dest), ctxOf(ctx)))
}

//export goSendmsg
func goSendmsg(h C.uintptr_t, msg *C.struct_fi_msg, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_sendmsg")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	m, ok := s.message(msg)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.SendMsg(m, fi.Flags(flags)))
}

//export goInject
func goInject(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, dest C.fi_addr_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_inject")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.Inject(b, fi.Addr(dest)))
}

//export goSenddata
func goSenddata(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, data C.uint64_t, dest C.fi_addr_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_senddata")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.SendData(b, descOf(desc), uint64(data), fi.Addr(dest), ctxOf(ctx)))
}

//export goInjectdata
func goInjectdata(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, data C.uint64_t, dest C.fi_addr_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_injectdata")
	e := epOf(h)
	if e == nil || e.msg == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.msg.InjectData(b, uint64(data), fi.Addr(dest)))
}

// ---- fi_ops_tagged ----

//export goTRecv
func goTRecv(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, src C.fi_addr_t, tag, ignore C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_trecv")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TRecv(b, descOf(desc), fi.Addr(src), uint64(tag), uint64(ignore), ctxOf(ctx)))
}

//export goTRecvv
func goTRecvv(h C.uintptr_t, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t, src C.fi_addr_t, tag, ignore C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_trecvv")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	v, d, ok := s.iovs(iov, desc, count)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TRecvV(v, d, fi.Addr(src), uint64(tag), uint64(ignore), ctxOf(ctx)))
}

//export goTRecvmsg
func goTRecvmsg(h C.uintptr_t, msg *C.struct_fi_msg_tagged, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_trecvmsg")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	m, ok := s.tagged(msg)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TRecvMsg(m, fi.Flags(flags)))
}

//export goTSend
func goTSend(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, dest C.fi_addr_t, tag C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_tsend")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TSend(b, descOf(desc), fi.Addr(dest), uint64(tag), ctxOf(ctx)))
}

//export goTSendv
func goTSendv(h C.uintptr_t, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t, dest C.fi_addr_t, tag C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_tsendv")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	v, d, ok := s.iovs(iov, desc, count)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TSendV(v, d, fi.Addr(dest), uint64(tag), ctxOf(ctx)))
}

//export goTSendmsg
func goTSendmsg(h C.uintptr_t, msg *C.struct_fi_msg_tagged, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_tsendmsg")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	m, ok := s.tagged(msg)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TSendMsg(m, fi.Flags(flags)))
}

//export goTInject
func goTInject(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, dest C.fi_addr_t, tag C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_tinject")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TInject(b, fi.Addr(dest), uint64(tag)))
}

//export goTSenddata
func goTSenddata(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, data C.uint64_t, dest C.fi_addr_t, tag C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_tsenddata")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TSendData(b, descOf(desc), uint64(data), fi.Addr(dest), uint64(tag), ctxOf(ctx)))
}

//export goTInjectdata
func goTInjectdata(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, data C.uint64_t, dest C.fi_addr_t, tag C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_tinjectdata")
	e := epOf(h)
	if e == nil || e.tagged == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.tagged.TInjectData(b, uint64(data), fi.Addr(dest), uint64(tag)))
}

// ---- fi_ops_rma ----

//export goRead
func goRead(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, src C.fi_addr_t, addr, key C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_read")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.Read(b, descOf(desc), fi.Addr(src), uint64(addr), uint64(key), ctxOf(ctx)))
}

//export goReadv
func goReadv(h C.uintptr_t, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t, src C.fi_addr_t, addr, key C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_readv")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	v, d, ok := s.iovs(iov, desc, count)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.ReadV(v, d, fi.Addr(src), uint64(addr), uint64(key), ctxOf(ctx)))
}

// goRMAmsg is fi_readmsg (write 0) and fi_writemsg (write 1).
//
//export goRMAmsg
func goRMAmsg(h C.uintptr_t, msg *C.struct_fi_msg_rma, flags C.uint64_t, write C.int) (rc C.ssize_t) {
	call := "fi_readmsg"
	if write != 0 {
		call = "fi_writemsg"
	}
	defer recoverInt(&rc, call)
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	m, ok := s.rmaMessage(msg)
	if !ok {
		return -C.FI_EINVAL
	}
	if write != 0 {
		return status(e.rma.WriteMsg(m, fi.Flags(flags)))
	}
	return status(e.rma.ReadMsg(m, fi.Flags(flags)))
}

//export goWrite
func goWrite(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, dest C.fi_addr_t, addr, key C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_write")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.Write(b, descOf(desc), fi.Addr(dest), uint64(addr), uint64(key), ctxOf(ctx)))
}

//export goWritev
func goWritev(h C.uintptr_t, iov *C.struct_iovec, desc *unsafe.Pointer, count C.size_t, dest C.fi_addr_t, addr, key C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_writev")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	s := opPool.Get().(*opScratch)
	defer s.put()
	v, d, ok := s.iovs(iov, desc, count)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.WriteV(v, d, fi.Addr(dest), uint64(addr), uint64(key), ctxOf(ctx)))
}

//export goInjectWrite
func goInjectWrite(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, dest C.fi_addr_t, addr, key C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_inject_write")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.InjectWrite(b, fi.Addr(dest), uint64(addr), uint64(key)))
}

//export goWritedata
func goWritedata(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, desc C.uintptr_t, data C.uint64_t, dest C.fi_addr_t, addr, key C.uint64_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_writedata")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.WriteData(b, descOf(desc), uint64(data), fi.Addr(dest), uint64(addr), uint64(key), ctxOf(ctx)))
}

//export goInjectWritedata
func goInjectWritedata(h C.uintptr_t, buf unsafe.Pointer, n C.size_t, data C.uint64_t, dest C.fi_addr_t, addr, key C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_inject_writedata")
	e := epOf(h)
	if e == nil || e.rma == nil {
		return noAbility(e)
	}
	b, ok := buffer(buf, n)
	if !ok {
		return -C.FI_EINVAL
	}
	return status(e.rma.InjectWriteData(b, uint64(data), fi.Addr(dest), uint64(addr), uint64(key)))
}
