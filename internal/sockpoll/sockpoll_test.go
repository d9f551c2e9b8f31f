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
// polls, only while Wanted holds (or after a Kick), and ends at Halt.
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
	for end := time.Now().Add(200 * PollWindow); time.Now().Before(end); {
		polls.Add(1)
		time.Sleep(PollWindow / 10)
	}
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	wantNone(t, got, "progress ran after the application polled, with no Kick since")
	p.Kick()
	wantByte(t, got, 2, "no progress after the second Kick")
}
