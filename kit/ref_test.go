package kit_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

func TestRefCloseRules(t *testing.T) {
	var r kit.Ref
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

// TestRefBusyMessage checks that a refused close names what still holds
// the object, by kind and count, with fi.EBUSY in the chain.
func TestRefBusyMessage(t *testing.T) {
	busy := ": " + fi.EBUSY.Error()
	var r kit.Ref
	require.NoError(t, r.AcquireKind(kit.KindEndpoint))
	require.NoError(t, r.AcquireKind(kit.KindEndpoint))
	require.NoError(t, r.AcquireKind(kit.KindCQ))

	err := r.BeginCloseFor("tcp: close domain", kit.KindObject)
	require.ErrorIs(t, err, fi.EBUSY)
	require.Equal(t, fi.EBUSY, fi.Code(err))
	require.EqualError(t, err, "tcp: close domain: 2 endpoints and 1 cq still open"+busy)
	require.False(t, r.Closed(), "a refused close changes nothing")

	// Plain Acquire counts as the kind the caller names.
	require.NoError(t, r.Acquire())
	require.NoError(t, r.AcquireKind(kit.KindMR))
	require.NoError(t, r.AcquireKind(kit.KindAV))
	require.EqualError(t, r.BeginCloseFor("shm: close domain", kit.KindEndpoint),
		"shm: close domain: 3 endpoints, 1 cq, 1 av and 1 mr still open"+busy)
	require.EqualError(t, r.BeginCloseFor("x: close", kit.KindObject),
		"x: close: 2 endpoints, 1 cq, 1 av, 1 mr and 1 object still open"+busy)

	r.Release()
	r.ReleaseKind(kit.KindEndpoint)
	r.ReleaseKind(kit.KindEndpoint)
	r.ReleaseKind(kit.KindAV)
	r.ReleaseKind(kit.KindMR)
	require.EqualError(t, r.BeginCloseFor("tcp: close domain", kit.KindEndpoint), "tcp: close domain: 1 cq still open"+busy)
	r.ReleaseKind(kit.KindCQ)

	require.NoError(t, r.BeginCloseFor("tcp: close domain", kit.KindEndpoint))
	require.Equal(t, fi.EBADF, r.BeginCloseFor("tcp: close domain", kit.KindEndpoint), "closed: bare EBADF")
	require.Equal(t, fi.EBADF, r.AcquireKind(kit.KindCQ))
	require.Zero(t, r.Refs())
}

func TestKindString(t *testing.T) {
	for k, want := range map[kit.Kind]string{
		kit.KindObject: "object", kit.KindDomain: "domain",
		kit.KindPassiveEndpoint: "passive endpoint", kit.KindEndpoint: "endpoint",
		kit.KindEQ: "eq", kit.KindCQ: "cq", kit.KindCounter: "counter",
		kit.KindAV: "av", kit.KindMR: "mr", kit.KindMulticastGroup: "multicast group",
		kit.Kind(200): "object",
	} {
		require.Equal(t, want, k.String())
	}
}

func TestRefReleaseWithoutAcquirePanics(t *testing.T) {
	var r kit.Ref
	require.Panics(t, r.Release)
}

// TestRefConcurrentClose races binders against closers: exactly one close
// wins, and no reference is taken after it.
func TestRefConcurrentClose(t *testing.T) {
	for range 50 {
		var r kit.Ref
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
