package kit_test

import (
	"context"
	"errors"
	"runtime"
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

func newCQ(t testing.TB, attr *eq.CQAttr) *kit.CQ {
	t.Helper()
	q, err := kit.NewCQ(attr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// opCtx is an operation context as providers see them: a pointer.
type opCtx struct{ id int }

func comp(id int) eq.Completion {
	return eq.Completion{Context: &opCtx{id}, Flags: fi.FlagRecv | fi.FlagMsg, Len: id}
}

// requireIDs reads exactly the completions with the given ids, in order.
func requireIDs(t testing.TB, q *kit.CQ, ids ...int) {
	t.Helper()
	buf := make([]eq.Completion, len(ids)+1)
	got := 0
	for got < len(ids) {
		n, err := q.Read(buf[:len(ids)-got])
		require.NoError(t, err)
		for _, c := range buf[:n] {
			require.Equal(t, ids[got], c.Context.(*opCtx).id)
			got++
		}
	}
}

func TestNewCQ(t *testing.T) {
	tests := []struct {
		name string
		attr *eq.CQAttr
		code fi.Errno
		size int
	}{
		{"nil attr", nil, fi.SUCCESS, kit.DefaultCQSize},
		{"size", &eq.CQAttr{Size: 16, Format: eq.FormatTagged, WaitObj: fi.WaitUnspec}, fi.SUCCESS, 16},
		{"negative size", &eq.CQAttr{Size: -1}, fi.EINVAL, 0},
		{"bad format", &eq.CQAttr{Format: eq.FormatTagged + 1}, fi.EINVAL, 0},
		{"fd wait object", &eq.CQAttr{WaitObj: fi.WaitFD}, fi.SUCCESS, kit.DefaultCQSize},
		{"wait set", &eq.CQAttr{WaitObj: fi.WaitSet}, fi.ENOSYS, 0},
		{"threshold", &eq.CQAttr{WaitCond: eq.CondThreshold}, fi.ENOSYS, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := kit.NewCQ(tt.attr)
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

func TestCQFormatMasking(t *testing.T) {
	ctx := &opCtx{1}
	full := eq.Completion{Context: ctx, Flags: fi.FlagRecv | fi.FlagTagged | fi.FlagRemoteCQData,
		Len: 5, Buf: []byte("hello"), Data: 0xda7a, Tag: 0x7a9}
	tests := []struct {
		format eq.CQFormat
		want   eq.Completion
	}{
		{eq.FormatUnspec, eq.Completion{Context: ctx}},
		{eq.FormatContext, eq.Completion{Context: ctx}},
		{eq.FormatMsg, eq.Completion{Context: ctx, Flags: full.Flags, Len: 5}},
		{eq.FormatData, eq.Completion{Context: ctx, Flags: full.Flags, Len: 5, Buf: full.Buf, Data: 0xda7a}},
		{eq.FormatTagged, full},
	}
	for _, tt := range tests {
		t.Run(tt.format.String(), func(t *testing.T) {
			q := newCQ(t, &eq.CQAttr{Format: tt.format})
			require.NoError(t, q.Complete(full, 3))
			require.NoError(t, q.CompleteOverflow(full, 4))
			var got [2]eq.Completion
			var src [2]fi.Addr
			n, err := q.ReadFrom(got[:], src[:])
			require.NoError(t, err)
			require.Equal(t, 2, n)
			require.Equal(t, tt.want, got[0])
			require.Equal(t, tt.want, got[1])
			require.Equal(t, [2]fi.Addr{3, 4}, src)
		})
	}
}

// TestCQErrorOrder checks that error entries keep their place among
// successes.
func TestCQErrorOrder(t *testing.T) {
	q := newCQ(t, &eq.CQAttr{Format: eq.FormatMsg})
	e1 := &eq.CQError{Context: &opCtx{3}, Err: fi.ETRUNC, OLen: 4}
	require.NoError(t, q.Complete(comp(1), fi.AddrUnspec))
	require.NoError(t, q.Complete(comp(2), fi.AddrUnspec))
	require.NoError(t, q.CompleteErr(e1))
	require.NoError(t, q.Complete(comp(4), fi.AddrUnspec))

	_, err := q.ReadErr()
	require.Equal(t, fi.EAGAIN, err, "a success is at the head")
	buf := make([]eq.Completion, 8)
	n, err := q.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 2, n, "read stops before the error entry")
	require.Equal(t, 2, buf[1].Context.(*opCtx).id)

	_, err = q.Read(buf)
	require.Equal(t, fi.EAVAIL, err)
	ce, err := q.ReadErr()
	require.NoError(t, err)
	require.Same(t, e1, ce)
	require.ErrorIs(t, ce, fi.ETRUNC)
	_, err = q.ReadErr()
	require.Equal(t, fi.EAGAIN, err)

	requireIDs(t, q, 4)
	_, err = q.Read(buf)
	require.Equal(t, fi.EAGAIN, err)
	_, err = q.ReadErr()
	require.Equal(t, fi.EAGAIN, err)
}

func TestCQReadFromShortSrc(t *testing.T) {
	q := newCQ(t, nil)
	require.NoError(t, q.Complete(comp(1), 9))
	_, err := q.ReadFrom(make([]eq.Completion, 2), make([]fi.Addr, 1))
	require.Equal(t, fi.EINVAL, err)
	requireIDs(t, q, 1)
}

// TestCQOverflow fills the queue, overflows it with completions and errors
// the provider cannot hold back, and checks every one comes out in order.
func TestCQOverflow(t *testing.T) {
	q := newCQ(t, &eq.CQAttr{Size: 4, Format: eq.FormatMsg})
	for i := range 4 {
		require.NoError(t, q.Complete(comp(i), fi.Addr(i)))
	}
	require.Equal(t, fi.EAGAIN, q.Complete(comp(99), 99), "full")
	for i := 4; i < 10; i++ {
		require.NoError(t, q.CompleteOverflow(comp(i), fi.Addr(i)))
	}
	require.NoError(t, q.CompleteErr(&eq.CQError{Context: &opCtx{10}, Err: fi.ECANCELED}))
	require.NoError(t, q.CompleteOverflow(comp(11), 11))

	buf := make([]eq.Completion, 3)
	src := make([]fi.Addr, 3)
	next := 0
	for next < 10 {
		n, err := q.ReadFrom(buf, src)
		require.NoError(t, err)
		for i := range n {
			require.Equal(t, next, buf[i].Context.(*opCtx).id)
			require.Equal(t, fi.Addr(next), src[i])
			next++
		}
		if queued := 12 - next; queued >= 4 {
			require.Equal(t, fi.EAGAIN, q.Complete(comp(99), 99), "%d queued, over size", queued)
		}
	}
	_, err := q.Read(buf)
	require.Equal(t, fi.EAVAIL, err)
	ce, err := q.ReadErr()
	require.NoError(t, err)
	require.Equal(t, 10, ce.Context.(*opCtx).id)
	requireIDs(t, q, 11)

	require.NoError(t, q.Complete(comp(12), 12), "room again once drained")
	requireIDs(t, q, 12)
}

func TestCQCloseRules(t *testing.T) {
	q, err := kit.NewCQ(nil)
	require.NoError(t, err)
	require.NoError(t, q.Acquire())
	require.NoError(t, q.Acquire())
	err = q.Close()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, "eq: close cq: 2 endpoints still bound: "+fi.EBUSY.Error())
	q.Release()
	require.ErrorIs(t, q.Close(), fi.EBUSY)
	require.NoError(t, q.Complete(comp(1), 1), "a refused close leaves the queue working")
	q.Release()

	require.NoError(t, q.Close())
	require.Equal(t, fi.EBADF, q.Close())
	require.Equal(t, fi.EBADF, q.Acquire())
	require.Equal(t, fi.EBADF, q.Complete(comp(2), 2))
	require.Equal(t, fi.EBADF, q.CompleteOverflow(comp(2), 2))
	require.Equal(t, fi.EBADF, q.CompleteErr(&eq.CQError{Err: fi.EIO}))
	buf := make([]eq.Completion, 1)
	_, err = q.Read(buf)
	require.Equal(t, fi.EBADF, err)
	_, err = q.ReadFrom(buf, make([]fi.Addr, 1))
	require.Equal(t, fi.EBADF, err)
	_, err = q.ReadErr()
	require.Equal(t, fi.EBADF, err)
	_, err = q.SRead(context.Background(), buf)
	require.Equal(t, fi.EBADF, err)
}

// TestCQSReadFrom: the blocking ReadFrom (fi_cq_sreadfrom) waits like
// SRead and keeps each completion's source; a short src is fi.EINVAL.
func TestCQSReadFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newCQ(t, nil)
		buf, src := make([]eq.Completion, 2), make([]fi.Addr, 2)
		ch := goAsync(func() (int, error) { return q.SReadFrom(t.Context(), buf, src) })
		requireBlocked(t, ch)
		require.NoError(t, q.Complete(comp(1), 7))
		o := requireReturned(t, ch)
		require.NoError(t, o.err)
		require.Equal(t, 1, o.v)
		require.Equal(t, fi.Addr(7), src[0])
		_, err := q.SReadFrom(t.Context(), buf, src[:1])
		require.Equal(t, fi.EINVAL, err)
		require.NoError(t, q.Complete(comp(2), 8))
		n, err := eq.SReadFrom(t.Context(), q, buf, src)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, fi.Addr(8), src[0])
	})
}

