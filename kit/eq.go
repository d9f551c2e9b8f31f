package kit

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// DefaultEQSize is the capacity an EQ gets when eq.Attr.Size
// (fi_eq_attr.size) is zero.
const DefaultEQSize = 256

// EQ is the framework's software event queue (libfabric's util EQ,
// struct util_eq; fi_eq(3)); providers return it from OpenEQ as an
// eq.EventQueue.
//
// Events and error entries share one FIFO, so an error is read in its
// place: Read reports fi.EAVAIL when an error entry is next. Providers
// queue with Post and PostErr, which never refuse an entry (a lost CM
// event would hang a connection), so the queue grows past its size when
// the application does not read; applications queue with Write and
// WriteErr, which need fi.FlagWrite and return bare fi.EAGAIN once the
// queue holds eq.Attr.Size entries.
//
// SRead works with any accepted wait object, FI_WAIT_NONE included: it
// needs no OS object. With fi.WaitFD the queue also has a wait descriptor
// (WaitFD, TryWait; eq.FDWaiter). All methods are safe for concurrent
// use; Read, Peek, ReadErr and TryWait never block and do not allocate.
type EQ struct {
	ref      Ref
	prov     string // names the queue in messages: the provider, or "eq"
	h        hooks
	size     int
	writable bool

	mu sync.Mutex // guards q
	q  ring[eqEntry]
}

// eqEntry is a queued event or, when err is set, an error entry.
type eqEntry struct {
	ev  eq.Event
	err *eq.EQError
}

var (
	_ eq.EventQueue = (*EQ)(nil)
	_ eq.FDWaiter   = (*EQ)(nil)
)

// NewEQ returns an open EQ for attr (fi_eq_open's checks of struct
// fi_eq_attr). It returns fi.EINVAL for a negative size and fi.ENOSYS for
// a wait object other than fi.WaitNone, fi.WaitUnspec and fi.WaitFD (and
// for fi.WaitFD off Linux). Its messages
// name the eq package ("eq: open eq: size -1"); a provider's EQ comes from
// OpenChildEQ, whose messages name the provider.
func NewEQ(attr *eq.Attr) (*EQ, error) { return newEQ("eq", attr) }

func newEQ(prov string, attr *eq.Attr) (*EQ, error) {
	if attr == nil {
		attr = &eq.Attr{}
	}
	if attr.Size < 0 {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open eq: size %d is negative", prov, attr.Size)
	}
	if err := checkWaitObj(prov, "eq", attr.WaitObj); err != nil {
		return nil, err
	}
	size := attr.Size
	if size == 0 {
		size = DefaultEQSize
	}
	q := &EQ{prov: prov, size: size, writable: attr.Flags&fi.FlagWrite != 0}
	if err := q.h.initFD(attr.WaitObj); err != nil {
		return nil, errors.Wrapf(err, "%s: open eq", prov)
	}
	return q, nil
}

// checkWaitObj accepts the wait objects the software queues serve.
func checkWaitObj(prov, what string, w fi.WaitObj) error {
	if w != fi.WaitNone && w != fi.WaitUnspec && w != fi.WaitFD {
		return errors.WithHint(
			errors.Wrapf(fi.ENOSYS, "%s: open %s: wait object %v not supported", prov, what, w),
			"use fi.WaitUnspec and the blocking calls, which take a context (SRead, Wait), or fi.WaitFD and poll(2)")
	}
	return nil
}

// waitFDOf is WaitFD of the queues and counters: what names the object
// in messages ("cq").
func waitFDOf(h *hooks, prov, what string) (int, error) {
	fd, ok, err := h.waitFD()
	switch {
	case !ok:
		return -1, errors.WithHint(
			errors.Wrapf(fi.ENODATA, "%s: %s wait fd: opened with FI_WAIT_NONE", prov, what),
			"open it with WaitObj fi.WaitFD")
	case err != nil:
		return -1, errors.Wrapf(err, "%s: %s", prov, what)
	case fd < 0:
		return -1, errors.Wrapf(fi.EBADF, "%s: %s wait fd: closed", prov, what)
	}
	return fd, nil
}

// Size returns the queue's capacity for application writes
// (fi_eq_attr.size, or DefaultEQSize).
func (q *EQ) Size() int { return q.size }

// Acquire takes a reference on the queue for an endpoint, active or
// passive, bound to it (fi_ep_bind, fi_pep_bind); Close returns fi.EBUSY
// until Release. It returns bare fi.EBADF after Close.
func (q *EQ) Acquire() error { return q.ref.AcquireKind(KindEndpoint) }

// Release drops a reference taken by Acquire.
func (q *EQ) Release() { q.ref.ReleaseKind(KindEndpoint) }

