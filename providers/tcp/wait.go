package tcp

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// epSet is the set of endpoints whose progress a queue drives: the
// endpoints bound to a completion queue, counter or event queue. Reading
// the queue runs progress on each of them (manual progress from
// fi_cq_read), and a blocked read (fi_cq_sread) sleeps on their sockets
// through the netpoller. Adding and removing copy the slice, so progress
// reads it with one atomic load and no lock.
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
			e.progress()
		}
	}
}

// wait is the queue's wait hook (provutil.WaitFunc): it returns when a
// socket of the set may have work for progress (readable, or writable
// while sends wait for room) or when ctx ends, which the queue arranges
// when an entry is queued or it is signalled. An endpoint whose receive
// side waits for a posted buffer is not watched for reading: posting the
// buffer signals the queues instead.
func (s *epSet) wait(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tok := &waitToken{wake: cancel}
	var buf [8]*watcher
	ws := buf[:0]
	if p := s.eps.Load(); p != nil {
		for _, e := range *p {
			ws = e.watch(tok, ws)
		}
	}
	<-wctx.Done()
	for _, w := range ws {
		w.remove(tok)
	}
	return nil
}

// waitToken is one blocked reader's registration with watchers.
type waitToken struct{ wake context.CancelFunc }

// aLongTimeAgo is a deadline in the past: setting it ends a wait at once.
var aLongTimeAgo = time.Unix(1, 0)

// watcher sleeps on one direction of a connected socket on behalf of the
// blocked readers of the queues its endpoint is bound to. It runs a
// goroutine only while someone waits: the first registration starts it,
// readiness (or the socket's end) wakes every registered reader and ends
// it, and when the last reader leaves first it is cut short with a past
// deadline. The deadline is the watcher's alone: the data path never
// waits on the socket, it reads and writes it without blocking.
type watcher struct {
	write bool
	conn  *net.TCPConn
	rc    syscall.RawConn
	wg    *sync.WaitGroup // the endpoint's, so Close can wait for the goroutine

	mu      sync.Mutex // guards the fields below
	toks    []*waitToken
	running bool
	kicked  bool // a past deadline is set to cut the wait short
	closed  bool // the socket is gone: no more waits

	// first is the state of ready, used only by the goroutine.
	first bool
	ready func(uintptr) bool
}

func newWatcher(conn *net.TCPConn, rc syscall.RawConn, write bool, wg *sync.WaitGroup) *watcher {
	w := &watcher{write: write, conn: conn, rc: rc, wg: wg}
	w.ready = func(uintptr) bool {
		if w.first {
			w.first = false
			return false // wait once through the netpoller
		}
		return true
	}
	return w
}

// add registers t and starts the goroutine if it is not running. It
// returns false once the socket is gone.
func (w *watcher) add(t *waitToken) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.toks = append(w.toks, t)
	if !w.running {
		w.running = true
		w.wg.Add(1)
		go w.loop()
	}
	return true
}

// remove unregisters t; when nobody is left waiting it cuts the wait short.
func (w *watcher) remove(t *waitToken) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.toks = slices.DeleteFunc(w.toks, func(x *waitToken) bool { return x == t })
	if len(w.toks) == 0 && w.running && !w.kicked {
		w.kicked = true
		_ = w.setDeadline(aLongTimeAgo)
	}
}

func (w *watcher) setDeadline(t time.Time) error {
	if w.write {
		return w.conn.SetWriteDeadline(t)
	}
	return w.conn.SetReadDeadline(t)
}

func (w *watcher) loop() {
	defer w.wg.Done()
	for {
		w.first = true
		var err error
		if w.write {
			err = w.rc.Write(w.ready)
		} else {
			err = w.rc.Read(w.ready)
		}
		timeout := errors.Is(err, os.ErrDeadlineExceeded)
		w.mu.Lock()
		if w.kicked {
			w.kicked = false
			_ = w.setDeadline(time.Time{})
		}
		if err != nil && !timeout {
			w.closed = true
		}
		if !timeout {
			for _, t := range w.toks {
				t.wake()
			}
			clear(w.toks)
			w.toks = w.toks[:0]
		}
		if len(w.toks) == 0 || w.closed {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// shut marks the socket gone; the running goroutine, if any, ends when the
// socket closes.
func (w *watcher) shut() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