func TestCQSRead(t *testing.T) {
	defer goleak.VerifyNone(t)

	sread := func(t *testing.T, q *kit.CQ, ctx context.Context) <-chan outcome[int] {
		buf := make([]eq.Completion, 4)
		return goAsync(func() (int, error) {
			n, err := q.SRead(ctx, buf)
			if err == nil && buf[0].Context.(*opCtx).id != 1 {
				return n, errors.New("wrong completion")
			}
			return n, err
		})
	}
	t.Run("returns when another goroutine completes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newCQ(t, nil)
			ch := sread(t, q, t.Context())
			requireBlocked(t, ch)
			require.NoError(t, q.Complete(comp(1), 1))
			o := requireReturned(t, ch)
			require.NoError(t, o.err)
			require.Equal(t, 1, o.v)
		})
	})
	t.Run("error entry gives EAVAIL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newCQ(t, nil)
			ch := sread(t, q, t.Context())
			requireBlocked(t, ch)
			require.NoError(t, q.CompleteErr(&eq.CQError{Err: fi.EIO}))
			require.Equal(t, fi.EAVAIL, requireReturned(t, ch).err)
		})
	})
	t.Run("cancel", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newCQ(t, nil)
			ctx, cancel := context.WithCancel(t.Context())
			ch := sread(t, q, ctx)
			requireBlocked(t, ch)
			cancel()
			requireCanceled(t, requireReturned(t, ch).err, "eq: cq sread: context canceled")
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newCQ(t, nil)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			_, err := q.SRead(ctx, make([]eq.Completion, 1))
			requireDeadline(t, err, "eq: cq sread: context deadline exceeded")
		})
	})
	t.Run("close unblocks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newCQ(t, nil)
			ch := sread(t, q, t.Context())
			requireBlocked(t, ch)
			require.NoError(t, q.Close())
			require.Equal(t, fi.EBADF, requireReturned(t, ch).err)
		})
	})
	t.Run("manual progress completes inline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newCQ(t, nil)
			var calls atomic.Int32
			q.SetProgress(func() {
				if calls.Add(1) == 2 {
					_ = q.Complete(comp(1), 1)
				}
			})
			ch := sread(t, q, t.Context())
			requireBlocked(t, ch)
			require.Equal(t, int32(1), calls.Load(), "progress ran once, then SRead slept")
			q.Signal()
			o := requireReturned(t, ch)
			require.NoError(t, o.err)
			require.Equal(t, int32(2), calls.Load())
		})
	})
}

