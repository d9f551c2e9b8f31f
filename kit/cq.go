package kit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// DefaultCQSize is the capacity a CQ gets when eq.CQAttr.Size
// (fi_cq_attr.size) is zero.
const DefaultCQSize = 1024

// CQ is the framework's software completion queue (libfabric's util CQ,
// struct util_cq; fi_cq(3)); providers return it from OpenCQ as an
// eq.CompletionQueue.
//
// Completions, each with its source address, and error entries share one
// FIFO, so errors keep their place among successes: Read stops before an
// error entry and reports fi.EAVAIL when one is next. The FIFO holds
// eq.CQAttr.Size entries without allocating. Providers queue with
//
//   - Complete, which returns bare fi.EAGAIN when Size entries are queued,
//     for a provider that can hold the operation back (leave data in the
//     socket, keep the receive posted) and retry from progress;
//   - CompleteOverflow and CompleteErr, which never refuse: past Size the
//     FIFO grows (libfabric's overflow list), so a completion the provider
//     cannot retry is never lost and still comes out in order.
//
// Entries are stored masked to the queue's format: FormatUnspec and
// FormatContext keep Context; FormatMsg adds Flags and Len; FormatData
// adds Buf and Data; FormatTagged adds Tag. Error entries keep every field
// (struct fi_cq_err_entry).
//
// With fi.WaitFD the queue also has a wait descriptor (WaitFD, TryWait;
// eq.FDWaiter).
//
// All methods are safe for concurrent use. Read, ReadFrom, ReadErr and
// TryWait never block and do not allocate; with a progress hook they
// drive the provider's manual progress first.
type CQ struct {
	ref    Ref
	prov   string // names the queue in messages: the provider, or "eq"
	h      hooks
	size   int
	format eq.CQFormat

	mu sync.Mutex // guards q
	q  ring[cqEntry]
	// queued mirrors q.len(), written with mu held, so that a read of an
	// empty queue (a busy-polling loop's common case) takes no lock.
	queued atomic.Int64
}

// cqEntry is a completion with its source or, when err is set, an error
// entry.
type cqEntry struct {
	c   eq.Completion
	src fi.Addr
	err *eq.CQError
}

var (
	_ eq.CompletionQueue = (*CQ)(nil)
	_ eq.FDWaiter        = (*CQ)(nil)
	_ eq.SReadFromer     = (*CQ)(nil)
)

// NewCQ returns an open CQ for attr (fi_cq_open's checks of struct
// fi_cq_attr). It returns fi.EINVAL for a negative size or an unknown
// format, and fi.ENOSYS for a wait object other than fi.WaitNone,
// fi.WaitUnspec and fi.WaitFD (and for fi.WaitFD off Linux) or a wait
// condition other than eq.CondNone (SRead has no threshold argument). Its messages name the eq package ("eq: open cq:
// size -1"); a provider's CQ comes from OpenChildCQ, whose messages name
// the provider.
func NewCQ(attr *eq.CQAttr) (*CQ, error) { return newCQ("eq", attr) }

func newCQ(prov string, attr *eq.CQAttr) (*CQ, error) {
	if attr == nil {
		attr = &eq.CQAttr{}
	}
	if attr.Size < 0 {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open cq: size %d is negative", prov, attr.Size)
	}
	if attr.Format < eq.FormatUnspec || attr.Format > eq.FormatTagged {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open cq: unknown format %d", prov, int(attr.Format))
	}
	if err := checkWaitObj(prov, "cq", attr.WaitObj); err != nil {
		return nil, err
	}
	if attr.WaitCond != eq.CondNone {
		return nil, errors.WithHint(
			errors.Wrapf(fi.ENOSYS, "%s: open cq: wait condition %d not supported", prov, int(attr.WaitCond)),
			"use eq.CondNone: SRead returns as soon as one completion is queued")
	}
	q := &CQ{prov: prov, size: attr.Size, format: attr.Format}
	if q.size == 0 {
		q.size = DefaultCQSize
	}
	if err := q.h.initFD(attr.WaitObj); err != nil {
		return nil, errors.Wrapf(err, "%s: open cq", prov)
	}
	q.q.grow(q.size)
	return q, nil
}

// Size returns the number of entries the queue holds before Complete
// refuses (fi_cq_attr.size, or DefaultCQSize).
func (q *CQ) Size() int { return q.size }

// Format returns the queue's completion format (fi_cq_attr.format).
func (q *CQ) Format() eq.CQFormat { return q.format }

// Acquire takes a reference on the queue for an endpoint bound to it
// (fi_ep_bind); Close returns fi.EBUSY until Release. It returns bare
// fi.EBADF after Close.
func (q *CQ) Acquire() error { return q.ref.AcquireKind(KindEndpoint) }

