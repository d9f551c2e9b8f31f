package eq

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// WaitSet is a wait set (struct fid_wait; fi_wait_open(3), fi_poll(3)):
// one wait over several event queues, completion queues and counters.
// Wait blocks until one of them may have something to read (fi_wait),
// Ready says which (fi_poll), and the application then reads those.
//
// A WaitSet is built on the members' wait descriptors (FDWaiter), the
// FI_WAIT_FD semantics every provider has: its members are objects
// opened with fi.WaitFD or fi.WaitUnspec (objects opened with
// fi.WaitNone have no descriptor to wait on). Before it blocks, Wait
// calls each member's TryWait (fi_trywait), so that a member with
// entries queued never sleeps, and then waits for any member's
// descriptor to become readable, through one epoll(7) descriptor of its
// own (the set's WaitFD, FI_GETWAIT of an FI_WAIT_FD wait set) that the
// runtime's netpoller watches: a blocked Wait parks its goroutine and
// holds no OS thread. With manual progress (FI_PROGRESS_MANUAL), the
// members' providers move data while the set waits, as they do for an
// application blocked on their descriptors.
//
// Members join with NewWaitSet or Add, or at open: an event queue,
// completion queue or counter opened with WaitObj fi.WaitSet and the set
// in the attributes' WaitSet field (fi_cq_attr.wait_set) is added to it
// by OpenEQ, OpenCQ or OpenCounter. A member that is closed leaves the
// set at the next Wait, TryWait or Ready, as closing a queue removes it
// from its wait set in C; Remove takes a member out before that.
//
// Wakeups may be spurious where C's are (a member's entries were taken
// by another reader between Wait and the read), never lost: an entry, an
// event or a counter change after Wait's TryWait ends the wait.
//
// All methods are safe for concurrent use. Concurrent Waits take turns:
// each does its own TryWait round and blocks only while nothing is
// ready, so every waiter wakes when a member has something. Wait and
// Ready do not allocate once the set's members are in place (but for
// the error of an ended context, and for starting the set's one watcher
// goroutine at the first Wait that blocks, which Close ends). A member
// whose provider must run progress while the application sleeps (a
// manual-progress completion queue or counter) may allocate in its own
// FI_WAIT_FD watcher when a TryWait arms it, as it does for an
// application that polls its descriptor, and as a blocked SRead does;
// the set adds nothing to that.
//
// Close the set when done: until then it holds an epoll descriptor and,
// once a Wait blocked, a parked goroutine.
type WaitSet struct {
	// mu guards members, closed and the members' ready marks.
	mu      sync.Mutex
	members []member
	closed  bool

	// p is the set's epoll descriptor, fixed at open.
	p *poller
	// kick asks the watcher to wait on p; woke says it saw a member's
	// descriptor readable (or Add put a member in). Each holds one
	// pending signal at most.
	kick, woke chan struct{}
	// done is closed by Close.
	done chan struct{}
	// turn is held by the Wait that runs.
	turn chan struct{}
	// watching says the watcher was started; guarded by mu.
	watching bool
	// werr is the watcher's failure, for Wait to return; guarded by mu.
	werr error
	wg   sync.WaitGroup
}

// member is one object of the set.
type member struct {
	fid fi.Fid
	w   FDWaiter
	fd  int // its wait descriptor, as it was at Add
	// ready says a TryWait round found something to read (fi.EAGAIN)
	// since the last Ready: a counter's change is reported by TryWait
	// once, so the mark keeps it for Ready.
	ready bool
}

var _ FDWaiter = (*WaitSet)(nil)

// NewWaitSet opens a wait set with members objs (fi_wait_open, then one
// Add per member). Each member is an FDWaiter (an event queue,
// completion queue or counter of any provider) opened with fi.WaitFD or
// fi.WaitUnspec. It returns an error with fi.ENOSYS in its chain, saying
// which, for an object that has no wait descriptors at all, and with
// fi.ENODATA (FI_GETWAIT's answer) for one opened with fi.WaitNone; off
// Linux, where there are no wait descriptors, it returns fi.ENOSYS.
func NewWaitSet(objs ...fi.Fid) (*WaitSet, error) {
	p, err := newPoller()
	if err != nil {
		return nil, err
	}
	ws := &WaitSet{
		p:    p,
		kick: make(chan struct{}, 1),
		woke: make(chan struct{}, 1),
		done: make(chan struct{}),
		turn: make(chan struct{}, 1),
	}
	for _, o := range objs {
		if err := ws.Add(o); err != nil {
			_ = ws.Close()
			return nil, err
		}
	}
	return ws, nil
}

