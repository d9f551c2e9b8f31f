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

// The struct fi_ops entry points every object shares: close, bind,
// control.

// goClose closes the object behind h (fi_close(3)). On success the C side
// frees the object; on failure (EBUSY while children are open) it stays.
//
//export goClose
func goClose(h C.uintptr_t) (rc C.int) {
	defer recoverInt(&rc, "fi_close")
	o := objOf(uintptr(h))
	if o == nil {
		return -C.FI_EINVAL
	}
	if err := closeObj(o); err != nil {
		return -C.int(slotOf(o).code("close", err))
	}
	dropCFid(goObjOf(o))
	cgo.Handle(h).Delete()
	return 0
}

// goBind binds bfid to the object behind h: an EQ, CQ, counter or AV to
// an endpoint (fi_ep_bind), an EQ to a passive endpoint (fi_pep_bind) or
// to an address vector (fi_av_bind, for FI_EVENT inserts).
//
//export goBind
func goBind(h C.uintptr_t, bfid *C.struct_fid, flags C.uint64_t) (rc C.int) {
	defer recoverInt(&rc, "fi_bind")
	o := objOf(uintptr(h))
	if o == nil || bfid == nil {
		return -C.FI_EINVAL
	}
	b := objOf(uintptr(C.gfi_handle(bfid, C.FI_CLASS_UNSPEC)))
	if b == nil {
		slotOf(o).code("bind", badArg("bind: fid %p (class %d) is not an object of this provider", bfid, bfid.fclass))
		return -C.FI_EINVAL
	}
	var err error
	switch o := o.(type) {
	case *epObj:
		var target fi.Fid
		switch b := b.(type) {
		case *eqObj:
			target = b.q
		case *cqObj:
			target = b.q
		case *cntrObj:
			target = b.c
		case *avObj:
			target = b.av
		default:
			return -C.FI_EINVAL
		}
		err = o.e.Bind(target, fi.Flags(flags))
	case *pepObj:
		q, ok := b.(*eqObj)
		if !ok {
			return -C.FI_EINVAL
		}
		err = o.p.Bind(q.q, fi.Flags(flags))
	case *avObj:
		q, ok := b.(*eqObj)
		if !ok {
			return -C.FI_EINVAL
		}
		if q.poster == nil {
			return -C.FI_ENOSYS
		}
		o.mu.Lock()
		o.eq = q
		o.mu.Unlock()
	default:
		return -C.FI_ENOSYS
	}
	if err != nil {
		return -C.int(slotOf(o).code("bind", err))
	}
	return 0
}

// goControl is fi_control(3): FI_ENABLE on endpoints, FI_BACKLOG on
// passive endpoints, FI_GETWAIT and FI_GETWAITOBJ on event queues,
// completion queues and counters.
//
//export goControl
func goControl(h C.uintptr_t, cmd C.int, arg unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_control")
	o := objOf(uintptr(h))
	if o == nil {
		return -C.FI_EINVAL
	}
	switch o := o.(type) {
	case *eqObj, *cqObj, *cntrObj:
		return getWait(o, cmd, arg)
	case *epObj:
		if cmd != C.FI_ENABLE {
			return -C.FI_ENOSYS
		}
		if err := o.e.Enable(); err != nil {
			return -C.int(slotOf(o).code("enable", err))
		}
		return 0
	case *pepObj:
		if cmd != C.FI_BACKLOG {
			return -C.FI_ENOSYS
		}
		if arg == nil {
			return -C.FI_EINVAL
		}
		b, ok := o.p.(ep.BacklogSetter)
		if !ok {
			return -C.FI_ENOSYS
		}
		if err := b.SetBacklog(int(*(*C.int)(arg))); err != nil {
			return -C.int(slotOf(o).code("backlog", err))
		}
		return 0
	case *mrObj:
		if cmd == C.FI_ENABLE {
			return 0 // regions are enabled when registered
		}
	}
	return -C.FI_ENOSYS
}

// getWait is FI_GETWAIT (the int descriptor of an FI_WAIT_FD object) and
// FI_GETWAITOBJ (its enum fi_wait_obj) of an event queue, completion
// queue or counter: -FI_ENODATA when it was opened with FI_WAIT_NONE, as
// C's util objects answer without a wait object. FI_WAIT_UNSPEC objects
// get theirs here, as in C, where they have one.
func getWait(o any, cmd C.int, arg unsafe.Pointer) C.int {
	if cmd != C.FI_GETWAIT && cmd != C.FI_GETWAITOBJ {
		return -C.FI_ENOSYS
	}
	if arg == nil {
		return -C.FI_EINVAL
	}
	fd, err := eq.WaitFD(goObjOf(o).(fi.Fid))
	if err != nil {
		return -C.int(slotOf(o).code("control", err))
	}
	if cmd == C.FI_GETWAITOBJ {
		*(*C.enum_fi_wait_obj)(arg) = C.FI_WAIT_FD
		return 0
	}
	*(*C.int)(arg) = C.int(fd)
	return 0
}

// goTryWait is fi_trywait(3) over event queues, completion queues and
// counters of the library opened with FI_WAIT_FD: 0 when the application
// may block on all their descriptors, -FI_EAGAIN when one must be read
// first (an event queue's peeked event counts), -FI_EINVAL for another
// object or one without a descriptor, -FI_EBADF for a closed one. It
// allocates nothing.
//
//export goTryWait
func goTryWait(fids **C.struct_fid, count C.int) (rc C.int) {
	defer recoverInt(&rc, "fi_trywait")
	if count < 0 || (count > 0 && fids == nil) {
		return -C.FI_EINVAL
	}
	for _, f := range unsafe.Slice(fids, int(count)) {
		var w any
		switch o := objOf(uintptr(C.gfi_handle(f, C.FI_CLASS_UNSPEC))).(type) {
		case *eqObj:
			o.mu.Lock()
			held := len(o.held)
			o.mu.Unlock()
			if held > 0 {
				return -C.FI_EAGAIN
			}
			w = o.q
		case *cqObj:
			w = o.q
		case *cntrObj:
			w = o.c
		default:
			return -C.FI_EINVAL
		}
		fw, ok := w.(eq.FDWaiter)
		if !ok {
			return -C.FI_EINVAL
		}
		if err := fw.TryWait(); err != nil {
			return -C.int(errnoOf(err))
		}
	}
	return 0
}

// eqAttrFromC converts struct fi_eq_attr.
func eqAttrFromC(a *C.struct_fi_eq_attr) (*eq.Attr, error) {
	if a == nil {
		return &eq.Attr{}, nil
	}
	if a.wait_set != nil {
		return nil, fi.ENOSYS
	}
	return &eq.Attr{Size: goSize(a.size), Flags: fi.Flags(a.flags), WaitObj: fi.WaitObj(a.wait_obj),
		SignalingVector: int(a.signaling_vector)}, nil
}
