package kit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func newCounter(t testing.TB, attr *eq.CounterAttr) *kit.Counter {
	t.Helper()
	c, err := kit.NewCounter(attr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestNewCounter(t *testing.T) {
	tests := []struct {
		name string
		attr *eq.CounterAttr
		code fi.Errno
	}{
		{"nil attr", nil, fi.SUCCESS},
		{"bytes", &eq.CounterAttr{Events: eq.CounterEventsBytes, WaitObj: fi.WaitUnspec}, fi.SUCCESS},
		{"unknown events", &eq.CounterAttr{Events: 7}, fi.EINVAL},
		{"mutex wait object", &eq.CounterAttr{WaitObj: fi.WaitMutexCond}, fi.ENOSYS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kit.NewCounter(tt.attr)
			if tt.code != fi.SUCCESS {
				require.ErrorIs(t, err, tt.code)
				return
			}
			require.NoError(t, err)
			if tt.attr != nil {
				require.Equal(t, tt.attr.Events, c.Events())
			}
			require.NoError(t, c.Close())
		})
	}
}

func TestCounterCounts(t *testing.T) {
	c := newCounter(t, nil)
	require.NoError(t, c.Add(3))
	require.NoError(t, c.Add(4))
	require.Equal(t, uint64(7), c.Read())
	require.NoError(t, c.Set(2))
	require.Equal(t, uint64(2), c.Read())
	require.NoError(t, c.AddErr(1))
	require.NoError(t, c.AddErr(1))
	require.Equal(t, uint64(2), c.ReadErr())
	require.NoError(t, c.SetErr(0))
	require.Equal(t, uint64(0), c.ReadErr())
	require.Equal(t, uint64(2), c.Read(), "error updates leave the success count")

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				_ = c.Add(1)
			}
		})
	}
	wg.Wait()
	require.Equal(t, uint64(8002), c.Read())
}

func TestCounterCloseRules(t *testing.T) {
	c, err := kit.NewCounter(nil)
	require.NoError(t, err)
	require.NoError(t, c.Add(1))
	require.NoError(t, c.Acquire())
	err = c.Close()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, "eq: close counter: 1 endpoint still bound: "+fi.EBUSY.Error())
	c.Release()
	require.NoError(t, c.Close())
	require.Equal(t, fi.EBADF, c.Close())
	require.Equal(t, fi.EBADF, c.Acquire())
	require.Equal(t, fi.EBADF, c.Add(1))
	require.Equal(t, fi.EBADF, c.Set(1))
	require.Equal(t, fi.EBADF, c.AddErr(1))
	require.Equal(t, fi.EBADF, c.SetErr(1))
	require.Equal(t, uint64(1), c.Read())
	require.Equal(t, fi.EBADF, c.Wait(context.Background(), 0))
}

func TestCounterWait(t *testing.T) {
	defer goleak.VerifyNone(t)

	wait := func(c *kit.Counter, ctx context.Context, threshold uint64) <-chan outcome[struct{}] {
		return goAsync(func() (struct{}, error) { return struct{}{}, c.Wait(ctx, threshold) })
	}
	t.Run("already reached", func(t *testing.T) {
		c := newCounter(t, nil)
		require.NoError(t, c.Set(5))
		require.NoError(t, c.Wait(t.Context(), 5))
	})
	t.Run("threshold reached from another goroutine", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			ch := wait(c, t.Context(), 3)
			requireBlocked(t, ch)
			require.NoError(t, c.Add(2))
			requireBlocked(t, ch)
			require.NoError(t, c.Add(1))
			require.NoError(t, requireReturned(t, ch).err)
		})
	})
	t.Run("error count change", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			require.NoError(t, c.AddErr(1))
			ch := wait(c, t.Context(), 1)
			requireBlocked(t, ch)
			require.NoError(t, c.AddErr(1))
			require.Equal(t, fi.EAVAIL, requireReturned(t, ch).err)
		})
	})
	t.Run("cancel", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			ctx, cancel := context.WithCancel(t.Context())
			ch := wait(c, ctx, 1)
			requireBlocked(t, ch)
			cancel()
			requireCanceled(t, requireReturned(t, ch).err, "eq: counter wait: context canceled")
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			requireDeadline(t, c.Wait(ctx, 1), "eq: counter wait: context deadline exceeded")
		})
	})
	t.Run("close unblocks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			ch := wait(c, t.Context(), 1)
			requireBlocked(t, ch)
			require.NoError(t, c.Close())
			require.Equal(t, fi.EBADF, requireReturned(t, ch).err)
		})
	})
	t.Run("progress hook", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			var calls atomic.Int32
			c.SetProgress(func() {
				if calls.Add(1) == 2 {
					_ = c.Add(1)
				}
			})
			ch := wait(c, t.Context(), 1)
			requireBlocked(t, ch)
			require.Equal(t, int32(1), calls.Load())
			c.Signal()
			require.NoError(t, requireReturned(t, ch).err)
		})
	})
	t.Run("waiter hook", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCounter(t, nil)
			ready := make(chan struct{})
			c.SetWaiter(func(ctx context.Context) error {
				select {
				case <-ready:
					return c.Add(1)
				case <-ctx.Done():
					return nil
				}
			})
			ch := wait(c, t.Context(), 1)
			requireBlocked(t, ch)
			close(ready)
			require.NoError(t, requireReturned(t, ch).err)
		})
	})
}

func TestCounterAllocs(t *testing.T) {
	c := newCounter(t, nil)
	c.SetProgress(func() {})
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = c.Add(1)
		_ = c.Read()
		_ = c.ReadErr()
	}))
}