// Add puts obj into the set (fi_poll_add; in C, binding an object to a
// wait set happens at open, through its attributes' wait_set, which
// OpenEQ, OpenCQ and OpenCounter also do). A Wait blocked meanwhile
// looks at obj too. It returns fi.ENOSYS or fi.ENODATA as NewWaitSet,
// fi.EALREADY when obj (or an object sharing its wait descriptor) is in
// the set already, and fi.EBADF after Close or when obj is closed.
func (ws *WaitSet) Add(obj fi.Fid) error {
	w, ok := obj.(FDWaiter)
	if !ok || obj == nil {
		return errors.WithHint(errors.Wrapf(fi.ENOSYS, "eq: wait set: add %T: it has no wait descriptor (no eq.FDWaiter)", obj),
			"a wait set holds event queues, completion queues and counters")
	}
	fd, err := w.WaitFD()
	if err != nil {
		return errors.Wrapf(err, "eq: wait set: add %T", obj)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return errors.Wrap(fi.EBADF, "eq: wait set: add: the set is closed")
	}
	// Members closed since the last look go first: obj's descriptor may
	// have the number a closed member's had.
	for i := 0; i < len(ws.members); {
		if _, err := ws.members[i].w.WaitFD(); err != nil {
			ws.drop(i)
			continue
		}
		i++
	}
	for _, m := range ws.members {
		if m.fid == obj || m.fd == fd {
			return errors.Wrapf(fi.EALREADY, "eq: wait set: add %T: already in the set", obj)
		}
	}
	if err := ws.p.add(fd); err != nil {
		return errors.Wrapf(err, "eq: wait set: add %T", obj)
	}
	ws.members = append(ws.members, member{fid: obj, w: w, fd: fd})
	ws.signal(ws.woke) // a blocked Wait looks at the new member
	return nil
}

// Remove takes obj out of the set (fi_poll_del). It returns fi.ENOENT
// when obj is not a member and fi.EBADF after Close.
func (ws *WaitSet) Remove(obj fi.Fid) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return errors.Wrap(fi.EBADF, "eq: wait set: remove: the set is closed")
	}
	for i, m := range ws.members {
		if m.fid != obj {
			continue
		}
		// A closed member's descriptor left the epoll set when it
		// closed, and its number may now be another member's.
		if _, err := m.w.WaitFD(); err == nil {
			ws.p.del(m.fd)
		}
		ws.drop(i)
		return nil
	}
	return errors.Wrapf(fi.ENOENT, "eq: wait set: remove %T: not in the set", obj)
}

// Len returns the number of members (libfabric has no such call: a C
// application counts its fi_poll_add calls).
func (ws *WaitSet) Len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.members)
}

// drop removes member i, keeping the others' order; mu is held.
func (ws *WaitSet) drop(i int) {
	copy(ws.members[i:], ws.members[i+1:])
	ws.members[len(ws.members)-1] = member{}
	ws.members = ws.members[:len(ws.members)-1]
}

// Wait blocks until a member may have something to read: an event or an
// error entry queued, a completion, a counter's change (fi_wait). It
// returns nil then; Ready says which members, and the application reads
// them. It returns fi.ContextError's error when ctx ends first
// (context.DeadlineExceeded and fi.ETIMEDOUT, or context.Canceled and
// fi.ECANCELED; fi_wait's timeout), bare fi.EBADF when the set is closed,
// before or during the wait, and a member's TryWait error other than
// fi.EAGAIN and fi.EBADF (its provider's wait failed), wrapped with the
// member's type. A set without members waits for ctx.
//
// Wait calls every member's TryWait before it blocks (fi_trywait), so
// it returns at once while entries are queued; the application reads
// after every Wait, until the queues say fi.EAGAIN, as after fi_wait.
func (ws *WaitSet) Wait(ctx context.Context) error {
	select {
	case ws.turn <- struct{}{}: // first, so that a ready member wins over an ended ctx
	default:
		select {
		case ws.turn <- struct{}{}:
		case <-ws.done:
			return fi.EBADF
		case <-ctx.Done():
			return fi.ContextError(ctx)
		}
	}
	defer func() { <-ws.turn }()
	select { // a wake from before this Wait's own TryWait round
	case <-ws.woke:
	default:
	}
	for {
		n, err := ws.look()
		if err != nil || n > 0 {
			return err
		}
		if err := ws.startWatcher(); err != nil {
			return err
		}
		ws.signal(ws.kick)
		select {
		case <-ws.woke:
			if err := ws.watcherErr(); err != nil {
				return err
			}
		case <-ws.done:
			return fi.EBADF
		case <-ctx.Done():
			return fi.ContextError(ctx)
		}
	}
}

// TryWait is fi_trywait on the wait set: it calls every member's
// TryWait and returns bare fi.EAGAIN when one has something to read (and
// marks it for Ready), nil when the application may block on the set's
// descriptor (WaitFD), and Wait's errors otherwise. It makes the set an
// FDWaiter, so a set can wait inside an application's own poll(2) or
// epoll(7), or be a member of another set. It does not allocate.
func (ws *WaitSet) TryWait() error {
	n, err := ws.look()
	if err != nil {
		return err
	}
	if n > 0 {
		return fi.EAGAIN
	}
	return nil
}

