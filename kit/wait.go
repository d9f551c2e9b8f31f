package kit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gofabric/gofabric/fi"
)

// WaitFunc is a provider's wait hook (the Go form of libfabric's wait
// objects behind fi_cq_sread, fi_eq_sread and fi_cntr_wait). A queue whose
// provider drives I/O only from the progress hook (manual progress, no
// goroutine to post completions) installs one, and the queue's blocking
// calls then call it, instead of sleeping, whenever progress found nothing.
// So does the queue's FI_WAIT_FD watcher (see hooks), while the
// application blocks on the queue's wait descriptor.
//
// It must block until progress may find new work (a socket became
// readable, a peer wrote to shared memory) or ctx is done, and then return;
// it must not spin. ctx is done when the caller's context ends, when the
// queue gets an entry or a Signal, and when the queue is closed, so a hook
// over the runtime netpoller can end its wait with context.AfterFunc(ctx,
// func() { conn.SetReadDeadline(aLongTimeAgo) }), leaving no goroutine
// behind. A nil return, or an error while ctx is done, makes the queue run
// progress and look again; any other error ends the blocking call with that
// error. Several calls may run at once (readers of the queue, and its
// watcher).
type WaitFunc func(ctx context.Context) error

// hooks holds a queue's progress and wait hooks and wakes its blocked
// readers. A blocked reader registers a cancellable context (arm), checks
// its queue, and only then sleeps on that context (sleep); notify cancels
// every registered context. Registering before checking means a notify
// that lands between the check and the sleep is never lost, and needs no
// goroutine.
//
// A queue opened with fi.WaitFD also has a wait descriptor (fd), which
// the application blocks on with poll(2) after tryWait armed it: notify
// then makes it readable. One opened with fi.WaitUnspec gets it at the
// first WaitFD or TryWait, as C's providers give FI_WAIT_UNSPEC objects
// a descriptor (C's ofi_rxm asks its core provider's FI_WAIT_UNSPEC event
// queue for one), and a queue that is never asked pays nothing. The descriptor is the only waiter notify has to
// wake, so it counts in nwait like a registered reader, and the data path
// pays nothing more for it while nobody waits. When the provider has a
// wait hook (manual progress), arming it also kicks the queue's watcher,
// one goroutine per queue, started by the first tryWait and ended by
// close, which does what a blocked SRead does for as long as the
// descriptor stays armed: it registers, runs progress, and sleeps in the
// wait hook, so that the entries the application waits for arrive and
// notify makes the descriptor readable. While the descriptor is not
// armed the watcher sleeps on a channel and costs nothing.
type hooks struct {
	progress atomic.Pointer[func()]
	wait     atomic.Pointer[WaitFunc]
	// nwait is len(regs), plus one while fd is armed, read without mu so
	// that notify costs one atomic load when nobody waits.
	nwait atomic.Int32
	// fdMode says whether the queue has a wait descriptor. Set at open.
	fdMode fdMode

	mu   sync.Mutex // guards regs, closed, fd, and fd's fields as waitFD says
	regs []*waitReg
	// fd is the wait descriptor, nil until made (at open for fdEager, at
	// the first WaitFD or TryWait for fdLazy); once made it stays.
	fd     *waitFD
	closed bool // close ran: the watcher arms no more
}

// fdMode is whether and when a queue gets a wait descriptor.
type fdMode uint8

const (
	fdNone  fdMode = iota // fi.WaitNone: none
	fdLazy                // fi.WaitUnspec: at the first WaitFD or TryWait
	fdEager               // fi.WaitFD: at open
)

// waitReg is one blocked reader's registration.
type waitReg struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// waitFD is a queue's FI_WAIT_FD wait object: an eventfd (Linux), readable
// while signalled. Its fields are guarded by hooks.mu, so that no write or
// read of the descriptor races its close.
type waitFD struct {
	fd    int     // the descriptor; -1 once closed
	armed bool    // tryWait armed it: the next notify signals it
	dirty bool    // it was signalled since the last drain
	buf   [8]byte // drain's read buffer
	// err is the wait hook's failure in the watcher, for the next
	// tryWait to return.
	err   error
	going bool          // the watcher runs
	kick  chan struct{} // wakes the watcher; one pending kick at most
	stop  chan struct{} // closed by close: the watcher returns
	wg    sync.WaitGroup
}

// initFD sets the queue's descriptor mode from its wait object, and
// makes the descriptor now for fi.WaitFD. It runs at open, before the
// queue is shared.
func (h *hooks) initFD(w fi.WaitObj) error {
	switch w {
	case fi.WaitFD:
		h.fdMode = fdEager
		_, err := h.fdLocked()
		return err
	case fi.WaitUnspec:
		h.fdMode = fdLazy
	}
	return nil
}