// TestCQWaiter drives SRead through a provider wait hook, shaped like a
// netpoller wait: it blocks on the provider's readiness or on its context.
func TestCQWaiter(t *testing.T) {
	defer goleak.VerifyNone(t)

	// provider has one readiness source; progress turns readiness into a
	// completion.
	type provider struct {
		ready   chan struct{}
		pending atomic.Bool
		waits   atomic.Int32
	}
	setup := func(t *testing.T) (*kit.CQ, *provider) {
		q := newCQ(t, nil)
		p := &provider{ready: make(chan struct{}, 1)}
		q.SetProgress(func() {
			if p.pending.CompareAndSwap(true, false) {
				_ = q.Complete(comp(1), 1)
			}
		})
		q.SetWaiter(func(ctx context.Context) error {
			p.waits.Add(1)
			select {
			case <-p.ready:
				p.pending.Store(true)
			case <-ctx.Done():
			}
			return nil
		})
		return q, p
	}
	t.Run("readiness runs progress", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, p := setup(t)
			buf := make([]eq.Completion, 1)
			ch := goAsync(func() (int, error) { return q.SRead(t.Context(), buf) })
			requireBlocked(t, ch)
			require.Equal(t, int32(1), p.waits.Load())
			p.ready <- struct{}{}
			o := requireReturned(t, ch)
			require.NoError(t, o.err)
			require.Equal(t, 1, o.v)
		})
	})
	t.Run("completion from elsewhere ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, p := setup(t)
			buf := make([]eq.Completion, 1)
			ch := goAsync(func() (int, error) { return q.SRead(t.Context(), buf) })
			requireBlocked(t, ch)
			require.NoError(t, q.CompleteOverflow(comp(1), 1))
			o := requireReturned(t, ch)
			require.NoError(t, o.err)
			require.Equal(t, int32(1), p.waits.Load())
		})
	})
	t.Run("cancel and close end the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, _ := setup(t)
			ctx, cancel := context.WithCancel(t.Context())
			buf1, buf2 := make([]eq.Completion, 1), make([]eq.Completion, 1)
			ch1 := goAsync(func() (int, error) { return q.SRead(ctx, buf1) })
			ch2 := goAsync(func() (int, error) { return q.SRead(t.Context(), buf2) })
			requireBlocked(t, ch1)
			cancel()
			requireCanceled(t, requireReturned(t, ch1).err, "eq: cq sread: context canceled")
			requireBlocked(t, ch2)
			require.NoError(t, q.Close())
			require.Equal(t, fi.EBADF, requireReturned(t, ch2).err)
		})
	})
	t.Run("deadline ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, p := setup(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			_, err := q.SRead(ctx, make([]eq.Completion, 1))
			requireDeadline(t, err, "eq: cq sread: context deadline exceeded")
			require.Equal(t, int32(1), p.waits.Load())
		})
	})
	t.Run("hook failure ends SRead", func(t *testing.T) {
		q := newCQ(t, nil)
		q.SetWaiter(func(context.Context) error { return fi.ENETDOWN })
		_, err := q.SRead(t.Context(), make([]eq.Completion, 1))
		require.Equal(t, fi.ENETDOWN, err)
	})
}

