package ep_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// req is a connection request handle, as a provider would define one.
type req struct{ id int }

func (*req) Close() error { return nil }

// listening returns a listening Backlog of size n (DefaultBacklog for 0).
func listening(tb testing.TB, n int) *ep.Backlog {
	tb.Helper()
	b := new(ep.Backlog)
	if n > 0 {
		require.NoError(tb, b.SetBacklog(n))
	}
	require.NoError(tb, b.Listen())
	return b
}

func TestBacklogDefaults(t *testing.T) {
	var b ep.Backlog
	require.Equal(t, ep.CMIdle, b.State())
	require.Equal(t, ep.DefaultBacklog, b.Size())
	require.Equal(t, 128, ep.DefaultBacklog)
	require.Zero(t, b.Len())
}

func TestBacklogListen(t *testing.T) {
	var b ep.Backlog
	require.ErrorIs(t, b.Add(&req{}), fi.EOPBADSTATE, "requests before Listen")
	require.NoError(t, b.Listen())
	require.Equal(t, ep.CMListening, b.State())
	require.ErrorIs(t, b.Listen(), fi.EOPBADSTATE)
	require.Equal(t, ep.CMListening, b.State())
	_, err := b.Close()
	require.NoError(t, err)
	require.Equal(t, ep.CMClosed, b.State())
	require.ErrorIs(t, b.Listen(), fi.EBADF)
}

func TestBacklogBound(t *testing.T) {
	for _, size := range []int{1, 3, 0} {
		want := size
		if size == 0 {
			want = ep.DefaultBacklog
		}
		t.Run(fmt.Sprintf("size=%d", want), func(t *testing.T) {
			b := listening(t, size)
			reqs := make([]*req, want+1)
			for i := range reqs {
				reqs[i] = &req{id: i}
			}
			for _, r := range reqs[:want] {
				require.NoError(t, b.Add(r))
			}
			require.Equal(t, want, b.Len())
			err := b.Add(reqs[want])
			require.ErrorIs(t, err, fi.ECONNREFUSED)
			require.Equal(t, fi.ECONNREFUSED, fi.Code(err))
			require.Equal(t, want, b.Len(), "a refused request is not pending")

			// Taking one frees a slot.
			require.NoError(t, b.Take(reqs[0]))
			require.NoError(t, b.Add(reqs[want]))
		})
	}
}

func TestBacklogSetBacklog(t *testing.T) {
	tests := []struct {
		name string
		n    int
		code fi.Errno
	}{
		{"one", 1, fi.SUCCESS},
		{"large", 1 << 20, fi.SUCCESS},
		{"zero", 0, fi.EINVAL},
		{"negative", -1, fi.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b ep.Backlog
			err := b.SetBacklog(tt.n)
			if tt.code == fi.SUCCESS {
				require.NoError(t, err)
				require.Equal(t, tt.n, b.Size())
				return
			}
			require.ErrorIs(t, err, tt.code)
			require.Equal(t, ep.DefaultBacklog, b.Size(), "a refused size changes nothing")
		})
	}
	t.Run("lowered below pending", func(t *testing.T) {
		b := listening(t, 4)
		a, c, d := &req{1}, &req{2}, &req{3}
		require.NoError(t, b.Add(a))
		require.NoError(t, b.Add(c))
		require.NoError(t, b.SetBacklog(1))
		require.Equal(t, 2, b.Len(), "pending requests are kept")
		require.ErrorIs(t, b.Add(d), fi.ECONNREFUSED)
		require.NoError(t, b.Take(a))
		require.ErrorIs(t, b.Add(d), fi.ECONNREFUSED, "still at the new size")
		require.NoError(t, b.Take(c))
		require.NoError(t, b.Add(d))
	})
	t.Run("closed", func(t *testing.T) {
		var b ep.Backlog
		_, err := b.Close()
		require.NoError(t, err)
		require.ErrorIs(t, b.SetBacklog(8), fi.EBADF)
	})
}

func TestBacklogAddInvalid(t *testing.T) {
	b := listening(t, 0)
	r := &req{}
	require.ErrorIs(t, b.Add(nil), fi.EINVAL)
	require.NoError(t, b.Add(r))
	require.ErrorIs(t, b.Add(r), fi.EINVAL, "same handle twice")
	require.Equal(t, 1, b.Len())
}

func TestBacklogTake(t *testing.T) {
	b := listening(t, 0)
	a, c := &req{1}, &req{2}
	require.NoError(t, b.Add(a))
	require.NoError(t, b.Add(c))

	require.NoError(t, b.Take(a))
	err := b.Take(a)
	require.ErrorIs(t, err, fi.EINVAL, "taken twice (accepted then rejected)")
	require.ErrorContains(t, err, "not pending")
	require.ErrorIs(t, b.Take(&req{1}), fi.EINVAL, "unknown handle, equal contents")
	require.ErrorIs(t, b.Take(nil), fi.EINVAL)
	require.Equal(t, 1, b.Len())
	require.NoError(t, b.Take(c))
	require.Zero(t, b.Len())
}

func TestBacklogCloseDrains(t *testing.T) {
	b := listening(t, 0)
	reqs := []*req{{1}, {2}, {3}, {4}}
	for _, r := range reqs {
		require.NoError(t, b.Add(r))
	}
	require.NoError(t, b.Take(reqs[1]))

	pending, err := b.Close()
	require.NoError(t, err)
	require.Equal(t, []fi.Fid{reqs[0], reqs[2], reqs[3]}, pending, "pending requests in arrival order")
	require.Zero(t, b.Len())

	_, err = b.Close()
	require.ErrorIs(t, err, fi.EBADF)
	require.ErrorIs(t, b.Add(&req{5}), fi.EBADF)
	require.ErrorIs(t, b.Take(reqs[0]), fi.EBADF, "Close handed every request back")
}

// TestBacklogConcurrent adds and takes from many goroutines against a small
// backlog: every request is either refused by Add or taken exactly once,
// and the backlog never holds more than its size.
func TestBacklogConcurrent(t *testing.T) {
	const (
		size    = 4
		workers = 8
		each    = 200
	)
	b := listening(t, size)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				r := &req{}
				if err := b.Add(r); err != nil {
					if fi.Code(err) != fi.ECONNREFUSED {
						errs <- err
					}
					continue
				}
				if n := b.Len(); n > size {
					errs <- fmt.Errorf("backlog holds %d > %d", n, size)
				}
				if err := b.Take(r); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, b.Len())
}
