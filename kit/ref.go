package kit

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Ref is the close/refcount rule of fi_close(3) (libfabric's ofi_atomic ref
// field of util objects): objects bound to a fid take a reference, and the
// fid cannot close while any reference is held. Embed or hold one in every
// object that other objects bind to (EQ, CQ, counter, AV, domain).
//
// References taken with AcquireKind remember the kind of object that holds
// them, so that a refused Close can say what is still open
// ("tcp: close domain: 2 endpoints and 1 cq still open"); Acquire takes one
// of no particular kind, which BeginCloseFor names by its others argument.
//
// The zero Ref is open with no references. All methods are safe for
// concurrent use; all but BeginCloseFor's refusal never allocate.
//
// Acquire and BeginClose return bare fi.EBADF and fi.EBUSY, so callers can
// compare with == on their own paths; an object's Close method uses
// BeginCloseFor, whose fi.EBUSY says what holds the object.
type Ref struct {
	// state is refs<<1 | closed: bit 0 is the closed mark, the rest counts
	// references. Changed only by compare-and-swap, except Release.
	state atomic.Int64
	// kinds counts the references taken with AcquireKind, by kind, for
	// BeginCloseFor's message only: state alone decides the close.
	kinds [numKinds]atomic.Int32
}

const refClosed = 1

// Kind is the kind of object that holds a reference on a Ref: a child
// opened on a fabric or domain, or an endpoint bound to a queue. Its
// String is the singular noun the close message uses ("endpoint", "cq").
type Kind uint8

// Kinds of reference holders.
const (
	// KindObject is an object of no particular kind (Acquire's).
	KindObject Kind = iota
	// The kinds of children and binders, in the order a close message
	// lists them.
	KindDomain
	KindPassiveEndpoint
	KindEndpoint
	KindEQ
	KindCQ
	KindCounter
	KindAV
	KindMR
	KindMulticastGroup
	numKinds
)

var kindNames = [numKinds][2]string{
	KindObject:          {"object", "objects"},
	KindDomain:          {"domain", "domains"},
	KindPassiveEndpoint: {"passive endpoint", "passive endpoints"},
	KindEndpoint:        {"endpoint", "endpoints"},
	KindEQ:              {"eq", "eqs"},
	KindCQ:              {"cq", "cqs"},
	KindCounter:         {"counter", "counters"},
	KindAV:              {"av", "avs"},
	KindMR:              {"mr", "mrs"},
	KindMulticastGroup:  {"multicast group", "multicast groups"},
}

// String returns the kind's singular noun.
func (k Kind) String() string {
	if k >= numKinds {
		return "object"
	}
	return kindNames[k][0]
}

// count returns "n <noun>", plural unless n is 1.
func (k Kind) count(n int) string {
	if k >= numKinds {
		k = KindObject
	}
	noun := kindNames[k][1]
	if n == 1 {
		noun = kindNames[k][0]
	}
	return strconv.Itoa(n) + " " + noun
}

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

// AcquireKind is Acquire for an object of kind k; release it with
// ReleaseKind(k).
func (r *Ref) AcquireKind(k Kind) error {
	if err := r.Acquire(); err != nil {
		return err
	}
	if k != KindObject && k < numKinds {
		r.kinds[k].Add(1)
	}
	return nil
}

// Release drops a reference taken by Acquire (what closing a bound object
// does). It panics when no reference is held, which is always a bug.
func (r *Ref) Release() {
	if r.state.Add(-2) < 0 {
		panic("kit: Ref.Release without Acquire")
	}
}

// ReleaseKind drops a reference taken by AcquireKind(k).
func (r *Ref) ReleaseKind(k Kind) {
	if k != KindObject && k < numKinds {
		if r.kinds[k].Add(-1) < 0 {
			r.kinds[k].Add(1) // taken by Acquire: only the message would suffer
		}
	}
	r.Release()
}

// BeginClose marks the object closed, exactly once, for its Close method
// (fi_close). It returns bare fi.EBUSY, changing nothing, while references
// are held, and bare fi.EBADF when the object is already closed; nil means
// the caller won the close and must now release the object's resources.
func (r *Ref) BeginClose() error {
	_, err := r.beginClose()
	return err
}

// beginClose is BeginClose that also returns the reference count it saw
// when it refused with EBUSY.
func (r *Ref) beginClose() (int, error) {
	for {
		s := r.state.Load()
		switch {
		case s&refClosed != 0:
			return 0, fi.EBADF
		case s != 0:
			return int(s >> 1), fi.EBUSY
		}
		if r.state.CompareAndSwap(0, refClosed) {
			return 0, nil
		}
	}
}

// BeginCloseFor is BeginClose for an object's Close method: while
// references are held its fi.EBUSY is wrapped in a message that names what
// holds them, "<what>: 2 endpoints and 1 cq still open"; what names the
// provider and the call ("tcp: close domain"), and others is the kind that
// references taken with plain Acquire count as. It returns bare fi.EBADF
// when the object is already closed, and nil when the caller won the close.
func (r *Ref) BeginCloseFor(what string, others Kind) error {
	return r.beginCloseFor(what, others, "open")
}

// beginCloseFor is BeginCloseFor with the word after "still": "open" for
// children, "bound" for objects bound to a queue.
func (r *Ref) beginCloseFor(what string, others Kind, state string) error {
	n, err := r.beginClose()
	if err != fi.EBUSY {
		return err
	}
	return errors.Wrapf(fi.EBUSY, "%s: %s still %s", what, r.holders(n, others), state)
}

// holders describes n references: the counts by kind, those of no kind as
// others ("2 endpoints and 1 cq").
func (r *Ref) holders(n int, others Kind) string {
	var counts [numKinds]int
	kinded := 0
	for k := range counts {
		if c := int(r.kinds[k].Load()); c > 0 {
			counts[k] = c
			kinded += c
		}
	}
	if rest := n - kinded; rest > 0 {
		if others >= numKinds {
			others = KindObject
		}
		counts[others] += rest
	}
	var parts []string
	for k := KindObject + 1; k < numKinds; k++ {
		if counts[k] > 0 {
			parts = append(parts, k.count(counts[k]))
		}
	}
	if counts[KindObject] > 0 { // the vaguest last
		parts = append(parts, KindObject.count(counts[KindObject]))
	}
	switch len(parts) {
	case 0: // released meanwhile
		return KindObject.count(n)
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Closed reports whether BeginClose has succeeded: one atomic load, for
// data paths that must fail with fi.EBADF after Close.
func (r *Ref) Closed() bool { return r.state.Load()&refClosed != 0 }

// Refs returns the number of references held (the ref count of
// libfabric's util fids).
func (r *Ref) Refs() int { return int(r.state.Load() >> 1) }
