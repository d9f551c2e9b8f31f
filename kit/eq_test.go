package kit_test

import (
	"context"
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

// outcome is the result of a blocking call run by goAsync.
type outcome[T any] struct {
	v   T
	err error
}

// goAsync runs f in a goroutine and delivers its result on the returned
// channel.
func goAsync[T any](f func() (T, error)) <-chan outcome[T] {
	ch := make(chan outcome[T], 1)
	go func() {
		v, err := f()
		ch <- outcome[T]{v, err}
	}()
	return ch
}

// requireBlocked waits, inside a synctest bubble, until every goroutine is
// blocked and fails if the call behind ch has returned.
func requireBlocked[T any](t testing.TB, ch <-chan outcome[T]) {
	t.Helper()
	synctest.Wait()
	select {
	case o := <-ch:
		t.Fatalf("call returned (%v, %v); want it blocked", o.v, o.err)
	default:
	}
}

// requireReturned waits, inside a synctest bubble, until every goroutine is
// blocked and returns the result of the call behind ch, failing if it is
// still blocked.
func requireReturned[T any](t testing.TB, ch <-chan outcome[T]) outcome[T] {
	t.Helper()
	synctest.Wait()
	select {
	case o := <-ch:
		return o
	default:
		t.Fatal("call still blocked")
		panic("unreachable")
	}
}

// requireDeadline checks the error of a wait whose context's deadline
// passed: both context.DeadlineExceeded and fi.ETIMEDOUT, with msg.
func requireDeadline(t testing.TB, err error, msg string) {
	t.Helper()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.NotErrorIs(t, err, fi.ECANCELED)
	require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
	require.EqualError(t, err, msg)
}

// requireCanceled checks the error of a wait whose context was cancelled:
// both context.Canceled and fi.ECANCELED, with msg.
func requireCanceled(t testing.TB, err error, msg string) {
	t.Helper()
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, fi.ECANCELED)
	require.NotErrorIs(t, err, fi.ETIMEDOUT)
	require.Equal(t, fi.ECANCELED, fi.Code(err))
	require.EqualError(t, err, msg)
}