// SetProgress installs the provider's progress function, run by Read,
// Peek, ReadErr and every SRead round that find the queue empty, before
// they look again (the manual-progress hook of libfabric's tcp EQ, which
// drives connection management from fi_eq_read). A read that finds an
// entry returns it without progress: the hook may cost a look at every
// bound endpoint, and an application draining a burst of N connection
// events must not pay N such rounds (issue 22); progress runs again once
// the burst is drained. nil removes it. It is called with no queue lock
// held, so it may Post.
func (q *EQ) SetProgress(f func()) { q.h.setProgress(f) }

// SetWaiter installs the provider's wait hook for SRead; see WaitFunc. nil
// removes it.
func (q *EQ) SetWaiter(f WaitFunc) { q.h.setWaiter(f) }

// Signal wakes blocked SRead calls so they run progress and look again,
// for providers whose readiness is known without a wait hook (the EQ side
// of fi_cq_signal). It makes no call fail; cancel the context for that.
// An armed wait descriptor becomes readable too.
func (q *EQ) Signal() { q.h.notify() }

// WaitFD returns the queue's wait descriptor (fi_control with FI_GETWAIT;
// eq.FDWaiter): an error with fi.ENODATA when the queue was opened
// with fi.WaitNone, fi.EBADF after Close; an fi.WaitUnspec queue gets its
// descriptor here.
func (q *EQ) WaitFD() (int, error) { return waitFDOf(&q.h, q.prov, "eq") }

// TryWait is fi_trywait for the queue (eq.FDWaiter): it runs progress and
// returns bare fi.EAGAIN when an event or error entry is queued, else arms
// the wait descriptor, which the next event (or, under manual progress,
// work progress may find) makes readable, and returns nil. It returns bare
// fi.EINVAL when the queue was opened with fi.WaitNone and fi.EBADF
// after Close.
func (q *EQ) TryWait() error { return q.h.tryWait(q.pending) }

// pending reports whether an entry is queued.
func (q *EQ) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q.len() > 0
}

// Post queues an event from the provider (libfabric's ofi_eq_write from
// inside a provider). It never refuses for space. It returns bare
// fi.EINVAL for a nil event and fi.EBADF after Close.
func (q *EQ) Post(ev eq.Event) error {
	if ev == nil {
		return fi.EINVAL
	}
	return q.push(eqEntry{ev: ev}, false)
}

// PostErr queues an error entry from the provider (ofi_eq_write with
// UTIL_FLAG_ERROR). It never refuses for space. It returns bare fi.EINVAL
// for a nil entry and fi.EBADF after Close.
func (q *EQ) PostErr(e *eq.EQError) error {
	if e == nil {
		return fi.EINVAL
	}
	return q.push(eqEntry{err: e}, false)
}

// Write inserts an application event (fi_eq_write). It needs fi.FlagWrite
// in eq.Attr.Flags and returns fi.EINVAL without it, like the C providers
// that check FI_WRITE; it returns bare fi.EAGAIN when the queue holds Size
// entries, fi.EINVAL for a nil event and fi.EBADF after Close. Error
// entries are written with WriteErr, since *eq.EQError is not an
// eq.Event.
func (q *EQ) Write(ev eq.Event) error {
	if !q.writable {
		return errors.WithHint(errors.Wrapf(fi.EINVAL, "%s: eq write: queue opened without fi.FlagWrite", q.prov),
			"open the queue with eq.Attr{Flags: fi.FlagWrite} to write to it")
	}
	if ev == nil {
		return fi.EINVAL
	}
	return q.push(eqEntry{ev: ev}, true)
}

// WriteErr inserts an application error entry (fi_eq_write of a struct
// fi_eq_err_entry); as Write otherwise.
func (q *EQ) WriteErr(e *eq.EQError) error {
	if !q.writable {
		return errors.WithHint(errors.Wrapf(fi.EINVAL, "%s: eq write: queue opened without fi.FlagWrite", q.prov),
			"open the queue with eq.Attr{Flags: fi.FlagWrite} to write to it")
	}
	if e == nil {
		return fi.EINVAL
	}
	return q.push(eqEntry{err: e}, true)
}

func (q *EQ) push(e eqEntry, bounded bool) error {
	q.mu.Lock()
	if q.ref.Closed() {
		q.mu.Unlock()
		return fi.EBADF
	}
	if bounded && q.q.len() >= q.size {
		q.mu.Unlock()
		return fi.EAGAIN
	}
	q.q.push(e)
	q.mu.Unlock()
	q.h.notify()
	return nil
}

// Read removes and returns the next event (fi_eq_read). It returns bare
// fi.EAGAIN when the queue is empty, fi.EAVAIL when an error entry is
// next, and fi.EBADF after Close.
func (q *EQ) Read() (eq.Event, error) { return q.read(true) }

// Peek returns the next event without removing it (fi_eq_read with
// FI_PEEK); errors as Read.
func (q *EQ) Peek() (eq.Event, error) { return q.read(false) }

