//go:build linux

package tcp

import "github.com/gofabric/gofabric/ep"

// BacklogSize returns a passive endpoint's backlog: how many requests may
// wait for Accept or Reject.
func BacklogSize(p ep.PassiveEndpoint) int { return p.(*passiveEP).Backlog.Size() }

// MaxHandshakes is how many accepted sockets a listener reads requests
// from at once.
const MaxHandshakes = maxHandshakes

// Handshakes returns how many accepted sockets the passive endpoint pe
// waits for a request from.
func Handshakes(pe ep.PassiveEndpoint) int {
	p := pe.(*passiveEP)
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return len(p.hs)
}

// BlockedReaders returns how many readers are blocked in SRead or Wait
// on q, a completion queue, counter or event queue of the provider; ok is
// false for a queue of another provider (tcp;ofi_rxm's).
func BlockedReaders(q any) (n int, ok bool) {
	switch x := q.(type) {
	case *completionQueue:
		return int(x.Eps.waiting.Load()), true
	case *counter:
		return int(x.Eps.waiting.Load()), true
	case *eventQueue:
		return int(x.Eps.waiting.Load()), true
	}
	return 0, false
}
