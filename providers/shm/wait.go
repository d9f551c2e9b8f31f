package shm

import (
	"context"
	"sync"

	"github.com/gofabric/gofabric/internal/provutil"
)

// epSet is the set of endpoints a completion queue or counter drives:
// reading the queue runs their progress (FI_PROGRESS_MANUAL), and a
// reader about to block sleeps on their doorbells.
type epSet struct{ provutil.Set[*endpoint] }

// progress is the queue's progress hook.
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.progress()
	}
}

// wait is the queue's wait hook (provutil.WaitFunc): it marks the
// endpoints' inboxes sleeping and, unless something arrived meanwhile,
// sleeps on their doorbells until one rings or ctx ends (an entry, a
// signal, the reader's deadline). It does not spin.
func (s *epSet) wait(ctx context.Context) error {
	eps := s.Load()
	if len(eps) == 0 {
		<-ctx.Done()
		return nil
	}
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
