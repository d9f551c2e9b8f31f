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
	"github.com/gofabric/gofabric/fi"
)

// Endpoint control (struct fi_ops_ep) and connection management (struct
// fi_ops_cm), for active and passive endpoints.

// goCancel is fi_cancel: the operation posted with context completes with
// an FI_ECANCELED error entry.
//
//export goCancel
func goCancel(h C.uintptr_t, ctx unsafe.Pointer) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_cancel")
	switch o := objOf(uintptr(h)).(type) {
	case *epObj:
		return -C.ssize_t(errnoOf(nilOr(o.e.Cancel(ctxOf(ctx)))))
	case *pepObj:
		return -C.FI_ENOENT
	}
	return -C.FI_EINVAL
}

// goGetopt is fi_getopt: FI_OPT_CM_DATA_SIZE (size_t) on endpoints with
// connection management, FI_OPT_MIN_MULTI_RECV (size_t) on endpoints
// with options (ep.Options: shm's).
//
//export goGetopt
func goGetopt(h C.uintptr_t, level, name C.int, val unsafe.Pointer, n *C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_getopt")
	o := objOf(uintptr(h))
	if o == nil || val == nil || n == nil {
		return -C.FI_EINVAL
	}
	if level != C.FI_OPT_ENDPOINT {
		return -C.FI_ENOPROTOOPT
	}
	switch name {
	case C.FI_OPT_MIN_MULTI_RECV:
		o, ok := o.(*epObj)
		if !ok {
			return -C.FI_ENOPROTOOPT
		}
		size, err := ep.GetOpt(o.e, ep.OptLevelEndpoint, ep.OptMinMultiRecv)
		if err != nil {
			return -C.int(errnoOf(err))
		}
		if *n < C.sizeof_size_t {
			return -C.FI_ETOOSMALL
		}
		*(*C.size_t)(val) = C.size_t(size)
		*n = C.sizeof_size_t
		return 0
	case C.FI_OPT_CM_DATA_SIZE:
		var size int
		switch o := o.(type) {
		case *epObj:
			if o.cm == nil {
				return -C.FI_ENOPROTOOPT
			}
			size = o.cm.CMDataSize()
		case *pepObj:
			var err error
			if size, err = o.cmDataSize(); err != nil {
				return -C.int(o.fab.slot.code("getopt", err))
			}
		}
		if *n < C.sizeof_size_t {
			return -C.FI_ETOOSMALL
		}
		*(*C.size_t)(val) = C.size_t(size)
		*n = C.sizeof_size_t
		return 0
	}
	return -C.FI_ENOPROTOOPT
}

// goSetopt is fi_setopt: FI_OPT_MIN_MULTI_RECV (size_t) on endpoints
// with options (ep.Options: shm's); no other option can be set.
//
//export goSetopt
func goSetopt(h C.uintptr_t, level, name C.int, val unsafe.Pointer, n C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_setopt")
	o := objOf(uintptr(h))
	if o == nil {
		return -C.FI_EINVAL
	}
	e, ok := o.(*epObj)
	if !ok || level != C.FI_OPT_ENDPOINT || name != C.FI_OPT_MIN_MULTI_RECV {
		return -C.FI_ENOPROTOOPT
	}
	if val == nil || n < C.sizeof_size_t {
		return -C.FI_EINVAL
	}
	v := *(*C.size_t)(val)
	if uint64(v) > uint64(^uint(0)>>1) {
		return -C.FI_EINVAL
	}
	if err := ep.SetOpt(e.e, ep.OptLevelEndpoint, ep.OptMinMultiRecv, int(v)); err != nil {
		return -C.int(errnoOf(err))
	}
	return 0
}

// namer returns the fi_setname/fi_getname side of an endpoint and its
// address format.
func namer(o any) (ep.Namer, fi.AddrFormat) {
	switch o := o.(type) {
	case *epObj:
		if o.cm != nil {
			return o.cm, o.format
		}
		if n, ok := o.e.(ep.Namer); ok {
			return n, o.format
		}
	case *pepObj:
		return o.p, o.format
	}
	return nil, 0
}

// goSetname is fi_setname.
//
//export goSetname
func goSetname(h C.uintptr_t, addr unsafe.Pointer, n C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_setname")
	o := objOf(uintptr(h))
	nm, f := namer(o)
	if nm == nil {
		return -C.FI_ENOSYS
	}
	if addr == nil || n == 0 {
		return -C.FI_EINVAL
	}
	if err := nm.SetName(addrFromC(f, addr, n)); err != nil {
		return -C.int(slotOf(o).code("setname", err))
	}
	return 0
}

// goGetname is fi_getname: *n becomes the address's full size, with
// -FI_ETOOSMALL when the buffer is shorter.
//
//export goGetname
func goGetname(h C.uintptr_t, addr unsafe.Pointer, n *C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_getname")
	o := objOf(uintptr(h))
	nm, f := namer(o)
	if nm == nil {
		return -C.FI_ENOSYS
	}
	if n == nil {
		return -C.FI_EINVAL
	}
	return nameToC(o, f, nm.Name, addr, n)
}

