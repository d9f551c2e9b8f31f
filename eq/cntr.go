package eq

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// CounterEvents mirrors enum fi_cntr_events.
type CounterEvents int

// Counter event kinds.
const (
	CounterEventsComp  CounterEvents = iota // FI_CNTR_EVENTS_COMP
	CounterEventsBytes                      // FI_CNTR_EVENTS_BYTES (newer libfabric)
)

// CounterAttr mirrors struct fi_cntr_attr.
type CounterAttr struct {
	Events CounterEvents
	// WaitObj is the wait object: fi.WaitNone for Wait only,
	// fi.WaitFD for a descriptor to poll as well (FDWaiter), made at
	// open; fi.WaitUnspec makes it at the first WaitFD or TryWait;
	// fi.WaitSet puts the counter into WaitSet (FI_WAIT_SET).
	WaitObj fi.WaitObj
	// WaitSet is the wait set the counter joins when WaitObj is
	// fi.WaitSet (fi_cntr_attr.wait_set); ignored otherwise.
	// OpenCounter adds it to the set and asks the provider for an
	// fi.WaitFD counter.
	WaitSet *WaitSet
	Flags   fi.Flags
}

// Counter is a completion counter (struct fid_cntr; fi_cntr(3)). All
// methods are safe for concurrent use; Read and ReadErr never block.
type Counter interface {
	fi.Fid
	// Read returns the success count (fi_cntr_read).
	Read() uint64
	// ReadErr returns the error count (fi_cntr_readerr).
	ReadErr() uint64
	// Add adds to the success count (fi_cntr_add).
	Add(v uint64) error
	// Set sets the success count (fi_cntr_set).
	Set(v uint64) error
	// AddErr adds to the error count (fi_cntr_adderr).
	AddErr(v uint64) error
	// SetErr sets the error count (fi_cntr_seterr).
	SetErr(v uint64) error
	// Wait blocks until the success count reaches threshold
	// (fi_cntr_wait). It returns fi.EAVAIL if the error count changes
	// while waiting, and fi.ContextError's error (context.DeadlineExceeded
	// and fi.ETIMEDOUT, or context.Canceled and fi.ECANCELED) when ctx
	// ends first.
	Wait(ctx context.Context, threshold uint64) error
}

// CounterOpener is implemented by domains that open counters.
type CounterOpener interface {
	OpenCounter(attr *CounterAttr) (Counter, error)
}

// OpenCounter opens a counter on d (fi_cntr_open). It returns ENOSYS when
// the domain has none. With WaitObj fi.WaitSet it does what OpenEQ does.
func OpenCounter(d fi.Domain, attr *CounterAttr) (Counter, error) {
	o, ok := d.(CounterOpener)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "eq: open counter: domain %T has no counters", d)
	}
	if attr == nil {
		attr = &CounterAttr{}
	}
	if attr.WaitObj != fi.WaitSet {
		return o.OpenCounter(attr)
	}
	a := *attr
	a.WaitObj, a.WaitSet = fi.WaitFD, nil
	return openInSet(attr.WaitSet, "counter", func() (Counter, error) { return o.OpenCounter(&a) })
}
