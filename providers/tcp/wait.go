package tcp

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// epSet is the set of endpoints whose progress a queue drives: the
// endpoints bound to a completion queue, counter or event queue. Reading
// the queue runs progress on each of them (fi_cq_read drives the data
// path), and a reader about to block hands them to their background
// progress. Adding and removing copy the slice, so progress reads it with
// one atomic load and no lock.
type epSet struct {
	mu  sync.Mutex // serialises add and remove
	eps atomic.Pointer[[]*endpoint]
}

func (s *epSet) add(e *endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur []*endpoint
	if p := s.eps.Load(); p != nil {
		cur = *p
	}
	if slices.Contains(cur, e) {
		return
	}
	next := append(slices.Clip(cur), e)
	s.eps.Store(&next)
}

func (s *epSet) remove(e *endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.eps.Load()
	if p == nil {
		return
	}
	next := slices.DeleteFunc(slices.Clone(*p), func(x *endpoint) bool { return x == e })
	s.eps.Store(&next)
}

// progress is the queue's progress hook.
func (s *epSet) progress() {
	if p := s.eps.Load(); p != nil {
		for _, e := range *p {
			e.polls.Add(1)
			e.progress()
		}
	}
}

// wait is the queue's wait hook (provutil.WaitFunc), called when a reader
// found nothing and is about to block: it tells the endpoints' background
// progress that nobody polls them now, so that it watches their sockets at
// once, and sleeps until the queue wakes it (an entry, a signal, the
// reader's context).
func (s *epSet) wait(ctx context.Context) error {
	if p := s.eps.Load(); p != nil {
		for _, e := range *p {
			if a := e.auto.Load(); a != nil {
				a.idle()
			}
		}
	}
	<-ctx.Done()
	return nil
}

// pollWindow is how long after an application's last queue read the
// background progress of an endpoint leaves the socket to it.
const pollWindow = time.Millisecond

// autoProgress is an endpoint's background progress (FI_PROGRESS_AUTO):
// two goroutines, one for each direction of the socket, that move data
// when the application does not. While the application reads its queues
// (busy polling: every read runs progress), they only look every
// pollWindow whether it still does, and never touch the socket, so they
// cost the data path nothing. Once it stops (it blocks in SRead, or
// computes, or is a passive RMA target), they sleep on the socket through
// the runtime's netpoller and run progress when it is readable, or
// writable while sends wait for room. They end when the socket closes.
type autoProgress struct {
	e    *endpoint
	conn *net.TCPConn
	rc   syscall.RawConn
	// kick wakes the reader early (the application blocks); wkick the
	// writer (sends wait for room, or the application blocks).
	kick, wkick chan struct{}
	stop        chan struct{}
	once        sync.Once
}

func startAuto(e *endpoint, conn *net.TCPConn, rc syscall.RawConn) *autoProgress {
	a := &autoProgress{e: e, conn: conn, rc: rc,
		kick: make(chan struct{}, 1), wkick: make(chan struct{}, 1), stop: make(chan struct{})}
	e.autoWG.Add(2)
	go a.loop(false)
	go a.loop(true)
	return a
}

// idle reports that the application is about to block.
func (a *autoProgress) idle() {
	a.nudge(a.kick)
	a.nudge(a.wkick)
}

// blocked reports that sends wait for room in the socket.
func (a *autoProgress) blocked() { a.nudge(a.wkick) }

func (a *autoProgress) nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// halt ends both goroutines; the caller closes the socket, which ends a
// wait in progress.
func (a *autoProgress) halt() { a.once.Do(func() { close(a.stop) }) }

func (a *autoProgress) loop(write bool) {
	defer a.e.autoWG.Done()
	kick := a.kick
	if write {
		kick = a.wkick
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	// ready is called by the RawConn with the poller armed: first it looks
	// whether the socket is ready already (arming forgets an earlier
	// readiness notice, so only a look at the socket tells), and if not
	// it makes the RawConn wait once.
	events := int16(unix.POLLIN | unix.POLLRDHUP)
	if write {
		events = unix.POLLOUT
	}
	first := false
	ready := func(fd uintptr) bool {
		if !first {
			return true
		}
		first = false
		pfd := [1]unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd[:], 0)
		return err != nil || n > 0
	}
	for {
		if write && !a.e.sendBlocked.Load() {
			select {
			case <-kick:
				continue
			case <-a.stop:
				return
			}
		}
		// Leave the socket to an application that polls.
		seen := a.e.polls.Load()
		timer.Reset(pollWindow)
		select {
		case <-timer.C:
			if a.e.polls.Load() != seen {
				continue
			}
		case <-kick:
			timer.Stop()
		case <-a.stop:
			timer.Stop()
			return
		}
		seen = a.e.polls.Load()
		first = true
		var err error
		if write {
			err = a.rc.Write(ready)
		} else {
			err = a.rc.Read(ready)
		}
		if err != nil {
			return // the socket is closed
		}
		if a.e.polls.Load() == seen {
			a.e.progress()
		}
	}
}
