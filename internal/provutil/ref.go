package provutil

import (
	"sync/atomic"

	"github.com/gofabric/gofabric/fi"
)

// Ref is the close/refcount rule of fi_close(3) (libfabric's ofi_atomic ref
// field of util objects): objects bound to a fid take a reference, and the
// fid cannot close while any reference is held. Embed or hold one in every
// object that other objects bind to (EQ, CQ, counter, AV, domain).
//
// The zero Ref is open with no references. All methods are safe for
// concurrent use and never allocate.
//
// Acquire and BeginClose return bare fi.EBADF and fi.EBUSY, so callers can
// compare with == on their own paths and return them from Close unchanged,
// as fi_close's -FI_EBUSY; a caller with more to say wraps them.
type Ref struct {
	// state is refs<<1 | closed: bit 0 is the closed mark, the rest counts
	// references. Changed only by compare-and-swap, except Release.
	state atomic.Int64
}

const refClosed = 1

// Acquire takes a reference, as binding an object does (fi_ep_bind and
// friends take a reference on the bound fid). It returns bare fi.EBADF once
// the object is closed.
func (r *Ref) Acquire() error {
	for {
		s := r.state.Load()
		if s&refClosed != 0 {
			return fi.EBADF
		}
		if r.state.CompareAndSwap(s, s+2) {
			return nil
		}
	}
}

// Release drops a reference taken by Acquire (what closing a bound object
// does). It panics when no reference is held, which is always a bug.
func (r *Ref) Release() {
	if r.state.Add(-2) < 0 {
		panic("provutil: Ref.Release without Acquire")
	}
}

// BeginClose marks the object closed, exactly once, for its Close method
// (fi_close). It returns bare fi.EBUSY, changing nothing, while references
// are held, and bare fi.EBADF when the object is already closed; nil means
// the caller won the close and must now release the object's resources.
func (r *Ref) BeginClose() error {
	for {
		s := r.state.Load()
		switch {
		case s&refClosed != 0:
			return fi.EBADF
		case s != 0:
			return fi.EBUSY
		}
		if r.state.CompareAndSwap(0, refClosed) {
			return nil
		}
	}
}

// Closed reports whether BeginClose has succeeded: one atomic load, for
// data paths that must fail with fi.EBADF after Close.
func (r *Ref) Closed() bool { return r.state.Load()&refClosed != 0 }

// Refs returns the number of references held (the ref count of
// libfabric's util fids).
func (r *Ref) Refs() int { return int(r.state.Load() >> 1) }
