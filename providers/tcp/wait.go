//go:build linux

package tcp

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gofabric/gofabric/internal/sockpoll"
	"github.com/gofabric/gofabric/kit"
)

// epSet is the set of endpoints whose progress a queue drives: the
// endpoints bound to a completion queue, counter or event queue. Reading
// the queue runs the progress of their domains' groups (sockpoll.Group:
// one epoll instance per domain, fi_cq_read drives the data path of the
// connections that are ready), and a reader about to block hands them to
// their background progress.
type epSet struct {
	kit.Set[*endpoint]
	// waiting counts the readers blocked on the queue (in wait).
	waiting atomic.Int32
	// groups are the progress groups of the connected endpoints of the
	// set, counted in refs (under gmu).
	groups kit.Set[*sockpoll.Group]
	gmu    sync.Mutex
	refs   map[*sockpoll.Group]int
}

// Hooks gives every queue of the provider the set's hooks (kit.Driver;
// the fabric's EQs too: kit.Fabric.DrivenEQ).
func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }

// progress is the queue's progress hook: one zero-timeout epoll_wait per
// domain, and the progress of the connections that are ready or have
// work of their own; idle connections cost nothing.
func (s *epSet) progress() {
	for _, g := range s.groups.Load() {
		g.Poll()
	}
}

// wait is the queue's wait hook (kit.WaitFunc), called when a reader
// found nothing and is about to block: it tells the endpoints' background
// progress that nobody polls them now, so that it watches their sockets at
// once and for as long as the reader blocks, and sleeps until the queue
// wakes it (an entry, a signal, the reader's context). A connection that
// joins the queue while the reader blocks (one that is accepted or comes
// up meanwhile, as rxm's do) is handed over as it does (addGroup): the
// count goes up before the groups are looked at, and addGroup looks at it
// after the group is there, so that one side always sees the other.
func (s *epSet) wait(ctx context.Context) error {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for _, g := range s.groups.Load() {
		g.Kick()
	}
	<-ctx.Done()
	return nil
}

// addGroup counts a connected endpoint of the set in group g.
func (s *epSet) addGroup(g *sockpoll.Group) {
	s.gmu.Lock()
	if s.refs == nil {
		s.refs = make(map[*sockpoll.Group]int)
	}
	s.refs[g]++
	if s.refs[g] == 1 {
		s.groups.Add(g)
	}
	s.gmu.Unlock()
	if s.waiting.Load() > 0 {
		g.Kick() // a reader blocked before the connection was there
	}
}

// removeGroup undoes addGroup.
func (s *epSet) removeGroup(g *sockpoll.Group) {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if s.refs[g]--; s.refs[g] <= 0 {
		delete(s.refs, g)
		s.groups.Remove(g)
	}
}

// blocked reports whether a reader is blocked on a queue or counter whose
// reads drive the endpoint's progress (sockpoll.MemberConfig.Blocked).
func (e *endpoint) blocked() bool {
	for _, s := range e.Sets {
		if s.waiting.Load() > 0 {
			return true
		}
	}
	return false
}

// progGroup is a domain's progress group, created with its first
// connection: one epoll instance and one background goroutine
// (FI_PROGRESS_AUTO, internal/sockpoll) for all of them.
type progGroup struct {
	mu sync.Mutex
	g  *sockpoll.Group
	// sets are the queues the group's endpoints are bound to, counted
	// in refs (under mu); list is their snapshot for Blocked.
	refs map[*epSet]int
	list kit.Set[*epSet]
}

// blocked reports whether a reader is blocked on a queue any of the
// group's endpoints feeds (sockpoll.GroupConfig.Blocked).
func (p *progGroup) blocked() bool {
	for _, s := range p.list.Load() {
		if s.waiting.Load() > 0 {
			return true
		}
	}
	return false
}

// join makes the endpoint's socket fd a member of its domain's group
// (under e.mu, at attach). Input and room are watched edge-triggered; a
// receive side that waits for the application is continued by it
// (postRecv), and one waiting for transmit room or for a Resume pends
// itself (pend).
func (d *domain) join(e *endpoint, fd int) (*sockpoll.Member, error) {
	p := &d.prog
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.g == nil {
		g, err := sockpoll.NewGroup(sockpoll.GroupConfig{Name: "tcp-progress", Blocked: p.blocked})
		if err != nil {
			return nil, err
		}
		p.g = g
		p.refs = make(map[*epSet]int)
	}
	// Endpoints in dynamic receive mode, which a layer (rxm) opens for
	// its connections, progress data manually, as C's rxm entries say
	// (FI_PROGRESS_MANUAL): the goroutine serves them only while a reader
	// blocks, and a layer that busy-polls is never woken for.
	//
	// Those are also never read at every queue read when alone in their
	// domain (sockpoll's lone member): they wait for their events, as
	// before that path existed. Run at every read, their progress
	// disturbed the layer's blocking waits (gofabric-fi's
	// TestWaitFDFromC over tcp;ofi_rxm: an fi_trywait loop saw
	// allocations, or a poll woke once without a completion, in 2 of 15
	// runs; none in 30 this way).
	waits := e.waits
	if e.dp.dyn != nil {
		waits = func() bool { return true }
	}
	m, err := p.g.Add(fd, sockpoll.MemberConfig{
		Progress: e.progress,
		OnKick:   e.dp.dyn != nil,
		Blocked:  e.blocked,
		Deadline: e.stallDeadline,
		Waits:    waits,
	})
	if err != nil {
		return nil, err
	}
	for _, s := range e.Sets {
		if p.refs[s]++; p.refs[s] == 1 {
			p.list.Add(s)
		}
	}
	for _, s := range e.Sets {
		s.addGroup(p.g)
	}
	return m, nil
}

// leave undoes join (under e.mu, before the socket closes). It returns
// a channel to wait on, outside e.mu, when the group's goroutine ends
// with this member (sockpoll.Member.Remove).
func (d *domain) leave(e *endpoint, m *sockpoll.Member) <-chan struct{} {
	done := m.Remove()
	p := &d.prog
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range e.Sets {
		s.removeGroup(p.g)
		if p.refs[s]--; p.refs[s] <= 0 {
			delete(p.refs, s)
			p.list.Remove(s)
		}
	}
	return done
}

// closeProg closes the domain's group once the domain closes.
func (d *domain) closeProg() {
	p := &d.prog
	p.mu.Lock()
	g := p.g
	p.g = nil
	p.mu.Unlock()
	if g != nil {
		g.Close()
	}
}

// pend queues the endpoint for the next progress although its socket
// raised no event (sockpoll.Member.Pend): a Resume, or transmit room
// for a receive side that waited for it.
func (e *endpoint) pend() {
	if m := e.member.Load(); m != nil {
		m.Pend()
	}
}
