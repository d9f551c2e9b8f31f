//go:build linux

package kit_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	cerrors "github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// These tests hold the FI_WAIT_FD contract of fi_trywait(3) on the
// software queues: the descriptor becomes readable when an entry arrives
// after a successful TryWait (at once, so that poll(fd, 0) sees it, as
// fi_eq_test checks), TryWait returns fi.EAGAIN while something is there
// to read, no wake-up is lost, and Close wakes a thread blocked in poll.

// hangLimit bounds a poll that must return: a safety net against a lost
// wake-up hanging the test, not a timed assertion.
const hangLimit = 30_000 // milliseconds

// pollIn polls fd for input for up to ms milliseconds (0: just look) and
// returns the events it reported, 0 when none.
func pollIn(t testing.TB, fd int, ms int) int16 {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err, "poll")
		if n == 0 {
			return 0
		}
		return fds[0].Revents
	}
}

// fdQueue is a queue or counter opened with fi.WaitFD, with a way to give
// it an entry (produce) and to take what it holds (consume).
type fdQueue struct {
	eq.FDWaiter
	fi.Fid
	setProgress func(func())
	setWaiter   func(kit.WaitFunc)
	produce     func() error
	consume     func(t testing.TB) int
	// sticky: TryWait keeps returning fi.EAGAIN until consume (queues);
	// a counter reports a change once.
	sticky bool
}

// fdKinds opens each kind of object with wait object w.
var fdKinds = []struct {
	name string
	open func(t testing.TB, w fi.WaitObj) (*fdQueue, error)
}{
	{"cq", func(t testing.TB, w fi.WaitObj) (*fdQueue, error) {
		q, err := kit.NewCQ(&eq.CQAttr{WaitObj: w})
		if err != nil {
			return nil, err
		}
		buf := make([]eq.Completion, 8)
		c := comp(1)
		return &fdQueue{FDWaiter: q, Fid: q, setProgress: q.SetProgress, setWaiter: q.SetWaiter, sticky: true,
			produce: func() error { return q.CompleteOverflow(c, 1) },
			consume: func(t testing.TB) int {
				got := 0
				for {
					n, err := q.Read(buf)
					got += n
					if err == fi.EAGAIN {
						return got
					}
					require.NoError(t, err)
				}
			}}, nil
	}},
	{"eq", func(t testing.TB, w fi.WaitObj) (*fdQueue, error) {
		q, err := kit.NewEQ(&eq.Attr{WaitObj: w})
		if err != nil {
			return nil, err
		}
		ev := &eq.Notify{Kind: eq.EventNotify}
		return &fdQueue{FDWaiter: q, Fid: q, setProgress: q.SetProgress, setWaiter: q.SetWaiter, sticky: true,
			produce: func() error { return q.Post(ev) },
			consume: func(t testing.TB) int {
				got := 0
				for {
					_, err := q.Read()
					if err == fi.EAGAIN {
						return got
					}
					require.NoError(t, err)
					got++
				}
			}}, nil
	}},
	{"counter", func(t testing.TB, w fi.WaitObj) (*fdQueue, error) {
		c, err := kit.NewCounter(&eq.CounterAttr{WaitObj: w})
		if err != nil {
			return nil, err
		}
		var seen uint64
		return &fdQueue{FDWaiter: c, Fid: c, setProgress: c.SetProgress, setWaiter: c.SetWaiter,
			produce: func() error { return c.Add(1) },
			consume: func(testing.TB) int {
				v := c.Read()
				n := int(v - seen)
				seen = v
				return n
			}}, nil
	}},
}

func openFD(t testing.TB, open func(testing.TB, fi.WaitObj) (*fdQueue, error)) (*fdQueue, int) {
	t.Helper()
	q, err := open(t, fi.WaitFD)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	fd, err := q.WaitFD()
	require.NoError(t, err)
	require.GreaterOrEqual(t, fd, 0)
	return q, fd
}

