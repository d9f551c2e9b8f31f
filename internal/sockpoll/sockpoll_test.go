//go:build linux

package sockpoll

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// pair returns a connected non-blocking socket pair.
func pair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// byteReader is a Progress that reads a byte of fd into got.
func byteReader(fd int, got chan<- byte) func() {
	return func() {
		var buf [1]byte
		if n, _ := unix.Read(fd, buf[:]); n == 1 {
			got <- buf[0]
		}
	}
}

// wantByte waits for progress to deliver want; why names what failed.
func wantByte(t *testing.T, got <-chan byte, want byte, why string) {
	t.Helper()
	select {
	case c := <-got:
		require.Equal(t, want, c)
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// pollFor is an application that polls for d: it advances polls ten
// times a PollWindow.
func pollFor(polls *atomic.Uint64, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		polls.Add(1)
		time.Sleep(PollWindow / 10)
	}
}

// wantNone fails with why if progress delivers anything within 20 windows.
func wantNone(t *testing.T, got <-chan byte, why string) {
	t.Helper()
	select {
	case <-got:
		t.Fatal(why)
	case <-time.After(20 * PollWindow):
	}
}

// The goroutine runs progress when a socket becomes readable and nobody
// polls, only while Wanted holds (or after a Kick), again once an
// application that polled long stops, and ends at Halt.
func TestProgressWhenIdle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := pair(t)
	var (
		wg     sync.WaitGroup
		polls  atomic.Uint64
		wanted atomic.Bool
		got    = make(chan byte, 16)
	)
	wanted.Store(true)
	p, err := Start(Config{
		Name:     "test",
		Progress: byteReader(a, got),
		Polls:    polls.Load,
		Events:   func(int) uint32 { return unix.EPOLLIN },
		Wanted:   wanted.Load,
		WG:       &wg,
	}, a)
	require.NoError(t, err)

	_, err = unix.Write(b, []byte{1})
	require.NoError(t, err)
	wantByte(t, got, 1, "no progress for a readable socket while nobody polls")

	wanted.Store(false)
	p.Kick()
	time.Sleep(5 * PollWindow) // let it settle into waiting for a Kick
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	wantNone(t, got, "progress ran while Wanted was false")
	wanted.Store(true)
	p.Kick()
	wantByte(t, got, 2, "no progress after Kick with Wanted true")

	// The application polls (its reads leave the socket alone here)
	// long enough for the goroutine's looks to back off to
	// MaxPollWindow apart, then stops: the goroutine takes over again.
	pollFor(&polls, 4*MaxPollWindow)
	_, err = unix.Write(b, []byte{3})
	require.NoError(t, err)
	wantByte(t, got, 3, "no progress after a long-polling application stopped")

	p.Halt()
	wg.Wait()
}

// With OnKick the goroutine leaves a readable socket to the application
// until a Kick, serves it after one, and once the application polls again
// leaves it alone until the next Kick, however long nobody polls.
func TestOnKick(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := pair(t)
	var (
		wg    sync.WaitGroup
		polls atomic.Uint64
		got   = make(chan byte, 16)
	)
	p, err := Start(Config{
		Name:     "test",
		Progress: byteReader(a, got),
		Polls:    polls.Load,
		Events:   func(int) uint32 { return unix.EPOLLIN },
		OnKick:   true,
		WG:       &wg,
	}, a)
	require.NoError(t, err)
	defer func() { p.Halt(); wg.Wait() }()

	_, err = unix.Write(b, []byte{1})
	require.NoError(t, err)
	wantNone(t, got, "progress ran before any Kick")
	p.Kick()
	wantByte(t, got, 1, "no progress after Kick")

	// The application polls for a while, then computes.
	pollFor(&polls, 200*PollWindow)
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	wantNone(t, got, "progress ran after the application polled, with no Kick since")
	p.Kick()
	wantByte(t, got, 2, "no progress after the second Kick")
}