// TestCQConcurrent has many goroutines completing and reading at once:
// every completion is read exactly once, and each producer's completions
// come out in the order it queued them.
func TestCQConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	const producers, readers, per = 8, 4, 2000
	q := newCQ(t, &eq.CQAttr{Size: 64, Format: eq.FormatMsg})

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range per {
				c := eq.Completion{Context: &opCtx{p*per + i}, Len: i}
				if i%7 == 0 {
					if q.CompleteOverflow(c, fi.Addr(p)) != nil {
						return
					}
					continue
				}
				for q.Complete(c, fi.Addr(p)) == fi.EAGAIN {
					// Full: a real provider retries from progress.
					time.Sleep(time.Microsecond)
				}
			}
		})
	}

	seen := make([][]int, readers)
	var total, badSrc atomic.Int32
	var rg sync.WaitGroup
	for r := range readers {
		rg.Go(func() {
			buf := make([]eq.Completion, 5)
			src := make([]fi.Addr, 5)
			for total.Load() < producers*per {
				var n int
				var err error
				if r%2 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
					n, err = q.SRead(ctx, buf)
					cancel()
				} else {
					n, err = q.ReadFrom(buf, src)
					for i := range n {
						if src[i] != fi.Addr(buf[i].Context.(*opCtx).id/per) {
							badSrc.Add(1)
						}
					}
				}
				if err != nil {
					runtime.Gosched()
					continue
				}
				for _, c := range buf[:n] {
					seen[r] = append(seen[r], c.Context.(*opCtx).id)
				}
				total.Add(int32(n))
			}
		})
	}
	wg.Wait()
	rg.Wait()

	require.Zero(t, badSrc.Load(), "source addresses match their completions")
	got := make([]bool, producers*per)
	for r := range readers {
		last := make([]int, producers)
		for p := range last {
			last[p] = -1
		}
		for _, id := range seen[r] {
			require.False(t, got[id], "completion %d read twice", id)
			got[id] = true
			p := id / per
			require.Greater(t, id, last[p], "producer %d out of order for reader %d", p, r)
			last[p] = id
		}
	}
	require.NotContains(t, got, false, "every completion read")
}

// TestCQAllocs gates the non-blocking reads at zero allocations, with
// pointer contexts as providers store them.
func TestCQAllocs(t *testing.T) {
	q := newCQ(t, &eq.CQAttr{Format: eq.FormatTagged})
	c := comp(1)
	e1 := &eq.CQError{Err: fi.EIO}
	buf := make([]eq.Completion, 4)
	src := make([]fi.Addr, 4)
	tests := []struct {
		name string
		f    func()
	}{
		{"read empty", func() { _, _ = q.Read(buf) }},
		{"readfrom empty", func() { _, _ = q.ReadFrom(buf, src) }},
		{"readerr empty", func() { _, _ = q.ReadErr() }},
		{"complete read", func() {
			_ = q.Complete(c, 1)
			_ = q.Complete(c, 2)
			_, _ = q.Read(buf)
		}},
		{"complete readfrom", func() {
			_ = q.Complete(c, 1)
			_, _ = q.ReadFrom(buf, src)
		}},
		{"completeerr read readerr", func() {
			_ = q.CompleteErr(e1)
			_, _ = q.Read(buf)
			_, _ = q.ReadErr()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, tt.f))
		})
	}
	_, err := q.Read(buf)
	require.Equal(t, fi.EAGAIN, err, "every queued entry was read")
}