// TestWaitFDContract walks each kind through fi_eq_test's eq_wait_fd_poll
// and fi_trywait's loop: quiet after TryWait, readable the moment an
// entry arrives, fi.EAGAIN while one is there, quiet again once read.
func TestWaitFDContract(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			q, fd := openFD(t, k.open)
			require.Zero(t, pollIn(t, fd, 0), "readable at open")
			require.NoError(t, q.TryWait(), "TryWait on an empty queue")
			require.Zero(t, pollIn(t, fd, 0), "readable after TryWait with nothing queued")

			require.NoError(t, q.produce())
			require.NotZero(t, pollIn(t, fd, 0)&unix.POLLIN, "not readable right after an entry arrived")
			require.Equal(t, fi.EAGAIN, q.TryWait(), "TryWait with an entry queued")
			if q.sticky {
				require.Equal(t, fi.EAGAIN, q.TryWait(), "TryWait again: the entry is still there")
			}
			require.Equal(t, 1, q.consume(t))
			require.NoError(t, q.TryWait(), "TryWait after reading everything")
			require.Zero(t, pollIn(t, fd, 0), "readable after TryWait once everything was read")

			// An entry queued between TryWait's look and the arming
			// notified nobody: TryWait's second look finds it.
			kit.SetTestHookBeforeArm(func() { require.NoError(t, q.produce()) })
			err := q.TryWait()
			kit.SetTestHookBeforeArm(nil)
			require.Equal(t, fi.EAGAIN, err, "TryWait missed an entry queued while it armed")
			require.Equal(t, 1, q.consume(t))
		})
	}
}

// TestWaitFDErrors: objects without a descriptor, and closed ones, give
// the codes C's providers give.
func TestWaitFDErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			q, err := k.open(t, fi.WaitNone)
			require.NoError(t, err)
			_, err = q.WaitFD()
			require.ErrorIs(t, err, fi.ENODATA, "FI_GETWAIT with FI_WAIT_NONE")
			require.Contains(t, err.Error(), "eq: "+k.name+" wait fd: opened with FI_WAIT_NONE")
			require.Contains(t, cerrors.FlattenHints(err), "fi.WaitFD")
			_, err = eq.WaitFD(q.Fid)
			require.ErrorIs(t, err, fi.ENODATA)
			require.Equal(t, fi.EINVAL, q.TryWait())
			require.Equal(t, fi.EINVAL, eq.TryWait(q.Fid))
			require.NoError(t, q.Close())

			for _, w := range []fi.WaitObj{fi.WaitFD, fi.WaitUnspec} {
				q, err := k.open(t, w)
				require.NoError(t, err)
				require.NoError(t, q.Close())
				_, err = q.WaitFD()
				require.ErrorIs(t, err, fi.EBADF)
				require.Equal(t, fi.EBADF, q.TryWait())
			}
		})
	}
	_, err := eq.WaitFD(fi.Fid(nil))
	require.ErrorIs(t, err, fi.ENOSYS)
	require.Equal(t, fi.EINVAL, eq.TryWait(fi.Fid(nil)))
}

// TestWaitFDUnspec: a queue opened with fi.WaitUnspec gets its descriptor
// at the first WaitFD or TryWait, and it then works as fi.WaitFD's.
func TestWaitFDUnspec(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			for _, first := range []string{"WaitFD", "TryWait"} {
				q, err := k.open(t, fi.WaitUnspec)
				require.NoError(t, err)
				if first == "TryWait" {
					require.NoError(t, q.TryWait())
				}
				fd, err := q.WaitFD()
				require.NoError(t, err)
				fd2, err := q.WaitFD()
				require.NoError(t, err)
				require.Equal(t, fd, fd2, "one descriptor")
				require.NoError(t, q.TryWait())
				require.Zero(t, pollIn(t, fd, 0))
				require.NoError(t, q.produce())
				require.NotZero(t, pollIn(t, fd, 0)&unix.POLLIN, "not readable after an entry (%s first)", first)
				require.Equal(t, fi.EAGAIN, q.TryWait())
				require.NoError(t, q.Close())
			}
		})
	}
}

// TestTryWaitSeveral is fi_trywait over several objects: nil only when
// all of them are empty.
func TestTryWaitSeveral(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, fa := openFD(t, fdKinds[0].open)
	b, fb := openFD(t, fdKinds[1].open)
	require.NoError(t, eq.TryWait(a.Fid, b.Fid))
	require.NoError(t, b.produce())
	require.NotZero(t, pollIn(t, fb, 0))
	require.Zero(t, pollIn(t, fa, 0))
	require.Equal(t, fi.EAGAIN, eq.TryWait(a.Fid, b.Fid))
	require.Equal(t, 1, b.consume(t))
	require.NoError(t, eq.TryWait(a.Fid, b.Fid))
}

