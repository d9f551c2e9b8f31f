package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofabric/gofabric/fabtests"
)

// runner holds what every provider's build and runs share.
type runner struct {
	root, tags, pattern string
	timeout             time.Duration
	dir                 string // temporary directory for the test binaries
	stdout, stderr      io.Writer
}

// provRun is one provider's build, plan and run.
type provRun struct {
	name string
	bin  string // the test binary
	// top says whether the binary has a TestConformance test for the
	// pattern at all (the plan saw a top-level test).
	top bool
	// plan is the full names of the tests the run will report, in the
	// order they run.
	plan  []string
	start time.Time
	dur   time.Duration
}

// event is a test2json event.
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// checkToolchain checks that the Go toolchain is there, with its
// test2json (`go tool test2json`, built on first use).
func checkToolchain(ctx context.Context) error {
	if out, err := exec.CommandContext(ctx, "go", "tool", "-n", "test2json").CombinedOutput(); err != nil {
		return fmt.Errorf("go tool -n test2json: %v: %s (fabtests needs the Go toolchain)", err, bytes.TrimSpace(out))
	}
	return nil
}

// pkgDir is the provider's package directory.
func (r *runner) pkgDir(p string) string { return filepath.Join(r.root, "providers", p) }

// build builds the provider's test binary (go test -c).
func (r *runner) build(ctx context.Context, pr *provRun) error {
	pr.bin = filepath.Join(r.dir, pr.name+".test")
	args := []string{"test", "-c", "-o", pr.bin}
	if r.tags != "" {
		args = append(args, "-tags", r.tags)
	}
	args = append(args, "./providers/"+pr.name+"/")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = r.root
	ownGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	if _, err := os.Stat(pr.bin); err != nil {
		pr.bin = "" // a package without test files in this build
	}
	return nil
}

// planTimeout bounds the listing of a provider's tests (unless -timeout
// is longer): it runs no test, but may start slowly on a busy machine.
const planTimeout = 2 * time.Minute

// plan runs the test binary with fabtests.PlanEnv set and keeps the tests
// it lists: the leaves of its test tree.
func (r *runner) plan(ctx context.Context, pr *provRun) error {
	if pr.bin == "" {
		return nil
	}
	tr := newTree()
	res, err := r.exec(ctx, pr, max(r.timeout, planTimeout), true, func(ev event) { tr.add(ev) })
	if err != nil {
		return fmt.Errorf("listing the tests: %v", err)
	}
	for _, n := range tr.order {
		if n.parent == nil {
			pr.top = true
		}
		if n.leaf() {
			pr.plan = append(pr.plan, n.name)
		}
	}
	if res.waitErr != nil && !tr.failed() || ctx.Err() != nil {
		return fmt.Errorf("listing the tests: %v%s", res.waitErr, tail(tr.pkgOut.String()+res.stderr))
	}
	return nil
}

// emptyPlan says why a provider has no test in the selection.
func (r *runner) emptyPlan(pr *provRun, tests string) string {
	switch {
	case pr.bin == "":
		return fmt.Sprintf("providers/%s has no test in this build (build constraints; -tags?)", pr.name)
	case !pr.top:
		return fmt.Sprintf("providers/%s has no TestConformance in this build (build constraints; -tags?)", pr.name)
	default:
		return "its TestConformance runs no test" + strings.Replace(selection(tests), " -t", " matching -t", 1)
	}
}

// execResult is how a test binary's run ended.
type execResult struct {
	waitErr  error
	timedOut bool
	stderr   string
}

// exec runs the provider's test binary under test2json with the pattern
// (as a plan with planning set) and passes each event to f. The binary
// and every process it starts are killed when ctx ends or after timeout
// and a grace period (the binary's own -test.timeout comes first).
func (r *runner) exec(ctx context.Context, pr *provRun, timeout time.Duration, planning bool, f func(event)) (execResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "tool", "test2json", "-t", "-p", "providers/"+pr.name, pr.bin,
		"-test.v=test2json", "-test.paniconexit0", "-test.count=1",
		"-test.run", r.pattern, "-test.timeout", timeout.String())
	cmd.Dir = r.pkgDir(pr.name)
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, fabtests.PlanEnv+"=") {
			env = append(env, kv)
		}
	}
	if planning {
		env = append(env, fabtests.PlanEnv+"=1")
	}
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	ownGroup(cmd)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return execResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return execResult{}, err
	}
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			f(ev)
		}
	}
	if err := sc.Err(); err != nil {
		_, _ = io.Copy(io.Discard, pipe)
	}
	res := execResult{waitErr: waitGroup(cmd), stderr: errb.String()}
	res.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	return res, nil
}

