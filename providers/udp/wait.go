package udp

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

// epSet is the set of endpoints whose progress a completion queue drives:
// reading the queue runs progress on each of them (fi_cq_read drives the
// data path), and a reader about to block hands them to their background
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
		if a := e.auto; a != nil {
			a.kickNow()
		}
	}
	<-ctx.Done()
	return nil
}

// pollWindow is how long after an application's last queue read the
// background progress of an endpoint leaves the sockets to it.
const pollWindow = time.Millisecond

// autoProgress is an endpoint's background progress (FI_PROGRESS_AUTO): a
// goroutine that receives datagrams into posted receives when the
// application does not read its queues.
//
// While the application reads its queues (busy polling: every read runs
// progress) the goroutine only looks every pollWindow whether it still
// does, and the sockets are in no epoll set anyone waits on, so an
// arriving datagram wakes no thread. Once the application stops, and
// while receives are posted, the goroutine arms the sockets (the
// endpoint's and its joined groups'), one-shot, in an epoll instance of
// its own, which sits in the runtime's netpoller, and sleeps there; when
// one is readable it runs progress. With no receive posted it sleeps until
// one is. It ends when the endpoint closes.
type autoProgress struct {
	e    *endpoint
	epfd int      // the private epoll instance (os.File.Fd would make it blocking)
	epf  *os.File // the same, as the netpoller knows it
	eprc syscall.RawConn
	// wantRecv is set while the goroutine sleeps for lack of a posted
	// receive: posting one kicks it.
	wantRecv atomic.Bool
	kick     chan struct{}
	stop     chan struct{}
	// mu guards fds and halted, and orders epoll_ctl against halt, so
	// that none reaches a closed (and maybe reused) descriptor.
	mu     sync.Mutex
	fds    []int // the sockets registered: the endpoint's, then groups'
	armed  bool
	halted bool
	evs    [1]unix.EpollEvent
}

func startAuto(e *endpoint) (*autoProgress, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "udp-progress") // non-blocking: goes to the netpoller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	a := &autoProgress{e: e, epfd: epfd, epf: f, eprc: rc, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	if err := a.add(e.fd); err != nil {
		f.Close()
		return nil, err
	}
	e.autoWG.Add(1)
	go a.loop()
	return a, nil
}

// kickNow wakes the goroutine: the application blocks, or posted a
// receive it waits for.
func (a *autoProgress) kickNow() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// add registers fd, disarmed unless the sockets are armed now.
func (a *autoProgress) add(fd int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.halted {
		return nil
	}
	ev := &unix.EpollEvent{Events: a.events(), Fd: int32(fd)}
	if err := unix.EpollCtl(a.epfd, unix.EPOLL_CTL_ADD, fd, ev); err != nil {
		return err
	}
	a.fds = append(a.fds, fd)
	return nil
}

// remove unregisters fd before it closes.
func (a *autoProgress) remove(fd int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range a.fds {
		if x == fd {
			a.fds = append(a.fds[:i], a.fds[i+1:]...)
			if !a.halted {
				_ = unix.EpollCtl(a.epfd, unix.EPOLL_CTL_DEL, fd, nil)
			}
			return
		}
	}
}

// events are the epoll events of a registered socket: one-shot input
// while armed, none otherwise.
func (a *autoProgress) events() uint32 {
	if a.armed {
		return unix.EPOLLIN | unix.EPOLLONESHOT
	}
	return unix.EPOLLONESHOT
}

// setArmed arms or disarms every registered socket.
func (a *autoProgress) setArmed(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = on
	if a.halted || !on {
		return // a one-shot registration disarms itself once it fires
	}
	for _, fd := range a.fds {
		_ = unix.EpollCtl(a.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: a.events(), Fd: int32(fd)})
	}
}

// halt ends the goroutine; the caller closes the sockets after it.
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
	// ready takes a socket's event, if there is one; the RawConn waits
	// on the epoll instance until there is.
	ready := func(epfd uintptr) bool {
		n, _ := unix.EpollWait(int(epfd), a.evs[:], 0)
		return n > 0
	}
	for {
		// Leave the sockets to an application that polls.
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
		if a.e.posted.Load() <= 0 {
			a.wantRecv.Store(true)
			if a.e.posted.Load() <= 0 {
				select {
				case <-a.kick:
				case <-a.stop:
					return
				}
			}
			a.wantRecv.Store(false)
			continue
		}
		seen = a.e.polls.Load()
		a.setArmed(true)
		err := a.eprc.Read(ready)
		a.setArmed(false)
		if err != nil {
			return // halted
		}
		if a.e.polls.Load() == seen {
			a.e.progress()
		}
	}
}
