package eq

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Attr mirrors struct fi_eq_attr.
type Attr struct {
	// Size is the queue's capacity in events; zero lets the implementation
	// choose.
	Size int
	// Flags: fi.FlagWrite (FI_WRITE) allows EventQueue.Write.
	Flags fi.Flags
	// WaitObj is the wait object: fi.WaitNone for SRead only,
	// fi.WaitFD for a descriptor to poll as well (FDWaiter), made at
	// open; fi.WaitUnspec makes it at the first WaitFD or TryWait;
	// fi.WaitSet puts the queue into WaitSet (FI_WAIT_SET).
	WaitObj fi.WaitObj
	// WaitSet is the wait set the queue joins when WaitObj is fi.WaitSet
	// (fi_eq_attr.wait_set); ignored otherwise. OpenEQ adds it to the set
	// and asks the provider for an fi.WaitFD object.
	WaitSet         *WaitSet
	SignalingVector int
}

// EventQueue is an event queue (struct fid_eq; fi_eq(3)): it reports
// control events (connection management, asynchronous MR and AV work,
// multicast joins).
//
// All methods are safe for concurrent use. Read, Peek and ReadErr never
// block and do not allocate; SRead blocks until an event, an error entry,
// the context's end, or Close.
type EventQueue interface {
	fi.Fid
	// Read removes and returns the next event (fi_eq_read). It returns
	// bare fi.EAGAIN when the queue is empty and bare fi.EAVAIL when the
	// next entry is an error, to be fetched with ReadErr.
	Read() (Event, error)
	// Peek returns the next event without removing it (fi_eq_read with
	// FI_PEEK); errors as Read.
	Peek() (Event, error)
	// ReadErr removes and returns the next error entry (fi_eq_readerr), or
	// bare fi.EAGAIN when there is none at the head of the queue.
	ReadErr() (*EQError, error)
	// Write inserts an application event (fi_eq_write). It requires
	// fi.FlagWrite in the queue's attributes.
	Write(ev Event) error
	// SRead is the blocking Read (fi_eq_sread): it waits for an event until
	// ctx is done and then returns fi.ContextError's error
	// (context.DeadlineExceeded and fi.ETIMEDOUT, or context.Canceled and
	// fi.ECANCELED).
	SRead(ctx context.Context) (Event, error)
}

// EQOpener is implemented by fabrics that open event queues.
type EQOpener interface {
	OpenEQ(attr *Attr) (EventQueue, error)
}

// OpenEQ opens an event queue on fabric f (fi_eq_open). It returns ENOSYS
// when the fabric has no event queues. With WaitObj fi.WaitSet it opens
// the queue with fi.WaitFD and adds it to attr.WaitSet (fi.EINVAL when
// that is nil, as C's providers answer), closing it again when Add fails.
func OpenEQ(f fi.Fabric, attr *Attr) (EventQueue, error) {
	o, ok := f.(EQOpener)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "eq: open eq: fabric %T has no event queues", f)
	}
	if attr == nil {
		attr = &Attr{}
	}
	if attr.WaitObj != fi.WaitSet {
		return o.OpenEQ(attr)
	}
	a := *attr
	a.WaitObj, a.WaitSet = fi.WaitFD, nil
	return openInSet(attr.WaitSet, "eq", func() (EventQueue, error) { return o.OpenEQ(&a) })
}

// openInSet opens an object for the wait object fi.WaitSet with open,
// which asks the provider for fi.WaitFD, and adds it to ws (fi_cq_attr's
// wait_set, and fi_eq_attr's and fi_cntr_attr's).
func openInSet[T fi.Fid](ws *WaitSet, what string, open func() (T, error)) (T, error) {
	var zero T
	if ws == nil {
		return zero, errors.WithHint(errors.Wrapf(fi.EINVAL, "eq: open %s: wait object FI_WAIT_SET without a wait set", what),
			"set the attributes' WaitSet to a set from eq.NewWaitSet")
	}
	obj, err := open()
	if err != nil {
		return zero, err
	}
	if err := ws.Add(obj); err != nil {
		_ = obj.Close()
		return zero, errors.Wrapf(err, "eq: open %s", what)
	}
	return obj, nil
}
