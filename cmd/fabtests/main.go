// Command fabtests runs gofabric's provider conformance suite (package
// fabtests) over chosen providers and groups and prints a table of pass,
// fail and skip per provider and test, with the reason of every skip and
// failure: the Go form of libfabric's runfabtests.sh.
//
//	fabtests [-p tcp,shm] [-t unit,cm,msg] [-timeout 5m] [-o results.json] [-v]
//
// Each provider of this module runs the suite from its own test,
// providers/<name>'s TestConformance; the runner runs that test with
// `go test -json` (so it needs the Go toolchain, as `go run` does), one
// process per provider, bounded by -timeout, and reads the events. The
// exit status is 0 when nothing failed, 1 when a test failed or a run did
// not finish, 2 for a bad command line.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one test's outcome.
type result struct {
	Provider string  `json:"provider"`
	Test     string  `json:"test"`
	Result   string  `json:"result"` // pass, fail or skip
	Seconds  float64 `json:"seconds"`
	Reason   string  `json:"reason,omitempty"`
}

// event is a go test -json (test2json) event.
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fabtests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	provs := fs.String("p", "", "providers to test, comma-separated (default: every provider with a conformance test)")
	tests := fs.String("t", "", "groups to run, comma-separated, e.g. unit,cm,msg or unit/eq (default: all)")
	timeout := fs.Duration("timeout", 10*time.Minute, "time limit for each provider's run")
	out := fs.String("o", "", "also write the results as JSON to this file")
	verbose := fs.Bool("v", false, "list passing tests too, not only failures and skips")
	root := fs.String("C", ".", "the gofabric module's directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "fabtests: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	names, err := providers(*root, *provs)
	if err != nil {
		fmt.Fprintln(stderr, "fabtests:", err)
		return 2
	}
	pattern, err := runPattern(*tests)
	if err != nil {
		fmt.Fprintln(stderr, "fabtests:", err)
		return 2
	}
	var all []result
	failed := false
	for _, p := range names {
		rs, err := runProvider(*root, p, pattern, *timeout, stderr)
		all = append(all, rs...)
		if err != nil {
			failed = true
			all = append(all, result{Provider: p, Test: "(run)", Result: "fail", Reason: err.Error()})
		}
	}
	for _, r := range all {
		failed = failed || r.Result == "fail"
	}
	printTable(stdout, all, *verbose)
	if *out != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "fabtests:", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
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
		return nil, fmt.Errorf("no providers/*/conformance_test.go under %s (run from the module root, or give -C)", root)
	}
	if list == "" {
		return have, nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(have, p) {
			return nil, fmt.Errorf("provider %q has no conformance test (have %s)", p, strings.Join(have, ", "))
		}
		out = append(out, p)
	}
	return out, nil
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
			return "", fmt.Errorf("mix of groups and subgroups in -t %q: give one level at a time", list)
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

// runProvider runs providers/<p>'s conformance test and collects the
// leaf tests' results.
func runProvider(root, p, pattern string, timeout time.Duration, stderr io.Writer) ([]result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-run", pattern,
		"-timeout", timeout.String(), "./providers/"+p+"/")
	cmd.Dir = root
	var errb bytes.Buffer
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var (
		results []result
		output  = map[string]*strings.Builder{}
		parents = map[string]bool{}
	)
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		if i := strings.LastIndex(ev.Test, "/"); i > 0 {
			parents[ev.Test[:i]] = true
		}
		switch ev.Action {
		case "output":
			b := output[ev.Test]
			if b == nil {
				b = &strings.Builder{}
				output[ev.Test] = b
			}
			b.WriteString(ev.Output)
		case "pass", "fail", "skip":
			r := result{Provider: p, Test: strings.TrimPrefix(ev.Test, "TestConformance/"), Result: ev.Action, Seconds: ev.Elapsed}
			if ev.Action != "pass" && output[ev.Test] != nil {
				r.Reason = reason(output[ev.Test].String())
			}
			results = append(results, r)
		}
	}
	werr := cmd.Wait()
	// Keep the leaves (and a group whose children never ran).
	leaves := results[:0]
	for _, r := range results {
		if !parents["TestConformance/"+r.Test] && r.Test != "TestConformance" {
			leaves = append(leaves, r)
		}
	}
	if ctx.Err() != nil {
		return leaves, fmt.Errorf("did not finish within %v", timeout)
	}
	if werr != nil && len(leaves) == 0 {
		return nil, fmt.Errorf("go test: %v: %s", werr, strings.TrimSpace(errb.String()))
	}
	return leaves, nil
}

// reason extracts a skip or failure's message from the test's output:
// the log lines, without the === and --- markers.
func reason(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "===") || strings.HasPrefix(t, "---") {
			continue
		}
		lines = append(lines, t)
	}
	s := strings.Join(lines, " | ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// printTable prints the results: a summary line per provider, then the
// failures and skips (every test with -v).
func printTable(w io.Writer, rs []result, verbose bool) {
	type count struct{ pass, fail, skip int }
	counts := map[string]*count{}
	var order []string
	for _, r := range rs {
		c := counts[r.Provider]
		if c == nil {
			c = &count{}
			counts[r.Provider] = c
			order = append(order, r.Provider)
		}
		switch r.Result {
		case "pass":
			c.pass++
		case "fail":
			c.fail++
		case "skip":
			c.skip++
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "provider\tpass\tfail\tskip")
	for _, p := range order {
		c := counts[p]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", p, c.pass, c.fail, c.skip)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "provider\ttest\tresult\treason")
	for _, r := range rs {
		if r.Result == "pass" && !verbose {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Provider, r.Test, r.Result, r.Reason)
	}
	tw.Flush()
}
