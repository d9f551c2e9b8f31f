package ep

import (
	"slices"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// DefaultBacklog is the number of connection requests a passive endpoint
// holds before SetBacklog changes it: 128, the SOMAXCONN of Linux before
// 5.4. (libfabric leaves the default to each provider; the C tcp provider
// passes 4096 to listen(2) and ignores FI_BACKLOG.)
const DefaultBacklog = 128

// Backlog is the connection-management state of a passive endpoint
// (struct fid_pep; fi_cm(3)): CMIdle until Listen, then CMListening, and
// CMClosed; and its backlog, the connection requests reported as
// eq.ConnReq events that the application has not yet accepted or
// rejected.
//
// A request is named by its handle, the fi.Fid a provider puts in the
// event's Info.Handle: any comparable value, in practice a pointer to the
// provider's own request type. The provider calls Add when a request
// arrives (and refuses the request if Add fails), Take when the
// application accepts it (opens an endpoint from it) or rejects it, and
// Close when the passive endpoint closes, rejecting what Close returns.
//
// The zero value is an idle passive endpoint with a backlog of
// DefaultBacklog. A Backlog is safe for concurrent use and must not be
// copied after first use.
type Backlog struct {
	// mu guards every field below.
	mu sync.Mutex
	// state is CMIdle, CMListening or CMClosed.
	state CMState
	// limit is the backlog size set by SetBacklog; 0 means DefaultBacklog.
	limit int
	// pending holds the pending requests' handles in arrival order.
	pending []fi.Fid
}

// State returns the passive endpoint's state: CMIdle, CMListening or
// CMClosed.
func (b *Backlog) State() CMState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Listen records fi_listen: CMIdle → CMListening. Listening twice returns
// fi.EOPBADSTATE, and fi.EBADF once closed.
func (b *Backlog) Listen() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != CMIdle {
		return stateErr(fi.EOPBADSTATE, "listen", b.state)
	}
	b.state = CMListening
	return nil
}

// SetBacklog sets how many connection requests may be pending at once
// (fi_control with FI_BACKLOG), before or after Listen. n must be at
// least 1 (fi.EINVAL). Lowering it below the number already pending
// refuses no pending request; Add refuses new ones until enough are
// taken. Once closed it returns fi.EBADF.
func (b *Backlog) SetBacklog(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == CMClosed {
		return stateErr(fi.EBADF, "set backlog", b.state)
	}
	if n < 1 {
		return errors.Wrapf(fi.EINVAL, "ep: set backlog: backlog %d is not positive", n)
	}
	b.limit = n
	return nil
}

// Size returns the backlog size (fi_control with FI_BACKLOG).
func (b *Backlog) Size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size()
}

func (b *Backlog) size() int {
	if b.limit == 0 {
		return DefaultBacklog
	}
	return b.limit
}

// Len returns the number of pending connection requests.
func (b *Backlog) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// Add records a newly arrived connection request, before the provider
// reports it as an eq.ConnReq event. When Add fails the provider refuses
// the request instead of reporting it:
//
//   - backlog full: fi.ECONNREFUSED, the answer the requester gets;
//   - not listening: fi.EOPBADSTATE (fi.EBADF once closed);
//   - a nil handle, or one already pending: fi.EINVAL.
func (b *Backlog) Add(handle fi.Fid) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state != CMListening:
		return stateErr(fi.EOPBADSTATE, "connection request", b.state)
	case handle == nil:
		return errors.Wrap(fi.EINVAL, "ep: connection request: nil handle")
	case slices.Contains(b.pending, handle):
		return errors.Wrapf(fi.EINVAL, "ep: connection request: %T handle is already pending", handle)
	case len(b.pending) >= b.size():
		return errors.Wrapf(fi.ECONNREFUSED, "ep: connection request: backlog of %d is full", b.size())
	}
	b.pending = append(b.pending, handle)
	return nil
}

// Take removes a pending request when the application accepts it (opens
// an endpoint from its Info, fi_endpoint) or rejects it (fi_reject); from
// then on the request is the caller's. A handle that is not pending (never
// added, or already taken) returns fi.EINVAL, so a request cannot be both
// accepted and rejected, or either twice. Once closed Take returns
// fi.EBADF: Close handed every pending request back.
func (b *Backlog) Take(handle fi.Fid) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == CMClosed {
		return stateErr(fi.EBADF, "take connection request", b.state)
	}
	i := slices.Index(b.pending, handle)
	if i < 0 {
		return errors.Wrapf(fi.EINVAL, "ep: take connection request: %T handle is not pending (unknown, or already accepted or rejected)", handle)
	}
	b.pending = slices.Delete(b.pending, i, i+1)
	return nil
}

// Close records the passive endpoint's fi_close: any state → CMClosed. It
// returns the requests still pending, in arrival order, for the provider
// to reject. A second Close returns fi.EBADF.
func (b *Backlog) Close() ([]fi.Fid, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == CMClosed {
		return nil, stateErr(fi.EBADF, "close", b.state)
	}
	b.state = CMClosed
	p := b.pending
	b.pending = nil
	return p, nil
}