// deadlineConfig is a Config whose Progress reports on ran and clears
// the deadline, which is at (Unix nanoseconds, 0 for none).
func deadlineConfig(wg *sync.WaitGroup, at *atomic.Int64, ran chan<- struct{}, onKick bool) Config {
	var polls atomic.Uint64
	return Config{
		Name:     "test",
		Progress: func() { at.Store(0); ran <- struct{}{} },
		Polls:    polls.Load,
		Events:   func(int) uint32 { return unix.EPOLLIN },
		Deadline: func() time.Time {
			if ns := at.Load(); ns != 0 {
				return time.Unix(0, ns)
			}
			return time.Time{}
		},
		OnKick: onKick,
		WG:     wg,
	}
}

func wantRun(t *testing.T, ran <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// A deadline runs progress although no socket is ready, with the
// goroutine watching on its own and after a Kick (manual progress).
func TestDeadline(t *testing.T) {
	for _, onKick := range []bool{false, true} {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		a, _ := pair(t)
		var (
			wg  sync.WaitGroup
			at  atomic.Int64
			ran = make(chan struct{}, 16)
		)
		at.Store(time.Now().Add(20 * PollWindow).UnixNano())
		p, err := Start(deadlineConfig(&wg, &at, ran, onKick), a)
		require.NoError(t, err)
		p.Kick()
		wantRun(t, ran, "no progress when the deadline passed")
		p.Halt()
		wg.Wait()
	}
}

// Wake ends a wait that began without a deadline, so that one set later
// is kept.
func TestWake(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, _ := pair(t)
	var (
		wg  sync.WaitGroup
		at  atomic.Int64
		ran = make(chan struct{}, 16)
	)
	p, err := Start(deadlineConfig(&wg, &at, ran, true), a)
	require.NoError(t, err)
	defer func() { p.Halt(); wg.Wait() }()
	p.Kick()
	time.Sleep(20 * PollWindow) // it waits for the socket, with no deadline
	at.Store(time.Now().Add(5 * PollWindow).UnixNano())
	p.Wake()
	wantRun(t, ran, "no progress at a deadline set after the wait began")
}

// With OnKick and Blocked the goroutine ignores a Kick while nobody is
// blocked, serves the sockets for as long as somebody is, however much
// the application polls meanwhile (another thread polling another queue
// must not strand the blocked one), and leaves them once nobody is.
func TestBlocked(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, b := pair(t)
	var (
		wg      sync.WaitGroup
		polls   atomic.Uint64
		blocked atomic.Bool
		got     = make(chan byte, 16)
	)
	p, err := Start(Config{
		Name:     "test",
		Progress: byteReader(a, got),
		Polls:    polls.Load,
		Events:   func(int) uint32 { return unix.EPOLLIN },
		OnKick:   true,
		Blocked:  blocked.Load,
		WG:       &wg,
	}, a)
	require.NoError(t, err)
	defer func() { p.Halt(); wg.Wait() }()

	_, err = unix.Write(b, []byte{1})
	require.NoError(t, err)
	p.Kick() // a reader that kicked and left at once
	wantNone(t, got, "progress ran after a Kick with nobody blocked")
	blocked.Store(true)
	p.Kick()
	wantByte(t, got, 1, "no progress with a reader blocked")

	// Another thread polls for a while (its reads do not consume the
	// socket here), then stops; the blocked reader is still served.
	pollFor(&polls, 200*PollWindow)
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	wantByte(t, got, 2, "the blocked reader was not served after another thread polled")

	// Nobody blocks any more. A wait armed before the reader left may
	// still take one byte; after that, bytes wait for the next Kick.
	blocked.Store(false)
	_, err = unix.Write(b, []byte{3})
	require.NoError(t, err)
	next := byte(3)
	select {
	case c := <-got:
		require.Equal(t, byte(3), c)
		next = 4
	case <-time.After(20 * PollWindow):
	}
	_, err = unix.Write(b, []byte{4})
	require.NoError(t, err)
	wantNone(t, got, "progress ran with nobody blocked and no Kick")
	blocked.Store(true)
	p.Kick()
	wantByte(t, got, next, "no progress after the next Kick")
}