// tail returns the last lines of s, indented, for a message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\n\t" + strings.Join(lines, "\n\t")
}

// node is one test of a run.
type node struct {
	name     string
	parent   *node
	children []*node
	action   string // pass, fail or skip once it ended
	elapsed  float64
	out      strings.Builder
}

// leaf says whether n is a test of its own: it has no subtests, and it is
// not a top-level test or a group that passed without any (a
// TestConformance* or a group that holds no test of the selection). A
// group or top-level test that skipped or failed as a whole is one.
func (n *node) leaf() bool {
	if len(n.children) > 0 {
		return false
	}
	if n.action == "pass" && (n.parent == nil || slices.Contains(suiteGroups, belowTop(n.name))) {
		return false
	}
	return true
}

// suiteGroups are the conformance suite's groups.
var suiteGroups = fabtests.Groups()

// belowTop strips the top-level test's name: "unit/eq/peek" from
// "TestConformance/unit/eq/peek".
func belowTop(full string) string {
	_, rest, _ := strings.Cut(full, "/")
	return rest
}

// failedBelow says whether a test below n failed.
func (n *node) failedBelow() bool {
	for _, c := range n.children {
		if c.action == "fail" || c.failedBelow() {
			return true
		}
	}
	return false
}

// ownFailure says whether n failed by itself, not through a subtest (a
// group's leak check, a check after fabtests.Run).
func (n *node) ownFailure() bool {
	return n.action == "fail" && !n.failedBelow()
}

// leaves returns the leaves below n, in the order they ended.
func (n *node) leaves() []*node {
	var out []*node
	for _, c := range n.children {
		if len(c.children) == 0 {
			out = append(out, c)
		} else {
			out = append(out, c.leaves()...)
		}
	}
	return out
}

// tree is the tests of one run, from its events.
type tree struct {
	nodes  map[string]*node
	order  []*node // in the order they ended
	pkgOut strings.Builder
}

func newTree() *tree { return &tree{nodes: make(map[string]*node)} }

// node returns the test called name, adding it below the known test with
// the longest name that is a prefix of it ending at a slash
// ("TestConformance/unit/eq" is a subtest of "TestConformance": groups
// have slashes in their names).
func (tr *tree) node(name string) *node {
	if n := tr.nodes[name]; n != nil {
		return n
	}
	n := &node{name: name}
	for p := name; ; {
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
		if parent := tr.nodes[p]; parent != nil {
			n.parent = parent
			parent.children = append(parent.children, n)
			break
		}
	}
	tr.nodes[name] = n
	return n
}

// add takes in one event and returns the test that it ended, if any.
func (tr *tree) add(ev event) *node {
	if ev.Test == "" {
		if ev.Action == "output" {
			tr.pkgOut.WriteString(ev.Output)
		}
		return nil
	}
	n := tr.node(ev.Test)
	switch ev.Action {
	case "output":
		n.out.WriteString(ev.Output)
	case "pass", "fail", "skip":
		if n.action != "" {
			return nil
		}
		n.action, n.elapsed = ev.Action, ev.Elapsed
		tr.order = append(tr.order, n)
		return n
	}
	return nil
}

// failed says whether any test failed.
func (tr *tree) failed() bool {
	for _, n := range tr.order {
		if n.action == "fail" {
			return true
		}
	}
	return false
}

