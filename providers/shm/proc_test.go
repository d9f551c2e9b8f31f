//go:build linux

package shm_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file is the harness of the tests that need more than one process:
// the test binary re-executed as TestHelperPeer with a role in the
// environment (the os/exec helper-process idiom). A child speaks to the
// parent in lines "@@ key value" on its stdout; every wait of the parent
// is bounded, and the child is killed at the test's cleanup at the
// latest.

// roleEnv names the role a child plays; the role's parameters are other
// GOFABRIC_SHM_* variables.
const roleEnv = "GOFABRIC_SHM_ROLE"

// procWait bounds every wait of the parent for a child's line, and every
// wait of a test for a completion: long enough for a loaded machine under
// -race, short enough that a hang fails the test.
const procWait = 30 * time.Second

// TestHelperPeer is not a test: it runs a child's role (see the roles in
// reliability_test.go) when the environment names one.
func TestHelperPeer(t *testing.T) {
	role := os.Getenv(roleEnv)
	if role == "" {
		return
	}
	f, ok := roles[role]
	if !ok {
		say("fail", "unknown role "+role)
		return
	}
	f(t)
}

// roles maps role names to what a child does.
var roles = map[string]func(t *testing.T){}

// say writes one protocol line to stdout.
func say(key, val string) { fmt.Fprintf(os.Stdout, "@@ %s %s\n", key, val) }

// child is a running helper process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // what tell writes; a child may read it as os.Stdin
	lines chan [2]string
	mu    sync.Mutex // guards out
	out   bytes.Buffer
	done  chan struct{}
}

// startChild runs role in a child process with extra environment
// variables; cred, when set, runs it as another user.
func startChild(t testing.TB, role string, cred *syscall.Credential, env ...string) *child {
	t.Helper()
	bin := os.Args[0]
	if cred != nil {
		bin = worldExecutable(t)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperPeer$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = "/"
	}
	c := &child{cmd: cmd, lines: make(chan [2]string, 64), done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	cmd.Stderr = &lockedWriter{c: c}
	require.NoError(t, cmd.Start())
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.out.WriteString(line + "\n")
			c.mu.Unlock()
			if rest, ok := strings.CutPrefix(line, "@@ "); ok {
				k, v, _ := strings.Cut(rest, " ")
				c.lines <- [2]string{k, v}
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(c.kill)
	return c
}

type lockedWriter struct{ c *child }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.out.Write(b)
}

// output returns what the child printed so far.
func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// expect waits for the child's next protocol line, which must have key
// (a "fail" line fails the test with its reason), and returns its value.
func (c *child) expect(t testing.TB, key string) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			<-c.done
			t.Fatalf("child ended before %q: %v\n%s", key, c.cmd.ProcessState, c.output())
		}
		if l[0] != key {
			t.Fatalf("child said %q %q, want %q\n%s", l[0], l[1], key, c.output())
		}
		return l[1]
	case <-time.After(procWait):
		t.Fatalf("no %q from the child within %v (hang)\n%s", key, procWait, c.output())
	}
	return ""
}

// tell writes one line to the child's stdin.
func (c *child) tell(t testing.TB, line string) {
	t.Helper()
	_, err := io.WriteString(c.stdin, line+"\n")
	require.NoError(t, err, "telling the child %q\n%s", line, c.output())
}

// kill kills the child (SIGKILL) and waits for it.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// worldExecutable copies the test binary where any user may run it.
func worldExecutable(t testing.TB) string {
	worldOnce.Do(func() {
		dir, err := os.MkdirTemp("", "shmtest")
		if err != nil {
			worldErr = err
			return
		}
		worldDir = dir
		_ = os.Chmod(dir, 0o755)
		src, err := os.ReadFile(os.Args[0])
		if err != nil {
			worldErr = err
			return
		}
		worldErr = os.WriteFile(filepath.Join(dir, "shm.test"), src, 0o755)
	})
	require.NoError(t, worldErr)
	return filepath.Join(worldDir, "shm.test")
}

var (
	worldOnce sync.Once
	worldDir  string
	worldErr  error
)

// TestMain removes the copy of the test binary made for other users.
func TestMain(m *testing.M) {
	code := m.Run()
	if worldDir != "" {
		_ = os.RemoveAll(worldDir)
	}
	os.Exit(code)
}

// nobody is the credential of the user nobody, the other local user of
// the tests.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// ---- endpoints with counters and wait styles ----

// xnode is an endpoint with a CQ and, optionally, send and receive
// counters.
type xnode struct {
	node
	tx, rx eq.Counter
	// txPosted and rxPosted count the operations posted: a counter wait
	// waits for its counter to reach them.
	txPosted, rxPosted uint64
}

// openX opens an endpoint named name ("" for the default), or with
// FI_SOURCE from node and service when name starts with "src:", with
// counters when counters is set.
func openX(t testing.TB, name string, counters bool) *xnode {
	t.Helper()
	return openXWith(t, name, counters, nil)
}

