package fabnet

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Handler handles one entry of an event queue, the Go form of the kernel
// rdma_cm's event handler (rdma_cm_event_handler, given to
// rdma_create_id): ev is the event (*eq.ConnReq, *eq.Connected,
// *eq.Shutdown, *eq.JoinComplete, *eq.MRComplete, *eq.AVComplete,
// *eq.Notify), or, for an error entry (fi_eq_readerr), ev is nil and
// errEntry says what failed (a refused or failed connect:
// fi.ECONNREFUSED with the reject's private data in ErrData, fi.ETIMEDOUT,
// fi.ECONNRESET...). Exactly one of the two is non-nil.
//
// As rdma_cm's, the handler's return value is its decision about the
// object the entry is about, which HandleEvents carries out:
//
//   - nil: nothing to do. For a connection request, the handler has
//     accepted it (ep.Open from the request's Info, Bind, Enable, then
//     ep.CM's Accept) or keeps it to decide later.
//   - an error, for an *eq.ConnReq: reject the request (fi_reject on the
//     passive endpoint it arrived on, the event's Fid), with the private
//     data of a RejectWith error in the chain, or none. The listener
//     goes on; rdma_cm likewise destroys the new id, not the listening
//     one.
//   - an error, for any other event or an error entry: close the object
//     it is about (the event's Source, the error entry's Fid: an
//     endpoint whose connection failed or was shut down, a multicast
//     group, an MR or AV), as rdma_cm destroys the id on a non-zero
//     return. A handler may close the object itself instead and return
//     nil; closing it and returning an error is harmless (the second
//     Close says fi.EBADF, which HandleEvents ignores).
//   - an error for an entry about nothing the loop can close (an
//     application's *eq.Notify with no Fid or with the queue itself as
//     its Fid): HandleEvents returns that error, which is also how a
//     handler ends the loop on purpose.
//
// The handler runs on HandleEvents' goroutine, one entry at a time, in
// the queue's order; it may block (while it does, later entries wait),
// open and close other objects, and use the queue's other endpoints. The
// event and error entry are the handler's to keep.
type Handler func(ev eq.Event, errEntry *eq.EQError) error

// HandleEvents reads event queue q and calls h for every entry, events
// and error entries alike, in order, until ctx ends or q is closed (the
// rdma_cm event channel's loop, with the kernel's handler form: see
// Handler). It blocks in q.SRead (fi_eq_sread), then, for an error entry,
// q.ReadErr (fi_eq_readerr), and carries out the handler's decisions as
// Handler says. It starts no goroutine; run it with go to serve a queue
// in the background, and end it with ctx or by closing q.
//
// HandleEvents always returns a non-nil error: fi.ContextError's when
// ctx ends (errors.Is(err, context.Canceled) and fi.ECANCELED, or
// context.DeadlineExceeded and fi.ETIMEDOUT), one with fi.EBADF in its
// chain when q is closed (errors.Is(err, net.ErrClosed) too), the
// handler's error for an entry with no object to close, and an error
// naming the object when a decision cannot be carried out: a request
// whose Fid is not an ep.PassiveEndpoint (fi.ENOSYS), or an object whose
// Close fails with anything but fi.EBADF. A Reject that fails is not an
// error of the loop: the request is gone either way, and the requester
// sees its connect fail.
//
// HandleEvents must be q's only reader: another reader would take
// events from it.
func HandleEvents(ctx context.Context, q eq.EventQueue, h Handler) error {
	if q == nil || h == nil {
		return errors.Wrap(fi.EINVAL, "fabnet: handle events: nil queue or handler")
	}
	for {
		ev, err := q.SRead(ctx)
		var entry *eq.EQError
		if errors.Is(err, fi.EAVAIL) {
			ev = nil
			entry, err = q.ReadErr()
			if errors.Is(err, fi.EAGAIN) {
				continue // taken by another reader after all
			}
		}
		if err != nil {
			return err
		}
		if herr := h(ev, entry); herr != nil {
			if err := decide(q, ev, entry, herr); err != nil {
				return err
			}
		}
	}
}

// decide carries out a handler's error about ev or entry; it returns
// what ends the loop, if anything.
func decide(q eq.EventQueue, ev eq.Event, entry *eq.EQError, herr error) error {
	if req, ok := ev.(*eq.ConnReq); ok {
		pep, ok := req.Fid.(ep.PassiveEndpoint)
		if !ok || req.Info == nil {
			return errors.Wrapf(fi.ENOSYS, "fabnet: handle events: cannot reject a connection request of %T (the handler said: %v)", req.Fid, herr)
		}
		var rw *rejectWith
		var data []byte
		if errors.As(herr, &rw) {
			data = rw.data
		}
		if err := pep.Reject(req.Info.Handle, data); err != nil && data != nil {
			_ = pep.Reject(req.Info.Handle, nil) // data the provider refused (too long): reject without it
		}
		return nil
	}
	var src fi.Fid
	if entry != nil {
		src = entry.Fid
	} else {
		src = ev.Source()
	}
	if src == nil || src == fi.Fid(q) {
		return herr
	}
	if err := src.Close(); err != nil && !errors.Is(err, fi.EBADF) {
		return errors.Wrapf(err, "fabnet: handle events: close %T, as the handler's error asked (%v)", src, herr)
	}
	return nil
}

// RejectWith returns an error that, returned by a Handler for an
// *eq.ConnReq, rejects the request with data as the reject's private data
// (fi_reject's param; the requester gets it as its error entry's
// ErrData, with fi.ECONNREFUSED), at most the endpoint's CMDataSize
// bytes: when the provider refuses the data, the request is rejected
// without it. Wrapping it keeps it working.
func RejectWith(data []byte) error { return &rejectWith{data: data} }

// rejectWith is RejectWith's error.
type rejectWith struct{ data []byte }

func (r *rejectWith) Error() string { return "fabnet: connection request rejected by the handler" }

// Unwrap returns fi.ECONNREFUSED, what the requester sees.
func (r *rejectWith) Unwrap() error { return fi.ECONNREFUSED }
