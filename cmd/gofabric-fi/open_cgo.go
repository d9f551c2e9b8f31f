//go:build cgo && linux

package main

/*
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// The openers: struct fi_ops_fabric and struct fi_ops_domain, and memory
// registration (struct fi_ops_mr).

// newC wraps a Go object in a handle and a C object made by mk; on
// failure (out of C memory) it undoes the handle and closes the Go
// object.
func newC[T any](o any, goObj fi.Fid, mk func(h C.uintptr_t) *T) (*T, C.int) {
	h := cgo.NewHandle(o)
	c := mk(C.uintptr_t(h))
	if c == nil {
		h.Delete()
		goObj.Close()
		return nil, -C.FI_ENOMEM
	}
	setCFid(goObj, unsafe.Pointer(c))
	return c, 0
}

// goDomain opens a domain (fi_domain(3)).
//
//export goDomain
func goDomain(h C.uintptr_t, info *C.struct_fi_info, out **C.struct_fid_domain, flags C.uint64_t, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_domain")
	fab, _ := objOf(uintptr(h)).(*fabricObj)
	if fab == nil || info == nil || out == nil {
		return -C.FI_EINVAL
	}
	if flags != 0 {
		return -C.FI_EBADFLAGS
	}
	g, err := infoFromC(info, fab.slot, false)
	if err != nil {
		return -C.int(fab.slot.code("domain", err))
	}
	d, err := fab.f.OpenDomain(g)
	if err != nil {
		return -C.int(fab.slot.code("domain", err))
	}
	o := &domainObj{fab: fab, d: d, format: g.AddrFormat}
	if o.format == fi.FormatUnspec && d.Info() != nil {
		o.format = d.Info().AddrFormat
	}
	c, rc := newC(o, d, func(h C.uintptr_t) *C.struct_fid_domain { return C.gfi_domain_new(h, ctx) })
	if c != nil {
		*out = c
	}
	return rc
}

// goPassiveEP opens a passive endpoint (fi_passive_ep(3)).
//
//export goPassiveEP
func goPassiveEP(h C.uintptr_t, info *C.struct_fi_info, out **C.struct_fid_pep, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_passive_ep")
	fab, _ := objOf(uintptr(h)).(*fabricObj)
	if fab == nil || info == nil || out == nil {
		return -C.FI_EINVAL
	}
	g, err := infoFromC(info, fab.slot, false)
	if err != nil {
		return -C.int(fab.slot.code("passive_ep", err))
	}
	p, err := ep.OpenPassive(fab.f, g)
	if err != nil {
		return -C.int(fab.slot.code("passive_ep", err))
	}
	o := &pepObj{fab: fab, p: p, format: g.AddrFormat}
	c, rc := newC(o, p, func(h C.uintptr_t) *C.struct_fid_pep { return C.gfi_pep_new(h, ctx) })
	if c != nil {
		*out = c
	}
	return rc
}

// goEQOpen opens an event queue (fi_eq_open(3)).
//
//export goEQOpen
func goEQOpen(h C.uintptr_t, attr *C.struct_fi_eq_attr, out **C.struct_fid_eq, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_eq_open")
	fab, _ := objOf(uintptr(h)).(*fabricObj)
	if fab == nil || out == nil {
		return -C.FI_EINVAL
	}
	a, err := eqAttrFromC(attr)
	if err != nil {
		return -C.int(fab.slot.code("eq_open", err))
	}
	q, err := eq.OpenEQ(fab.f, a)
	if err != nil {
		return -C.int(fab.slot.code("eq_open", err))
	}
	o := &eqObj{fab: fab, q: q}
	o.poster, _ = q.(eqPoster)
	c, rc := newC(o, q, func(h C.uintptr_t) *C.struct_fid_eq { return C.gfi_eq_new(h, ctx) })
	if c != nil {
		*out = c
	}
	return rc
}

// goAVOpen opens an address vector (fi_av_open(3)). FI_EVENT makes
// inserts asynchronous: they complete with FI_AV_COMPLETE events on the
// EQ bound with fi_av_bind. Named (shared) AVs are not supported.
//
//export goAVOpen
func goAVOpen(h C.uintptr_t, attr *C.struct_fi_av_attr, out **C.struct_fid_av, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_av_open")
	dom, _ := objOf(uintptr(h)).(*domainObj)
	if dom == nil || out == nil {
		return -C.FI_EINVAL
	}
	a := &fi.AVAttr{}
	async := false
	if attr != nil {
		if attr.name != nil || attr.map_addr != nil || attr.rx_ctx_bits != 0 {
			return -C.FI_ENOSYS
		}
		a.Type, a.Count, a.Flags = fi.AVType(attr._type), goSize(attr.count), fi.Flags(attr.flags)
		async = a.Flags&fi.FlagCompletion != 0 // FI_EVENT
		a.Flags &^= fi.FlagCompletion
	}
	av, err := fi.OpenAV(dom.d, a)
	if err != nil {
		return -C.int(dom.fab.slot.code("av_open", err))
	}
	o := &avObj{dom: dom, av: av, format: dom.format, async: async}
	c, rc := newC(o, av, func(h C.uintptr_t) *C.struct_fid_av { return C.gfi_av_new(h, ctx) })
	if c != nil {
		*out = c
	}
	return rc
}

// goCQOpen opens a completion queue (fi_cq_open(3)). FI_CQ_FORMAT_UNSPEC
// gives FI_CQ_FORMAT_CONTEXT, as in C's providers.
//
//export goCQOpen
func goCQOpen(h C.uintptr_t, attr *C.struct_fi_cq_attr, out **C.struct_fid_cq, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_cq_open")
	dom, _ := objOf(uintptr(h)).(*domainObj)
	if dom == nil || out == nil {
		return -C.FI_EINVAL
	}
	a := &eq.CQAttr{Format: eq.FormatContext}
	if attr != nil {
		if attr.wait_set != nil {
			return -C.FI_ENOSYS
		}
		a.Size, a.Flags, a.Format = goSize(attr.size), fi.Flags(attr.flags), eq.CQFormat(attr.format)
		a.WaitObj, a.SignalingVector, a.WaitCond = fi.WaitObj(attr.wait_obj), int(attr.signaling_vector), eq.WaitCond(attr.wait_cond)
		if a.Format == eq.FormatUnspec {
			a.Format = eq.FormatContext
		}
		if a.Format > eq.FormatTagged || a.Format < 0 {
			return -C.FI_ENOSYS
		}
	}
	q, err := eq.OpenCQ(dom.d, a)
	if err != nil {
		return -C.int(dom.fab.slot.code("cq_open", err))
	}
	o := &cqObj{fab: dom.fab, q: q, format: a.Format}
	c, rc := newC(o, q, func(h C.uintptr_t) *C.struct_fid_cq { return C.gfi_cq_new(h, ctx) })
	if c != nil {
		*out = c
	}
	return rc
}

// goCntrOpen opens a counter (fi_cntr_open(3)).
//
//export goCntrOpen
func goCntrOpen(h C.uintptr_t, attr *C.struct_fi_cntr_attr, out **C.struct_fid_cntr, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_cntr_open")
	dom, _ := objOf(uintptr(h)).(*domainObj)
	if dom == nil || out == nil {
		return -C.FI_EINVAL
	}
	a := &eq.CounterAttr{}
	if attr != nil {
		if attr.wait_set != nil {
			return -C.FI_ENOSYS
		}
		a.Events, a.WaitObj, a.Flags = eq.CounterEvents(attr.events), fi.WaitObj(attr.wait_obj), fi.Flags(attr.flags)
	}
	k, err := eq.OpenCounter(dom.d, a)
	if err != nil {
		return -C.int(dom.fab.slot.code("cntr_open", err))
	}
	c, rc := newC(&cntrObj{c: k}, k, func(h C.uintptr_t) *C.struct_fid_cntr { return C.gfi_cntr_new(h, ctx) })
	if c != nil {
		*out = c
	}
	return rc
}

// goEndpoint opens an active endpoint (fi_endpoint(3)). An endpoint
// opened from an FI_CONNREQ event's info takes over its connection
// request.
//
//export goEndpoint
func goEndpoint(h C.uintptr_t, info *C.struct_fi_info, out **C.struct_fid_ep, flags C.uint64_t, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_endpoint")
	dom, _ := objOf(uintptr(h)).(*domainObj)
	if dom == nil || info == nil || out == nil {
		return -C.FI_EINVAL
	}
	if flags != 0 {
		return -C.FI_EBADFLAGS
	}
	g, err := infoFromC(info, dom.fab.slot, false)
	if err != nil {
		return -C.int(dom.fab.slot.code("endpoint", err))
	}
	e, err := ep.Open(dom.d, g)
	if err != nil {
		return -C.int(dom.fab.slot.code("endpoint", err))
	}
	o := &epObj{dom: dom, e: e, format: g.AddrFormat}
	if o.format == fi.FormatUnspec {
		o.format = dom.format
	}
	o.msg, _ = e.(ep.Msg)
	o.tagged, _ = e.(ep.Tagged)
	o.rma, _ = e.(ep.RMA)
	o.cm, _ = e.(ep.CM)
	o.join, _ = e.(ep.Joiner)
	if rh := C.gfi_handle(info.handle, C.FI_CLASS_CONNREQ); rh != 0 {
		o.connreq, o.connreqH = unsafe.Pointer(info.handle), cgo.Handle(rh)
	}
	c, rc := newC(o, e, func(h C.uintptr_t) *C.struct_fid_ep { return C.gfi_ep_new(h, ctx) })
	if c == nil {
		return rc
	}
	*out = c
	return 0
}

// mrNoCache is OFI_MR_NOCACHE (bit 60), a flag C's ofi_rxm gives its
// core's fi_mr_reg, internal to libfabric.
const mrNoCache fi.Flags = 1 << 60

// goMRReg registers memory (fi_mr_reg(3), fi_mr_regv, fi_mr_regattr): one
// iovec, as gofabric's providers' mr_iov_limit. The region's descriptor
// (fi_mr_desc) is the C object itself, which the data path resolves to
// the Go descriptor.
//
//export goMRReg
func goMRReg(h C.uintptr_t, iov *C.struct_iovec, count C.size_t, access, offset, key, flags C.uint64_t,
	out **C.struct_fid_mr, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_mr_reg")
	dom, _ := objOf(uintptr(h)).(*domainObj)
	if dom == nil || out == nil || (count > 0 && iov == nil) {
		return -C.FI_EINVAL
	}
	if count > 1 {
		return -C.int(dom.fab.slot.code("mr_reg", badArg("mr_reg: %d iovecs, the limit is 1", count)))
	}
	a := &fi.MRAttr{Access: fi.Access(access), Offset: uint64(offset), RequestedKey: uint64(key), Context: ctxOf(ctx)}
	if count == 1 {
		if iov.iov_base == nil && iov.iov_len > 0 {
			return -C.FI_EINVAL
		}
		a.Buf = bytesAt(iov.iov_base, uintptr(iov.iov_len))
	}
	// C's utility providers pass their core a flag of their own
	// (OFI_MR_NOCACHE: do not cache the registration), which is no
	// fi_mr_reg flag: gofabric caches no registration anyway.
	mr, err := fi.RegisterMR(dom.d, a, fi.Flags(flags)&^mrNoCache)
	if err != nil {
		return -C.int(dom.fab.slot.code("mr_reg", err))
	}
	o := &mrObj{mr: mr, desc: mr.Desc()}
	c, rc := newC(o, mr, func(h C.uintptr_t) *C.struct_fid_mr { return C.gfi_mr_new(h, ctx, C.uint64_t(mr.Key())) })
	if c != nil {
		*out = c
	}
	return rc
}
