//go:build linux

package sockpoll

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// drainer is a member's Progress: it reads fd until it has nothing more
// (an edge-triggered member must), sends each byte to got and counts its
// runs.
type drainer struct {
	fd   int
	got  chan byte
	runs atomic.Int64
	buf  [16]byte
}

func newDrainer(fd int) *drainer { return &drainer{fd: fd, got: make(chan byte, 64)} }

func (d *drainer) progress() {
	d.runs.Add(1)
	for {
		n, _ := unix.Read(d.fd, d.buf[:])
		if n <= 0 {
			return
		}
		for _, c := range d.buf[:n] {
			d.got <- c
		}
	}
}

// settle lets the members' first events (room: the sockets are writable)
// be taken, and returns with nobody's progress running.
func settle(g *Group) {
	g.Poll()
	time.Sleep(5 * PollWindow)
	g.Poll()
}

func newGroup(t *testing.T, blocked func() bool) *Group {
	t.Helper()
	g, err := NewGroup(GroupConfig{Name: "test", Blocked: blocked})
	require.NoError(t, err)
	t.Cleanup(g.Close)
	return g
}

// A Poll progresses the members whose socket has input and no other,
// however many idle ones the group has; a member that leaves is no longer
// progressed, and the goroutine ends with the last one.
func TestGroupPollReadyOnly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGroup(t, nil)
	const n = 50
	var (
		ds    [n]*drainer
		peers [n]int
		ms    [n]*Member
	)
	for i := range n {
		a, b := pair(t)
		ds[i], peers[i] = newDrainer(a), b
		m, err := g.Add(a, MemberConfig{Progress: ds[i].progress, OnKick: true})
		require.NoError(t, err)
		ms[i] = m
	}
	settle(g)
	var before [n]int64
	for i := range n {
		before[i] = ds[i].runs.Load()
	}
	_, err := unix.Write(peers[7], []byte{7})
	require.NoError(t, err)
	for range 10 {
		g.Poll()
	}
	wantByte(t, ds[7].got, 7, "a Poll did not progress the member with input")
	for i := range n {
		if i == 7 {
			require.Equal(t, before[i]+1, ds[i].runs.Load(), "member with input")
			continue
		}
		require.Equal(t, before[i], ds[i].runs.Load(), "idle member %d was progressed", i)
	}
	var done <-chan struct{}
	for _, m := range ms {
		if d := m.Remove(); d != nil {
			done = d
		}
	}
	require.NotNil(t, done, "the last Remove returns the goroutine's end")
	<-done
	_, err = unix.Write(peers[3], []byte{3})
	require.NoError(t, err)
	g.Poll()
	require.Equal(t, before[3], ds[3].runs.Load(), "a removed member was progressed")
}

// The goroutine progresses an automatic member whose socket has input
// while nobody polls, leaves it to an application that polls, and takes
// it back when the application stops, however long it polled.
func TestGroupAuto(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGroup(t, nil)
	a, b := pair(t)
	d := newDrainer(a)
	m, err := g.Add(a, MemberConfig{Progress: d.progress})
	require.NoError(t, err)
	defer func() {
		if done := m.Remove(); done != nil {
			<-done
		}
	}()
	_, err = unix.Write(b, []byte{1})
	require.NoError(t, err)
	wantByte(t, d.got, 1, "no progress for a readable socket while nobody polls")
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	wantByte(t, d.got, 2, "no progress for the second byte")

	// An application that polls gets the input from its own Poll.
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			default:
				g.Poll()
				time.Sleep(PollWindow / 10)
			}
		}
	}()
	time.Sleep(5 * PollWindow)
	_, err = unix.Write(b, []byte{3})
	require.NoError(t, err)
	wantByte(t, d.got, 3, "no progress while the application polls")
	// It polls long enough for the goroutine's looks to back off to
	// MaxPollWindow apart, then stops: the goroutine still takes over.
	time.Sleep(4 * MaxPollWindow)
	close(stop)
	<-polled
	_, err = unix.Write(b, []byte{4})
	require.NoError(t, err)
	wantByte(t, d.got, 4, "no progress after a long-polling application stopped")
}

