package provutil_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/provutil"
	"github.com/stretchr/testify/require"
)

func TestRefCloseRules(t *testing.T) {
	var r provutil.Ref
	require.False(t, r.Closed())
	require.NoError(t, r.Acquire())
	require.NoError(t, r.Acquire())
	require.Equal(t, 2, r.Refs())

	// Bare codes: callers compare with == and return them from Close.
	require.Equal(t, fi.EBUSY, r.BeginClose())
	require.False(t, r.Closed(), "a refused close changes nothing")
	r.Release()
	require.Equal(t, fi.EBUSY, r.BeginClose())
	r.Release()

	require.NoError(t, r.BeginClose())
	require.True(t, r.Closed())
	require.Equal(t, fi.EBADF, r.BeginClose())
	require.Equal(t, fi.EBADF, r.BeginClose())
	require.Equal(t, fi.EBADF, r.Acquire())
	require.Equal(t, 0, r.Refs())
}

func TestRefReleaseWithoutAcquirePanics(t *testing.T) {
	var r provutil.Ref
	require.Panics(t, r.Release)
}

// TestRefConcurrentClose races binders against closers: exactly one close
// wins, and no reference is taken after it.
func TestRefConcurrentClose(t *testing.T) {
	for range 50 {
		var r provutil.Ref
		var wins, lateAcquires, badCodes atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 100 {
					if r.Acquire() == nil {
						if r.Closed() {
							lateAcquires.Add(1)
						}
						r.Release()
					}
				}
			})
			wg.Go(func() {
				for {
					switch err := r.BeginClose(); err {
					case nil:
						wins.Add(1)
						return
					case fi.EBADF:
						return
					case fi.EBUSY:
					default:
						badCodes.Add(1)
						return
					}
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load())
		require.Zero(t, lateAcquires.Load())
		require.Zero(t, badCodes.Load())
		require.Equal(t, 0, r.Refs())
	}
}
