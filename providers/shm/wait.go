//go:build linux

package shm

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// progress is the queue's progress hook.
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.progress()
	}
}

// wait is the queue's wait hook (kit.WaitFunc): it marks the
// endpoints' inboxes sleeping and, unless something arrived or moved
// meanwhile, sleeps on their doorbells until one rings, ctx ends (an
// entry, a signal, the reader's deadline), an endpoint closes, or a
// check interval passes; then it checks the endpoints' peers
// (checkPeers), so that a blocked reader learns of a dead peer or a
// broken inbox as a polling one does. It does not spin: an idle waiter
// wakes once per check interval. An endpoint that closes meanwhile ends
// the wait (Close closes its doorbell).
func (s *epSet) wait(ctx context.Context) error {
	var buf [4]*endpoint
	held := buf[:0]
	for _, e := range s.Load() {
		if !e.closed.Load() {
			held = append(held, e)
		}
	}
	if len(held) == 0 {
		<-ctx.Done()
		return nil
	}
	for i, e := range held {
		if e.sleep() {
			for _, x := range held[:i] {
				x.wake()
			}
			return nil
		}
	}
	ivl := held[0].checkIvl
	for _, e := range held[1:] {
		ivl = min(ivl, e.checkIvl)
	}
	deadline := time.Now().Add(ivl)
	var timedOut bool
	if len(held) == 1 {
		timedOut = held[0].bell.wait(ctx, deadline)
	} else {
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var to atomic.Bool
		for _, e := range held[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if e.bell.wait(wctx, deadline) {
					to.Store(true)
				}
				cancel()
			}()
		}
		if held[0].bell.wait(wctx, deadline) {
			to.Store(true)
		}
		cancel()
		wg.Wait()
		timedOut = to.Load()
	}
	for _, e := range held {
		e.wake()
	}
	// Check after a silent interval, and after any wake once a check
	// is due: a reader woken often, but never for long, checks too.
	for _, e := range held {
		e.checkDue(timedOut)
	}
	return nil
}