// fdLocked returns the wait descriptor, making it when the queue may have
// one and has none yet; nil when the queue has none or is closed. mu is
// held (or the queue is not shared yet).
func (h *hooks) fdLocked() (*waitFD, error) {
	if h.fd == nil && h.fdMode != fdNone && !h.closed {
		fd, err := newEventFD()
		if err != nil {
			return nil, err
		}
		h.fd = &waitFD{fd: fd, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	}
	return h.fd, nil
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

// count updates nwait; mu is held.
func (h *hooks) count() {
	n := len(h.regs)
	if h.fd != nil && h.fd.armed {
		n++
	}
	h.nwait.Store(int32(n))
}

// arm registers a blocked reader; the caller checks its queue next and then
// calls sleep, or disarm if it need not sleep.
func (h *hooks) arm(ctx context.Context) *waitReg {
	wctx, cancel := context.WithCancel(ctx)
	r := &waitReg{ctx: wctx, cancel: cancel}
	h.mu.Lock()
	h.regs = append(h.regs, r)
	h.count()
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
	h.count()
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

// notify wakes every blocked reader and signals the wait descriptor if
// it is armed. It is called after an entry is queued, on Signal and on
// Close, and costs one atomic load when nobody waits.
func (h *hooks) notify() {
	if h.nwait.Load() == 0 {
		return
	}
	h.mu.Lock()
	h.wakeLocked()
	h.mu.Unlock()
}

// wakeLocked is notify's work; mu is held.
func (h *hooks) wakeLocked() {
	for i, r := range h.regs {
		r.cancel()
		h.regs[i] = nil
	}
	h.regs = h.regs[:0]
	if f := h.fd; f != nil && f.armed {
		f.armed = false
		f.signal()
	}
	h.nwait.Store(0)
}

// signal makes the descriptor readable; hooks.mu is held.
func (f *waitFD) signal() {
	if f.fd >= 0 && !f.dirty {
		f.dirty = true
		signalEventFD(f.fd)
	}
}

// close wakes every blocked reader, makes the wait descriptor readable
// (waking a thread blocked on it in poll), ends the watcher and closes the
// descriptor. The queue's Close calls it once, after the queue is marked
// closed.
func (h *hooks) close() {
	h.mu.Lock()
	h.closed = true
	h.wakeLocked()
	f := h.fd
	if f != nil {
		f.signal()
		close(f.stop)
	}
	h.mu.Unlock()
	if f == nil {
		return
	}
	f.wg.Wait()
	h.mu.Lock()
	if f.fd >= 0 {
		closeEventFD(f.fd)
		f.fd = -1
	}
	h.mu.Unlock()
}

// waitFD returns the descriptor for WaitFD (fi_control FI_GETWAIT),
// making it for an fi.WaitUnspec queue: ok is false when the queue has
// none, fd is -1 after close.
func (h *hooks) waitFD() (fd int, ok bool, err error) {
	if h.fdMode == fdNone {
		return -1, false, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f, err := h.fdLocked()
	if err != nil || f == nil {
		return -1, true, err
	}
	return f.fd, true, nil
}

// tryWait is fi_trywait for a queue: pending reports whether the queue
// holds something to read. It clears the descriptor, runs progress and
// looks; if nothing is there it arms the descriptor, looks again (an
// entry queued in between notified nobody), and kicks the watcher. It
// returns nil when the caller may block on the descriptor, bare fi.EAGAIN
// when it must read first, fi.EINVAL without a descriptor and fi.EBADF
// after close. It does not allocate (pending must not escape), but for
// making an fi.WaitUnspec queue's descriptor at the first call.
func (h *hooks) tryWait(pending func() bool) error {
	if h.fdMode == fdNone {
		return fi.EINVAL
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fi.EBADF
	}
	f, err := h.fdLocked()
	if err != nil {
		h.mu.Unlock()
		return err
	}
	if err := f.err; err != nil {
		f.err = nil
		h.mu.Unlock()
		return err
	}
	if f.dirty {
		drainEventFD(f.fd, &f.buf)
		f.dirty = false
	}
	h.mu.Unlock()
	h.runProgress()
	if pending() {
		return fi.EAGAIN
	}
	if testHookBeforeArm != nil {
		testHookBeforeArm()
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fi.EBADF
	}
	f.armed = true
	h.count()
	h.mu.Unlock()
	if pending() {
		h.mu.Lock()
		f.armed = false
		h.count()
		h.mu.Unlock()
		return fi.EAGAIN
	}
	if h.wait.Load() != nil {
		h.kickWatcher(f)
	}
	return nil
}

// testHookBeforeArm runs in tryWait between its first look and the
// arming, where tests queue an entry.
var testHookBeforeArm func()

// kickWatcher starts f's watcher on first use and wakes it.
func (h *hooks) kickWatcher(f *waitFD) {
	h.mu.Lock()
	if !f.going && !h.closed {
		f.going = true
		f.wg.Add(1)
		go h.watch(f)
	}
	h.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default: // a kick is pending already
	}
}

// watch is the watcher: while the descriptor is armed, it drives the
// queue's progress the way a blocked SRead does, and sleeps in the wait
// hook until progress may find work; notify (an entry, a signal, close)
// ends its wait and disarms the descriptor, and it goes back to sleep
// until the next kick.
func (h *hooks) watch(f *waitFD) {
	defer f.wg.Done()
	for {
		select {
		case <-f.kick:
		case <-f.stop:
			return
		}
		for {
			r := h.armWatch(f)
			if r == nil {
				break
			}
			h.runProgress()
			if err := h.sleep(r); err != nil {
				h.mu.Lock()
				if f.armed {
					f.armed = false
					f.err = err
					f.signal()
					h.count()
				}
				h.mu.Unlock()
				break
			}
		}
	}
}

// armWatch registers the watcher as a blocked reader when f is armed and
// the queue open, and returns nil otherwise.
func (h *hooks) armWatch(f *waitFD) *waitReg {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !f.armed {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &waitReg{ctx: ctx, cancel: cancel}
	h.regs = append(h.regs, r)
	h.count()
	return r
}
