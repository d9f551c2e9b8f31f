package provutil

import (
	"context"
	"sync"
	"sync/atomic"
)

// WaitFunc is a provider's wait hook (the Go form of libfabric's wait
// objects behind fi_cq_sread, fi_eq_sread and fi_cntr_wait). A queue whose
// provider drives I/O only from the progress hook (manual progress, no
// goroutine to post completions) installs one, and the queue's blocking
// calls then call it, instead of sleeping, whenever progress found nothing.
//
// It must block until progress may find new work (a socket became
// readable, a peer wrote to shared memory) or ctx is done, and then return;
// it must not spin. ctx is done when the caller's context ends, when the
// queue gets an entry or a Signal, and when the queue is closed, so a hook
// over the runtime netpoller can end its wait with context.AfterFunc(ctx,
// func() { conn.SetReadDeadline(aLongTimeAgo) }), leaving no goroutine
// behind. A nil return, or an error while ctx is done, makes the queue run
// progress and look again; any other error ends the blocking call with that
// error.
type WaitFunc func(ctx context.Context) error

// hooks holds a queue's progress and wait hooks and wakes its blocked
// readers. A blocked reader registers a cancellable context (arm), checks
// its queue, and only then sleeps on that context (sleep); notify cancels
// every registered context. Registering before checking means a notify
// that lands between the check and the sleep is never lost, and needs no
// goroutine.
type hooks struct {
	progress atomic.Pointer[func()]
	wait     atomic.Pointer[WaitFunc]
	// nwait is len(regs), read without mu so that notify costs one atomic
	// load when nobody waits.
	nwait atomic.Int32
	mu    sync.Mutex // guards regs
	regs  []*waitReg
}

// waitReg is one blocked reader's registration.
type waitReg struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (h *hooks) setProgress(f func()) {
	if f == nil {
		h.progress.Store(nil)
		return
	}
	h.progress.Store(&f)
}

func (h *hooks) setWaiter(f WaitFunc) {
	if f == nil {
		h.wait.Store(nil)
		return
	}
	h.wait.Store(&f)
}

// runProgress calls the progress hook, if any. Callers hold no lock: the
// hook posts entries, which takes the queue's lock.
func (h *hooks) runProgress() {
	if p := h.progress.Load(); p != nil {
		(*p)()
	}
}

// arm registers a blocked reader; the caller checks its queue next and then
// calls sleep, or disarm if it need not sleep.
func (h *hooks) arm(ctx context.Context) *waitReg {
	wctx, cancel := context.WithCancel(ctx)
	r := &waitReg{ctx: wctx, cancel: cancel}
	h.mu.Lock()
	h.regs = append(h.regs, r)
	h.nwait.Store(int32(len(h.regs)))
	h.mu.Unlock()
	return r
}

// disarm removes r, if notify has not already, and releases its context.
func (h *hooks) disarm(r *waitReg) {
	r.cancel()
	h.mu.Lock()
	for i, x := range h.regs {
		if x == r {
			last := len(h.regs) - 1
			h.regs[i] = h.regs[last]
			h.regs[last] = nil
			h.regs = h.regs[:last]
			break
		}
	}
	h.nwait.Store(int32(len(h.regs)))
	h.mu.Unlock()
}

// sleep blocks until r is notified or its parent context ends, through the
// wait hook when one is set, and then disarms r. It returns the hook's
// error when the hook failed on its own.
func (h *hooks) sleep(r *waitReg) error {
	defer h.disarm(r)
	if w := h.wait.Load(); w != nil {
		if err := (*w)(r.ctx); err != nil && r.ctx.Err() == nil {
			return err
		}
		return nil
	}
	<-r.ctx.Done()
	return nil
}

// notify wakes every blocked reader. It is called after an entry is
// queued, on Signal and on Close, and costs one atomic load when nobody
// waits.
func (h *hooks) notify() {
	if h.nwait.Load() == 0 {
		return
	}
	h.mu.Lock()
	for i, r := range h.regs {
		r.cancel()
		h.regs[i] = nil
	}
	h.regs = h.regs[:0]
	h.nwait.Store(0)
	h.mu.Unlock()
}
