//go:build linux

// Package sockpoll is the background progress (FI_PROGRESS_AUTO) of the
// socket providers (tcp, udp): a goroutine that moves data when the
// application does not, per endpoint (Poller, udp's) or per group of
// endpoints sharing one epoll instance with the application's reads
// (Group, tcp's: a domain's connections).
//
// The providers keep their sockets out of the Go netpoller and read and
// write them without blocking from the application's queue reads (busy
// polling: an arriving message wakes no thread). While the application
// polls, the goroutine only looks now and then (PollWindow) whether it
// still does, and never touches the sockets. Once it stops (it blocks in
// SRead or Wait, computes, or is a passive RMA target), the goroutine arms
// the sockets, one-shot, in an epoll instance of its own that sits in the
// netpoller, sleeps there, and runs the provider's progress when one is
// ready. With Config.OnKick (manual data progress) it takes the sockets
// only when the application is about to block, and does not look in on an
// application that polls. With Config.Blocked it keeps the sockets, without
// the look, for as long as a reader is blocked, and (OnKick) leaves them as
// soon as none is. With Config.Deadline it also runs progress when a
// timeout of the provider falls due while it waits (tcp: the stall watch of
// RDM connections), and Wake makes it take a deadline that moved. It ends
// with Halt.
package sockpoll

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PollWindow is how long after the application's last queue read the
// goroutine leaves the sockets to it, at first: each look that finds the
// application still polling doubles the wait before the next, up to
// MaxPollWindow, and a look that finds it gone (or a Kick) starts again at
// PollWindow. An application that polls without a pause is thus looked in
// on about 60 times a second, not 1000: each look wakes a thread, which on
// a machine whose CPUs all poll preempts one that does (fi_pingpong, two
// processes on two CPUs, 4 interleaved rounds, a fixed 1 ms window against
// this: tcp msg 64 B 4.70 against 4.45 us a message, udp 64 B 2.88 against
// 2.81). The price is that an application that stops polling after it
// polled long, without blocking in a read, gets background progress up to
// MaxPollWindow late.
const PollWindow = time.Millisecond

// MaxPollWindow bounds the wait between looks (PollWindow).
const MaxPollWindow = 16 * time.Millisecond

// Config is what a Poller drives.
type Config struct {
	// Name names the epoll instance's file ("tcp-progress").
	Name string
	// Progress runs the endpoint's progress.
	Progress func()
	// Polls returns a count the application's queue reads advance.
	Polls func() uint64
	// Events returns the epoll events to arm fd with (unix.EPOLLIN, ...);
	// EPOLLONESHOT is added.
	Events func(fd int) uint32
	// Wanted, if set, says whether there is anything to wait for (udp:
	// receives are posted); while it is false the goroutine sleeps until
	// Kick.
	Wanted func() bool
	// Deadline, if set, returns when the provider wants progress to run
	// although no socket is ready (a timeout of its own falls due), or
	// the zero time for never. The goroutine looks at it each time it
	// arms the sockets, and whenever Wake is called.
	Deadline func() time.Time
	// WG counts the goroutine, so that the endpoint's Close can wait for
	// it.
	WG *sync.WaitGroup
	// OnKick makes the goroutine take the sockets only after a Kick, for
	// endpoints whose data progress is FI_PROGRESS_MANUAL: data moves
	// only when the application calls in, so nothing is owed to an
	// application that computes, and one about to block kicks. It leaves
	// the sockets again once the application polls, and then sleeps until
	// the next Kick: while the application busy-polls, no timer wakes it
	// (each wake-up takes a thread, on a busy machine the polling one's
	// processor).
	OnKick bool
	// Blocked, if set, reports whether a reader is blocked now on a
	// queue the sockets' progress feeds (in SRead or Wait). While it is,
	// the goroutine keeps the sockets, whatever other threads poll, and
	// as long as none does it arms them again right after each progress,
	// instead of looking PollWindow later whether the application polls
	// (a transfer that needs many wake-ups, a large write the socket
	// takes piece by piece, would wait that long each time). With OnKick,
	// a Kick when it is false (the reader that kicked already left) is
	// ignored, and the goroutine leaves the sockets once it turns false,
	// until the next Kick. The caller Kicks when it turns true (a reader
	// about to block) and when it starts a Poller while it is true, so
	// that no blocked reader goes unserved.
	Blocked func() bool
}