// Release drops a reference taken by Acquire.
func (q *CQ) Release() { q.ref.ReleaseKind(KindEndpoint) }

// SetProgress installs the provider's progress function, run at the start
// of every Read, ReadFrom, ReadErr and SRead round (libfabric's
// util_cq.progress, which drives manual progress from fi_cq_read). nil
// removes it. It is called with no queue lock held, so it may Complete.
func (q *CQ) SetProgress(f func()) { q.h.setProgress(f) }

// SetWaiter installs the provider's wait hook for SRead; see WaitFunc. nil
// removes it.
func (q *CQ) SetWaiter(f WaitFunc) { q.h.setWaiter(f) }

// Signal wakes blocked SRead calls so they run progress and look again,
// for providers whose readiness is known without a wait hook. Unlike
// fi_cq_signal's use by applications it makes no call fail; cancel the
// context for that. An armed wait descriptor becomes readable too (the
// application reads, maybe nothing, and calls TryWait again).
func (q *CQ) Signal() { q.h.notify() }

// WaitFD returns the queue's wait descriptor (fi_control with FI_GETWAIT;
// eq.FDWaiter): an error with fi.ENODATA when the queue was opened
// with fi.WaitNone, fi.EBADF after Close; an fi.WaitUnspec queue gets its
// descriptor here.
func (q *CQ) WaitFD() (int, error) { return waitFDOf(&q.h, q.prov, "cq") }

// TryWait is fi_trywait for the queue (eq.FDWaiter): it runs progress and
// returns bare fi.EAGAIN when a completion or error entry is queued, else
// arms the wait descriptor, which the next entry makes readable, and
// returns nil. Under manual progress (a wait hook) the queue's watcher
// then drives progress until an entry arrives or the queue closes. It
// returns bare fi.EINVAL when the queue was opened with fi.WaitNone and
// fi.EBADF after Close.
func (q *CQ) TryWait() error { return q.h.tryWait(q.pending) }

// pending reports whether an entry is queued.
func (q *CQ) pending() bool { return q.queued.Load() > 0 }

// Complete queues a completion with its source address (fi.AddrUnspec when
// unknown), masked to the queue's format (ofi_cq_write_src). It returns
// bare fi.EAGAIN, queueing nothing, when Size entries are queued, and
// fi.EBADF after Close.
func (q *CQ) Complete(c eq.Completion, src fi.Addr) error {
	return q.push(&c, src, nil, true)
}

// CompleteOverflow is Complete for a completion the provider cannot hold
// back: past Size it grows the queue instead of refusing
// (ofi_cq_write_overflow). It returns bare fi.EBADF after Close.
func (q *CQ) CompleteOverflow(c eq.Completion, src fi.Addr) error {
	return q.push(&c, src, nil, false)
}

// CompleteErr queues an error entry (ofi_cq_write_error); like
// CompleteOverflow it never refuses for space. It returns bare fi.EINVAL
// for a nil entry and fi.EBADF after Close.
func (q *CQ) CompleteErr(e *eq.CQError) error {
	if e == nil {
		return fi.EINVAL
	}
	return q.push(nil, 0, e, false)
}

// mask stores c in dst with the fields the queue's format lacks zeroed.
func (q *CQ) mask(dst, c *eq.Completion) {
	switch q.format {
	case eq.FormatTagged:
		*dst = *c
	case eq.FormatData:
		*dst = *c
		dst.Tag = 0
	case eq.FormatMsg:
		*dst = eq.Completion{Context: c.Context, Flags: c.Flags, Len: c.Len}
	default:
		*dst = eq.Completion{Context: c.Context}
	}
}

// push queues completion c with source src, or error entry ce when c is
// nil. The entry is written in its slot: a completion is a large value,
// and copying it through arguments on the way cost a third of a push.
func (q *CQ) push(c *eq.Completion, src fi.Addr, ce *eq.CQError, bounded bool) error {
	q.mu.Lock()
	if q.ref.Closed() {
		q.mu.Unlock()
		return fi.EBADF
	}
	if bounded && q.q.len() >= q.size {
		q.mu.Unlock()
		return fi.EAGAIN
	}
	e := q.q.add()
	if c != nil {
		q.mask(&e.c, c)
		e.src = src
	} else {
		e.err = ce
	}
	q.queued.Store(int64(q.q.len()))
	q.mu.Unlock()
	q.h.notify()
	return nil
}