// manualMember adds one end of a new socket pair to a new group, as a
// member with OnKick (manual data progress) whose reader blocked says is
// blocked, and lets the group's goroutine settle. It returns the member,
// its drainer, the pair's other end, and the member's removal, which the
// test defers (before its leak check).
func manualMember(t *testing.T, blocked *atomic.Bool) (*Group, *Member, *drainer, int, func()) {
	t.Helper()
	g := newGroup(t, blocked.Load)
	m, d, b, remove := drainedMember(t, g, MemberConfig{OnKick: true, Blocked: blocked.Load})
	return g, m, d, b, remove
}

// A member with OnKick is served by the goroutine only while a reader of
// it is blocked; what the goroutine finds for it otherwise waits for the
// next Poll.
func TestGroupOnKick(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var blocked atomic.Bool
	g, _, d, b, remove := manualMember(t, &blocked)
	defer remove()
	_, err := unix.Write(b, []byte{1})
	require.NoError(t, err)
	g.Kick() // a reader that kicked and left at once
	wantNone(t, d.got, "progress ran with nobody blocked")
	g.Poll()
	wantByte(t, d.got, 1, "a Poll did not progress the member")

	blocked.Store(true)
	g.Kick()
	time.Sleep(5 * PollWindow)
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	wantByte(t, d.got, 2, "no progress with a reader blocked")

	blocked.Store(false)
	time.Sleep(5 * PollWindow)
	_, err = unix.Write(b, []byte{3})
	require.NoError(t, err)
	wantNone(t, d.got, "progress ran after the reader left")
	g.Poll()
	wantByte(t, d.got, 3, "the byte the goroutine left was not progressed by the next Poll")
}

// idleMember adds an idle member to g (so that a Poll asks epoll for
// events instead of progressing a lone member) and returns its removal.
func idleMember(t *testing.T, g *Group) func() {
	t.Helper()
	a, _ := pair(t)
	m, err := g.Add(a, MemberConfig{Progress: func() {}, OnKick: true})
	require.NoError(t, err)
	settle(g)
	return func() {
		if done := m.Remove(); done != nil {
			<-done
		}
	}
}

// drainedMember adds one end of a new socket pair to g as a member of
// configuration cfg whose progress is a drainer, and lets g settle. It
// returns the member, the drainer, the pair's other end, and the member's
// removal, which the test defers (before its leak check).
func drainedMember(t *testing.T, g *Group, cfg MemberConfig) (*Member, *drainer, int, func()) {
	t.Helper()
	a, b := pair(t)
	d := newDrainer(a)
	cfg.Progress = d.progress
	m, err := g.Add(a, cfg)
	require.NoError(t, err)
	settle(g)
	return m, d, b, func() {
		if done := m.Remove(); done != nil {
			<-done
		}
	}
}

// Pend runs a member's progress without an event: in the next Poll, and
// from the goroutine at once while it serves the member.
func TestGroupPend(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var blocked atomic.Bool
	g, m, d, _, remove := manualMember(t, &blocked)
	defer remove()
	defer idleMember(t, g)()
	runs := d.runs.Load()
	m.Pend()
	m.Pend() // once is enough
	time.Sleep(5 * PollWindow)
	require.Equal(t, runs, d.runs.Load(), "the goroutine ran a manual member nobody blocks on")
	g.Poll()
	require.Equal(t, runs+1, d.runs.Load(), "Poll ran the pending member once")
	g.Poll()
	require.Equal(t, runs+1, d.runs.Load(), "the member stayed pending")

	blocked.Store(true)
	g.Kick()
	time.Sleep(5 * PollWindow)
	m.Pend()
	require.Eventually(t, func() bool { return d.runs.Load() == runs+2 }, 10*time.Second, PollWindow,
		"the goroutine did not run a pending member with its reader blocked")
}

