//go:build linux

package udp

import (
	"context"

	"github.com/gofabric/gofabric/internal/sockpoll"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// epSet is the set of endpoints whose progress a completion queue drives
// (kit.Driver): reading the queue runs progress on each of them
// (fi_cq_read drives the data path), and a reader about to block hands
// them to their background progress.
type epSet struct{ kit.Set[*endpoint] }

// Hooks gives the completion queues the set's hooks (kit.Driver).
func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }

// wait is the queue's wait hook (kit.WaitFunc), called when a reader
// found nothing and is about to block: it tells the endpoints' background
// progress that nobody polls them now, so that it watches their sockets at
// once, and sleeps until the queue wakes it (an entry, a signal, the
// reader's context).
func (s *epSet) wait(ctx context.Context) error {
	for _, e := range s.Load() {
		if a := e.auto; a != nil {
			a.Kick()
		}
	}
	<-ctx.Done()
	return nil
}

// progress is the queue's progress hook.
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.polls.Add(1)
		e.pollProgress()
	}
}

// startAuto starts the endpoint's background progress (FI_PROGRESS_AUTO,
// internal/sockpoll) for its socket; multicast groups' sockets are added
// as they are joined. It waits for input only while receives are posted.
func startAuto(e *endpoint) (*sockpoll.Poller, error) {
	return sockpoll.Start(sockpoll.Config{
		Name:     "udp-progress",
		Progress: e.progress,
		Polls:    e.polls.Load,
		Events:   func(int) uint32 { return unix.EPOLLIN },
		Wanted:   func() bool { return e.posted.Load() > 0 },
		WG:       &e.autoWG,
	}, e.fd)
}
