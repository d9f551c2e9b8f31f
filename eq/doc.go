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
// cancellation ends the wait with the context's error, which fi.Code maps to
// fi.ETIMEDOUT or fi.ECANCELED.
//
// # Opening
//
// OpenEQ, OpenCQ and OpenCounter find the optional opener interfaces
// (EQOpener, CQOpener, CounterOpener) on a fabric or domain and return
// fi.ENOSYS when an object has none, the Go form of libfabric's
// fi_eq_open, fi_cq_open and fi_cntr_open.
package eq
