//go:build cgo && linux

package main

/*
#include "bridge.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"time"
	"unsafe"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Event queues (struct fi_ops_eq): events in C form, error entries with
// their err_data kept until the next read, application writes.

// rawEvent is an event an application wrote with fi_eq_write: its number
// and entry bytes, returned as written.
type rawEvent struct {
	kind uint32
	data []byte
}

// Type implements eq.Event.
func (e *rawEvent) Type() eq.EventType { return eq.EventType(e.kind) }

// Source implements eq.Event: the C fid inside the entry is the
// application's business.
func (e *rawEvent) Source() fi.Fid { return nil }

const (
	eqEntrySize   = C.sizeof_struct_fi_eq_entry
	eqCMEntrySize = C.sizeof_struct_fi_eq_cm_entry
)

// waitCtx returns the context of a blocking call with a timeout in
// milliseconds (negative: none).
func waitCtx(timeout C.int) (context.Context, context.CancelFunc) {
	if timeout < 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), time.Duration(timeout)*time.Millisecond)
}

// fidContext returns the context of a C fid (its fid.context), which
// events about the fid carry when the operation had none.
func fidContext(cfid unsafe.Pointer) unsafe.Pointer {
	if cfid == nil {
		return nil
	}
	return (*C.struct_fid)(cfid).context
}

// toC returns the C form of a Go event. FI_CONNREQ entries get a fi_info
// the application frees and a connection request handle.
func (q *eqObj) toC(ev eq.Event) heldEvent {
	switch ev := ev.(type) {
	case *rawEvent:
		return heldEvent{kind: ev.kind, data: ev.data}
	case *eq.ConnReq:
		var info *C.struct_fi_info
		if ev.Info != nil {
			h := cgo.NewHandle(&connReqObj{handle: ev.Info.Handle})
			cr := C.gfi_connreq_new(C.uintptr_t(h))
			if cr == nil {
				h.Delete()
			}
			info = infoToC(ev.Info, q.fab.slot, true, q.fab, cr)
		}
		return cmEntry(ev.Type(), cfidOf(ev.Fid), info, ev.Data)
	case *eq.Connected:
		return cmEntry(ev.Type(), cfidOf(ev.Fid), nil, ev.Data)
	case *eq.Shutdown:
		return cmEntry(ev.Type(), cfidOf(ev.Fid), nil, nil)
	case *eq.JoinComplete:
		return plainEntry(ev.Type(), cfidOf(ev.Fid), ev.Context, 0)
	case *eq.MRComplete:
		return plainEntry(ev.Type(), cfidOf(ev.Fid), ev.Context, 0)
	case *eq.AVComplete:
		return plainEntry(ev.Type(), cfidOf(ev.Fid), ev.Context, ev.Data)
	case *eq.Notify:
		return plainEntry(ev.Type(), cfidOf(ev.Fid), ev.Context, ev.Data)
	}
	return plainEntry(ev.Type(), cfidOf(ev.Source()), nil, 0)
}

// cmEntry builds a struct fi_eq_cm_entry with its private data.
func cmEntry(kind eq.EventType, fid unsafe.Pointer, info *C.struct_fi_info, data []byte) heldEvent {
	b := make([]byte, eqCMEntrySize+len(data))
	e := (*C.struct_fi_eq_cm_entry)(unsafe.Pointer(&b[0]))
	e.fid, e.info = (*C.struct_fid)(fid), info
	copy(b[eqCMEntrySize:], data)
	return heldEvent{kind: uint32(kind), data: b}
}

// plainEntry builds a struct fi_eq_entry; a nil context is the fid's.
func plainEntry(kind eq.EventType, fid unsafe.Pointer, ctx any, data uint64) heldEvent {
	b := make([]byte, eqEntrySize)
	e := (*C.struct_fi_eq_entry)(unsafe.Pointer(&b[0]))
	c := cctx(ctx)
	if c == nil {
		c = fidContext(fid)
	}
	e.fid, e.context, e.data = (*C.struct_fid)(fid), c, C.uint64_t(data)
	return heldEvent{kind: uint32(kind), data: b}
}

// freeHeld frees the C parts of an event nobody read.
func freeHeld(h heldEvent) {
	if eq.EventType(h.kind) == eq.EventConnReq && len(h.data) >= eqCMEntrySize {
		e := (*C.struct_fi_eq_cm_entry)(unsafe.Pointer(&h.data[0]))
		if e.info != nil {
			C.fi_freeinfo(e.info)
		}
	}
}

// deliver copies an event into the application's buffer and returns the
// bytes written, or -FI_ETOOSMALL when even the fixed part does not fit.
func deliver(h heldEvent, event *C.uint32_t, buf unsafe.Pointer, n C.size_t) C.ssize_t {
	min := len(h.data)
	switch eq.EventType(h.kind) {
	case eq.EventConnReq, eq.EventConnected, eq.EventShutdown:
		min = eqCMEntrySize // private data is copied up to the space given
	}
	if int(n) < min || (buf == nil && min > 0) {
		return -C.FI_ETOOSMALL
	}
	*event = C.uint32_t(h.kind)
	return C.ssize_t(copy(bytesAt(buf, uintptr(n)), h.data))
}

// goEQRead is fi_eq_read and fi_eq_sread (block set; timeout in
// milliseconds, negative for none), with FI_PEEK.
//
//export goEQRead
func goEQRead(h C.uintptr_t, event *C.uint32_t, buf unsafe.Pointer, n C.size_t, block, timeout C.int, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_eq_read")
	q, _ := objOf(uintptr(h)).(*eqObj)
	if q == nil || event == nil {
		return -C.FI_EINVAL
	}
	peek := fi.Flags(flags)&fi.FlagPeek != 0
	q.mu.Lock()
	if len(q.held) > 0 {
		hv := q.held[0]
		rc = deliver(hv, event, buf, n)
		if rc >= 0 && !peek {
			q.held = q.held[1:]
		}
		q.mu.Unlock()
		return rc
	}
	q.mu.Unlock()
	var (
		ev  eq.Event
		err error
	)
	if block != 0 {
		ctx, cancel := waitCtx(timeout)
		ev, err = q.q.SRead(ctx)
		cancel()
	} else {
		ev, err = q.q.Read()
	}
	if err != nil {
		switch c := errnoOf(err); c {
		case fi.ETIMEDOUT, fi.ECANCELED:
			return -C.FI_EAGAIN
		default:
			return -C.ssize_t(c)
		}
	}
	hv := q.toC(ev)
	rc = deliver(hv, event, buf, n)
	if rc < 0 || peek {
		q.mu.Lock()
		q.held = append([]heldEvent{hv}, q.held...)
		q.mu.Unlock()
	}
	return rc
}

// goEQReadErr is fi_eq_readerr: it returns sizeof(struct
// fi_eq_err_entry). err_data is copied into the application's buffer when
// it gives one (API 1.5 and later), else it points at the queue's copy,
// valid until the next fi_eq_readerr.
//
//export goEQReadErr
func goEQReadErr(h C.uintptr_t, e *C.struct_fi_eq_err_entry, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_eq_readerr")
	q, _ := objOf(uintptr(h)).(*eqObj)
	if q == nil || e == nil {
		return -C.FI_EINVAL
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.held) > 0 {
		return -C.FI_EAGAIN // an event comes first
	}
	ee, err := q.q.ReadErr()
	if err != nil {
		return -C.ssize_t(errnoOf(err))
	}
	fid := cfidOf(ee.Fid)
	c := cctx(ee.Context)
	if c == nil {
		c = fidContext(fid)
	}
	e.fid, e.context, e.data = (*C.struct_fid)(fid), c, C.uint64_t(ee.Data)
	e.err, e.prov_errno = C.int(ee.Err), C.int(ee.ProvErrno)
	e.err_data, e.err_data_size = errData(q.fab, &q.errData, ee.ErrData, e.err_data, e.err_data_size)
	return C.sizeof_struct_fi_eq_err_entry
}

// errData returns err_data and err_data_size of an error entry: data
// copied into the application's buffer (p, n) when it gives one and the
// API is 1.5 or later, else the queue's own copy in *keep (the previous
// one freed).
func errData(fab *fabricObj, keep *unsafe.Pointer, data []byte, p unsafe.Pointer, n C.size_t) (unsafe.Pointer, C.size_t) {
	if fab.apiVersion() >= fi.MakeVersion(1, 5) && p != nil && n > 0 {
		return p, C.size_t(copy(bytesAt(p, uintptr(n)), data))
	}
	freeC(*keep)
	*keep = nil
	if len(data) == 0 {
		return nil, 0
	}
	*keep = C.CBytes(data)
	return *keep, C.size_t(len(data))
}

// goEQWrite is fi_eq_write: the entry is queued as written. The queue
// must have been opened with FI_WRITE.
//
//export goEQWrite
func goEQWrite(h C.uintptr_t, event C.uint32_t, buf unsafe.Pointer, n C.size_t, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_eq_write")
	q, _ := objOf(uintptr(h)).(*eqObj)
	if q == nil || (buf == nil && n > 0) {
		return -C.FI_EINVAL
	}
	ev := &rawEvent{kind: uint32(event), data: append([]byte(nil), bytesAt(buf, uintptr(n))...)}
	if err := q.q.Write(ev); err != nil {
		return -C.ssize_t(q.fab.slot.code("eq_write", err))
	}
	return C.ssize_t(n)
}