func (q *EQ) read(remove bool) (eq.Event, error) {
	if q.ref.Closed() {
		return nil, fi.EBADF
	}
	if ev, err := q.take(remove); err != fi.EAGAIN {
		return ev, err
	}
	q.h.runProgress()
	return q.take(remove)
}

// take returns (and, with remove, removes) the queue's front entry: bare
// fi.EAGAIN when there is none, fi.EAVAIL when it is an error entry.
func (q *EQ) take(remove bool) (eq.Event, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.q.len() == 0 {
		return nil, fi.EAGAIN
	}
	e := q.q.front()
	if e.err != nil {
		return nil, fi.EAVAIL
	}
	ev := e.ev
	if remove {
		q.q.pop()
	}
	return ev, nil
}

// ReadErr removes and returns the next error entry (fi_eq_readerr). It
// returns bare fi.EAGAIN when the queue is empty or an event is next, and
// fi.EBADF after Close.
func (q *EQ) ReadErr() (*eq.EQError, error) {
	if q.ref.Closed() {
		return nil, fi.EBADF
	}
	e, empty := q.takeErr()
	if empty {
		q.h.runProgress()
		e, _ = q.takeErr()
	}
	if e == nil {
		return nil, fi.EAGAIN
	}
	return e, nil
}

// takeErr removes and returns the front entry when it is an error entry;
// empty reports that the queue holds nothing.
func (q *EQ) takeErr() (e *eq.EQError, empty bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.q.len() == 0 {
		return nil, true
	}
	if q.q.front().err == nil {
		return nil, false
	}
	return q.q.pop().err, false
}

// SRead is the blocking Read (fi_eq_sread). It waits without spinning for
// an event or error entry (reporting the latter as fi.EAVAIL), runs the
// progress hook on every wakeup that finds the queue empty, and returns bare fi.EBADF when the queue
// is closed. When ctx ends first it returns fi.ContextError's error ("tcp:
// eq sread: context deadline exceeded"), which is both
// context.DeadlineExceeded and fi.ETIMEDOUT, or both context.Canceled and
// fi.ECANCELED.
func (q *EQ) SRead(ctx context.Context) (eq.Event, error) {
	for {
		r := q.h.arm(ctx)
		ev, err := q.Read()
		if err != fi.EAGAIN {
			q.h.disarm(r)
			return ev, err
		}
		if err := q.h.sleep(r); err != nil {
			return nil, err
		}
		if err := fi.ContextError(ctx); err != nil {
			return nil, errors.Wrapf(err, "%s: eq sread", q.prov)
		}
	}
}

// Close closes the queue (fi_close). While endpoints hold references
// (Acquire) it returns fi.EBUSY, wrapped in a message that counts them
// ("tcp: close eq: 1 endpoint still bound"), and it returns bare fi.EBADF
// when already closed; otherwise it wakes blocked SRead calls, which
// return fi.EBADF, makes the wait descriptor readable and closes it, and
// drops queued entries.
func (q *EQ) Close() error { return q.CloseWith(nil) }

// CloseWith is Close that runs release, when the queue closes, before it
// wakes blocked readers: a provider releases its parent there, so that a
// reader woken by the close finds the parent closable.
func (q *EQ) CloseWith(release func()) error {
	if err := q.ref.beginCloseFor(q.prov+": close eq", KindEndpoint, "bound"); err != nil {
		return err
	}
	if release != nil {
		release()
	}
	q.h.close()
	q.mu.Lock()
	q.q.reset()
	q.mu.Unlock()
	return nil
}

// ring is a growable FIFO over a circular buffer; the zero ring is empty.
// Popped slots are zeroed so that the queue keeps nothing reachable.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

// grow makes room for at least n entries.
func (r *ring[T]) grow(n int) {
	if n <= len(r.buf) {
		return
	}
	buf := make([]T, max(n, 2*len(r.buf)))
	k := copy(buf, r.buf[r.head:])
	copy(buf[k:], r.buf[:r.head])
	r.buf, r.head = buf, 0
}

// add appends a zero entry and returns it, to be filled in place.
func (r *ring[T]) add() *T {
	r.grow(r.n + 1)
	i := r.head + r.n
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	r.n++
	return &r.buf[i]
}

func (r *ring[T]) push(v T) { *r.add() = v }

// front returns the oldest entry; the ring must not be empty.
func (r *ring[T]) front() *T { return &r.buf[r.head] }

// pop removes and returns the oldest entry; the ring must not be empty.
func (r *ring[T]) pop() T {
	v := r.buf[r.head]
	r.drop()
	return v
}

// drop removes the oldest entry; the ring must not be empty.
func (r *ring[T]) drop() {
	var zero T
	r.buf[r.head] = zero
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
}

// reset empties the ring and releases its buffer.
func (r *ring[T]) reset() { *r = ring[T]{} }
