//go:build linux

package sockpoll

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Group multiplexes the sockets of many endpoints (tcp: those of one
// domain) over one epoll instance, which the application's queue reads
// and one background goroutine share. The sockets are registered once,
// edge-triggered, for input and room: whoever takes a socket's event from
// the instance (a reader's Poll, or the goroutine) progresses that
// endpoint or queues it for the next reader (Member.Pend). A read then
// costs one epoll_wait with a zero timeout and the progress of the
// endpoints that are ready or have work of their own, however many idle
// ones the group has; a socket costs the group no descriptor of its own.
// A lone member is progressed at every read instead, without the
// epoll_wait, unless it waits for its events (MemberConfig.Waits).
//
// An endpoint's progress must take every event it is run for: read until
// the socket has nothing more (a read that took less than it asked for
// says so, until Member.Ended; or its receive side waits for the
// application, which then continues it), write until the socket is full
// (room then raises a new event) or nothing is queued. What it leaves
// otherwise, it must Pend.
//
// The goroutine gives the members FI_PROGRESS_AUTO as Poller gives one
// endpoint: it leaves the sockets to an application that polls (it looks
// whether it still does after PollWindow, then less and less often, up
// to MaxPollWindow), watches them when it stopped,
// at once while a reader is blocked (GroupConfig.Blocked; the caller
// Kicks when one blocks), and serves members with OnKick (manual data
// progress) only while a reader of theirs is blocked. It also runs
// progress for members whose deadline (MemberConfig.Deadline, while
// SetTimed) falls due. It runs while the group has members, and ends
// with the last one.

// groupEvents is how many events one epoll_wait takes.
const groupEvents = 16

// GroupConfig is what a Group drives.
type GroupConfig struct {
	// Name names the epoll instance's file ("tcp-progress").
	Name string
	// Blocked reports whether a reader is blocked now on a queue that
	// any member's progress feeds (in SRead or Wait).
	Blocked func() bool
}

// MemberConfig is one endpoint of a Group.
type MemberConfig struct {
	// Progress runs the endpoint's progress.
	Progress func()
	// OnKick marks an endpoint whose data progress is manual: the
	// goroutine serves it only while Blocked reports a reader of its
	// queues blocked; otherwise what it finds for it waits for the next
	// reader's Poll.
	OnKick bool
	// Blocked reports whether a reader is blocked on one of the
	// endpoint's queues (OnKick members).
	Blocked func() bool
	// Deadline, if set, returns when the endpoint wants progress although
	// its socket is not ready, the zero time for never; it is looked at
	// while the member is SetTimed.
	Deadline func() time.Time
	// Waits, if set, reports whether the endpoint had better wait for its
	// socket's events (tcp: while queued sends wait for room, or while
	// messages stream in). A lone member that waits is progressed on its
	// events, as members of a larger group are, instead of at every
	// Poll: a read takes the socket's lock, and one at every Poll while a
	// large message streams in holds it often enough to slow the stream,
	// where epoll_wait, which does not take it, reports each new piece
	// (tcp's fi_pingpong msg 1 MiB was 17% slower without).
	Waits func() bool
}

// Group is the shared progress of many endpoints' sockets.
type Group struct {
	cfg GroupConfig
	// epfd holds the members' sockets, edge-triggered; reads take its
	// events with a zero-timeout epoll_wait (with a lone member they run
	// its progress instead: solo). The goroutine sleeps on wpf,
	// an epoll instance in the netpoller where epfd is registered only
	// while the goroutine watches: while the application polls, an
	// arriving message wakes no thread.
	epfd  int
	wpf   *os.File
	wprc  syscall.RawConn
	wfd   int
	kick  chan struct{}
	polls atomic.Uint64 // Poll calls: the application polls
	pokes atomic.Uint64 // calls of poke
	// users counts the Polls running, so that Close does not close the
	// instance under one (its descriptor could be reused).
	users  atomic.Int32
	closed atomic.Bool
	// busyMu is held by the goroutine from the moment it takes events
	// until it has run their progress (busy says so): a Poll waits for
	// it, so that what a queue read finds includes the progress of the
	// events taken before it, as if it had run it itself.
	busyMu sync.Mutex
	busy   atomic.Bool

	// solo is the only member while there is exactly one (under mu):
	// Poll then runs its progress directly instead of asking epfd.
	solo atomic.Pointer[Member]

	// mu guards the fields below.
	mu      sync.Mutex
	slots   []*Member // by event data; nil when free
	free    []int32
	members int
	nauto   atomic.Int32 // members without OnKick
	pending []*Member
	npend   atomic.Int32
	timed   []*Member
	ntimed  atomic.Int32
	stop    chan struct{} // the running goroutine's, nil when none
	done    chan struct{} // closed when that goroutine ended
}

// Member is an endpoint's place in a Group.
type Member struct {
	g      *Group
	cfg    MemberConfig
	fd     int
	slot   int32
	queued atomic.Bool // on the pending list
	ended  atomic.Bool // an event said the peer's stream ended or failed
	timed  bool        // on the timed list (under g.mu)
	gone   bool        // removed (under g.mu)
}

// NewGroup creates a group's epoll instance. Its goroutine starts with
// its first member.
func NewGroup(cfg GroupConfig) (*Group, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	if err := unix.SetNonblock(wfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, err
	}
	f := os.NewFile(uintptr(wfd), cfg.Name) // non-blocking: goes to the netpoller
	rc, err := f.SyscallConn()
	if err != nil {
		unix.Close(epfd)
		f.Close()
		return nil, err
	}
	return &Group{cfg: cfg, epfd: epfd, wpf: f, wprc: rc, wfd: wfd, kick: make(chan struct{}, 1)}, nil
}

// arm registers epfd in the goroutine's instance, or takes it out: while
// it is there every event of a member wakes the goroutine's wait; while it
// is not, an event costs the kernel no wake-up call beyond epfd's own.
func (g *Group) arm(on bool) {
	if on {
		ev := unix.EpollEvent{Events: unix.EPOLLIN}
		_ = unix.EpollCtl(g.wfd, unix.EPOLL_CTL_ADD, g.epfd, &ev)
	} else {
		_ = unix.EpollCtl(g.wfd, unix.EPOLL_CTL_DEL, g.epfd, nil)
	}
}

// Add registers the socket fd of an endpoint, edge-triggered for input,
// room and the peer's end (the first event comes at once: the socket has
// room), and starts the goroutine if it is the first member.
func (g *Group) Add(fd int, cfg MemberConfig) (*Member, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return nil, os.ErrClosed
	}
	m := &Member{g: g, cfg: cfg, fd: fd}
	if n := len(g.free); n > 0 {
		m.slot = g.free[n-1]
		g.free = g.free[:n-1]
		g.slots[m.slot] = m
	} else {
		m.slot = int32(len(g.slots))
		g.slots = append(g.slots, m)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: m.slot}
	if err := unix.EpollCtl(g.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		g.slots[m.slot] = nil
		g.free = append(g.free, m.slot)
		return nil, err
	}
	g.members++
	g.setSolo()
	if !cfg.OnKick {
		g.nauto.Add(1)
	}
	if g.stop == nil {
		prev := g.done
		g.stop, g.done = make(chan struct{}), make(chan struct{})
		go g.loop(prev, g.stop, g.done)
	}
	return m, nil
}