// WaitFD returns the set's wait descriptor (fi_control with FI_GETWAIT
// on an FI_WAIT_FD wait set): an epoll(7) descriptor, readable while a
// member's descriptor is. The set owns it: do not read, write or close
// it. Call TryWait before every wait on it. It returns an error with
// fi.EBADF after Close.
func (ws *WaitSet) WaitFD() (int, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return -1, errors.Wrap(fi.EBADF, "eq: wait set: wait fd: closed")
	}
	return ws.p.fd, nil
}

// Ready appends to dst the members that may have something to read and
// returns the extended slice (fi_poll): those Wait or TryWait found
// ready since the last Ready, and those whose TryWait finds entries
// now. Completion and event queues are listed while they hold entries; a
// counter is listed once per change of its counts, as fi_poll lists it
// when its value changed since the last fi_poll. Like fi_poll it may
// list a member whose read then finds nothing (another reader took it),
// and never leaves out one that has something. Members are listed in the
// order they joined. It does not allocate when dst has room for every
// member.
func (ws *WaitSet) Ready(dst []fi.Fid) []fi.Fid {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return dst
	}
	ws.lookLocked(false)
	for i := range ws.members {
		m := &ws.members[i]
		if m.ready {
			dst = append(dst, m.fid)
			m.ready = false
		}
	}
	return dst
}

// look is one TryWait round over the members (see lookLocked), clearing
// the marks of the previous round first: what Wait and TryWait report
// is what the application has not read since it last waited.
func (ws *WaitSet) look() (int, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return 0, fi.EBADF
	}
	return ws.lookLocked(true)
}

// lookLocked calls the members' TryWait and marks those with something
// to read; it returns how many are marked. Without clear, a member
// marked already is not asked again: its TryWait may have reported a
// change once (a counter's, or a nested set's), which the mark keeps
// until Ready. Closed members (fi.EBADF) leave the set; any other error
// ends the round and is returned, wrapped. mu is held.
func (ws *WaitSet) lookLocked(clear bool) (int, error) {
	n := 0
	for i := 0; i < len(ws.members); {
		m := &ws.members[i]
		if clear {
			m.ready = false
		} else if m.ready {
			n++
			i++
			continue
		}
		switch err := m.w.TryWait(); err {
		case nil:
		case fi.EAGAIN:
			m.ready = true
		case fi.EBADF: // closed: the kernel took its descriptor out of p
			ws.drop(i)
			continue
		default:
			return n, errors.Wrapf(err, "eq: wait set: %T", m.fid)
		}
		if m.ready {
			n++
		}
		i++
	}
	return n, nil
}

// Close closes the set (fi_close): a blocked Wait returns fi.EBADF, the
// watcher goroutine ends and the set's descriptor closes. The members
// stay open and are no longer watched (unlike C, where a wait set with
// objects bound returns -FI_EBUSY: here the members hold no reference
// to the set). A second Close returns an error with fi.EBADF.
func (ws *WaitSet) Close() error {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return errors.Wrap(fi.EBADF, "eq: wait set: close: closed already")
	}
	ws.closed = true
	ws.members = nil
	close(ws.done)
	ws.mu.Unlock()
	err := ws.p.close() // wakes the watcher's wait on p
	ws.wg.Wait()
	if err != nil {
		return errors.Wrap(err, "eq: wait set: close")
	}
	return nil
}

// signal puts a pending signal into ch unless one is there.
func (ws *WaitSet) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// startWatcher starts the watcher at the first Wait that blocks, and
// returns its failure if it failed.
func (ws *WaitSet) startWatcher() error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.werr != nil {
		return ws.werr
	}
	if !ws.watching && !ws.closed {
		ws.watching = true
		ws.wg.Add(1)
		go ws.watch()
	}
	return nil
}

// watcherErr returns the watcher's failure, if it failed.
func (ws *WaitSet) watcherErr() error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.werr
}

// watch is the watcher: at each kick it parks on the set's epoll
// descriptor, through the runtime's netpoller, until a member's
// descriptor is readable, and then wakes Wait. Wait, not the watcher,
// watches ctx, so that a wait ends at its context without the watcher
// allocating a context callback; a wait that ended so leaves the
// watcher parked, ready for the next one. Close ends it.
func (ws *WaitSet) watch() {
	defer ws.wg.Done()
	for {
		select {
		case <-ws.kick:
		case <-ws.done:
			return
		}
		if err := ws.p.wait(); err != nil {
			ws.mu.Lock()
			if !ws.closed {
				ws.werr = errors.Wrap(err, "eq: wait set: epoll wait")
			}
			ws.mu.Unlock()
			ws.signal(ws.woke)
			return
		}
		ws.signal(ws.woke)
	}
}