// goGetpeer is fi_getpeer.
//
//export goGetpeer
func goGetpeer(h C.uintptr_t, addr unsafe.Pointer, n *C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_getpeer")
	e, _ := objOf(uintptr(h)).(*epObj)
	if e == nil || n == nil {
		return -C.FI_EINVAL
	}
	if e.cm == nil {
		return -C.FI_ENOSYS
	}
	return nameToC(e, e.format, e.cm.Peer, addr, n)
}

// nameToC copies the address get returns into the C buffer (addr, *n).
func nameToC(o any, f fi.AddrFormat, get func([]byte) (int, error), addr unsafe.Pointer, n *C.size_t) C.int {
	var buf [maxStrAddr]byte
	k, err := get(buf[:])
	if err != nil && fi.Code(err) != fi.ETOOSMALL {
		return -C.int(slotOf(o).code("getname", err))
	}
	need := copyAddrC(f, buf[:min(k, len(buf))], addr, int(*n))
	given := *n
	*n = C.size_t(need)
	if C.size_t(need) > given {
		return -C.FI_ETOOSMALL
	}
	return 0
}

// goConnect is fi_connect: addr is in the endpoint's format.
//
//export goConnect
func goConnect(h C.uintptr_t, addr, param unsafe.Pointer, n C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_connect")
	e, _ := objOf(uintptr(h)).(*epObj)
	if e == nil || (param == nil && n > 0) {
		return -C.FI_EINVAL
	}
	if e.cm == nil {
		return -C.FI_ENOSYS
	}
	var a []byte
	if addr != nil {
		b, _, err := addrAt(e.format, addr)
		if err != nil {
			return -C.int(e.dom.fab.slot.code("connect", err))
		}
		a = append([]byte(nil), b...)
	}
	if err := e.cm.Connect(a, append([]byte(nil), bytesAt(param, uintptr(n))...)); err != nil {
		return -C.int(e.dom.fab.slot.code("connect", err))
	}
	return 0
}

// goListen is fi_listen.
//
//export goListen
func goListen(h C.uintptr_t) (rc C.int) {
	defer recoverInt(&rc, "fi_listen")
	p, _ := objOf(uintptr(h)).(*pepObj)
	if p == nil {
		return -C.FI_EINVAL
	}
	if err := p.p.Listen(); err != nil {
		return -C.int(p.fab.slot.code("listen", err))
	}
	return 0
}

// goAccept is fi_accept.
//
//export goAccept
func goAccept(h C.uintptr_t, param unsafe.Pointer, n C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_accept")
	e, _ := objOf(uintptr(h)).(*epObj)
	if e == nil || (param == nil && n > 0) {
		return -C.FI_EINVAL
	}
	if e.cm == nil {
		return -C.FI_ENOSYS
	}
	if err := e.cm.Accept(append([]byte(nil), bytesAt(param, uintptr(n))...)); err != nil {
		return -C.int(e.dom.fab.slot.code("accept", err))
	}
	return 0
}

// goReject is fi_reject: the connection request is freed.
//
//export goReject
func goReject(h C.uintptr_t, handle *C.struct_fid, param unsafe.Pointer, n C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_reject")
	p, _ := objOf(uintptr(h)).(*pepObj)
	rh := C.gfi_handle(handle, C.FI_CLASS_CONNREQ)
	if p == nil || rh == 0 || (param == nil && n > 0) {
		return -C.FI_EINVAL
	}
	cr := objOf(uintptr(rh)).(*connReqObj)
	if err := p.p.Reject(cr.handle, append([]byte(nil), bytesAt(param, uintptr(n))...)); err != nil {
		return -C.int(p.fab.slot.code("reject", err))
	}
	C.gfi_set_handle(handle, 0)
	cgo.Handle(rh).Delete()
	freeC(unsafe.Pointer(handle))
	return 0
}

// goShutdown is fi_shutdown.
//
//export goShutdown
func goShutdown(h C.uintptr_t, flags C.uint64_t) (rc C.int) {
	defer recoverInt(&rc, "fi_shutdown")
	e, _ := objOf(uintptr(h)).(*epObj)
	if e == nil {
		return -C.FI_EINVAL
	}
	if e.cm == nil {
		return -C.FI_ENOSYS
	}
	if err := e.cm.Shutdown(fi.Flags(flags)); err != nil {
		return -C.int(e.dom.fab.slot.code("shutdown", err))
	}
	return 0
}

// goJoin is fi_join: addr is in the endpoint's format; the group's fid_mc
// carries its fi_addr.
//
//export goJoin
func goJoin(h C.uintptr_t, addr unsafe.Pointer, flags C.uint64_t, out **C.struct_fid_mc, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_join")
	e, _ := objOf(uintptr(h)).(*epObj)
	if e == nil || addr == nil || out == nil {
		return -C.FI_EINVAL
	}
	if e.join == nil {
		return -C.FI_ENOSYS
	}
	b, _, err := addrAt(e.format, addr)
	if err != nil {
		return -C.int(e.dom.fab.slot.code("join", err))
	}
	g, err := e.join.Join(append([]byte(nil), b...), fi.Flags(flags), ctxOf(ctx))
	if err != nil {
		return -C.int(e.dom.fab.slot.code("join", err))
	}
	c, rc := newC(&mcObj{g: g}, g, func(h C.uintptr_t) *C.struct_fid_mc {
		return C.gfi_mc_new(h, ctx, C.fi_addr_t(g.Addr()))
	})
	if c != nil {
		*out = c
	}
	return rc
}