// Read fills entries with up to len(entries) completions and returns how
// many (fi_cq_read). It returns bare fi.EAGAIN when the queue is empty,
// fi.EAVAIL when an error entry is next, and fi.EBADF after Close.
func (q *CQ) Read(entries []eq.Completion) (int, error) {
	return q.read(entries, nil)
}

// ReadFrom is Read that also stores each completion's source address in
// src (fi_cq_readfrom). It returns bare fi.EINVAL when src is shorter than
// entries.
func (q *CQ) ReadFrom(entries []eq.Completion, src []fi.Addr) (int, error) {
	if len(src) < len(entries) {
		return 0, fi.EINVAL
	}
	return q.read(entries, src)
}

func (q *CQ) read(entries []eq.Completion, src []fi.Addr) (int, error) {
	if q.ref.Closed() {
		return 0, fi.EBADF
	}
	q.h.runProgress()
	if q.queued.Load() == 0 {
		return 0, fi.EAGAIN
	}
	q.mu.Lock()
	if q.q.len() == 0 {
		q.mu.Unlock()
		return 0, fi.EAGAIN
	}
	n := 0
	for ; n < len(entries) && q.q.len() > 0; n++ {
		e := q.q.front()
		if e.err != nil {
			break
		}
		entries[n] = e.c
		if src != nil {
			src[n] = e.src
		}
		q.q.drop()
	}
	q.queued.Store(int64(q.q.len()))
	q.mu.Unlock()
	if n == 0 && len(entries) > 0 {
		return 0, fi.EAVAIL
	}
	return n, nil
}

// ReadErr removes and returns the next error entry (fi_cq_readerr). It
// returns bare fi.EAGAIN when the queue is empty or a completion is next,
// and fi.EBADF after Close.
func (q *CQ) ReadErr() (*eq.CQError, error) {
	if q.ref.Closed() {
		return nil, fi.EBADF
	}
	q.h.runProgress()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.q.len() == 0 || q.q.front().err == nil {
		return nil, fi.EAGAIN
	}
	e := q.q.pop().err
	q.queued.Store(int64(q.q.len()))
	return e, nil
}

// SRead is the blocking Read (fi_cq_sread). It waits without spinning for
// at least one completion or an error entry (reporting the latter as
// fi.EAVAIL), runs the progress hook on every wakeup, and returns bare
// fi.EBADF when the queue is closed. When ctx ends first it returns
// fi.ContextError's error ("tcp: cq sread: context deadline exceeded"),
// which is both context.DeadlineExceeded and fi.ETIMEDOUT, or both
// context.Canceled and fi.ECANCELED.
func (q *CQ) SRead(ctx context.Context, entries []eq.Completion) (int, error) {
	return q.sread(ctx, entries, nil)
}

// SReadFrom is the blocking ReadFrom (fi_cq_sreadfrom; eq.SReadFromer):
// SRead that also stores each completion's source address in src. It
// returns bare fi.EINVAL when src is shorter than entries.
func (q *CQ) SReadFrom(ctx context.Context, entries []eq.Completion, src []fi.Addr) (int, error) {
	if len(src) < len(entries) {
		return 0, fi.EINVAL
	}
	return q.sread(ctx, entries, src)
}

// sread is SRead, with sources when src is not nil.
func (q *CQ) sread(ctx context.Context, entries []eq.Completion, src []fi.Addr) (int, error) {
	for {
		r := q.h.arm(ctx)
		n, err := q.read(entries, src)
		if err != fi.EAGAIN {
			q.h.disarm(r)
			return n, err
		}
		if err := q.h.sleep(r); err != nil {
			return 0, err
		}
		if err := fi.ContextError(ctx); err != nil {
			return 0, errors.Wrapf(err, "%s: cq sread", q.prov)
		}
	}
}

// Close closes the queue (fi_close). While endpoints hold references
// (Acquire) it returns fi.EBUSY, wrapped in a message that counts them
// ("tcp: close cq: 2 endpoints still bound"), and it returns bare fi.EBADF
// when already closed; otherwise it wakes blocked SRead calls, which
// return fi.EBADF, makes the wait descriptor readable and closes it, and
// drops queued entries.
func (q *CQ) Close() error { return q.CloseWith(nil) }

// CloseWith is Close that runs release, when the queue closes, before it
// wakes blocked readers (see EQ.CloseWith).
func (q *CQ) CloseWith(release func()) error {
	if err := q.ref.beginCloseFor(q.prov+": close cq", KindEndpoint, "bound"); err != nil {
		return err
	}
	if release != nil {
		release()
	}
	q.h.close()
	q.mu.Lock()
	q.q.reset()
	q.queued.Store(0)
	q.mu.Unlock()
	return nil
}
