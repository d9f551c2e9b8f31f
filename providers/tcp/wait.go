package tcp

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofabric/gofabric/internal/provutil"
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
			a.idle()
		}
	}
	<-ctx.Done()
	return nil
}

// pollWindow is how long after an application's last queue read the
// background progress of an endpoint leaves the socket to it.
const pollWindow = time.Millisecond

// autoProgress is an endpoint's background progress (FI_PROGRESS_AUTO): a
// goroutine that moves data when the application does not.
//
// While the application reads its queues (busy polling: every read runs
// progress) the goroutine only looks every pollWindow whether it still
// does; the socket is then in no epoll set that anyone waits on, so an
// arriving message wakes no thread (on these 2-vCPU guests waking the
// netpoller's idle thread for every message would double the latency).
// Once the application stops (it blocks in SRead, computes, or is a
// passive RMA target), the goroutine arms the socket, one-shot, in an
// epoll instance of its own, which sits in the runtime's netpoller, and
// sleeps there; when the socket is readable (or writable while sends wait
// for room) it runs progress. It ends when the endpoint's socket closes.
type autoProgress struct {
	e    *endpoint
	fd   int      // the endpoint's socket
	epfd int      // the private epoll instance (os.File.Fd would make it blocking)
	epf  *os.File // the same, as the netpoller knows it
	eprc syscall.RawConn
	// armed is set while the socket is armed in the epoll instance.
	armed atomic.Bool
	kick  chan struct{} // wakes the goroutine early: the application blocks
	stop  chan struct{}
	// mu orders arm against halt, so that no epoll_ctl reaches a closed
	// (and maybe reused) descriptor.
	mu     sync.Mutex
	halted bool
	evs    [1]unix.EpollEvent
}

func startAuto(e *endpoint, fd int) (*autoProgress, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	// Registered disarmed: one-shot with no events.
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(fd)}); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "tcp-progress") // non-blocking: goes to the netpoller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	a := &autoProgress{e: e, fd: fd, epfd: epfd, epf: f, eprc: rc, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	e.autoWG.Add(1)
	go a.loop()
	return a, nil
}

// idle reports that the application is about to block.
func (a *autoProgress) idle() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// blocked reports that sends wait for room in the socket: an armed socket
// is re-armed to report writability too.
func (a *autoProgress) blocked() {
	if a.armed.Load() {
		a.arm()
	}
}

func (a *autoProgress) arm() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.halted {
		return
	}
	ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT)
	if a.e.sendBlocked.Load() {
		ev |= unix.EPOLLOUT
	}
	_ = unix.EpollCtl(a.epfd, unix.EPOLL_CTL_MOD, a.fd, &unix.EpollEvent{Events: ev, Fd: int32(a.fd)})
}

// halt ends the goroutine; the caller closes the socket after it.
func (a *autoProgress) halt() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.halted {
		a.halted = true
		close(a.stop)
		a.epf.Close()
	}
}

func (a *autoProgress) loop() {
	defer a.e.autoWG.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	// ready takes the socket's event, if there is one; the RawConn waits
	// on the epoll instance until there is.
	ready := func(epfd uintptr) bool {
		n, _ := unix.EpollWait(int(epfd), a.evs[:], 0)
		return n > 0
	}
	for {
		// Leave the socket to an application that polls.
		seen := a.e.polls.Load()
		timer.Reset(pollWindow)
		select {
		case <-timer.C:
			if a.e.polls.Load() != seen {
				continue
			}
		case <-a.kick:
			timer.Stop()
		case <-a.stop:
			timer.Stop()
			return
		}
		seen = a.e.polls.Load()
		a.armed.Store(true)
		a.arm()
		err := a.eprc.Read(ready)
		a.armed.Store(false)
		if err != nil {
			return // halted
		}
		if a.e.polls.Load() == seen {
			a.e.progress()
		}
	}
}
