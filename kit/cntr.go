package kit

import (
	"context"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Counter is the framework's software completion counter (libfabric's util
// counter, struct util_cntr; fi_cntr(3)); providers return it from
// OpenCounter as an eq.Counter.
//
// The success and error counts are atomics: Read and ReadErr take no lock
// and do not allocate, and updates cost an atomic add plus one atomic load
// to see whether anybody waits. With fi.WaitFD the counter also has a
// wait descriptor (WaitFD, TryWait; eq.FDWaiter). All methods are safe for
// concurrent use.
type Counter struct {
	ref    Ref
	prov   string // names the counter in messages: the provider, or "eq"
	h      hooks
	events eq.CounterEvents
	succ   atomic.Uint64
	errs   atomic.Uint64
	// seenSucc and seenErrs are the counts the last TryWait saw.
	seenSucc, seenErrs atomic.Uint64
}

var (
	_ eq.Counter  = (*Counter)(nil)
	_ eq.FDWaiter = (*Counter)(nil)
)

// NewCounter returns an open counter for attr (fi_cntr_open's checks of
// struct fi_cntr_attr). It returns fi.EINVAL for unknown events and
// fi.ENOSYS for a wait object other than fi.WaitNone, fi.WaitUnspec and
// fi.WaitFD (and for fi.WaitFD off Linux).
// Its messages name the eq package; a provider's counter comes from
// OpenChildCounter, whose messages name the provider.
func NewCounter(attr *eq.CounterAttr) (*Counter, error) { return newCounter("eq", attr) }

func newCounter(prov string, attr *eq.CounterAttr) (*Counter, error) {
	if attr == nil {
		attr = &eq.CounterAttr{}
	}
	if attr.Events != eq.CounterEventsComp && attr.Events != eq.CounterEventsBytes {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open counter: unknown events %d (want eq.CounterEventsComp or eq.CounterEventsBytes)", prov, int(attr.Events))
	}
	if err := checkWaitObj(prov, "counter", attr.WaitObj); err != nil {
		return nil, err
	}
	c := &Counter{prov: prov, events: attr.Events}
	if err := c.h.initFD(attr.WaitObj); err != nil {
		return nil, errors.Wrapf(err, "%s: open counter", prov)
	}
	return c, nil
}

// Events returns what the provider counts (fi_cntr_attr.events): completions
// (eq.CounterEventsComp, Add(1) per operation) or bytes
// (eq.CounterEventsBytes, Add(n)).
func (c *Counter) Events() eq.CounterEvents { return c.events }

// Acquire takes a reference on the counter for an endpoint or MR bound to
// it (fi_ep_bind, fi_mr_bind); Close returns fi.EBUSY until Release. It
// returns bare fi.EBADF after Close.
func (c *Counter) Acquire() error { return c.ref.AcquireKind(KindEndpoint) }

// Release drops a reference taken by Acquire.
func (c *Counter) Release() { c.ref.ReleaseKind(KindEndpoint) }

// SetProgress installs the provider's progress function, run by Read,
// ReadErr and every Wait round (util_cntr.progress). nil removes it.
func (c *Counter) SetProgress(f func()) { c.h.setProgress(f) }

// SetWaiter installs the provider's wait hook for Wait; see WaitFunc. nil
// removes it.
func (c *Counter) SetWaiter(f WaitFunc) { c.h.setWaiter(f) }

// Signal wakes blocked Wait calls so they run progress and look again (the
// counter side of fi_cq_signal). An armed wait descriptor becomes
// readable too.
func (c *Counter) Signal() { c.h.notify() }

// WaitFD returns the counter's wait descriptor (fi_control with
// FI_GETWAIT; eq.FDWaiter): an error with fi.ENODATA when the counter was
// opened with fi.WaitNone, fi.EBADF after Close; an fi.WaitUnspec counter
// gets its descriptor here.
func (c *Counter) WaitFD() (int, error) { return waitFDOf(&c.h, c.prov, "counter") }

// TryWait is fi_trywait for the counter (eq.FDWaiter): it runs progress
// and returns bare fi.EAGAIN when the success or error count changed since
// the previous TryWait (or since the counter opened), as fi_poll(3)
// reports a counter; else it arms the wait descriptor, which the next
// change makes readable, and returns nil. It returns bare fi.EINVAL when
// the counter was opened with fi.WaitNone and fi.EBADF after Close.
func (c *Counter) TryWait() error { return c.h.tryWait(c.changed) }

// changed reports whether the counts differ from those the last call
// saw, and remembers them.
func (c *Counter) changed() bool {
	s, e := c.succ.Load(), c.errs.Load()
	ps, pe := c.seenSucc.Swap(s), c.seenErrs.Swap(e)
	return ps != s || pe != e
}

// Read returns the success count (fi_cntr_read), after running progress.
func (c *Counter) Read() uint64 {
	c.h.runProgress()
	return c.succ.Load()
}

// ReadErr returns the error count (fi_cntr_readerr), after running
// progress.
func (c *Counter) ReadErr() uint64 {
	c.h.runProgress()
	return c.errs.Load()
}

// Add adds v to the success count (fi_cntr_add). It returns bare fi.EBADF
// after Close.
func (c *Counter) Add(v uint64) error { return c.update(&c.succ, v, true) }

// Set sets the success count (fi_cntr_set). It returns bare fi.EBADF after
// Close.
func (c *Counter) Set(v uint64) error { return c.update(&c.succ, v, false) }

// AddErr adds v to the error count (fi_cntr_adderr). It returns bare
// fi.EBADF after Close.
func (c *Counter) AddErr(v uint64) error { return c.update(&c.errs, v, true) }

// SetErr sets the error count (fi_cntr_seterr). It returns bare fi.EBADF
// after Close.
func (c *Counter) SetErr(v uint64) error { return c.update(&c.errs, v, false) }

func (c *Counter) update(n *atomic.Uint64, v uint64, add bool) error {
	if c.ref.Closed() {
		return fi.EBADF
	}
	if add {
		n.Add(v)
	} else {
		n.Store(v)
	}
	c.h.notify()
	return nil
}

// Wait blocks without spinning until the success count reaches threshold
// (fi_cntr_wait), running progress on every wakeup. It returns bare
// fi.EAVAIL when the error count changes during the wait and bare fi.EBADF
// when the counter is closed. When ctx ends first it returns
// fi.ContextError's error ("tcp: counter wait: context deadline
// exceeded"), which is both context.DeadlineExceeded and fi.ETIMEDOUT, or
// both context.Canceled and fi.ECANCELED.
func (c *Counter) Wait(ctx context.Context, threshold uint64) error {
	errs := c.errs.Load()
	for {
		r := c.h.arm(ctx)
		err := c.check(threshold, errs)
		if err != fi.EAGAIN {
			c.h.disarm(r)
			return err
		}
		if err := c.h.sleep(r); err != nil {
			return err
		}
		if err := fi.ContextError(ctx); err != nil {
			return errors.Wrapf(err, "%s: counter wait", c.prov)
		}
	}
}

// check runs progress and reports whether Wait is done: nil at threshold,
// fi.EAVAIL or fi.EBADF to fail, fi.EAGAIN to keep waiting.
func (c *Counter) check(threshold, errs uint64) error {
	if c.ref.Closed() {
		return fi.EBADF
	}
	c.h.runProgress()
	switch {
	case c.errs.Load() != errs:
		return fi.EAVAIL
	case c.succ.Load() >= threshold:
		return nil
	}
	return fi.EAGAIN
}

// Close closes the counter (fi_close). While endpoints hold references
// (Acquire) it returns fi.EBUSY, wrapped in a message that counts them
// ("tcp: close counter: 1 endpoint still bound"), and it returns bare
// fi.EBADF when already closed; otherwise it wakes blocked Wait calls,
// which return fi.EBADF, and makes the wait descriptor readable and
// closes it.
func (c *Counter) Close() error { return c.CloseWith(nil) }

// CloseWith is Close that runs release, when the counter closes, before
// it wakes blocked waiters (see EQ.CloseWith).
func (c *Counter) CloseWith(release func()) error {
	if err := c.ref.beginCloseFor(c.prov+": close counter", KindEndpoint, "bound"); err != nil {
		return err
	}
	if release != nil {
		release()
	}
	c.h.close()
	return nil
}