// A timed member's progress runs when its deadline passes: from the
// goroutine (automatic members, or manual ones with a reader blocked),
// and from a Poll.
func TestGroupDeadline(t *testing.T) {
	for _, onKick := range []bool{false, true} {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		var blocked atomic.Bool
		blocked.Store(onKick)
		g := newGroup(t, blocked.Load)
		a, _ := pair(t)
		var at atomic.Int64
		ran := make(chan struct{}, 16)
		m, err := g.Add(a, MemberConfig{
			Progress: func() { at.Store(0); ran <- struct{}{} },
			OnKick:   onKick,
			Blocked:  blocked.Load,
			Deadline: func() time.Time {
				if ns := at.Load(); ns != 0 {
					return time.Unix(0, ns)
				}
				return time.Time{}
			},
		})
		require.NoError(t, err)
		settle(g)
		for len(ran) > 0 {
			<-ran
		}
		g.Kick()
		time.Sleep(5 * PollWindow) // waiting, with no deadline
		at.Store(time.Now().Add(10 * PollWindow).UnixNano())
		m.SetTimed(true)
		wantRun(t, ran, "no progress when the deadline passed")

		// A Poll runs a due member too.
		blocked.Store(false)
		at.Store(time.Now().Add(-time.Millisecond).UnixNano())
		if onKick {
			g.Poll()
			wantRun(t, ran, "a Poll did not run a due member")
		}
		m.SetTimed(false)
		if done := m.Remove(); done != nil {
			<-done
		}
	}
}

// A Poll with nothing ready allocates nothing, with a lone member (whose
// progress it runs) and with several (whose events it asks for).
func TestGroupPollAllocs(t *testing.T) {
	g := newGroup(t, nil)
	_, _, _, remove := drainedMember(t, g, MemberConfig{OnKick: true})
	defer remove()
	require.Zero(t, testing.AllocsPerRun(1000, g.Poll), "one member")
	defer idleMember(t, g)()
	require.Zero(t, testing.AllocsPerRun(1000, g.Poll), "two members")
}

// With one member a Poll runs its progress whether or not its socket
// raised an event (it reads the socket itself rather than ask epoll
// first), and finds what arrived; with more members it progresses only
// those with events again, and a lone member left behind is run again.
func TestGroupSolo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGroup(t, nil)
	_, d, b, remove := drainedMember(t, g, MemberConfig{OnKick: true})
	defer remove()
	runs := d.runs.Load()
	for range 5 {
		g.Poll()
	}
	require.Equal(t, runs+5, d.runs.Load(), "a lone member is progressed at every Poll")
	_, err := unix.Write(b, []byte{1})
	require.NoError(t, err)
	g.Poll()
	wantByte(t, d.got, 1, "the Poll after the input did not deliver it")

	removeIdle := idleMember(t, g)
	runs = d.runs.Load()
	for range 5 {
		g.Poll()
	}
	require.Equal(t, runs, d.runs.Load(), "with two members an idle one is not progressed")
	_, err = unix.Write(b, []byte{2})
	require.NoError(t, err)
	g.Poll()
	wantByte(t, d.got, 2, "with two members, the Poll after the input did not deliver it")

	removeIdle()
	runs = d.runs.Load()
	g.Poll()
	require.Equal(t, runs+1, d.runs.Load(), "alone again, the member is progressed at every Poll")
}

// A lone member whose Waits says it waits for its socket's events is
// progressed on them only, as in a larger group, and at every Poll again
// once it no longer waits.
func TestGroupSoloWaits(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGroup(t, nil)
	var waits atomic.Bool
	waits.Store(true)
	_, d, b, remove := drainedMember(t, g, MemberConfig{OnKick: true, Waits: waits.Load})
	defer remove()
	runs := d.runs.Load()
	for range 5 {
		g.Poll()
	}
	require.Equal(t, runs, d.runs.Load(), "a waiting lone member was progressed without an event")
	_, err := unix.Write(b, []byte{1})
	require.NoError(t, err)
	g.Poll()
	wantByte(t, d.got, 1, "a waiting lone member was not progressed for its event")
	waits.Store(false)
	runs = d.runs.Load()
	g.Poll()
	require.Equal(t, runs+1, d.runs.Load(), "a lone member that no longer waits is progressed at every Poll")
}
