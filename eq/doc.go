// Package eq mirrors libfabric's fi_eq.h: event queues (fi_eq(3)),
// completion queues (fi_cq(3)) and counters (fi_cntr(3)), the event and
// completion types, and their error entries.
//
// # Reading
//
// Non-blocking reads keep libfabric's two steps: Read returns bare
// fi.EAGAIN when nothing is queued and bare fi.EAVAIL when the next entry is
// an error, which ReadErr then returns as an *EQError or *CQError. Both
// error types unwrap to their fi.Errno, so errors.Is(err, fi.ETRUNC) works.
//
// Blocking reads (SRead, Counter.Wait) take a context first; a deadline or
// cancellation ends the wait with fi.ContextError's error, which matches
// both Go's and libfabric's names for it: errors.Is(err,
// context.DeadlineExceeded) and errors.Is(err, fi.ETIMEDOUT) after a
// deadline, errors.Is(err, context.Canceled) and errors.Is(err,
// fi.ECANCELED) after a cancel.
//
// # Waiting on a file descriptor
//
// An application that waits for fabric work beside other descriptors of
// its own (sockets, pipes, timers) in one poll(2), select(2) or epoll(7)
// opens its queues and counters with WaitObj fi.WaitFD (FI_WAIT_FD), gets
// each one's descriptor with WaitFD (fi_control's FI_GETWAIT) and calls
// TryWait (fi_trywait) before every wait: it blocks only when TryWait
// returns nil, and reads the queues after every wakeup. See FDWaiter.
//
// # Waiting on several queues
//
// A WaitSet (fi_wait_open(3), fi_wait, fi_poll) waits on several event
// queues, completion queues and counters at once, with a context:
// Wait(ctx) returns when one of them may have something to read, Ready
// says which, and the application reads those. Members join with
// NewWaitSet, Add, or at open with WaitObj fi.WaitSet and the set in the
// attributes' WaitSet field (FI_WAIT_SET with fi_cq_attr.wait_set). A
// set is built on the members' wait descriptors, so it works over every
// provider's queues, and a blocked Wait parks a goroutine on the
// runtime's netpoller, not an OS thread:
//
//	ws, err := eq.NewWaitSet(evq, cq, cntr)
//	...
//	defer ws.Close()
//	var ready []fi.Fid
//	for {
//		if err := ws.Wait(ctx); err != nil {
//			return err // the context's end, or the set closed
//		}
//		for _, obj := range ws.Ready(ready[:0]) {
//			... // read obj until it says fi.EAGAIN
//		}
//	}
//
// # Closing
//
// A queue or counter that endpoints are bound to cannot close: Close
// returns an error with fi.EBUSY in its chain that says what holds it
// ("tcp: close cq: 2 endpoints still bound"), as fi_close(3) returns
// -FI_EBUSY; close the endpoints first. Close is a control path, so the
// error is wrapped; compare with errors.Is(err, fi.EBUSY).
//
// # Opening
//
// OpenEQ, OpenCQ and OpenCounter find the optional opener interfaces
// (EQOpener, CQOpener, CounterOpener) on a fabric or domain and return
// fi.ENOSYS when an object has none, the Go form of libfabric's
// fi_eq_open, fi_cq_open and fi_cntr_open.
package eq
