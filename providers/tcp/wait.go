//go:build linux

package tcp

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gofabric/gofabric/internal/sockpoll"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// epSet is the set of endpoints whose progress a queue drives: the
// endpoints bound to a completion queue, counter or event queue. Reading
// the queue runs progress on each of them (fi_cq_read drives the data
// path), and a reader about to block hands them to their background
// progress.
type epSet struct {
	kit.Set[*endpoint]
	// waiting counts the readers blocked on the queue (in wait).
	waiting atomic.Int32
}

// Hooks gives every queue of the provider the set's hooks (kit.Driver;
// the fabric's EQs too: kit.Fabric.DrivenEQ).
func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }

// progress is the queue's progress hook.
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.polls.Add(1)
		e.progress()
	}
}

// wait is the queue's wait hook (kit.WaitFunc), called when a reader
// found nothing and is about to block: it tells the endpoints' background
// progress that nobody polls them now, so that it watches their sockets at
// once and for as long as the reader blocks, and sleeps until the queue
// wakes it (an entry, a signal, the reader's context). An endpoint that
// joins the queue or gets its socket while the reader blocks (a
// connection that is accepted or comes up meanwhile, as rxm's do) is
// handed over as it does (kickIfBlocked): the count goes up before the
// endpoints are looked at, and they look at it after they are there, so
// that one side always sees the other.
func (s *epSet) wait(ctx context.Context) error {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for _, e := range s.Load() {
		if a := e.auto.Load(); a != nil {
			a.Kick()
		}
	}
	<-ctx.Done()
	return nil
}

// blocked reports whether a reader is blocked on a queue or counter whose
// reads drive the endpoint's progress (sockpoll.Config.Blocked).
func (e *endpoint) blocked() bool {
	for _, s := range e.Sets {
		if s.waiting.Load() > 0 {
			return true
		}
	}
	return false
}

// kickIfBlocked hands the endpoint's socket to its background progress
// when a reader is blocked on one of its queues: called once the socket
// has its poller, which the reader could not kick when it blocked.
func (e *endpoint) kickIfBlocked() {
	if a := e.auto.Load(); a != nil && e.blocked() {
		a.Kick()
	}
}

// startAuto starts the endpoint's background progress (FI_PROGRESS_AUTO,
// internal/sockpoll) for its socket fd: it watches for input, and for
// room while sends wait for it.
func startAuto(e *endpoint, fd int) (*sockpoll.Poller, error) {
	var deadline func() time.Time
	// A receive side waiting for a posted buffer leaves its data in the
	// socket: watching it then would wake for nothing.
	wanted := func() bool { return !e.recvStalled.Load() || e.sendBlocked.Load() }
	dyn := e.dp.dyn != nil
	if dyn {
		// A message held for the handler may be in the staging buffer
		// already, with nothing more in the socket: a Resume is a
		// deadline due at once (dynrecv.go), and wanted; otherwise the
		// deadline is the stall watch's (stall.go).
		deadline = e.dynDeadline
		wanted = func() bool { return !e.recvStalled.Load() || e.sendBlocked.Load() || e.dynResumeDue() }
	}
	return sockpoll.Start(sockpoll.Config{
		Name:     "tcp-progress",
		Progress: e.progress,
		Polls:    e.polls.Load,
		// Input while the receive side can take it (setStalled), room
		// while sends wait for it.
		Events: func(int) uint32 {
			var ev uint32
			if !e.recvStalled.Load() {
				ev = unix.EPOLLIN | unix.EPOLLRDHUP
			}
			if e.sendBlocked.Load() {
				ev |= unix.EPOLLOUT
			}
			return ev
		},
		Wanted:   wanted,
		Deadline: deadline,
		WG:       &e.autoWG,
		// Endpoints in dynamic receive mode, which a layer (rxm) opens
		// for its connections, progress data manually, as C's rxm
		// entries say (FI_PROGRESS_MANUAL): they are watched only while
		// a reader blocks, and a layer that busy-polls is never woken
		// for.
		OnKick:  dyn,
		Blocked: e.blocked,
	}, fd)
}
