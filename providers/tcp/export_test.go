//go:build linux

package tcp

import "github.com/gofabric/gofabric/ep"

// BacklogSize returns a passive endpoint's backlog: how many requests may
// wait for Accept or Reject.
func BacklogSize(p ep.PassiveEndpoint) int { return p.(*passiveEP).Backlog.Size() }

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
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return len(p.hs)
}

// BlockedReaders returns how many readers are blocked in SRead or Wait
// on q, a completion queue, counter or event queue of the provider.
func BlockedReaders(q any) int {
	switch x := q.(type) {
	case *completionQueue:
		return int(x.Eps.waiting.Load())
	case *counter:
		return int(x.Eps.waiting.Load())
	case *eventQueue:
		return int(x.Eps.waiting.Load())
	}
	panic("tcp: BlockedReaders: not a queue of the provider")
}