// Remove unregisters the member; call it before its socket closes. When
// it was the last member, the goroutine ends: Remove returns a channel
// closed once it has (nil otherwise), for a Close that must not leave it
// behind. Remove may be called from the member's progress.
func (m *Member) Remove() <-chan struct{} {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.gone {
		return nil
	}
	m.gone = true
	_ = unix.EpollCtl(g.epfd, unix.EPOLL_CTL_DEL, m.fd, nil)
	g.slots[m.slot] = nil
	g.free = append(g.free, m.slot)
	if m.timed {
		g.untime(m)
	}
	g.members--
	g.setSolo()
	if !m.cfg.OnKick {
		g.nauto.Add(-1)
	}
	if g.members > 0 || g.stop == nil {
		return nil
	}
	close(g.stop)
	g.stop = nil
	g.poke()
	return g.done
}

// setSolo sets solo after the members changed (under mu).
func (g *Group) setSolo() {
	var solo *Member
	if g.members == 1 {
		for _, m := range g.slots {
			if m != nil {
				solo = m
				break
			}
		}
	}
	g.solo.Store(solo)
}

// Pend queues the member for progress by the next Poll (and the goroutine,
// when it serves the member) although its socket raised no event: it has
// work of its own (tcp: a Resume of a held message). It never blocks and
// never allocates once the list has grown.
func (m *Member) Pend() {
	if m.queued.Swap(true) {
		return
	}
	g := m.g
	g.mu.Lock()
	if m.gone {
		g.mu.Unlock()
		m.queued.Store(false)
		return
	}
	g.pending = append(g.pending, m)
	g.npend.Add(1)
	g.mu.Unlock()
	g.poke()
}

