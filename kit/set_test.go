package kit

import (
	"testing"

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
