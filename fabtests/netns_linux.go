//go:build linux

package fabtests

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// This file runs a group inside a network namespace of its own, so that
// what it sends (multicast) touches no real network: the test creates
// the namespace with ip-netns(8), brings its loopback up with a route for
// 224.0.0.0/4, and re-executes the test binary inside it (ip netns exec)
// with -test.run anchored to the group and netnsEnv set. That process
// runs the group's tests, and starts their peer processes, inside the
// namespace; this one stays outside, reports each of its tests as a
// subtest of the same name, and deletes the namespace at cleanup.

// netnsPrefix starts the name of every namespace the suite creates,
// followed by the creating process's id.
const netnsPrefix = "gofabric-fabtests-"

// ipRun runs ip(8) with args, bounded by the suite's timeout.
func (s *suite) ipRun(ip string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetns runs the current group (t) inside a new network namespace and
// reports its tests as subtests of t.
func (s *suite) inNetns(t *testing.T) {
	t.Helper()
	if s.cfg.SingleProcess {
		t.Skip("Config.SingleProcess: the group runs in a network namespace, in a re-executed test binary")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		netnsMissing(t, "ip(8) not found: %v", err)
	}
	s.reapNetns(t, ip)
	ns := fmt.Sprintf("%s%d-%d", netnsPrefix, os.Getpid(), rand.Uint32())
	if err := s.ipRun(ip, "netns", "add", ns); err != nil {
		netnsMissing(t, "%v", err)
	}
	t.Cleanup(func() {
		if err := s.ipRun(ip, "netns", "del", ns); err != nil {
			t.Errorf("delete the test's network namespace: %v", err)
		}
	})
	for _, args := range [][]string{
		{"-n", ns, "link", "set", "lo", "up", "multicast", "on"},
		{"-n", ns, "route", "add", "224.0.0.0/4", "dev", "lo"},
		{"netns", "exec", ns, "true"},
	} {
		if err := s.ipRun(ip, args...); err != nil {
			netnsMissing(t, "%v", err)
		}
	}

	limit := 8*s.cfg.Timeout + time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit+30*time.Second)
	defer cancel()
	args := []string{"netns", "exec", ns, os.Args[0],
		"-test.run=" + netnsRunPattern(t.Name()),
		"-test.v",
		"-test.count=1",
		fmt.Sprintf("-test.timeout=%v", limit)}
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		args = append(args, "-test.skip="+f.Value.String())
	}
	cmd := exec.CommandContext(ctx, ip, args...)
	cmd.Env = append(os.Environ(), netnsEnv+"="+ns)
	if race := os.Getenv("GORACE"); !strings.Contains(race, "atexit_sleep_ms") {
		cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(race+" atexit_sleep_ms=0"))
	}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	mirrorResults(t, string(out), err)
}

// netnsRunPattern is the -test.run pattern of the process in the
// namespace: the path of the group's test, each element anchored,
// followed by the levels below it of this process's own -test.run, so
// that `go test -run Test/multicast/members` runs only that test there.
func netnsRunPattern(name string) string {
	elems := strings.Split(name, "/")
	pat := make([]string, len(elems))
	for i, e := range elems {
		pat[i] = "^" + regexp.QuoteMeta(e) + "$"
	}
	if f := flag.Lookup("test.run"); f != nil {
		if levels := splitRunPattern(f.Value.String()); len(levels) > len(elems) {
			pat = append(pat, levels[len(elems):]...)
		}
	}
	return strings.Join(pat, "/")
}

// splitRunPattern splits a -test.run pattern into its levels at the
// slashes outside brackets and parentheses, as package testing does.
func splitRunPattern(p string) []string {
	if p == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++
		case '/':
			if depth == 0 {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:])
}

// resultLine is a test's result line in -test.v output: indented by four
// spaces per level below the top, which tells it from the lines of a
// peer process's output that a test logged.
var resultLine = regexp.MustCompile(`^( *)--- (PASS|FAIL|SKIP): (\S+) \(`)

// mirrorResults reports the results that the process in the namespace
// printed for t's tests (out, its -test.v output; exitErr, its exit) as
// subtests of t of the same names, at every level, each failure or skip
// with that test's part of the output.
func mirrorResults(t *testing.T, out string, exitErr error) {
	t.Helper()
	lines := strings.Split(out, "\n")
	rs := &results{outcome: make(map[string]string), log: make(map[string]string), children: make(map[string][]string)}
	for i, line := range lines {
		m := resultLine.FindStringSubmatch(line)
		if m == nil || len(m[1]) != 4*strings.Count(m[3], "/") {
			continue
		}
		name := m[3]
		if _, dup := rs.outcome[name]; dup {
			continue
		}
		rs.outcome[name], rs.log[name] = m[2], testSection(lines, name, i)
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			rs.children[name[:i]] = append(rs.children[name[:i]], name[i+1:])
		}
	}
	rs.mirrorChildren(t, t.Name())
	switch outcome, ok := rs.outcome[t.Name()]; {
	case !ok:
		t.Fatalf("no result for %s from the process in the network namespace (exit: %v); its output:\n%s", t.Name(), exitErr, out)
	case outcome == "SKIP":
		t.Skipf("skipped in the network namespace:\n%s", rs.log[t.Name()])
	case outcome == "FAIL" && !t.Failed():
		t.Errorf("failed in the network namespace:\n%s", rs.log[t.Name()])
	case exitErr != nil && !t.Failed():
		t.Errorf("the process in the network namespace exited with %v; its output:\n%s", exitErr, out)
	}
}

// results are the tests' results parsed from -test.v output, by full
// test name.
type results struct {
	outcome  map[string]string // PASS, FAIL or SKIP
	log      map[string]string
	children map[string][]string // names below a test, in result order
}

// mirrorChildren runs a subtest of t for each test below name, with its
// own subtests and its outcome.
func (rs *results) mirrorChildren(t *testing.T, name string) {
	t.Helper()
	for _, c := range rs.children[name] {
		full := name + "/" + c
		t.Run(c, func(t *testing.T) {
			rs.mirrorChildren(t, full)
			switch rs.outcome[full] {
			case "FAIL":
				if !t.Failed() {
					t.Errorf("failed in the network namespace:\n%s", rs.log[full])
				}
			case "SKIP":
				t.Skipf("skipped in the network namespace:\n%s", rs.log[full])
			}
		})
	}
}

// testSection returns the lines of the output from the start of test
// name (its "=== RUN" line) to its result line at index end.
func testSection(lines []string, name string, end int) string {
	start := end
	for i := end - 1; i >= 0; i-- {
		if lines[i] == "=== RUN   "+name { // a peer's output is indented
			start = i
			break
		}
	}
	return strings.Join(lines[start:end+1], "\n")
}

// reapNetns deletes the namespaces that earlier runs of the suite left
// behind (their creating process no longer exists), such as after a
// SIGKILL.
func (s *suite) reapNetns(t testing.TB, ip string) {
	t.Helper()
	out, err := exec.CommandContext(s.ctx(t), ip, "netns", "list").Output()
	if err != nil {
		return // listing needs no privilege; creating reports the problem
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		name, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if err := s.ipRun(ip, "netns", "del", name); err != nil {
			t.Logf("delete a stale network namespace: %v", err)
		}
	}
}
