// Command fabtests runs gofabric's provider conformance suite (package
// fabtests) over chosen providers and groups, prints each test's result as
// it finishes, then a table of pass, fail and skip per provider and test
// with the reason of every skip and failure: the Go form of libfabric's
// runfabtests.sh.
//
//	fabtests [-p tcp,shm] [-t unit,cm,msg] [-timeout 10m] [-o results.json] [-junit results.xml] [-tags verbs] [-v] [-C dir]
//
// Each provider of this module runs the suite from its own test,
// providers/<name>'s TestConformance (and TestConformance* beside it). The
// runner builds that package's test binary once (`go test -c`, so it needs
// the Go toolchain, as `go run` does), runs it once with
// fabtests.PlanEnv set to learn which tests the selection holds, then for
// real under `go tool test2json`, one process per provider bounded by
// -timeout, and reads the events.
//
// # Output
//
// First a line with the number of tests, then one line per test as it
// finishes, with the count of tests done:
//
//	[ 7/10] skip  udp  unit/eq/peek        0.00s  excluded by the provider's configuration: ...
//
// result, provider, test, seconds and, for a failure or skip, the reason
// (the test's log lines). A test here is one test of the suite as
// fabtests.Config.Exclude names it ("unit/eq/peek"); a test that runs
// subtests of its own ("rdm/send-recv" with "1proc" and "2proc") is one
// line, failed when a subtest failed, with that subtest's reason (a pass
// names the subtests that skipped). When a
// whole group skips (a provider without FI_MULTICAST, a host where the
// multicast group cannot create a network namespace), each of its tests
// gets a skip line with the group's reason. A failure outside any test
// (a group's leak check) gets a line of its own without a count.
//
// Then the table: pass, fail and skip per provider, and every failure and
// skip (every test with -v) at the finest level: the subtests ("1proc",
// "2proc", sizes) that -o writes as JSON ([{"provider", "test", "result",
// "seconds", "reason"}]) and -junit as JUnit XML: <testsuites> with a
// <testsuite> per provider and a <testcase> per row (classname
// "fabtests.<provider>", name the test path, time in seconds), with a
// <failure message=...> or <skipped message=...> and, for a failure, the
// test's whole output in <system-out>. Characters that XML 1.0 forbids or
// discourages (most control characters, as in colored test output) are
// written as \xNN or \uNNNN text.
//
// -t takes groups (unit, unit/eq, rma) or tests below a group
// (unit/eq/peek), comma-separated, all at one depth; the entries are
// combined level by level (-t msg/truncate,rdm/order also runs
// rdm/truncate).
//
// # Exit status
//
//   - 0: every test that ran passed or skipped.
//   - 1: a test failed, a provider's tests did not build or their run did
//     not finish, or nothing ran: the selection holds no test of a
//     provider named with -p (-p udp -t cm, -t unit/eq/nosuchtest), or of
//     any provider; -p verbs without -tags verbs has no TestConformance.
//     A provider that -p did not name and that has no test in the
//     selection is left out with a note on stderr.
//   - 2: a bad command line, found before anything is built: an unknown
//     flag or an argument, an unknown provider (no providers/<name>), a
//     provider without providers/<name>/conformance_test.go, a group
//     that the suite does not have (-t nosuchgroup), or groups and
//     subgroups mixed in -t.
//
// (`go run ./cmd/fabtests` reports the program's status as "exit status
// 2" and exits with 1 itself; a built fabtests exits with 2.) The
// results of a run that ended early (a failure to build, -timeout, an
// interrupt) are still printed and written, with the run as a failed row,
// "(run)" or "(build)", saying what happened; every test of the plan that
// did not run is streamed as a failure.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gofabric/gofabric/fabtests"
)

