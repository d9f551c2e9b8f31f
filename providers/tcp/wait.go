//go:build linux

package tcp

import (
	"context"
	"time"

	"github.com/gofabric/gofabric/internal/provutil"
	"github.com/gofabric/gofabric/internal/sockpoll"
	"golang.org/x/sys/unix"
)

// epSet is the set of endpoints whose progress a queue drives: the
// endpoints bound to a completion queue, counter or event queue. Reading
// the queue runs progress on each of them (fi_cq_read drives the data
// path), and a reader about to block hands them to their background
// progress.
type epSet struct{ provutil.Set[*endpoint] }

// progress is the queue's progress hook.
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.polls.Add(1)
		e.progress()
	}
}

// wait is the queue's wait hook (provutil.WaitFunc), called when a reader
// found nothing and is about to block: it tells the endpoints' background
// progress that nobody polls them now, so that it watches their sockets at
// once, and sleeps until the queue wakes it (an entry, a signal, the
// reader's context).
func (s *epSet) wait(ctx context.Context) error {
	for _, e := range s.Load() {
		if a := e.auto.Load(); a != nil {
			a.Kick()
		}
	}
	<-ctx.Done()
	return nil
}

// startAuto starts the endpoint's background progress (FI_PROGRESS_AUTO,
// internal/sockpoll) for its socket fd: it watches for input, and for
// room while sends wait for it.
func startAuto(e *endpoint, fd int) (*sockpoll.Poller, error) {
	var deadline func() time.Time
	if e.rdm != nil && e.params.stallTimeout > 0 {
		deadline = e.stallDeadline // the stall watch falls due (stall.go)
	}
	return sockpoll.Start(sockpoll.Config{
		Name:     "tcp-progress",
		Progress: e.progress,
		Polls:    e.polls.Load,
		Events: func(int) uint32 {
			if e.sendBlocked.Load() {
				return unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLOUT
			}
			return unix.EPOLLIN | unix.EPOLLRDHUP
		},
		// A receive side waiting for a posted buffer leaves its data in the
		// socket: watching it then would wake for nothing.
		Wanted:   func() bool { return !e.recvStalled.Load() || e.sendBlocked.Load() },
		Deadline: deadline,
		WG:       &e.autoWG,
		// RDM data progress is FI_PROGRESS_MANUAL, as in C: the
		// connections of an RDM endpoint are watched only while a reader
		// blocks, and an application that busy-polls is never woken for.
		OnKick: e.rdm != nil,
	}, fd)
}