// SetTimed says whether the member has a deadline (MemberConfig.Deadline)
// to be kept: Polls and the goroutine then look at it. Call it when the
// deadline appears, after it is readable, and when it goes; the goroutine
// takes a new one at once.
func (m *Member) SetTimed(on bool) {
	g := m.g
	g.mu.Lock()
	switch {
	case m.gone || on == m.timed:
	case on:
		m.timed = true
		g.timed = append(g.timed, m)
		g.ntimed.Add(1)
	default:
		g.untime(m)
	}
	g.mu.Unlock()
	if on {
		g.poke()
	}
}

// untime takes m off the timed list (under mu).
func (g *Group) untime(m *Member) {
	for i, x := range g.timed {
		if x == m {
			last := len(g.timed) - 1
			g.timed[i] = g.timed[last]
			g.timed[last] = nil
			g.timed = g.timed[:last]
			break
		}
	}
	m.timed = false
	g.ntimed.Add(-1)
}

// Kick wakes the goroutine: a reader is about to block.
func (g *Group) Kick() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
	g.poke()
}

// poke ends a wait of the goroutine on the sockets, so that it looks
// again at what it serves.
func (g *Group) poke() {
	g.pokes.Add(1)
	_ = g.wpf.SetReadDeadline(time.Unix(1, 0))
}

// Close closes the epoll instance; the group must have no members.
func (g *Group) Close() {
	g.mu.Lock()
	if g.closed.Swap(true) {
		g.mu.Unlock()
		return
	}
	done := g.done
	g.mu.Unlock()
	if done != nil {
		<-done
	}
	for g.users.Load() != 0 {
		time.Sleep(time.Microsecond)
	}
	g.wpf.Close()
	unix.Close(g.epfd)
}

// epollWait0 takes the instance's ready events without blocking (a raw
// system call: a zero timeout never sleeps).
func epollWait0(epfd int, evs []unix.EpollEvent) int {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0
	}
	return int(n)
}

// Poll is a reader's progress (a queue read): it takes the ready events
// and progresses those endpoints, then those with pending work and those
// whose deadline is due. It never blocks and never allocates.
func (g *Group) Poll() {
	g.polls.Add(1)
	g.users.Add(1)
	if g.closed.Load() {
		g.users.Add(-1)
		return
	}
	if m := g.solo.Load(); m != nil && (m.cfg.Waits == nil || !m.cfg.Waits()) {
		// One member (a connection alone in its domain, as in a
		// ping-pong): its progress reads the socket at once, which
		// finds nothing as cheaply as epoll_wait would, and when
		// something is there saves that system call between the
		// message and its answer (fi_pingpong tcp msg 64 B, 4
		// interleaved rounds: 4.11 against 3.73 us a message; C 3.84).
		// Its events stay in epfd's ready list: a later epoll_wait
		// (another member joined, or the goroutine watching for a
		// blocked reader) takes them, and the progress they cause
		// finds nothing.
		m.cfg.Progress()
	} else {
		g.pollEvents()
	}
	g.users.Add(-1)
	if g.npend.Load() > 0 {
		g.runPending(true)
	}
	if g.ntimed.Load() > 0 {
		g.runDue(true)
	}
	if g.busy.Load() {
		// An empty critical section: Poll waits for the goroutine's
		// progress.
		g.busyMu.Lock()
		//lint:ignore SA2001 waiting is the point
		g.busyMu.Unlock()
	}
}

// pollEvents takes the ready events and progresses their members.
func (g *Group) pollEvents() {
	var evs [groupEvents]unix.EpollEvent
	for {
		n := epollWait0(g.epfd, evs[:])
		if n == 0 {
			return
		}
		g.dispatch(evs[:n], true, false)
		if n < len(evs) {
			return
		}
	}
}

// dispatch progresses the members of the events evs; with all false
// (the goroutine) only those it serves, and none with polled (the
// application polled meanwhile: it has them), the others are pended.
func (g *Group) dispatch(evs []unix.EpollEvent, all, polled bool) {
	var ms [groupEvents]*Member
	g.mu.Lock()
	n := 0
	for _, ev := range evs {
		if s := int(ev.Fd); s >= 0 && s < len(g.slots) && g.slots[s] != nil {
			ms[n] = g.slots[s]
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !ms[n].ended.Load() {
				ms[n].ended.Store(true)
			}
			n++
		}
	}
	g.mu.Unlock()
	for _, m := range ms[:n] {
		if all || (!polled && m.served()) {
			m.cfg.Progress()
		} else {
			m.Pend()
		}
	}
}

// Ended reports whether an event of the member's socket said that the
// peer's stream ended (EPOLLRDHUP) or the socket failed: from then on a
// read that takes less than it asked for does not mean that the next one
// finds nothing (the end of the stream or the error is still to be read,
// and raises no new event).
func (m *Member) Ended() bool { return m.ended.Load() }

