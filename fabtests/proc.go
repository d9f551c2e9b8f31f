package fabtests

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// This file is the two-process harness. A test that crosses a process
// boundary runs a second time as its subtest "2proc" with the peer in a
// child process: the test binary re-executed (os.Args[0]) with -test.run
// anchored to the current top-level test and the environment variable
// peerEnv naming the test. The child's Run sees peerEnv, replays only
// that test's peer side and returns; the two sides exchange endpoint
// names, keys and steps as text lines over two pipes (the child's
// descriptors 3 and 4), every wait bounded by Config.Timeout. The child
// is killed at the test's cleanup at the latest.

// peerEnv is the environment variable that makes Run act as the peer
// process of a two-process test. Its value is the test's path below Run
// ("rdm/send-recv/2proc").
const peerEnv = "GOFABRIC_FABTESTS_PEER"

// Descriptors of the link in the child: ExtraFiles start at 3.
const (
	childIn  = 3 // parent -> child
	childOut = 4 // child -> parent
)

// link is one side's end of the pipes to the other process. While it
// waits for a line it calls poll, so that this side's endpoints progress
// under FI_PROGRESS_MANUAL while the other side waits on them.
type link struct {
	s *suite
	// poll drives this side's progress while waiting; nil until the
	// script has opened its endpoints.
	poll func(testing.TB)
	w    *os.File
	r    *os.File
	// in carries the lines the reader goroutine read; stop ends it and
	// done is closed when it has ended.
	in   chan linkMsg
	stop chan struct{}
	done chan struct{}

	// The parent's side only: the child process, its combined output,
	// and exited, closed once Wait returned waitErr.
	cmd     *exec.Cmd
	out     *syncBuffer
	exited  chan struct{}
	waitErr error
	// reported says a failure message carried the child's output
	// already.
	reported bool
}

// linkMsg is one line: a key and a value, or the read error that ended
// the stream.
type linkMsg struct {
	key string
	val []byte
	err error
}

func newLink(s *suite, r, w *os.File) *link {
	l := &link{s: s, r: r, w: w, in: make(chan linkMsg), stop: make(chan struct{}), done: make(chan struct{})}
	go l.read()
	return l
}