func newEQ(t testing.TB, attr *eq.Attr) *kit.EQ {
	t.Helper()
	q, err := kit.NewEQ(attr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func notify(n uint64) *eq.Notify { return &eq.Notify{Kind: eq.EventNotify, Data: n} }

func TestNewEQ(t *testing.T) {
	tests := []struct {
		name string
		attr *eq.Attr
		code fi.Errno
		size int
	}{
		{"nil attr", nil, fi.SUCCESS, kit.DefaultEQSize},
		{"zero size", &eq.Attr{}, fi.SUCCESS, kit.DefaultEQSize},
		{"size", &eq.Attr{Size: 8, WaitObj: fi.WaitUnspec}, fi.SUCCESS, 8},
		{"negative size", &eq.Attr{Size: -1}, fi.EINVAL, 0},
		{"fd wait object", &eq.Attr{WaitObj: fi.WaitFD}, fi.SUCCESS, kit.DefaultEQSize},
		{"wait set", &eq.Attr{WaitObj: fi.WaitSet}, fi.ENOSYS, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := kit.NewEQ(tt.attr)
			if tt.code != fi.SUCCESS {
				require.ErrorIs(t, err, tt.code)
				require.Nil(t, q)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.size, q.Size())
			require.NoError(t, q.Close())
		})
	}
}

// TestEQOrder checks that events and error entries come out in the order
// they were queued, with libfabric's two-step error reads.
func TestEQOrder(t *testing.T) {
	q := newEQ(t, nil)
	ev1, ev2 := notify(1), &eq.Shutdown{}
	e1 := &eq.EQError{Err: fi.ECONNREFUSED, ErrData: []byte("no")}

	_, err := q.ReadErr()
	require.Equal(t, fi.EAGAIN, err, "empty queue")
	_, err = q.Read()
	require.Equal(t, fi.EAGAIN, err)

	require.NoError(t, q.Post(ev1))
	require.NoError(t, q.PostErr(e1))
	require.NoError(t, q.Post(ev2))

	_, err = q.ReadErr()
	require.Equal(t, fi.EAGAIN, err, "an event is at the head")
	ev, err := q.Read()
	require.NoError(t, err)
	require.Same(t, ev1, ev)

	_, err = q.Read()
	require.Equal(t, fi.EAVAIL, err)
	_, err = q.Peek()
	require.Equal(t, fi.EAVAIL, err)
	ee, err := q.ReadErr()
	require.NoError(t, err)
	require.Same(t, e1, ee)
	require.ErrorIs(t, ee, fi.ECONNREFUSED)

	ev, err = q.Read()
	require.NoError(t, err)
	require.Same(t, ev2, ev)
	_, err = q.Read()
	require.Equal(t, fi.EAGAIN, err)
}

func TestEQPeekDoesNotConsume(t *testing.T) {
	q := newEQ(t, nil)
	ev1 := notify(1)
	require.NoError(t, q.Post(ev1))
	require.NoError(t, q.Post(notify(2)))
	for range 3 {
		ev, err := q.Peek()
		require.NoError(t, err)
		require.Same(t, ev1, ev)
	}
	ev, err := q.Read()
	require.NoError(t, err)
	require.Same(t, ev1, ev)
	ev, err = q.Peek()
	require.NoError(t, err)
	require.Equal(t, uint64(2), ev.(*eq.Notify).Data)
}

func TestEQWrite(t *testing.T) {
	t.Run("refused without FlagWrite", func(t *testing.T) {
		q := newEQ(t, &eq.Attr{})
		require.ErrorIs(t, q.Write(notify(1)), fi.EINVAL)
		require.ErrorIs(t, q.WriteErr(&eq.EQError{Err: fi.EIO}), fi.EINVAL)
		_, err := q.Read()
		require.Equal(t, fi.EAGAIN, err, "nothing was queued")
	})
	t.Run("bounded by size, provider posts are not", func(t *testing.T) {
		q := newEQ(t, &eq.Attr{Size: 2, Flags: fi.FlagWrite})
		require.NoError(t, q.Write(notify(1)))
		require.NoError(t, q.WriteErr(&eq.EQError{Err: fi.EIO}))
		require.Equal(t, fi.EAGAIN, q.Write(notify(3)))
		require.Equal(t, fi.EAGAIN, q.WriteErr(&eq.EQError{Err: fi.EIO}))
		require.NoError(t, q.Post(notify(4)), "a provider event is never refused")
		require.NoError(t, q.PostErr(&eq.EQError{Err: fi.ECONNRESET}))

		ev, err := q.Read()
		require.NoError(t, err)
		require.Equal(t, uint64(1), ev.(*eq.Notify).Data)
		ee, err := q.ReadErr()
		require.NoError(t, err)
		require.Equal(t, fi.EIO, ee.Err)
		ev, err = q.Read()
		require.NoError(t, err)
		require.Equal(t, uint64(4), ev.(*eq.Notify).Data)
		ee, err = q.ReadErr()
		require.NoError(t, err)
		require.Equal(t, fi.ECONNRESET, ee.Err)
	})
	t.Run("nil", func(t *testing.T) {
		q := newEQ(t, &eq.Attr{Flags: fi.FlagWrite})
		require.Equal(t, fi.EINVAL, q.Write(nil))
		require.Equal(t, fi.EINVAL, q.WriteErr(nil))
		require.Equal(t, fi.EINVAL, q.Post(nil))
		require.Equal(t, fi.EINVAL, q.PostErr(nil))
	})
}

// TestEQGrowsInOrder posts past the initial buffer while reading, so the
// ring wraps and grows, and checks nothing is lost or reordered.
func TestEQGrowsInOrder(t *testing.T) {
	q := newEQ(t, &eq.Attr{Size: 4})
	next, want := uint64(0), uint64(0)
	for round := range 20 {
		for range round + 1 {
			require.NoError(t, q.Post(notify(next)))
			next++
		}
		for range round/2 + 1 {
			ev, err := q.Read()
			require.NoError(t, err)
			require.Equal(t, want, ev.(*eq.Notify).Data)
			want++
		}
	}
	for ; want < next; want++ {
		ev, err := q.Read()
		require.NoError(t, err)
		require.Equal(t, want, ev.(*eq.Notify).Data)
	}
	_, err := q.Read()
	require.Equal(t, fi.EAGAIN, err)
}

func TestEQCloseRules(t *testing.T) {
	q, err := kit.NewEQ(nil)
	require.NoError(t, err)
	require.NoError(t, q.Post(notify(1)))
	require.NoError(t, q.Acquire())

	err = q.Close()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, "eq: close eq: 1 endpoint still bound: "+fi.EBUSY.Error())
	ev, err := q.Read()
	require.NoError(t, err, "a refused close leaves the queue working")
	require.NotNil(t, ev)

	q.Release()
	require.NoError(t, q.Close())
	require.Equal(t, fi.EBADF, q.Close())
	require.Equal(t, fi.EBADF, q.Close())
	require.Equal(t, fi.EBADF, q.Acquire())
	require.Equal(t, fi.EBADF, q.Post(notify(2)))
	require.Equal(t, fi.EBADF, q.PostErr(&eq.EQError{Err: fi.EIO}))
	_, err = q.Read()
	require.Equal(t, fi.EBADF, err)
	_, err = q.Peek()
	require.Equal(t, fi.EBADF, err)
	_, err = q.ReadErr()
	require.Equal(t, fi.EBADF, err)
	_, err = q.SRead(context.Background())
	require.Equal(t, fi.EBADF, err)
}

