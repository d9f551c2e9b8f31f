package kit

import (
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Set is a copy-on-write set for the data path: the endpoints a queue
// drives, read on every poll. Load is one atomic load and never blocks.
// Add and Remove run under a lock in amortized O(1) and O(n): Add appends
// in place beyond the length any loaded slice has (the backing array
// grows by doubling, as append's), so that n endpoints joining a queue
// cost O(n) in all rather than a copy each (issue 22: 4000 connections
// made Add a sixth of the setup time); Remove copies the rest into a new
// array, so a loaded slice never changes. The zero value is empty and
// ready to use; a Set must not be copied after first use.
type Set[T comparable] struct {
	mu    sync.Mutex     // serialises Add and Remove
	in    map[T]struct{} // the members, for Add's check; guarded by mu
	items atomic.Pointer[[]T]
}

// Add adds x if it is not there yet.
func (s *Set[T]) Add(x T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.in[x]; ok {
		return
	}
	if s.in == nil {
		s.in = make(map[T]struct{})
	}
	s.in[x] = struct{}{}
	// Every array a loaded slice shares was last extended here (Remove
	// makes a new one), so no loaded slice reaches past len(cur): the
	// element append writes is nobody's yet.
	next := append(s.Load(), x)
	s.items.Store(&next)
}

// Remove removes x if it is there.
func (s *Set[T]) Remove(x T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.in[x]; !ok {
		return
	}
	delete(s.in, x)
	cur := s.Load()
	i := slices.Index(cur, x)
	next := make([]T, len(cur)-1, max(len(cur)-1, cap(cur)/2))
	copy(next, cur[:i])
	copy(next[i:], cur[i+1:])
	s.items.Store(&next)
}

// Load returns the members; the caller must not modify the slice.
func (s *Set[T]) Load() []T {
	if p := s.items.Load(); p != nil {
		return *p
	}
	return nil
}

// SameContext reports whether two operation contexts (the ctx arguments
// of data calls, fi_cancel's) are the same value, without panicking on
// values Go cannot compare: those are never the same.
func SameContext(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}