// Poller is an endpoint's background progress.
type Poller struct {
	cfg  Config
	epfd int      // the epoll instance (os.File.Fd would make it blocking)
	epf  *os.File // the same, as the netpoller knows it
	eprc syscall.RawConn
	kick chan struct{}
	stop chan struct{}
	// mu guards fds, armed and halted, and orders epoll_ctl against Halt,
	// so that none reaches a closed (and maybe reused) descriptor.
	mu     sync.Mutex
	fds    []int
	armed  bool
	halted bool
	evs    [1]unix.EpollEvent
	// idle is true while the goroutine sleeps because Config.Wanted is
	// false (Want wakes it then, and only then).
	idle atomic.Bool
}

// Start starts the goroutine for the sockets fds.
func Start(cfg Config, fds ...int) (*Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), cfg.Name) // non-blocking: goes to the netpoller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &Poller{cfg: cfg, epfd: epfd, epf: f, eprc: rc, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	for _, fd := range fds {
		if err := p.Add(fd); err != nil {
			f.Close()
			return nil, err
		}
	}
	cfg.WG.Add(1)
	go p.loop()
	return p, nil
}

// Add adds fd to the sockets, armed if they are armed now. Disarmed
// sockets stay out of the epoll instance (setArmed), so Add checks that
// fd can be polled by registering it and, unless armed, removing it
// again.
func (p *Poller) Add(fd int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.halted {
		return nil
	}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: p.events(fd), Fd: int32(fd)}); err != nil {
		return err
	}
	if !p.armed {
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	}
	p.fds = append(p.fds, fd)
	return nil
}

// Remove unregisters fd; call it before fd closes.
func (p *Poller) Remove(fd int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.fds {
		if x == fd {
			p.fds = append(p.fds[:i], p.fds[i+1:]...)
			if p.armed && !p.halted {
				_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
			}
			return
		}
	}
}

// Kick wakes the goroutine early: the application is about to block, or
// made Wanted true.
func (p *Poller) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Want tells the goroutine that Config.Wanted may have turned true (udp:
// a receive is posted): it wakes the goroutine only if it sleeps for want
// of it, and otherwise costs one atomic load. Kick instead wakes it
// whatever it does, and an application that posts a receive for every
// message it polls for would wake it (a thread, on a busy machine the
// polling one's processor) for every message.
func (p *Poller) Want() {
	if p.idle.Load() {
		p.Kick()
	}
}

// Wake makes the goroutine, if it waits for the sockets, look at
// Config.Deadline again: call it when the deadline moved earlier.
func (p *Poller) Wake() {
	if p.cfg.Deadline == nil {
		return
	}
	// A deadline in the past ends the wait at once; the loop then sets
	// the current one.
	_ = p.epf.SetReadDeadline(time.Unix(1, 0))
}

// Rearm arms the sockets again with their current Events, if they are
// armed (tcp: sends now wait for room, watch for writability too).
func (p *Poller) Rearm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed && !p.halted {
		p.modAll()
	}
}

// Halt ends the goroutine; the caller closes its sockets after it.
func (p *Poller) Halt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.halted {
		p.halted = true
		close(p.stop)
		p.epf.Close()
	}
}

// events are fd's epoll events: one-shot, with the provider's events
// while armed, none otherwise.
func (p *Poller) events(fd int) uint32 {
	if p.armed {
		return p.cfg.Events(fd) | unix.EPOLLONESHOT
	}
	return unix.EPOLLONESHOT
}

func (p *Poller) modAll() {
	for _, fd := range p.fds {
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: p.events(fd), Fd: int32(fd)})
	}
}