func TestEQSRead(t *testing.T) {
	defer goleak.VerifyNone(t)

	t.Run("returns when another goroutine posts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newEQ(t, nil)
			ch := goAsync(func() (eq.Event, error) { return q.SRead(t.Context()) })
			requireBlocked(t, ch)
			ev1 := notify(7)
			require.NoError(t, q.Post(ev1))
			o := requireReturned(t, ch)
			require.NoError(t, o.err)
			require.Same(t, ev1, o.v)
		})
	})
	t.Run("error entry gives EAVAIL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newEQ(t, nil)
			ch := goAsync(func() (eq.Event, error) { return q.SRead(t.Context()) })
			requireBlocked(t, ch)
			require.NoError(t, q.PostErr(&eq.EQError{Err: fi.ECONNREFUSED}))
			require.Equal(t, fi.EAVAIL, requireReturned(t, ch).err)
			ee, err := q.ReadErr()
			require.NoError(t, err)
			require.Equal(t, fi.ECONNREFUSED, ee.Err)
		})
	})
	t.Run("cancel", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newEQ(t, nil)
			ctx, cancel := context.WithCancel(t.Context())
			ch := goAsync(func() (eq.Event, error) { return q.SRead(ctx) })
			requireBlocked(t, ch)
			cancel()
			requireCanceled(t, requireReturned(t, ch).err, "eq: eq sread: context canceled")
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newEQ(t, nil)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := q.SRead(ctx)
			requireDeadline(t, err, "eq: eq sread: context deadline exceeded")
			require.Equal(t, time.Second, time.Since(start), "fake clock: exactly the timeout")
		})
	})
	t.Run("close unblocks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newEQ(t, nil)
			chs := []<-chan outcome[eq.Event]{
				goAsync(func() (eq.Event, error) { return q.SRead(t.Context()) }),
				goAsync(func() (eq.Event, error) { return q.SRead(t.Context()) }),
			}
			for _, ch := range chs {
				requireBlocked(t, ch)
			}
			require.NoError(t, q.Close())
			for _, ch := range chs {
				require.Equal(t, fi.EBADF, requireReturned(t, ch).err)
			}
		})
	})
	t.Run("progress hook runs each round", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newEQ(t, nil)
			var calls atomic.Int32
			q.SetProgress(func() {
				if calls.Add(1) == 3 {
					_ = q.Post(notify(3))
				}
			})
			ch := goAsync(func() (eq.Event, error) { return q.SRead(t.Context()) })
			requireBlocked(t, ch)
			require.Equal(t, int32(1), calls.Load())
			q.Signal()
			requireBlocked(t, ch)
			require.Equal(t, int32(2), calls.Load())
			q.Signal()
			o := requireReturned(t, ch)
			require.NoError(t, o.err)
			require.Equal(t, uint64(3), o.v.(*eq.Notify).Data)
		})
	})
}

// TestEQAllocs gates the non-blocking reads at zero allocations.
func TestEQAllocs(t *testing.T) {
	q := newEQ(t, nil)
	ev1 := notify(1)
	e1 := &eq.EQError{Err: fi.EIO}
	tests := []struct {
		name string
		f    func()
	}{
		{"read empty", func() { _, _ = q.Read() }},
		{"peek empty", func() { _, _ = q.Peek() }},
		{"readerr empty", func() { _, _ = q.ReadErr() }},
		{"post peek read", func() {
			_ = q.Post(ev1)
			_, _ = q.Peek()
			_, _ = q.Read()
		}},
		{"posterr read peek readerr", func() {
			_ = q.PostErr(e1)
			_, _ = q.Read()
			_, _ = q.Peek()
			_, _ = q.ReadErr()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, tt.f))
		})
	}
	_, err := q.Read()
	require.Equal(t, fi.EAGAIN, err, "every posted entry was read")
}
