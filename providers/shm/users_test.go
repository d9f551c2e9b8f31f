//go:build linux

package shm_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/providers/shm"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tests of issue 16 with another local user (nobody) as the attacker,
// and with a process of the same user that scribbles over an inbox.

func init() {
	roles["squat"] = roleSquat
	roles["flood"] = roleFlood
	roles["scribble"] = roleScribble
}

// Environment of the attacker roles.
const (
	envBells = "GOFABRIC_SHM_BELLS" // doorbell addresses, comma separated
	envFiles = "GOFABRIC_SHM_FILES" // inbox paths, comma separated
	envOld   = "GOFABRIC_SHM_OLD"   // the same in the layout of earlier versions
	envFor   = "GOFABRIC_SHM_FOR"   // how long to flood
	envWhat  = "GOFABRIC_SHM_WHAT"  // what to scribble over
)

// roleSquat takes every doorbell address and inbox path it is given, as
// far as it may, says how many of each list it took (doorbells, inboxes,
// those of the earlier layout) and holds them until killed.
func roleSquat(t *testing.T) {
	var hold []int
	take := func(a string) bool {
		if strings.HasPrefix(a, "/") && !strings.HasSuffix(a, ".bell") {
			fd, err := unix.Open(a, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
			if err == nil {
				_ = unix.Close(fd)
			}
			return err == nil
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return false
		}
		if unix.Bind(fd, &unix.SockaddrUnix{Name: a}) != nil {
			_ = unix.Close(fd)
			return false
		}
		hold = append(hold, fd)
		return true
	}
	var n [3]int
	for k, env := range []string{envBells, envFiles, envOld} {
		for a := range strings.SplitSeq(os.Getenv(env), ",") {
			if take(a) {
				n[k]++
			}
		}
	}
	say("squatted", strconv.Itoa(n[0])+" "+strconv.Itoa(n[1])+" "+strconv.Itoa(n[2]))
	time.Sleep(10 * time.Minute)
}

// roleFlood sends datagrams to the doorbell addresses it is given for a
// while, as fast as it can, and says how many the kernel accepted.
func roleFlood(t *testing.T) {
	d, _ := time.ParseDuration(os.Getenv(envFor))
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		say("fail", err.Error())
		return
	}
	var addrs []*unix.SockaddrUnix
	for a := range strings.SplitSeq(os.Getenv(envBells), ",") {
		addrs = append(addrs, &unix.SockaddrUnix{Name: a})
	}
	sent, refused := 0, 0
	msg := []byte{1}
	for end := time.Now().Add(d); time.Now().Before(end); {
		for _, a := range addrs {
			for range 64 {
				if unix.Sendto(fd, msg, 0, a) == nil {
					sent++
				} else {
					refused++
				}
			}
		}
	}
	say("sent", strconv.Itoa(sent)+" "+strconv.Itoa(refused))
}

// roleScribble overwrites part of an inbox (see shm.Scribble).
func roleScribble(t *testing.T) {
	if err := shm.Scribble(os.Getenv(envName), os.Getenv(envPeer), os.Getenv(envWhat), 16); err != nil {
		say("fail", err.Error())
		return
	}
	say("done", "")
}

// asNobody checks that the test can run a process as user nobody.
func asNobody(t *testing.T) {
	reftest.Root(t, "run an attacker process as user nobody")
}