// result is one row of the table, the JSON and the JUnit file.
type result struct {
	Provider string  `json:"provider"`
	Test     string  `json:"test"`
	Result   string  `json:"result"` // pass, fail or skip
	Seconds  float64 `json:"seconds"`
	Reason   string  `json:"reason,omitempty"`
	// output is the test's whole output, for the JUnit file's
	// <system-out> of a failure.
	output string
	// details is the failure's or skip's log lines, unshortened.
	details string
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // a failure, or nothing ran
	exitUsage = 2 // a bad command line
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fabtests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	provs := fs.String("p", "", "providers to test, comma-separated (default: every provider with a conformance test)")
	tests := fs.String("t", "", "groups or tests to run, comma-separated, e.g. unit,cm,msg or unit/eq (default: all)")
	timeout := fs.Duration("timeout", 10*time.Minute, "time limit for each provider's run")
	out := fs.String("o", "", "also write the results as JSON to this file")
	junit := fs.String("junit", "", "also write the results as JUnit XML to this file")
	tags := fs.String("tags", "", "build tags for the providers' tests, e.g. verbs")
	verbose := fs.Bool("v", false, "list passing tests in the table too, not only failures and skips")
	root := fs.String("C", ".", "the gofabric module's directory")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "fabtests: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	names, err := providers(*root, *provs)
	if err == nil {
		err = checkGroups(*tests, fabtests.Groups())
	}
	var pattern string
	if err == nil {
		pattern, err = runPattern(*tests)
	}
	if err != nil {
		fmt.Fprintln(stderr, "fabtests:", err)
		return exitUsage
	}

	// An interrupt, a termination, or a reader of the output that went
	// away (| head) ends the runs and removes the binaries.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	defer stop()
	r := &runner{root: *root, tags: *tags, pattern: pattern, timeout: *timeout, stdout: stdout, stderr: stderr}
	tmp, err := os.MkdirTemp("", "fabtests-")
	if err != nil {
		fmt.Fprintln(stderr, "fabtests:", err)
		return exitFail
	}
	defer os.RemoveAll(tmp)
	r.dir = tmp
	if err := checkToolchain(ctx); err != nil {
		fmt.Fprintln(stderr, "fabtests:", err)
		return exitFail
	}

	// Build and plan every provider before running any, so that the
	// count is known and a selection that holds nothing fails at once.
	var (
		runs  []*provRun
		all   []result
		total int
	)
	for _, p := range names {
		pr := &provRun{name: p}
		if err := r.build(ctx, pr); err != nil {
			fmt.Fprintf(stderr, "fabtests: %s: %v\n", p, err)
			all = append(all, result{Provider: p, Test: "(build)", Result: "fail", Reason: short(err.Error()),
				details: err.Error(), output: err.Error()})
			continue
		}
		if err := r.plan(ctx, pr); err != nil {
			fmt.Fprintf(stderr, "fabtests: %s: %v\n", p, err)
			all = append(all, result{Provider: p, Test: "(plan)", Result: "fail", Reason: short(err.Error()),
				details: err.Error(), output: err.Error()})
			continue
		}
		if len(pr.plan) == 0 {
			why := r.emptyPlan(pr, *tests)
			if *provs != "" {
				fmt.Fprintf(stderr, "fabtests: %s: nothing to run: %s\n", p, why)
				return exitFail
			}
			fmt.Fprintf(stderr, "fabtests: note: %s left out: %s\n", p, why)
			continue
		}
		runs = append(runs, pr)
		total += len(pr.plan)
	}
	if total == 0 && len(all) == 0 {
		fmt.Fprintf(stderr, "fabtests: nothing to run: no provider has a test in the selection%s\n", selection(*tests))
		return exitFail
	}

	st := newStream(stdout, runs, total)
	if total > 0 {
		st.header()
	}
	for _, pr := range runs {
		all = append(all, r.runProvider(ctx, pr, st)...)
	}
	failed := false
	for _, res := range all {
		failed = failed || res.Result == "fail"
	}
	fmt.Fprintln(stdout)
	printTable(stdout, all, *verbose)
	code := exitOK
	if failed {
		code = exitFail
	}
	if *out != "" {
		if err := writeJSON(*out, all); err != nil {
			fmt.Fprintln(stderr, "fabtests:", err)
			code = exitFail
		}
	}
	if *junit != "" {
		if err := writeJUnit(*junit, runs, all); err != nil {
			fmt.Fprintln(stderr, "fabtests:", err)
			code = exitFail
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "fabtests: interrupted")
		code = exitFail
	}
	return code
}

// selection returns " -t list" for messages, or "".
func selection(tests string) string {
	if tests == "" {
		return ""
	}
	return " -t " + tests
}

// providers returns the providers to run: those named, each of which must
// have a conformance test, or all that have one.
func providers(root, list string) ([]string, error) {
	files, _ := filepath.Glob(filepath.Join(root, "providers", "*", "conformance_test.go"))
	var have []string
	for _, f := range files {
		have = append(have, filepath.Base(filepath.Dir(f)))
	}
	sort.Strings(have)
	if len(have) == 0 {
		return nil, usagef("no providers/*/conformance_test.go under %s (run from the module root, or give -C)", root)
	}
	if list == "" {
		return have, nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			continue
		case slices.Contains(out, p):
			continue
		case slices.Contains(have, p):
			out = append(out, p)
		case isDir(filepath.Join(root, "providers", p)):
			return nil, usagef("provider %q has no conformance test (no providers/%s/conformance_test.go; have %s)",
				p, p, strings.Join(have, ", "))
		default:
			return nil, usagef("unknown provider %q (have %s)", p, strings.Join(have, ", "))
		}
	}
	if len(out) == 0 {
		return nil, usagef("-p %q names no provider", list)
	}
	return out, nil
}

func isDir(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}

// checkGroups checks that every entry of -t is one of the suite's groups,
// a prefix of some (unit, rma), or a path below one (unit/eq/peek).
func checkGroups(list string, groups []string) error {
	for _, g := range strings.Split(list, ",") {
		g = strings.Trim(strings.TrimSpace(g), "/")
		if g == "" {
			continue
		}
		known := slices.ContainsFunc(groups, func(name string) bool {
			return g == name || strings.HasPrefix(name, g+"/") || strings.HasPrefix(g, name+"/")
		})
		if !known {
			return usagef("unknown group %q in -t (groups: %s)", g, strings.Join(groups, ", "))
		}
	}
	return nil
}

// runPattern turns -t into a go test -run pattern below TestConformance.
func runPattern(list string) (string, error) {
	if list == "" {
		return "^TestConformance", nil
	}
	var levels [][]string
	depth := 0
	for _, g := range strings.Split(list, ",") {
		g = strings.Trim(strings.TrimSpace(g), "/")
		if g == "" {
			continue
		}
		parts := strings.Split(g, "/")
		if depth != 0 && len(parts) != depth {
			return "", usagef("mix of groups and subgroups in -t %q: give one level at a time", list)
		}
		depth = len(parts)
		for i, part := range parts {
			for len(levels) <= i {
				levels = append(levels, nil)
			}
			if !slices.Contains(levels[i], part) {
				levels[i] = append(levels[i], part)
			}
		}
	}
	pat := "^TestConformance"
	for _, parts := range levels {
		quoted := make([]string, len(parts))
		for i, p := range parts {
			quoted[i] = regexp.QuoteMeta(p)
		}
		pat += "/^(" + strings.Join(quoted, "|") + ")$"
	}
	return pat, nil
}

// writeJSON writes the results to name as a JSON array.
func writeJSON(name string, rs []result) error {
	if rs == nil {
		rs = []result{}
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}