// TestWaitFDWakesPoll: a thread blocked in poll(2) wakes when an entry is
// queued from another goroutine, and when the queue closes.
func TestWaitFDWakesPoll(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, k := range fdKinds {
		t.Run(k.name+"/entry", func(t *testing.T) {
			q, fd := openFD(t, k.open)
			require.NoError(t, q.TryWait())
			polled := goAsync(func() (int16, error) { return pollIn(t, fd, hangLimit), nil })
			runtime.Gosched()
			require.NoError(t, q.produce())
			require.NotZero(t, (<-polled).v&unix.POLLIN, "poll did not see the entry")
			require.Equal(t, 1, q.consume(t))
		})
		t.Run(k.name+"/close", func(t *testing.T) {
			q, fd := openFD(t, k.open)
			require.NoError(t, q.TryWait())
			polled := goAsync(func() (int16, error) { return pollIn(t, fd, hangLimit), nil })
			runtime.Gosched()
			require.NoError(t, q.Close())
			// Readable if poll was blocked when Close signalled; invalid
			// if it started after the descriptor closed.
			require.NotZero(t, (<-polled).v&(unix.POLLIN|unix.POLLNVAL), "Close did not wake poll")
		})
	}
}

// TestWaitFDNoLostWakeup runs fi_trywait's loop against a producer 1000
// times: every entry is read, and no wait outlives its entry (a lost
// wake-up would leave poll blocked until hangLimit).
func TestWaitFDNoLostWakeup(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 1000
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			q, fd := openFD(t, k.open)
			next := make(chan struct{})
			done := goAsync(func() (struct{}, error) {
				for range next {
					if err := q.produce(); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
			got := 0
			for i := range n {
				next <- struct{}{} // the entry races TryWait and poll
				for got <= i {
					switch err := q.TryWait(); err {
					case nil:
						require.NotZero(t, pollIn(t, fd, hangLimit), "wake-up lost at entry %d", i)
					case fi.EAGAIN:
					default:
						require.NoError(t, err)
					}
					got += q.consume(t)
				}
			}
			close(next)
			require.NoError(t, (<-done).err)
			require.Equal(t, n, got)
		})
	}
}

// testProvider is a manual-progress provider with one readiness source:
// its wait hook blocks until ready fires (a socket became readable) and
// its progress turns readiness into an entry, as shm's doorbell and
// tcp's sockets do.
type testProvider struct {
	ready   chan struct{}
	pending atomic.Bool
	waits   atomic.Int32
}

func installProvider(q *fdQueue) *testProvider {
	p := &testProvider{ready: make(chan struct{}, 1)}
	q.setProgress(func() {
		if p.pending.CompareAndSwap(true, false) {
			_ = q.produce()
		}
	})
	q.setWaiter(func(ctx context.Context) error {
		p.waits.Add(1)
		select {
		case <-p.ready:
			p.pending.Store(true)
		case <-ctx.Done():
		}
		return nil
	})
	return p
}

// TestWaitFDManualProgress: with a wait hook, the queue's watcher drives
// progress while the application blocks in poll, so that readiness the
// hook sees becomes an entry and the descriptor readable. The watcher
// sleeps in the hook only while the descriptor is armed, and Close ends
// it.
func TestWaitFDManualProgress(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			q, fd := openFD(t, k.open)
			p := installProvider(q)
			require.NoError(t, q.TryWait())
			polled := goAsync(func() (int16, error) { return pollIn(t, fd, hangLimit), nil })
			p.ready <- struct{}{} // nobody reads the queue: only the watcher can see this
			require.NotZero(t, (<-polled).v&unix.POLLIN, "poll did not wake for work only progress finds")
			require.Equal(t, 1, q.consume(t))

			// Again, many times, racing the arming.
			for i := range 200 {
				p.ready <- struct{}{}
				for got := 0; got == 0; {
					if err := q.TryWait(); err == nil {
						require.NotZero(t, pollIn(t, fd, hangLimit), "wake-up lost at round %d", i)
					} else {
						require.Equal(t, fi.EAGAIN, err)
					}
					got = q.consume(t)
				}
			}
		})
	}
}

