package kit

import (
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Set is a copy-on-write set for the data path: the endpoints a queue
// drives, read on every poll. Add and Remove copy the slice under a lock;
// Load is one atomic load and never blocks. The zero value is empty and
// ready to use; a Set must not be copied after first use.
type Set[T comparable] struct {
	mu    sync.Mutex // serialises Add and Remove
	items atomic.Pointer[[]T]
}

// Add adds x if it is not there yet.
func (s *Set[T]) Add(x T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.Load()
	if slices.Contains(cur, x) {
		return
	}
	next := append(slices.Clip(cur), x)
	s.items.Store(&next)
}

// Remove removes x if it is there.
func (s *Set[T]) Remove(x T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := slices.DeleteFunc(slices.Clone(s.Load()), func(y T) bool { return y == x })
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
