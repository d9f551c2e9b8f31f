package kit

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSet(t *testing.T) {
	var s Set[int]
	require.Empty(t, s.Load())
	s.Add(1)
	s.Add(2)
	s.Add(1)
	before := s.Load()
	require.Equal(t, []int{1, 2}, before)
	s.Remove(1)
	require.Equal(t, []int{2}, s.Load())
	require.Equal(t, []int{1, 2}, before, "a loaded slice never changes")
	s.Remove(7)
	require.Equal(t, []int{2}, s.Load())
}

// TestSetLoadedSlices checks that a loaded slice keeps its members while
// Add extends the array it shares in place and Remove drops members, with
// readers racing the writers (run with -race).
func TestSetLoadedSlices(t *testing.T) {
	var s Set[int]
	for i := range 10 {
		s.Add(i)
	}
	snap := s.Load()
	for i := 10; i < 100; i++ {
		s.Add(i)
	}
	s.Remove(5)
	s.Add(5)
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, snap, "a loaded slice never changes")
	require.Len(t, s.Load(), 100)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				seen := map[int]bool{}
				for _, x := range s.Load() {
					assert.False(t, seen[x], "member %d twice", x)
					seen[x] = true
				}
			}
		}()
	}
	for i := range 2000 {
		s.Add(100 + i)
		if i%3 == 0 {
			s.Remove(100 + i/2)
		}
	}
	close(stop)
	wg.Wait()
	// 667 removes (i = 0, 3, ..., 1999), each of a distinct member added
	// before it (100 + i/2).
	require.Len(t, s.Load(), 100+2000-667)
}

func TestSameContext(t *testing.T) {
	p := new(int)
	require.True(t, SameContext(p, p))
	require.False(t, SameContext(p, new(int)))
	require.True(t, SameContext("a", "a"))
	require.False(t, SameContext("a", 1))
	require.True(t, SameContext(nil, nil))
	require.False(t, SameContext(nil, p))
	require.False(t, SameContext([]int{1}, []int{1}), "uncomparable values are never the same, and do not panic")
}