func (l *link) read() {
	defer close(l.done)
	sc := bufio.NewScanner(l.r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for {
		var m linkMsg
		if sc.Scan() {
			key, val, _ := strings.Cut(sc.Text(), " ")
			m.key = key
			if m.val, m.err = hex.DecodeString(val); m.err != nil {
				m.err = fmt.Errorf("bad line %q: %w", sc.Text(), m.err)
			}
		} else if m.err = sc.Err(); m.err == nil {
			m.err = errors.New("end of stream: the other process closed its end")
		}
		select {
		case l.in <- m:
		case <-l.stop:
			return
		}
		if m.err != nil {
			return
		}
	}
}

// close closes both pipe ends and waits for the reader goroutine.
func (l *link) close() {
	close(l.stop)
	l.w.Close()
	l.r.Close()
	<-l.done
}

// send writes one line to the other process.
func (l *link) send(t testing.TB, key string, val []byte) {
	t.Helper()
	_, err := fmt.Fprintf(l.w, "%s %x\n", key, val)
	require.NoError(t, err, "send %q to the other process", key)
}

// sendU64 sends v as 8 bytes, little endian.
func (l *link) sendU64(t testing.TB, key string, v uint64) {
	t.Helper()
	l.send(t, key, binary.LittleEndian.AppendUint64(nil, v))
}

// recv waits for the next line, polling meanwhile, and requires its key
// to be key. A line "end" from a peer that failed or skipped fails or
// skips the test with the peer's output.
func (l *link) recv(t testing.TB, key string) []byte {
	t.Helper()
	ctx := l.s.ctx(t)
	for {
		select {
		case m := <-l.in:
			if m.err != nil {
				t.Fatalf("waiting for %q from the other process: %v%s", key, m.err, l.report())
			}
			if m.key == "end" && key != "end" {
				l.ended(t, string(m.val), "waiting for "+key)
			}
			require.Equal(t, key, m.key, "protocol step from the other process")
			return m.val
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out after %v waiting for %q from the other process%s", l.s.cfg.Timeout, key, l.report())
		}
		if l.poll != nil {
			l.poll(t)
			runtime.Gosched()
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// recvU64 is recv for a value sent with sendU64.
func (l *link) recvU64(t testing.TB, key string) uint64 {
	t.Helper()
	v := l.recv(t, key)
	require.Len(t, v, 8, "%q from the other process", key)
	return binary.LittleEndian.Uint64(v)
}

// ended handles the peer's "end" line with outcome; pass is only right
// when the parent asked for it.
func (l *link) ended(t testing.TB, outcome, when string) {
	t.Helper()
	switch outcome {
	case "skip":
		t.Skipf("the peer process skipped (%s)%s", when, l.report())
	case "pass":
		t.Fatalf("the peer process ended early (%s)%s", when, l.report())
	default:
		t.Fatalf("the peer process failed (%s)%s", when, l.report())
	}
}

// report waits briefly for the child to exit and returns its exit status
// and output for a failure message; it is empty in the child.
func (l *link) report() string {
	if l.cmd == nil {
		return ""
	}
	l.reported = true
	select {
	case <-l.exited:
	case <-time.After(min(l.s.cfg.Timeout, 2*time.Second)):
	}
	return fmt.Sprintf("\npeer process (pid %d, exit: %v) output:\n%s", l.cmd.Process.Pid, l.status(), l.out.String())
}

func (l *link) status() string {
	select {
	case <-l.exited:
		if l.waitErr == nil {
			return "status 0"
		}
		return l.waitErr.Error()
	default:
		return "still running"
	}
}

// spawn starts the peer of the current "2proc" test in a child process
// and returns the parent's end of the link; poll drives this side while
// it waits. The child is killed at cleanup if it has not exited by then.
func (s *suite) spawn(t *testing.T, poll func(testing.TB)) *link {
	t.Helper()
	twoProcMissing(t)
	top, _, _ := strings.Cut(t.Name(), "/")
	toChildR, toChildW, err := os.Pipe()
	require.NoError(t, err)
	fromChildR, fromChildW, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0],
		"-test.run=^"+regexp.QuoteMeta(top)+"$",
		"-test.v",
		"-test.count=1",
		fmt.Sprintf("-test.timeout=%v", 4*s.cfg.Timeout+time.Minute))
	cmd.Env = append(os.Environ(), peerEnv+"="+relName(t.Name()))
	if race := os.Getenv("GORACE"); !strings.Contains(race, "atexit_sleep_ms") {
		// A -race child would otherwise sleep 1s at exit.
		cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(race+" atexit_sleep_ms=0"))
	}
	cmd.ExtraFiles = []*os.File{toChildR, fromChildW}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Start()
	toChildR.Close()
	fromChildW.Close()
	if err != nil {
		toChildW.Close()
		fromChildR.Close()
		require.NoError(t, err, "start the peer process")
	}
	l := newLink(s, fromChildR, toChildW)
	l.poll, l.cmd, l.out, l.exited = poll, cmd, out, make(chan struct{})
	go func() {
		l.waitErr = cmd.Wait()
		close(l.exited)
	}()
	t.Cleanup(func() {
		l.w.Close() // the child reads end of stream
		select {
		case <-l.exited:
		case <-time.After(s.cfg.Timeout):
			t.Errorf("the peer process did not exit within %v of the test's end; killing it", s.cfg.Timeout)
			_ = cmd.Process.Kill()
			<-l.exited
		}
		l.close()
		if t.Failed() && !l.reported {
			t.Logf("peer process (pid %d, exit: %v) output:\n%s", cmd.Process.Pid, l.status(), out.String())
		}
	})
	return l
}

// kill sends SIGKILL to the child process and waits until it is gone.
func (l *link) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, l.cmd.Process.Kill(), "kill the peer process")
	select {
	case <-l.exited:
	case <-time.After(l.s.cfg.Timeout):
		t.Fatalf("the peer process survived SIGKILL for %v", l.s.cfg.Timeout)
	}
}