// Finding 5: another user cannot take the names of shm endpoints. nobody
// binds the doorbell addresses and creates the inbox files of the names
// of the next 400 process ids and of explicitly named endpoints, as far as
// it can; endpoints of those names open and talk all the same (before
// the fix: "address already in use" for every later endpoint).
func TestOtherUserCannotSquatNames(t *testing.T) {
	asNobody(t)
	x := openX(t, "", false) // the user's shm state exists
	defer x.closeX(t)
	var names []string
	for k := range 3 {
		names = append(names, "fi_shm://squat-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(k))
	}
	for pid := os.Getpid() + 1; pid <= os.Getpid()+400; pid++ {
		names = append(names, "fi_shm://"+strconv.Itoa(pid))
	}
	var bells, files, old []string
	for _, n := range names {
		bells = append(bells, shm.BellAddrs(n)...)
		files = append(files, shm.RegionPath(n))
		// The layout of earlier versions too: abstract doorbells and
		// inboxes right in /dev/shm.
		key := strings.TrimPrefix(n, "fi_shm://")
		old = append(old, "@gofabric-shm."+strconv.Itoa(os.Getuid())+"."+key,
			"/dev/shm/gofabric-shm."+strconv.Itoa(os.Getuid())+"."+key)
	}
	t.Cleanup(func() {
		for _, f := range append(files, old...) {
			if st, err := os.Stat(f); err == nil && st.Sys().(*syscall.Stat_t).Uid == nobody.Uid {
				_ = os.Remove(f)
			}
		}
	})
	sq := startChild(t, "squat", nobody, envBells+"="+strings.Join(bells, ","), envFiles+"="+strings.Join(files, ","),
		envOld+"="+strings.Join(old, ","))
	took := strings.Fields(sq.expect(t, "squatted"))
	t.Logf("of %d names nobody took %s doorbells, %s inboxes and %s names of the earlier layout", len(names), took[0], took[1], took[2])
	require.Equal(t, []string{"0", "0"}, took[:2], "another user took doorbells or inboxes")

	for _, n := range names[:3] {
		y := openX(t, n, false)
		exchange(t, x, y)
		y.closeX(t)
	}
	// A new process, whose default name is likely among the squatted.
	c := startChild(t, "echo", nil, envPeer+"="+string(x.name), envStyle+"=sread", envSizes+"=1")
	name := c.expect(t, "ready")
	dest := x.insert(t, []byte(name))
	rbuf := make([]byte, 1)
	require.NoError(t, x.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
	x.rxPosted++
	x.send(t, pattern(make([]byte, 1), 0), dest, "s")
	x.collect(t, sread, map[any]bool{"s": true, "r": false})
	c.expect(t, "done")
}

// exchange sends one message from a to b and back.
func exchange(t *testing.T, a, b *xnode) {
	t.Helper()
	toB, toA := a.insert(t, b.name), b.insert(t, a.name)
	for _, d := range []struct {
		from, to *xnode
		dest     fi.Addr
	}{{a, b, toB}, {b, a, toA}} {
		rbuf := make([]byte, 100)
		require.NoError(t, d.to.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
		d.from.send(t, pattern(make([]byte, 100), 3), d.dest, "s")
		d.from.collect(t, busy, map[any]bool{"s": true})
		d.to.collect(t, sread, map[any]bool{"r": false})
		require.Empty(t, firstDiff(rbuf, pattern(make([]byte, 100), 3)))
	}
}

// Finding 5: a file of another user where an inbox would be is named for
// what it is, not "in use by a live process".
func TestForeignFileAtInboxPath(t *testing.T) {
	asNobody(t)
	x := openX(t, "", false) // the user's shm state exists
	defer x.closeX(t)
	name := "fi_shm://foreign-" + strconv.Itoa(os.Getpid())
	path := shm.RegionPath(name)
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	defer os.Remove(path)
	require.NoError(t, os.Chown(path, int(nobody.Uid), int(nobody.Gid)))
	_, err := ep.Open(x.domain, withSrc(name))
	require.ErrorIs(t, err, fi.EADDRINUSE)
	require.Contains(t, err.Error(), "belongs to uid 65534")
	require.NotContains(t, err.Error(), "live process")
}

// Finding 5: when another user made the directory where this user's
// endpoints live before this user did, opening an endpoint says so.
func TestForeignUserDirectory(t *testing.T) {
	asNobody(t)
	base := t.TempDir()
	require.NoError(t, os.Chmod(base, 0o1777))
	defer shm.SetBaseDir(base)()
	dir := filepath.Join(base, "gofabric-shm."+strconv.Itoa(os.Getuid()))
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, int(nobody.Uid), int(nobody.Gid)))
	_, err := ep.Open(openDomain(t), withSrc("fi_shm://in-foreign-dir"))
	require.Error(t, err)
	require.Contains(t, err.Error(), dir)
	require.Contains(t, err.Error(), "uid 65534")
}

// Finding 5: another user flooding an endpoint's doorbell reaches nothing:
// the kernel refuses every datagram, the victim's traffic completes (the
// victim's CPU time during the flood is logged; before the fix the flood
// reached the bell and the victim spent 0.8 of a core waking).
func TestOtherUserFloodsDoorbell(t *testing.T) {
	asNobody(t)
	x := openX(t, "", false)
	defer x.closeX(t)
	name := "fi_shm://flooded-" + strconv.Itoa(os.Getpid())
	c := startChild(t, "echo", nil, envName+"="+name, envPeer+"="+string(x.name), envStyle+"=sread", envSizes+"=1")
	c.expect(t, "ready")
	fl := startChild(t, "flood", nobody, envBells+"="+strings.Join(shm.BellAddrs(name), ","), envFor+"=1500ms")
	res := strings.Fields(fl.expect(t, "sent"))
	t.Logf("nobody's datagrams to the doorbell: %s accepted, %s refused", res[0], res[1])
	dest := x.insert(t, []byte(name))
	rbuf := make([]byte, 1)
	require.NoError(t, x.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
	x.rxPosted++
	x.send(t, pattern(make([]byte, 1), 0), dest, "s")
	x.collect(t, sread, map[any]bool{"s": true, "r": false})
	t.Logf("the victim's CPU time from ready to done: %s ms", c.expect(t, "done"))
	require.Equal(t, "0", res[0], "datagrams of another user reached the doorbell")
}

// Finding 6: a process of the same user scribbles over the state of one
// peer's entry in a live inbox. Neither side panics or stalls silently:
// within a bounded time the sender gets an error (a send or an error
// entry with fi.ECONNRESET) and the owner cuts the peer off and logs it;
// the sender's later messages arrive again, and another peer's traffic
// goes on untouched. Before the fix the link stalled forever while the
// sends reported success.
func TestScribbledInbox(t *testing.T) {
	// Blocked readers check every 100 ms instead of every second: the
	// same checks, sooner (FI_SHM_CHECK_INTERVAL).
	t.Setenv("FI_SHM_CHECK_INTERVAL", "100")
	for _, what := range []string{"ring", "ring-idle", "head", "head-idle", "claim", "chunks", "active", "entry", "header"} {
		t.Run(what, func(t *testing.T) {
			if what == "chunks" {
				t.Setenv("FI_SHM_DISABLE_CMA", "1") // chunks carry the large messages
			}
			scribbled(t, what)
		})
	}
}

// logWatch collects the provider's warnings.
type logWatch struct {
	mu   sync.Mutex
	msgs []string
}

func (w *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *logWatch) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	w.mu.Lock()
	w.msgs = append(w.msgs, b.String())
	w.mu.Unlock()
	return nil
}
func (w *logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *logWatch) WithGroup(string) slog.Handler      { return w }

func (w *logWatch) saw(sub string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func scribbled(t *testing.T, what string) {
	logs := &logWatch{}
	fi.SetLogHandler(logs)
	defer fi.SetLogHandler(nil)
	defer func() {
		if t.Failed() {
			t.Logf("the provider logged: %q", logs.msgs)
		}
	}()
	v, s1, s2 := openX(t, "", false), openX(t, "", false), openX(t, "", false)
	defer v.closeX(t)
	defer s1.closeX(t)
	defer s2.closeX(t)
	d1, d2 := s1.insert(t, v.name), s2.insert(t, v.name)

	// The victim receives in its own goroutine, blocked in SRead, and
	// reports what arrived from whom (the tag).
	type got struct {
		tag  uint64
		data []byte
	}
	arrived := make(chan got, 64)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(arrived)
		bufs := map[uint64][]byte{}
		for _, tag := range []uint64{1, 2} {
			bufs[tag] = make([]byte, 100<<10)
			if err := v.ep.(ep.Tagged).TRecv(bufs[tag], nil, fi.AddrUnspec, tag, 0, tag); err != nil {
				return
			}
		}
		var c [1]eq.Completion
		for {
			n, err := v.cq.SRead(ctx, c[:])
			if err == fi.EAVAIL {
				// A receive of a message the cut-off peer was
				// streaming failed: post it again.
				if e, _ := v.cq.ReadErr(); e != nil {
					tag := e.Context.(uint64)
					if v.ep.(ep.Tagged).TRecv(bufs[tag], nil, fi.AddrUnspec, tag, 0, tag) != nil {
						return
					}
				}
				continue
			}
			if err != nil {
				return
			}
			if n == 1 {
				tag := c[0].Context.(uint64)
				arrived <- got{tag, append([]byte(nil), bufs[tag][:c[0].Len]...)}
				if v.ep.(ep.Tagged).TRecv(bufs[tag], nil, fi.AddrUnspec, tag, 0, tag) != nil {
					return
				}
			}
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	// send sends message k from s (tag) and waits for its completion in
	// SRead; it returns the error the sender saw, if any.
	send := func(s *xnode, dest fi.Addr, tag uint64, k int) error {
		size := 100
		if k%2 == 1 {
			size = 100 << 10
		}
		msg := pattern(make([]byte, size), k)
		deadline := time.Now().Add(procWait)
		for {
			err := s.ep.(ep.Tagged).TSend(msg, nil, dest, tag, k)
			if err == nil {
				break
			}
			if err != fi.EAGAIN {
				return err
			}
			require.True(t, time.Now().Before(deadline), "send: EAGAIN for %v", procWait)
			time.Sleep(time.Millisecond)
		}
		sctx, scancel := context.WithTimeout(context.Background(), procWait)
		defer scancel()
		e, err := s.waitOne(sctx, sread, true)
		require.NoError(t, err, "tag %d message %d: no completion (stall)", tag, k)
		if e.err != nil {
			return e.err
		}
		return nil
	}
	// expect waits for message k of tag at the victim. Messages of s1
	// may be lost around its error, never corrupted: one that arrives
	// late is an earlier one, intact.
	expect := func(tag uint64, k int) {
		t.Helper()
		want := func(k int) []byte {
			if k%2 == 1 {
				return pattern(make([]byte, 100<<10), k)
			}
			return pattern(make([]byte, 100), k)
		}
		for {
			select {
			case g, ok := <-arrived:
				require.True(t, ok, "the victim stopped")
				if g.tag != tag {
					require.Equal(t, uint64(1), g.tag, "a message of the other peer came out of turn")
					continue
				}
				d := firstDiff(g.data, want(k))
				if d != "" && tag == 1 {
					late := false
					for j := range k {
						late = late || firstDiff(g.data, want(j)) == ""
					}
					if late {
						continue
					}
				}
				require.Empty(t, d, "tag %d message %d", tag, k)
				return
			case <-time.After(procWait):
				t.Fatalf("tag %d message %d did not arrive (stall)", tag, k)
			}
		}
	}
	// Both peers have an entry in the victim's inbox.
	require.NoError(t, send(s1, d1, 1, 0))
	expect(1, 0)
	require.NoError(t, send(s2, d2, 2, 0))
	expect(2, 0)

	idle := strings.HasSuffix(what, "-idle")
	c := startChild(t, "scribble", nil, envName+"="+string(v.name), envPeer+"="+string(s1.name),
		envWhat+"="+strings.TrimSuffix(what, "-idle"))
	c.expect(t, "done")
	if what == "header" {
		// A process that opens an endpoint now removes what it takes
		// for stale inboxes: the overwritten header names no live
		// process, but the victim's inbox is not stale.
		o := startChild(t, "echo", nil, envPeer+"="+string(v.name), envStyle+"=busy", envSizes+"=")
		o.expect(t, "ready")
		o.expect(t, "done")
		require.FileExists(t, shm.RegionPath(string(v.name)), "another process took the victim's live inbox for a stale one")
	}
	if idle {
		// The victim, blocked, finds the damage before s1 sends again.
		require.Eventually(t, func() bool { return logs.saw("cut off") }, procWait, 10*time.Millisecond,
			"the victim did not cut s1 off")
	}

	// s1 and s2 send in turns. Each of s1's messages arrives intact or
	// fails with fi.ECONNRESET; after its error s1's messages arrive
	// again; s2's all arrive.
	s1Err, s1Back := false, false
	deadline := time.Now().Add(procWait)
	for k := 1; k < 8 || !s1Back; k++ {
		require.True(t, time.Now().Before(deadline), "s1 never got through again")
		err := send(s2, d2, 2, k)
		if what == "header" && err != nil {
			require.ErrorIs(t, err, fi.ECONNRESET) // the inbox of both was broken
			time.Sleep(10 * time.Millisecond)
		} else {
			require.NoError(t, err, "the other peer")
			expect(2, k)
		}
		err = send(s1, d1, 1, k)
		if err != nil {
			require.ErrorIs(t, err, fi.ECONNRESET)
			s1Err, s1Back = true, false
			time.Sleep(10 * time.Millisecond)
			continue
		}
		expect(1, k)
		s1Back = true
	}
	t.Logf("s1 saw an error: %v; the provider logged: %q", s1Err, logs.msgs)
	if what == "head" || what == "ring" {
		// Harmless when the sender writes again first: the owner
		// writes the head again on its next visit, and the sender
		// overwrites the slots, sequence word last, before the owner
		// reads them. When the owner looks first, it cuts s1 off.
		return
	}
	require.True(t, s1Err, "s1 saw no error")
	require.Eventually(t, func() bool { return logs.saw("cut off") }, procWait, 10*time.Millisecond,
		"the victim logged no cut-off: %v", logs.msgs)
}

// An inbox file removed by someone else (an administrator cleaning
// /dev/shm, systemd's RemoveIPC at logout) leaves the endpoint
// unreachable for new peers: the endpoint says so in its log instead of
// going silent.
func TestInboxFileRemovedIsLogged(t *testing.T) {
	logs := &logWatch{}
	fi.SetLogHandler(logs)
	defer fi.SetLogHandler(nil)
	x := openX(t, "", false)
	defer x.closeX(t)
	require.NoError(t, os.Remove(shm.RegionPath(string(x.name))))
	require.Eventually(t, func() bool {
		_, _ = x.cq.Read(nil)
		return logs.saw("inbox file was removed")
	}, procWait, time.Millisecond, "no log: %q", logs.msgs)
}
