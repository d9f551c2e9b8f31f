package shm

import (
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// WriteRawSlot publishes, from endpoint from, a slot that corrupt fills
// (over a zeroed slot) in the inbox of dest: a hostile peer, for tests.
func WriteRawSlot(from ep.Endpoint, dest fi.Addr, corrupt func(slot []byte)) error {
	e := from.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.dp.peerFor(e, dest)
	if err != nil {
		return err
	}
	s := p.q.reserve()
	if s == nil {
		return fi.EAGAIN
	}
	clear(s)
	corrupt(s)
	p.q.commit()
	return nil
}