// runProvider runs the provider's tests, streams a line for each test of
// the plan as it ends, and returns the rows of the table.
func (r *runner) runProvider(ctx context.Context, pr *provRun, st *stream) []result {
	pr.start = time.Now()
	defer func() { pr.dur = time.Since(pr.start) }()
	pending := make(map[string]bool, len(pr.plan))
	for _, name := range pr.plan {
		pending[name] = true
	}
	tr := newTree()
	ended := func(n *node) {
		if pending[n.name] {
			delete(pending, n.name)
			st.test(pr.name, rel(n.name), n.action, n.elapsed, unitReason(n))
			return
		}
		// Tests of the plan below n that never ran: n skipped or failed
		// as a whole (a group without the ability, a crash).
		for _, name := range pr.plan {
			if !pending[name] || !strings.HasPrefix(name, n.name+"/") {
				continue
			}
			delete(pending, name)
			switch n.action {
			case "skip":
				st.test(pr.name, rel(name), "skip", 0, short("not run: "+rel(n.name)+" skipped: "+reason(n.out.String())))
			case "fail":
				st.test(pr.name, rel(name), "fail", 0, short("not run: "+rel(n.name)+" failed first"))
			default:
				st.test(pr.name, rel(name), "skip", 0, "not run: "+rel(n.name)+" ended without it")
			}
		}
		if n.ownFailure() && len(n.children) > 0 {
			st.extra(pr.name, rel(n.name), n.action, n.elapsed, short(reason(n.out.String())))
		}
	}
	res, err := r.exec(ctx, pr, r.timeout, false, func(ev event) {
		if n := tr.add(ev); n != nil {
			ended(n)
		}
	})

	var rows []result
	for _, n := range tr.order {
		if !n.leaf() && !n.ownFailure() {
			continue
		}
		row := result{Provider: pr.name, Test: rel(n.name), Result: n.action, Seconds: n.elapsed}
		if n.action != "pass" {
			row.details = reason(n.out.String())
			row.Reason = short(row.details)
		}
		if n.action == "fail" {
			row.output = n.out.String()
		}
		rows = append(rows, row)
	}

	// What went wrong with the run itself.
	var notRun []string
	for _, name := range pr.plan {
		if pending[name] {
			notRun = append(notRun, name)
			st.test(pr.name, rel(name), "fail", 0, "not run: the test process ended first")
		}
	}
	var why []string
	switch {
	case err != nil:
		why = append(why, err.Error())
	case res.timedOut:
		why = append(why, fmt.Sprintf("did not finish within %v", r.timeout))
	case ctx.Err() != nil:
		why = append(why, "interrupted")
	}
	if len(notRun) > 0 {
		why = append(why, fmt.Sprintf("%d of %d tests did not run", len(notRun), len(pr.plan)))
	}
	if len(why) == 0 && res.waitErr != nil && !tr.failed() {
		why = append(why, fmt.Sprintf("the test process: %v", res.waitErr))
	}
	if len(why) > 0 {
		out := tr.pkgOut.String() + res.stderr
		msg := strings.Join(why, "; ")
		if t := tail(out); t != "" {
			msg += ":" + t
		}
		row := result{Provider: pr.name, Test: "(run)", Result: "fail", Seconds: time.Since(pr.start).Seconds(),
			Reason: short(msg), details: msg, output: out}
		rows = append(rows, row)
		st.extra(pr.name, row.Test, row.Result, row.Seconds, row.Reason)
	}
	return rows
}

// rel is a test's name below TestConformance ("unit/eq/peek"); tests of
// other top-level tests keep their whole name
// ("TestConformanceNoCMA/rdm/order").
func rel(full string) string {
	return strings.TrimPrefix(full, "TestConformance/")
}

// unitReason is the reason on a test's line: its skip's reason, the
// reasons of its failed subtests (or its own), or for a test that passed
// the subtests it skipped.
func unitReason(n *node) string {
	var parts []string
	switch n.action {
	case "skip":
		return short(reason(n.out.String()))
	case "fail":
		if !n.failedBelow() {
			return short(reason(n.out.String()))
		}
		for _, l := range n.leaves() {
			if l.action == "fail" || l.ownFailure() {
				parts = append(parts, strings.TrimPrefix(l.name, n.name+"/")+": "+reason(l.out.String()))
			}
		}
	case "pass":
		var skipped []string
		for _, l := range n.leaves() {
			if l.action == "skip" {
				skipped = append(skipped, strings.TrimPrefix(l.name, n.name+"/")+" ("+reason(l.out.String())+")")
			}
		}
		if len(skipped) > 0 {
			parts = append(parts, "skipped "+strings.Join(skipped, ", "))
		}
	}
	return short(strings.Join(parts, " | "))
}
