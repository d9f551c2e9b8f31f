package shm

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// epSet is the set of endpoints a completion queue or counter drives:
// reading the queue runs their progress (FI_PROGRESS_MANUAL), and a
// reader about to block sleeps on their doorbells. Adding and removing
// copy the slice, so progress reads it with one atomic load.
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
	if !slices.Contains(cur, e) {
		next := append(slices.Clip(cur), e)
		s.eps.Store(&next)
	}
}

func (s *epSet) remove(e *endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.eps.Load(); p != nil {
		next := slices.DeleteFunc(slices.Clone(*p), func(x *endpoint) bool { return x == e })
		s.eps.Store(&next)
	}
}

// progress is the queue's progress hook.
func (s *epSet) progress() {
	if p := s.eps.Load(); p != nil {
		for _, e := range *p {
			e.progress()
		}
	}
}

// wait is the queue's wait hook (provutil.WaitFunc): it marks the
// endpoints' inboxes sleeping and, unless something arrived meanwhile,
// sleeps on their doorbells until one rings or ctx ends (an entry, a
// signal, the reader's deadline). It does not spin.
func (s *epSet) wait(ctx context.Context) error {
	p := s.eps.Load()
	if p == nil || len(*p) == 0 {
		<-ctx.Done()
		return nil
	}
	eps := *p
	for _, e := range eps {
		if e.sleep() {
			for _, x := range eps {
				x.wake()
			}
			return nil
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, e := range eps[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.bell.wait(wctx)
			cancel()
		}()
	}
	eps[0].bell.wait(wctx)
	cancel()
	wg.Wait()
	for _, e := range eps {
		e.wake()
	}
	return nil
}