// finish ends a two-process test from the parent: it tells the child the
// test is over, requires its "end pass" and a clean exit.
func (l *link) finish(t testing.TB) {
	t.Helper()
	l.send(t, "done", nil)
	if v := l.recv(t, "end"); string(v) != "pass" {
		l.ended(t, string(v), "at the end")
	}
	select {
	case <-l.exited:
	case <-time.After(l.s.cfg.Timeout):
		t.Fatalf("the peer process did not exit within %v%s", l.s.cfg.Timeout, l.report())
	}
	require.NoError(t, l.waitErr, "the peer process's exit%s", l.report())
}

// run2 runs a test that crosses a process boundary. In the parent it runs
// one, when not nil, as the subtest "1proc" with every endpoint in this
// process, then the subtest "2proc": local here, which starts the child
// with spawn and ends with finish, while the child runs remote. In the
// child (peerEnv set to this test) only remote runs.
func (s *suite) run2(t *testing.T, name string, one func(t *testing.T), local func(t *testing.T), remote func(t *testing.T, l *link)) {
	t.Helper()
	if s.peerTest != "" {
		if relName(t.Name())+"/"+name+"/2proc" == s.peerTest {
			t.Run(name, func(t *testing.T) { t.Run("2proc", func(t *testing.T) { s.remote(t, remote) }) })
		}
		return
	}
	s.run(t, name, func(t *testing.T) {
		if one != nil {
			t.Run("1proc", func(t *testing.T) {
				s.skipExcluded(t)
				one(t)
			})
		}
		t.Run("2proc", func(t *testing.T) {
			s.skipExcluded(t)
			if s.cfg.SingleProcess {
				t.Skip("Config.SingleProcess: no peer processes")
			}
			twoProcMissing(t)
			local(t)
		})
	})
}

// skipExcluded skips t when Config.Exclude names it.
func (s *suite) skipExcluded(t *testing.T) {
	t.Helper()
	if why, ok := s.cfg.Exclude[relName(t.Name())]; ok {
		t.Skipf("excluded by the provider's configuration: %s", why)
	}
}

// remote runs the child's side of a two-process test over descriptors 3
// and 4, then waits for the parent's "done" while still polling, and
// reports its outcome as the line "end pass|fail|skip" at cleanup, after
// the script's own objects are closed.
func (s *suite) remote(t *testing.T, f func(t *testing.T, l *link)) {
	for _, fd := range []int{childIn, childOut} {
		// Non-blocking descriptors make pollable files, whose Close
		// ends a pending Read.
		require.NoError(t, setNonblock(fd), "link descriptor %d (started outside the harness?)", fd)
	}
	l := newLink(s, os.NewFile(childIn, "fabtests-link-in"), os.NewFile(childOut, "fabtests-link-out"))
	t.Cleanup(func() {
		outcome := "pass"
		switch {
		case t.Skipped():
			outcome = "skip"
		case t.Failed():
			outcome = "fail"
		}
		_, _ = fmt.Fprintf(l.w, "end %x\n", outcome)
		l.close()
	})
	f(t, l)
	l.recv(t, "done")
}

// runPeer is Run in the child: it runs only the group of the test peerEnv
// names; run and run2 skip everything else. Where Run was called in a
// subtest of the top-level test, peerEnv's path starts with that
// subtest's path.
func (s *suite) runPeer(t *testing.T) {
	base := ""
	if strings.Contains(t.Name(), "/") {
		base = relName(t.Name()) + "/"
	}
	for _, g := range groups {
		if strings.HasPrefix(s.peerTest, base+g.name+"/") {
			t.Run(g.name, func(t *testing.T) { g.run(t, s) })
		}
	}
}

// twoProcMissing skips t, or fails it under GOFABRIC_STRICT, where the
// harness cannot start a peer process (twoProcUnavailable says why).
func twoProcMissing(t testing.TB) {
	t.Helper()
	if twoProcUnavailable != "" {
		reftest.Missing(t, "two-process test: %s", twoProcUnavailable)
	}
}

// syncBuffer is a bytes.Buffer safe for the writers exec starts.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