// openXWith is openX with hints that modify changes (when not nil).
func openXWith(t testing.TB, name string, counters bool, modify func(*fi.Info)) *xnode {
	t.Helper()
	h := shmHints()
	if modify != nil {
		modify(h)
	}
	var infos []*fi.Info
	var err error
	if spec, ok := strings.CutPrefix(name, "src:"); ok {
		node, service, _ := strings.Cut(spec, ":")
		infos, err = fi.GetInfo(context.Background(), node, service, fi.FlagSource, h)
	} else {
		if name != "" {
			h.SrcAddr = []byte(name)
		}
		infos, err = fi.GetInfo(context.Background(), "", "", 0, h)
	}
	require.NoError(t, err)
	x := &xnode{}
	n := &x.node
	n.fabric, err = fi.OpenFabric(infos[0])
	require.NoError(t, err)
	n.domain, err = n.fabric.OpenDomain(infos[0])
	require.NoError(t, err)
	n.av, err = fi.OpenAV(n.domain, &fi.AVAttr{Type: fi.AVTable})
	require.NoError(t, err)
	n.cq, err = eq.OpenCQ(n.domain, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	n.ep, err = ep.Open(n.domain, infos[0])
	require.NoError(t, err)
	require.NoError(t, n.ep.Bind(n.av, 0))
	require.NoError(t, n.ep.Bind(n.cq, fi.FlagSend|fi.FlagRecv))
	if counters {
		x.tx, err = eq.OpenCounter(n.domain, nil)
		require.NoError(t, err)
		x.rx, err = eq.OpenCounter(n.domain, nil)
		require.NoError(t, err)
		require.NoError(t, n.ep.Bind(x.tx, fi.FlagSend))
		require.NoError(t, n.ep.Bind(x.rx, fi.FlagRecv))
	}
	require.NoError(t, n.ep.Enable())
	buf := make([]byte, 128)
	k, err := n.ep.(ep.Namer).Name(buf)
	require.NoError(t, err)
	n.name = buf[:k]
	return x
}

// closeX closes everything openX opened; the endpoint may be closed
// already.
func (x *xnode) closeX(t testing.TB) {
	t.Helper()
	if err := x.ep.Close(); err != nil {
		require.ErrorIs(t, err, fi.EBADF)
	}
	if x.tx != nil {
		require.NoError(t, x.tx.Close())
		require.NoError(t, x.rx.Close())
	}
	require.NoError(t, x.cq.Close())
	require.NoError(t, x.av.Close())
	require.NoError(t, x.domain.Close())
	require.NoError(t, x.fabric.Close())
}

// waitStyle is how a side waits for its completions.
type waitStyle string

const (
	busy  waitStyle = "busy"  // CQ.Read in a loop
	sread waitStyle = "sread" // CQ.SRead
	cwait waitStyle = "cntr"  // Counter.Wait, then CQ.Read
)

var styles = []waitStyle{busy, sread, cwait}

// entry is a completion or an error entry.
type entry struct {
	c   eq.Completion
	err *eq.CQError
}

// waitOne waits for one entry of x's CQ in the given style; tx names the
// counter a counter wait uses. It returns ctx's error if none comes.
func (x *xnode) waitOne(ctx context.Context, how waitStyle, tx bool) (entry, error) {
	var c [1]eq.Completion
	for {
		var n int
		var err error
		switch how {
		case busy:
			n, err = x.cq.Read(c[:])
			if err == fi.EAGAIN {
				if e := ctx.Err(); e != nil {
					return entry{}, e
				}
				runtime.Gosched()
				continue
			}
		case sread:
			n, err = x.cq.SRead(ctx, c[:])
		case cwait:
			n, err = x.cq.Read(c[:])
			if err == fi.EAGAIN {
				k, thr := x.rx, x.rxPosted
				if tx {
					k, thr = x.tx, x.txPosted
				}
				if werr := k.Wait(ctx, thr); werr != nil && werr != fi.EAVAIL {
					return entry{}, werr
				}
				continue
			}
		}
		switch {
		case n == 1:
			return entry{c: c[0]}, nil
		case err == fi.EAVAIL:
			e, rerr := x.cq.ReadErr()
			if rerr != nil {
				return entry{}, rerr
			}
			return entry{err: e}, nil
		case err != nil && err != fi.EAGAIN:
			return entry{}, err
		}
	}
}

// collect waits in style how until x's CQ gave an entry for each
// context of want (whose value says whether it is a transmit, for the
// counter a counter wait uses), failing on an error entry or a hang.
func (x *xnode) collect(t testing.TB, how waitStyle, want map[any]bool) map[any]eq.Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	got := map[any]eq.Completion{}
	for len(got) < len(want) {
		tx := false
		for k, isTx := range want {
			if _, ok := got[k]; !ok {
				tx = isTx
				break
			}
		}
		e, err := x.waitOne(ctx, how, tx)
		require.NoError(t, err, "waiting (%s) for %v, got %v: hang", how, want, got)
		require.Nil(t, e.err, "error entry while waiting for %v", want)
		_, ok := want[e.c.Context]
		require.True(t, ok, "unexpected completion %+v", e.c)
		got[e.c.Context] = e.c
	}
	return got
}

// send sends buf to dest, retrying while the peer is not there yet.
func (x *xnode) send(t testing.TB, buf []byte, dest fi.Addr, ctx any) {
	t.Helper()
	deadline := time.Now().Add(procWait)
	for {
		err := x.ep.(ep.Msg).Send(buf, nil, dest, ctx)
		if err == nil {
			x.txPosted++
			return
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		require.True(t, time.Now().Before(deadline), "send: EAGAIN for %v", procWait)
		_, _ = x.cq.Read(nil)
		time.Sleep(time.Millisecond)
	}
}

// pattern fills b with bytes that depend on seed and position.
func pattern(b []byte, seed int) []byte {
	for i := range b {
		b[i] = byte(i*7 + seed + i>>12)
	}
	return b
}

// firstDiff describes where got differs from want.
func firstDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d is %#x, want %#x", i, got[i], want[i])
		}
	}
	return ""
}

// sizesEnv parses a comma list of sizes.
func parseSizes(s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func joinSizes(sizes []int) string {
	s := make([]string, len(sizes))
	for i, n := range sizes {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
