//go:build cgo && linux

package main

/*
#include "bridge.h"
*/
import "C"

import (
	"context"
	"sync"
	"unsafe"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Completion queues (struct fi_ops_cq) and counters (struct
// fi_ops_cntr). Reads go through a pooled batch of Go completions, so
// that fi_cq_read allocates nothing.

// cqBatch is the most completions one read returns.
const cqBatch = 64

// cqScratch is a read's batch.
type cqScratch struct {
	c   [cqBatch]eq.Completion
	src [cqBatch]fi.Addr
}

var cqPool = sync.Pool{New: func() any { return new(cqScratch) }}

// ptrOf returns the address where a buffer starts, nil for one of no
// capacity: a zero-length message of a multi-receive buffer (FI_MULTI_RECV)
// still says where it landed, as C's shm does. Completion and error
// buffers point into the application's posted buffers, which are C
// memory.
func ptrOf(b []byte) unsafe.Pointer {
	if cap(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// putEntries writes completions in the queue's format.
func putEntries(f eq.CQFormat, buf unsafe.Pointer, cs []eq.Completion) {
	n := len(cs)
	switch f {
	case eq.FormatContext:
		es := unsafe.Slice((*C.struct_fi_cq_entry)(buf), n)
		for i := range cs {
			es[i].op_context = cctx(cs[i].Context)
		}
	case eq.FormatMsg:
		es := unsafe.Slice((*C.struct_fi_cq_msg_entry)(buf), n)
		for i := range cs {
			c := &cs[i]
			es[i] = C.struct_fi_cq_msg_entry{op_context: cctx(c.Context), flags: C.uint64_t(c.Flags), len: C.size_t(c.Len)}
		}
	case eq.FormatData:
		es := unsafe.Slice((*C.struct_fi_cq_data_entry)(buf), n)
		for i := range cs {
			c := &cs[i]
			es[i] = C.struct_fi_cq_data_entry{op_context: cctx(c.Context), flags: C.uint64_t(c.Flags),
				len: C.size_t(c.Len), buf: ptrOf(c.Buf), data: C.uint64_t(c.Data)}
		}
	default:
		es := unsafe.Slice((*C.struct_fi_cq_tagged_entry)(buf), n)
		for i := range cs {
			c := &cs[i]
			es[i] = C.struct_fi_cq_tagged_entry{op_context: cctx(c.Context), flags: C.uint64_t(c.Flags),
				len: C.size_t(c.Len), buf: ptrOf(c.Buf), data: C.uint64_t(c.Data), tag: C.uint64_t(c.Tag)}
		}
	}
}

// goCQRead is fi_cq_read, fi_cq_readfrom (src set), fi_cq_sread and
// fi_cq_sreadfrom (block set; timeout in milliseconds, negative for
// none). A read returns at most 64 completions. The blocking forms return
// -FI_EAGAIN on timeout and after fi_cq_signal.
//
//export goCQRead
func goCQRead(h C.uintptr_t, buf unsafe.Pointer, count C.size_t, src *C.fi_addr_t, block, timeout C.int) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_cq_read")
	q, _ := objOf(uintptr(h)).(*cqObj)
	if q == nil || (buf == nil && count > 0) {
		return -C.FI_EINVAL
	}
	k := min(int(count), cqBatch)
	sc := cqPool.Get().(*cqScratch)
	defer cqPool.Put(sc)
	var (
		n   int
		err error
	)
	switch {
	case block != 0:
		n, err = q.sread(sc, k, src != nil, timeout)
	case src != nil:
		n, err = q.q.ReadFrom(sc.c[:k], sc.src[:k])
	default:
		n, err = q.q.Read(sc.c[:k])
	}
	if err != nil {
		return -C.ssize_t(errnoOf(err))
	}
	putEntries(q.format, buf, sc.c[:n])
	if src != nil {
		s := unsafe.Slice(src, n)
		for i := range n {
			s[i] = C.fi_addr_t(sc.src[i])
		}
	}
	return C.ssize_t(n)
}

// sread waits for completions: fi_cq_sread, or fi_cq_sreadfrom (from),
// which gofabric's SRead lacks: it waits with an empty SRead, which
// returns once the queue holds an entry, and then reads with ReadFrom.
func (q *cqObj) sread(sc *cqScratch, k int, from bool, timeout C.int) (int, error) {
	if q.signaled.Swap(false) {
		return 0, fi.EAGAIN
	}
	ctx, cancel := waitCtx(timeout)
	defer cancel()
	id := q.addWaiter(cancel)
	defer q.dropWaiter(id)
	for {
		var (
			n   int
			err error
		)
		if from {
			if n, err = q.q.ReadFrom(sc.c[:k], sc.src[:k]); err == fi.EAGAIN {
				_, err = q.q.SRead(ctx, nil)
				if err == nil {
					continue
				}
			}
		} else {
			n, err = q.q.SRead(ctx, sc.c[:k])
		}
		if err != nil && ctx.Err() != nil {
			q.signaled.Store(false)
			return 0, fi.EAGAIN // timeout, or fi_cq_signal
		}
		return n, err
	}
}

// addWaiter registers the cancel function of a blocked sread, which
// fi_cq_signal calls.
func (q *cqObj) addWaiter(cancel context.CancelFunc) uint64 {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	if q.waiters == nil {
		q.waiters = make(map[uint64]context.CancelFunc)
	}
	q.wseq++
	q.waiters[q.wseq] = cancel
	return q.wseq
}

func (q *cqObj) dropWaiter(id uint64) {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	delete(q.waiters, id)
}

// goCQSignal is fi_cq_signal: blocked sreads return -FI_EAGAIN, and so
// does the next one when none is blocked.
//
//export goCQSignal
func goCQSignal(h C.uintptr_t) (rc C.int) {
	defer recoverInt(&rc, "fi_cq_signal")
	q, _ := objOf(uintptr(h)).(*cqObj)
	if q == nil {
		return -C.FI_EINVAL
	}
	q.wmu.Lock()
	defer q.wmu.Unlock()
	if len(q.waiters) == 0 {
		q.signaled.Store(true)
	}
	for _, cancel := range q.waiters {
		cancel()
	}
	return 0
}

// goCQReadErr is fi_cq_readerr: it returns 1. err_data as in
// fi_eq_readerr.
//
//export goCQReadErr
func goCQReadErr(h C.uintptr_t, e *C.struct_fi_cq_err_entry, flags C.uint64_t) (rc C.ssize_t) {
	defer recoverInt(&rc, "fi_cq_readerr")
	q, _ := objOf(uintptr(h)).(*cqObj)
	if q == nil || e == nil {
		return -C.FI_EINVAL
	}
	ce, err := q.q.ReadErr()
	if err != nil {
		return -C.ssize_t(errnoOf(err))
	}
	e.op_context, e.flags, e.len = cctx(ce.Context), C.uint64_t(ce.Flags), C.size_t(ce.Len)
	e.buf, e.data, e.tag, e.olen = ptrOf(ce.Buf), C.uint64_t(ce.Data), C.uint64_t(ce.Tag), C.size_t(ce.OLen)
	e.err, e.prov_errno = C.int(ce.Err), C.int(ce.ProvErrno)
	q.mu.Lock()
	e.err_data, e.err_data_size = errData(q.fab, &q.errData, ce.ErrData, e.err_data, e.err_data_size)
	q.mu.Unlock()
	return 1
}

// goCntrRead is fi_cntr_read (errs 0) and fi_cntr_readerr (errs 1).
//
//export goCntrRead
func goCntrRead(h C.uintptr_t, errs C.int) (v C.uint64_t) {
	defer recoverZero(&v, "fi_cntr_read")
	k, _ := objOf(uintptr(h)).(*cntrObj)
	if k == nil {
		return 0
	}
	if errs != 0 {
		return C.uint64_t(k.c.ReadErr())
	}
	return C.uint64_t(k.c.Read())
}

// goCntrUpdate is fi_cntr_add (op 0), fi_cntr_set (1), fi_cntr_adderr
// (2) and fi_cntr_seterr (3).
//
//export goCntrUpdate
func goCntrUpdate(h C.uintptr_t, op C.int, v C.uint64_t) (rc C.int) {
	defer recoverInt(&rc, "fi_cntr_add")
	k, _ := objOf(uintptr(h)).(*cntrObj)
	if k == nil {
		return -C.FI_EINVAL
	}
	var err error
	switch op {
	case 0:
		err = k.c.Add(uint64(v))
	case 1:
		err = k.c.Set(uint64(v))
	case 2:
		err = k.c.AddErr(uint64(v))
	default:
		err = k.c.SetErr(uint64(v))
	}
	return -C.int(errnoOf(nilOr(err)))
}

// goCntrWait is fi_cntr_wait: -FI_ETIMEDOUT on timeout, -FI_EAVAIL when
// the error count changes.
//
//export goCntrWait
func goCntrWait(h C.uintptr_t, threshold C.uint64_t, timeout C.int) (rc C.int) {
	defer recoverInt(&rc, "fi_cntr_wait")
	k, _ := objOf(uintptr(h)).(*cntrObj)
	if k == nil {
		return -C.FI_EINVAL
	}
	ctx, cancel := waitCtx(timeout)
	defer cancel()
	return -C.int(errnoOf(nilOr(k.c.Wait(ctx, uint64(threshold)))))
}

// nilOr maps a nil error to fi.SUCCESS, for errnoOf.
func nilOr(err error) error {
	if err == nil {
		return fi.SUCCESS
	}
	return err
}

// recoverZero turns a panic of an entry point that has no error return
// into a zero result.
func recoverZero[T any](v *T, op string) {
	if r := recover(); r != nil {
		panicked(op, r)
		var zero T
		*v = zero
	}
}