// TestWaitFDWatcherSleeps: the watcher enters the wait hook only while
// the descriptor is armed: once an entry disarmed it, it sleeps without
// calling the hook again until the next successful TryWait; a queue that
// is never armed has no watcher; Close ends it.
func TestWaitFDWatcherSleeps(t *testing.T) {
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, fd := openFD(t, k.open)
				p := installProvider(q)
				base := bubbleGoroutines(t)
				require.Equal(t, fi.EAGAIN, func() error { require.NoError(t, q.produce()); return q.TryWait() }())
				synctest.Wait()
				require.Equal(t, base, bubbleGoroutines(t), "a TryWait that found an entry started a goroutine")
				require.Zero(t, p.waits.Load())
				q.consume(t)

				require.NoError(t, q.TryWait())
				synctest.Wait()
				require.Equal(t, int32(1), p.waits.Load(), "the watcher waits in the hook while armed")
				require.Equal(t, base+1, bubbleGoroutines(t), "one watcher")

				require.NoError(t, q.produce()) // disarms: the hook's wait ends
				synctest.Wait()
				require.NotZero(t, pollIn(t, fd, 0))
				require.Equal(t, int32(1), p.waits.Load(), "the watcher called the hook again while disarmed")
				require.Equal(t, 1, q.consume(t))
				if !q.sticky {
					require.Equal(t, fi.EAGAIN, q.TryWait(), "the count changed since the last TryWait")
				}

				require.NoError(t, q.TryWait())
				synctest.Wait()
				require.Equal(t, int32(2), p.waits.Load())
				require.Equal(t, base+1, bubbleGoroutines(t), "still one watcher")
				require.NoError(t, q.Close())
				synctest.Wait()
				require.Equal(t, base, bubbleGoroutines(t), "Close ended the watcher")
			})
		})
	}
}

// TestWaitFDHookFailure: a wait hook that fails on its own makes the
// descriptor readable, and the next TryWait returns its error once.
func TestWaitFDHookFailure(t *testing.T) {
	defer goleak.VerifyNone(t)
	q, fd := openFD(t, fdKinds[0].open)
	q.setWaiter(func(context.Context) error { return fi.ENETDOWN })
	require.NoError(t, q.TryWait())
	require.NotZero(t, pollIn(t, fd, hangLimit)&unix.POLLIN)
	require.Equal(t, fi.ENETDOWN, q.TryWait())
	q.setWaiter(nil)
	require.NoError(t, q.TryWait())
	require.NoError(t, q.Close())
}

// TestWaitFDAllocs gates TryWait at zero allocations, finding an entry
// and arming alike, and the data path of a queue with an armed
// descriptor.
func TestWaitFDAllocs(t *testing.T) {
	for _, k := range fdKinds {
		t.Run(k.name, func(t *testing.T) {
			q, _ := openFD(t, k.open)
			require.Zero(t, testing.AllocsPerRun(100, func() {
				_ = q.produce()
				if q.TryWait() != fi.EAGAIN {
					panic("TryWait missed the entry")
				}
				q.consume(t)
				if q.TryWait() != nil {
					panic("TryWait on an empty queue")
				}
				_ = q.produce() // signals
				q.consume(t)
			}))
		})
	}
}

// BenchmarkWaitFD measures the FI_WAIT_FD paths: TryWait finding an entry
// (what a loop pays while entries come faster than it reads), and a full
// arm, signal, poll and read round in one goroutine (the descriptor's
// system calls: the eventfd write, poll, and the drain in the next
// TryWait).
func BenchmarkWaitFD(b *testing.B) {
	b.Run("trywait-eagain", func(b *testing.B) {
		q, _ := openFD(b, fdKinds[0].open)
		require.NoError(b, q.produce())
		b.ReportAllocs()
		for b.Loop() {
			if q.TryWait() != fi.EAGAIN {
				b.Fatal("TryWait missed the entry")
			}
		}
	})
	b.Run("arm-signal-poll-read", func(b *testing.B) {
		q, fd := openFD(b, fdKinds[0].open)
		b.ReportAllocs()
		for b.Loop() {
			if err := q.TryWait(); err != nil {
				b.Fatal(err)
			}
			_ = q.produce()
			if pollIn(b, fd, 0)&unix.POLLIN == 0 {
				b.Fatal("not readable")
			}
			if q.consume(b) != 1 {
				b.Fatal("no entry")
			}
		}
	})
}

// bubbleGoroutines counts the goroutines of the caller's synctest bubble
// (their tracebacks say "synctest bubble N"). runtime.NumGoroutine counts
// the whole process, goroutines of earlier tests still ending among them,
// which made the counts above wrong about once in twenty runs.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	self, _, _ := bytes.Cut(buf, []byte("\n")) // the caller's own header comes first
	i := bytes.Index(self, []byte("synctest bubble "))
	require.GreaterOrEqual(t, i, 0, "not in a synctest bubble: %s", self)
	tag := self[i:]
	tag = tag[:bytes.IndexByte(tag, ']')+1] // "synctest bubble N]"
	return bytes.Count(buf, tag)
}