// setArmed arms or disarms the sockets. Disarmed, they are out of the
// epoll instance altogether rather than in it with no events: a socket in
// an epoll instance runs its wake-up callback on every datagram or
// segment it receives and every buffer it frees, which costs an
// application that polls about 250 ns a message (udp's
// BenchmarkRawInProcPingPong, epoll against plain).
func (p *Poller) setArmed(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.halted || on == p.armed {
		p.armed = on
		return
	}
	p.armed = on
	for _, fd := range p.fds {
		if on {
			_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: p.events(fd), Fd: int32(fd)})
		} else {
			_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
		}
	}
}

func (p *Poller) loop() {
	defer p.cfg.WG.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	// ready takes a socket's event, if there is one; the RawConn waits on
	// the epoll instance until there is. (Arming the RawConn forgets an
	// earlier readiness notice, so only a look at the instance tells.)
	ready := func(epfd uintptr) bool {
		n, _ := unix.EpollWait(int(epfd), p.evs[:], 0)
		return n > 0
	}
	kicked := false // OnKick: a Kick handed the sockets over
	polled := false // the last wake-up found that the application polled
	window := PollWindow
	for {
		switch {
		case p.cfg.OnKick && !kicked:
			select {
			case <-p.kick:
				// A reader that kicked and left is owed nothing.
				kicked = p.cfg.Blocked == nil || p.cfg.Blocked()
			case <-p.stop:
				return
			}
			if !kicked {
				continue
			}
			polled = false
		case p.blocked() && !polled:
			// A reader is blocked and nobody polls: watch at once.
		case p.cfg.OnKick && p.cfg.Blocked != nil && !p.blocked():
			// The reader left: manual progress waits for the next one.
			kicked = false
			continue
		default:
			// Leave the sockets to an application that polls (another
			// thread, while a reader blocks: the goroutine then looks
			// again, and does not spin on input that thread is about
			// to take).
			seen := p.cfg.Polls()
			timer.Reset(window)
			select {
			case <-timer.C:
				if p.cfg.Polls() != seen {
					if !p.blocked() {
						kicked = false
					}
					window = min(2*window, MaxPollWindow)
					continue
				}
			case <-p.kick:
				timer.Stop()
			case <-p.stop:
				timer.Stop()
				return
			}
			window = PollWindow
			polled = false
		}
		if p.cfg.Wanted != nil && !p.cfg.Wanted() {
			// Idle first, then Wanted again: a caller that made Wanted
			// true and then looked at idle (Want) either is seen here
			// or sees idle.
			p.idle.Store(true)
			if p.cfg.Wanted() {
				p.idle.Store(false)
				continue
			}
			select {
			case <-p.kick:
				p.idle.Store(false)
				continue
			case <-p.stop:
				return
			}
		}
		seen := p.cfg.Polls()
		p.setArmed(true)
		p.setDeadline()
		err := p.eprc.Read(ready)
		p.setArmed(false)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // halted
		}
		if polled = p.cfg.Polls() != seen; !polled {
			p.cfg.Progress()
		} else if p.cfg.OnKick && !p.blocked() {
			// The application polled while the sockets were armed: it
			// has them back (only the window's look caught that before,
			// and it missed polls that ended before the wake-up).
			kicked = false
		}
	}
}

// blocked reports Config.Blocked, false without one.
func (p *Poller) blocked() bool { return p.cfg.Blocked != nil && p.cfg.Blocked() }

// setDeadline bounds the coming wait by Config.Deadline. A Wake that
// lands between reading the deadline and setting it would be overwritten:
// reading it again after setting it catches that, since the caller of
// Wake moved the deadline first.
func (p *Poller) setDeadline() {
	if p.cfg.Deadline == nil {
		return
	}
	for {
		d := p.cfg.Deadline()
		_ = p.epf.SetReadDeadline(d)
		if p.cfg.Deadline().Equal(d) {
			return
		}
	}
}