// served reports whether the goroutine progresses the member now.
func (m *Member) served() bool {
	return !m.cfg.OnKick || (m.cfg.Blocked != nil && m.cfg.Blocked())
}

// runPending progresses the pending members (all, or those the goroutine
// serves), each once.
func (g *Group) runPending(all bool) {
	g.mu.Lock()
	k := len(g.pending)
	g.mu.Unlock()
	for ; k > 0; k-- {
		g.mu.Lock()
		var m *Member
		for i := len(g.pending) - 1; i >= 0; i-- {
			if x := g.pending[i]; all || x.served() {
				m = x
				last := len(g.pending) - 1
				g.pending[i] = g.pending[last]
				g.pending[last] = nil
				g.pending = g.pending[:last]
				g.npend.Add(-1)
				break
			}
		}
		g.mu.Unlock()
		if m == nil {
			return
		}
		m.queued.Store(false)
		m.cfg.Progress()
	}
}

// runDue progresses the timed members whose deadline passed (all, or
// those the goroutine serves), and returns the earliest deadline still
// ahead (zero for none).
func (g *Group) runDue(all bool) time.Time {
	var due [groupEvents]*Member
	var next time.Time
	n := 0
	now := time.Now()
	g.mu.Lock()
	for _, m := range g.timed {
		d := m.cfg.Deadline()
		switch {
		case d.IsZero():
		case !d.After(now):
			if n < len(due) && (all || m.served()) {
				due[n] = m
				n++
			}
		case next.IsZero() || d.Before(next):
			next = d
		}
	}
	g.mu.Unlock()
	for _, m := range due[:n] {
		m.cfg.Progress()
	}
	if n == len(due) {
		return now // more may be due
	}
	return next
}

// blocked reports GroupConfig.Blocked, false without one.
func (g *Group) blocked() bool { return g.cfg.Blocked != nil && g.cfg.Blocked() }

// loop is the goroutine: it starts once the previous one (prev) ended.
func (g *Group) loop(prev, stop, done chan struct{}) {
	defer close(done)
	if prev != nil {
		<-prev
	}
	evs := make([]unix.EpollEvent, groupEvents)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	n := 0
	ready := func(uintptr) bool {
		g.enterBusy()
		n = epollWait0(g.epfd, evs)
		if n == 0 {
			g.leaveBusy()
		}
		return n > 0
	}
	polled := false // the last wake-up found that the application polled
	window := PollWindow
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch {
		case g.blocked() && !polled:
			// A reader is blocked and nobody polls: watch at once.
		case g.nauto.Load() > 0 || g.blocked():
			// Leave the sockets to an application that polls (another
			// thread, while a reader blocks: the goroutine then looks
			// again, and does not spin on input that thread is about
			// to take).
			seen := g.polls.Load()
			timer.Reset(window)
			select {
			case <-timer.C:
				if g.polls.Load() != seen {
					window = min(2*window, MaxPollWindow)
					continue
				}
			case <-g.kick:
				timer.Stop()
			case <-stop:
				timer.Stop()
				return
			}
			window = PollWindow
			polled = false
		default:
			// Only manual progress, and nobody blocked: wait for a
			// reader that blocks.
			select {
			case <-g.kick:
				polled = false
				continue
			case <-stop:
				return
			}
		}
		seen, poked := g.polls.Load(), g.pokes.Load()
		var next time.Time
		if g.npend.Load() > 0 || g.ntimed.Load() > 0 {
			g.enterBusy()
			g.runPending(false)
			next = g.runDue(false)
			g.leaveBusy()
		}
		g.setDeadline(next, poked)
		select {
		case <-stop:
			return
		default:
		}
		n = 0
		g.arm(true)
		err := g.wprc.Read(ready)
		g.arm(false)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed
		}
		polled = g.polls.Load() != seen
		if n > 0 {
			g.dispatch(evs[:n], false, polled)
			g.leaveBusy()
		}
	}
}

func (g *Group) enterBusy() {
	g.busyMu.Lock()
	g.busy.Store(true)
}

func (g *Group) leaveBusy() {
	g.busy.Store(false)
	g.busyMu.Unlock()
}

// setDeadline bounds the coming wait by next, or by nothing. A poke that
// landed since the loop counted pokes (seen), and that the deadline just
// set may have overwritten, is made again: the loop then looks at once at
// what changed (stop, a pending or timed member, a blocked reader).
func (g *Group) setDeadline(next time.Time, seen uint64) {
	_ = g.wpf.SetReadDeadline(next)
	if g.pokes.Load() != seen {
		_ = g.wpf.SetReadDeadline(time.Unix(1, 0))
	}
}
