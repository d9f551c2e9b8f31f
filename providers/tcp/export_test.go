//go:build linux

package tcp

import "github.com/gofabric/gofabric/ep"

// BacklogSize returns a passive endpoint's backlog: how many requests may
// wait for Accept or Reject.
func BacklogSize(p ep.PassiveEndpoint) int { return p.(*passiveEP).backlog.Size() }

// MaxHandshakes is how many accepted sockets a listener reads requests
// from at once.
const MaxHandshakes = maxHandshakes

// Handshakes returns how many accepted sockets the listener of x (a
// passive endpoint or an RDM endpoint) waits for a request from.
func Handshakes(x any) int {
	p, ok := x.(*passiveEP)
	if !ok {
		p = x.(*rdmEndpoint).pep
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.hs)
}

// BlockedReaders returns how many readers are blocked in SRead or Wait
// on q, a completion queue, counter or event queue of the provider.
func BlockedReaders(q any) int {
	switch x := q.(type) {
	case *completionQueue:
		return int(x.eps.waiting.Load())
	case *counter:
		return int(x.eps.waiting.Load())
	case *eventQueue:
		return int(x.eps.waiting.Load())
	}
	panic("tcp: BlockedReaders: not a queue of the provider")
}
