package ft

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/internal/testport"
	"github.com/stretchr/testify/require"
)

// This file starts the two sides of a test as processes: the Go program
// (this test binary run as ft, see TestMain) or a C fabtests program from
// FABTESTS_BIN. Every wait is bounded; a process still running at the
// test's end is killed.

// fabtestsBinEnv names the directory of the C fabtests programs.
const fabtestsBinEnv = "FABTESTS_BIN"

// peerLimit bounds how long one side of a pair may run in a test.
const peerLimit = 3 * time.Minute

// fabtestsBin returns the directory of the C fabtests programs, or calls
// reftest.Missing (a skip, a failure under GOFABRIC_STRICT).
func fabtestsBin(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(fabtestsBinEnv)
	if dir == "" {
		reftest.Missing(t, "%s is not set: it names the bin/ directory of libfabric 1.17's C fabtests, which the tests pair the Go programs with", fabtestsBinEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "fi_rdm_pingpong")); err != nil {
		reftest.Missing(t, "%s=%s holds no C fabtests: %v", fabtestsBinEnv, dir, err)
	}
	return dir
}

// cProgram returns a path that runs the C program fi_<prog> under
// another name: a symbolic link "c-fi_<prog>" in the test's temporary
// directory. The process's name (comm) comes from that link, and
// libfabric's runfabtests.sh, which other tests run on this machine,
// kills every process whose name begins with "fi_" (kill -9) after each of
// its tests: a C peer of this package's tests must not be among them.
func cProgram(t testing.TB, prog string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "c-fi_"+prog)
	require.NoError(t, os.Symlink(filepath.Join(fabtestsBin(t), "fi_"+prog), link))
	return link
}

// syncBuffer is a bytes.Buffer safe for the process's copying goroutine
// and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// peer is one running side of a test.
type peer struct {
	// kind is "go" or "c".
	kind        string
	name        string // for messages: "go server", "c client"
	cmd         *exec.Cmd
	out, errOut syncBuffer
	done        chan struct{} // closed when the process has exited
	err         error         // Wait's result, set before done closes
}

// startPeer starts the Go (kind "go") or C (kind "c") program prog with
// args, on loopback.
func startPeer(t testing.TB, kind, role, prog string, args ...string) *peer {
	t.Helper()
	p := &peer{kind: kind, name: kind + " " + role, done: make(chan struct{})}
	if kind == "go" {
		p.cmd = exec.Command(os.Args[0], append([]string{prog}, args...)...)
		p.cmd.Env = append(os.Environ(), asMainEnv+"=1")
	} else {
		p.cmd = exec.Command(cProgram(t, prog), args...)
		p.cmd.Env = append(os.Environ(), reftest.HugePagesEnv)
	}
	// Both the Go and the C providers use the first interface otherwise.
	p.cmd.Env = append(p.cmd.Env, "FI_TCP_IFACE=lo", "FI_UDP_IFACE=lo")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errOut
	require.NoError(t, p.cmd.Start(), "starting %s", p.name)
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

// kill ends the process if it still runs and waits for it.
func (p *peer) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has ended.
func (p *peer) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// status waits at most limit for the process and returns its exit
// status; it kills it and fails the test when it runs longer, with the
// output of others too.
func (p *peer) status(t testing.TB, limit time.Duration, others ...*peer) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.kill()
		for _, o := range others {
			o.kill()
		}
		t.Fatalf("%s did not exit within %v and was killed\n%s", p.name, limit, reports(append([]*peer{p}, others...)...))
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, p.err, "%s", p.name)
	return 0
}

// reports is the output of several processes.
func reports(ps ...*peer) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.report())
	}
	return b.String()
}

// report is the process's output, for failure messages, and how it
// ended.
func (p *peer) report() string {
	end := "running"
	if p.exited() {
		end = "exited 0"
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			end = ee.String() // "exit status 5", "signal: killed"
		}
	}
	return fmt.Sprintf("--- %s (%s) stdout:\n%s--- %s stderr:\n%s", p.name, end, p.out.String(), p.name, p.errOut.String())
}

// freePort returns a port for a peer process to listen on (internal/testport:
// free now, and outside the range the kernel picks source ports from).
func freePort(t testing.TB) string {
	t.Helper()
	return testport.String(t)
}

// waitListening waits until a socket listens on TCP port (seen in
// /proc/net/tcp, without connecting to it), failing if p exits first.
func waitListening(t testing.TB, p *peer, port string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !listening(t, port) {
		if p.exited() {
			t.Fatalf("%s exited before listening on port %s\n%s", p.name, port, p.report())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on port %s within a minute\n%s", p.name, port, p.report())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listening reports whether /proc/net/tcp or tcp6 lists a listening
// socket on port.
func listening(t testing.TB, port string) bool {
	t.Helper()
	return socketInState(t, port, "0A")
}

// socketInState reports whether /proc/net/tcp or tcp6 lists a socket of
// local port in state st (the kernel's hex TCP state: 01 ESTABLISHED, 0A
// LISTEN).
func socketInState(t testing.TB, port, st string) bool {
	t.Helper()
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	want := fmt.Sprintf(":%04X", n)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			// sl local_address rem_address st ...
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == st {
				return true
			}
		}
	}
	return false
}

// perfRows returns the result rows of show_perf's table in out: the
// fields of each line after the "bytes iters ..." header.
func perfRows(out string) [][]string {
	var rows [][]string
	header := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "bytes":
			header = true
		case header && len(f) == 7:
			rows = append(rows, f)
		}
	}
	return rows
}

// pairHosts maps a provider to the address its pairs run on, where it is
// not loopback (verbs: the RDMA device's, set by the verbs tests).
var pairHosts sync.Map

// pairHost is the address the pairs of prov run on: -s of both sides and
// the client's server address.
func pairHost(prov string) string {
	if h, ok := pairHosts.Load(prov); ok {
		return h.(string)
	}
	return "127.0.0.1"
}

// waitCMListening waits until an rdma_cm ID listens on port (rdma
// resource show cm_id, iproute2's rdma tool: rdma_cm's ports are not in
// /proc/net/tcp), failing if p exits first.
func waitCMListening(t testing.TB, p *peer, port string) {
	t.Helper()
	rdma := reftest.Tool(t, "rdma", "iproute2")
	listen := regexp.MustCompile(`(?m)state LISTEN .*src-addr \S*:` + regexp.QuoteMeta(port) + `\b`)
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := exec.Command(rdma, "resource", "show", "cm_id").CombinedOutput()
		require.NoError(t, err, "rdma resource show cm_id: %s", out)
		if listen.Match(out) {
			return
		}
		if p.exited() {
			t.Fatalf("%s exited before listening on rdma_cm port %s\n%s", p.name, port, p.report())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on rdma_cm port %s within a minute\n%s\nrdma resource show cm_id:\n%s", p.name, port, p.report(), out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
