package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunPattern(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		match    []string
		miss     []string
	}{
		{in: "", want: "^TestConformance", match: []string{"TestConformance"}},
		{in: "unit,cm", want: "^TestConformance/^(unit|cm)$",
			match: []string{"TestConformance/unit", "TestConformance/cm"}, miss: []string{"TestConformance/cmx"}},
		{in: "unit/eq,unit/cq", want: "^TestConformance/^(unit)$/^(eq|cq)$"},
	} {
		got, err := runPattern(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got)
		_, err = regexp.Compile(got)
		require.NoError(t, err)
	}
	_, err := runPattern("unit,unit/eq")
	require.Error(t, err)
	got, err := runPattern("a(b")
	require.NoError(t, err)
	require.Equal(t, `^TestConformance/^(a\(b)$`, got, "group names are literal")
}

func TestCheckGroups(t *testing.T) {
	groups := fabtests.Groups()
	for _, ok := range []string{"", "unit", "unit/eq", "rma", "rma/msg", "cm,msg", "unit/eq/peek", "rdm/send-recv/2proc", " msg , cm "} {
		require.NoError(t, checkGroups(ok, groups), ok)
	}
	for _, bad := range []string{"nosuchgroup", "uni", "unit/e", "unit/nosuch", "msg,nosuch", "cmx/reject"} {
		err := checkGroups(bad, groups)
		require.ErrorContains(t, err, "unknown group", bad)
	}
}

func TestProviders(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"tcp", "shm"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "providers", p), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "providers", p, "conformance_test.go"), nil, 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "providers", "hook"), 0o755))
	got, err := providers(root, "")
	require.NoError(t, err)
	require.Equal(t, []string{"shm", "tcp"}, got)
	got, err = providers(root, "tcp, shm,tcp")
	require.NoError(t, err)
	require.Equal(t, []string{"tcp", "shm"}, got)
	_, err = providers(root, "verbs")
	require.ErrorContains(t, err, `unknown provider "verbs"`)
	_, err = providers(root, "hook")
	require.ErrorContains(t, err, `provider "hook" has no conformance test`)
	_, err = providers(root, ",")
	require.Error(t, err)
	_, err = providers(t.TempDir(), "")
	require.Error(t, err)
}

func TestReason(t *testing.T) {
	out := "=== RUN   TestConformance/unit/av/x\n    av.go:39: provider does not offer address vectors\n--- SKIP: TestConformance/unit/av/x (0.00s)\n"
	require.Equal(t, "av.go:39: provider does not offer address vectors", reason(out))
	long := strings.Repeat("é", 400)
	require.Equal(t, maxReason, len([]rune(short(long))), "shortened by characters, not bytes")
	require.True(t, strings.HasSuffix(short(long), "..."))
}

// A bad command line is found before anything is built: exit status 2,
// a message that says what is wrong, and no result.
func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-C", t.TempDir()}, "no providers/*/conformance_test.go"},
		{[]string{"-C", "../..", "-t", "nosuchgroup"}, `unknown group "nosuchgroup"`},
		{[]string{"-C", "../..", "-p", "nosuchprov"}, `unknown provider "nosuchprov"`},
		{[]string{"-C", "../..", "-p", "hook"}, `provider "hook" has no conformance test`},
		{[]string{"-C", "../..", "-t", "unit,unit/eq"}, "mix of groups and subgroups"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, exitUsage, run(tt.args, &out, &errb), "%v", tt.args)
		require.Contains(t, errb.String(), tt.want, "%v", tt.args)
		require.Empty(t, out.String(), "%v", tt.args)
	}
}

// streamLine is a line the runner prints as a test ends.
var streamLine = regexp.MustCompile(`^\[ *(\d+)/(\d+)\] (pass|fail|skip) +(\S+) +(\S+) +\d+\.\d\ds(?:  (.*))?$`)

// streamed is one streamed line, parsed.
type streamed struct {
	done, total            int
	result, provider, test string
	reason                 string
}

// parseRun splits a run's stdout into its header's count, the streamed
// lines of tests, the streamed lines of failures outside tests (without
// a count of their own) and the rest (the table), and checks that the
// test lines count from 1 to the total the header announced, each test
// once.
func parseRun(t *testing.T, stdout string) (int, []streamed, []streamed, string) {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	m := regexp.MustCompile(`^fabtests: (\d+) tests \(`).FindStringSubmatch(lines[0])
	require.NotNil(t, m, "header line: %q", lines[0])
	total, _ := strconv.Atoi(m[1])
	var tests, extra []streamed
	seen := map[string]bool{}
	i := 1
	for ; i < len(lines) && lines[i] != ""; i++ {
		m := streamLine.FindStringSubmatch(lines[i])
		require.NotNil(t, m, "streamed line %q", lines[i])
		s := streamed{result: m[3], provider: m[4], test: m[5], reason: m[6]}
		s.done, _ = strconv.Atoi(m[1])
		s.total, _ = strconv.Atoi(m[2])
		require.Equal(t, total, s.total, "total of %q", lines[i])
		if s.done == len(tests) && !seen[s.provider+" "+s.test] {
			extra = append(extra, s)
			continue
		}
		require.Equal(t, len(tests)+1, s.done, "count of %q", lines[i])
		require.False(t, seen[s.provider+" "+s.test], "%s reported twice", s.test)
		seen[s.provider+" "+s.test] = true
		tests = append(tests, s)
	}
	require.Len(t, tests, total, "one line per test announced")
	return total, tests, extra, strings.Join(lines[i:], "\n")
}

// readJUnit parses a JUnit file with encoding/xml (strict, as it is by
// default: a forbidden character or a bad escape is an error).
func readJUnit(t *testing.T, name string) junitSuites {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)))
	var doc junitSuites
	require.NoError(t, xml.Unmarshal(b, &doc), "%s", b)
	return doc
}

func readJSON(t *testing.T, name string) []result {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	var rs []result
	require.NoError(t, json.Unmarshal(b, &rs))
	return rs
}

// The runner runs a provider's conformance test for real: it announces
// the number of tests, streams each one's result with the count, and
// reports every test in the table, the JSON file and the JUnit file.
func TestRunsAProvider(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	js, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	code := run([]string{"-C", "../..", "-p", "udp", "-t", "unit/eq", "-o", js, "-junit", ju, "-v"}, &out, &errb)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out.String(), errb.String())

	total, lines, extra, table := parseRun(t, out.String())
	require.Empty(t, extra)
	require.Greater(t, total, 5, "unit/eq has more tests than that")
	for _, l := range lines {
		require.Equal(t, "udp", l.provider)
		require.Equal(t, "pass", l.result, l.reason)
		require.Regexp(t, `^unit/eq/[a-z-]+$`, l.test)
	}
	require.Contains(t, table, "provider  pass  fail  skip\nudp       "+strconv.Itoa(total)+"    0     0\n")

	rs := readJSON(t, js)
	require.Len(t, rs, total, "unit/eq's tests have no subtests: a row each")
	for i, r := range rs {
		require.Equal(t, "udp", r.Provider)
		require.Equal(t, lines[i].test, r.Test)
		require.Equal(t, "pass", r.Result, r.Reason)
	}

	doc := readJUnit(t, ju)
	require.Equal(t, total, doc.Tests)
	require.Zero(t, doc.Failures)
	require.Zero(t, doc.Skipped)
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	require.Equal(t, "udp", s.Name)
	require.Equal(t, total, s.Tests)
	require.Len(t, s.Cases, total)
	require.NotEmpty(t, s.Timestamp)
	for i, c := range s.Cases {
		require.Equal(t, "fabtests.udp", c.Classname)
		require.Equal(t, rs[i].Test, c.Name)
		require.Nil(t, c.Failure)
		require.Nil(t, c.Skipped)
		_, err := strconv.ParseFloat(c.Time, 64)
		require.NoError(t, err)
	}
}

// lineWatch is the runner's stdout in TestStreamsAsTestsEnd: it keeps
// what is written and creates the file create when a line containing
// match is complete.
type lineWatch struct {
	bytes.Buffer
	match, create string
	seen          bool
	err           error
}

func (w *lineWatch) Write(p []byte) (int, error) {
	n, _ := w.Buffer.Write(p)
	if !w.seen {
		for _, l := range strings.SplitAfter(w.String(), "\n") {
			if strings.HasSuffix(l, "\n") && strings.Contains(l, w.match) {
				w.seen = true
				w.err = os.WriteFile(w.create, nil, 0o644)
			}
		}
	}
	return n, nil
}

// Each test's line is printed when the test ends, not when the run does:
// the fixture's TestConformanceStreamed, which runs after
// TestConformance, passes only once the line of TestConformance's
// unit/eq/open-close has reached the runner's stdout.
func TestStreamsAsTestsEnd(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "streamed")
	t.Setenv("GOFABRIC_FIXTURE_STREAMED", flag)
	out := &lineWatch{match: "unit/eq/open-close", create: flag}
	var errb bytes.Buffer
	code := run([]string{"-C", "testdata/broken", "-t", "unit/eq/open-close,unit/eq/streamed"}, out, &errb)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.NoError(t, out.err)
	total, lines, extra, _ := parseRun(t, out.String())
	require.Equal(t, 2, total)
	require.Empty(t, extra)
	require.Equal(t, "unit/eq/open-close", lines[0].test)
	require.Equal(t, "TestConformanceStreamed/unit/eq/streamed", lines[1].test)
	require.Equal(t, "pass", lines[1].result)
}

// Against a provider with a real bug (testdata/broken: udp behind a hook
// whose event queue loses writes) the run fails with status 1, streams
// the failure with its reason, and the JUnit file has the failure with
// the test's output and the skip with its reason, control characters
// and markup included, in a document that parses.
func TestReportsAFailure(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	js, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	code := run([]string{"-C", "testdata/broken", "-t", "unit/eq/open-close,unit/eq/write-read,unit/eq/peek",
		"-o", js, "-junit", ju}, &out, &errb)
	require.Equal(t, exitFail, code, "stdout: %s\nstderr: %s", out.String(), errb.String())

	total, lines, extra, table := parseRun(t, out.String())
	require.Empty(t, extra)
	require.Equal(t, 3, total)
	results := map[string]streamed{}
	for _, l := range lines {
		require.Equal(t, "eqbug", l.provider)
		results[l.test] = l
	}
	require.Equal(t, "pass", results["unit/eq/open-close"].result)
	require.Equal(t, "fail", results["unit/eq/write-read"].result)
	require.Contains(t, results["unit/eq/write-read"].reason, "eq.go:")
	require.Equal(t, "skip", results["unit/eq/peek"].result)
	require.Contains(t, results["unit/eq/peek"].reason, "excluded by the provider's configuration: fixture:")
	require.Contains(t, table, "eqbug     1     1     1")

	rs := readJSON(t, js)
	require.Len(t, rs, 3)
	doc := readJUnit(t, ju)
	require.Equal(t, 3, doc.Tests)
	require.Equal(t, 1, doc.Failures)
	require.Equal(t, 1, doc.Skipped)
	require.Len(t, doc.Suites, 1)
	cases := map[string]junitCase{}
	for i, c := range doc.Suites[0].Cases {
		require.Equal(t, rs[i].Test, c.Name)
		cases[c.Name] = c
	}
	fail := cases["unit/eq/write-read"]
	require.NotNil(t, fail.Failure)
	require.Contains(t, fail.Failure.Message, "eq.go:")
	require.NotNil(t, fail.SystemOut)
	require.Contains(t, fail.SystemOut.Text, "--- FAIL: TestConformance/unit/eq/write-read")
	skip := cases["unit/eq/peek"]
	require.NotNil(t, skip.Skipped)
	require.Nil(t, skip.Failure)
	// The fixture's reason (eqbug.Excluded), with what XML 1.0 forbids
	// written out.
	require.Contains(t, skip.Skipped.Message,
		`fixture: \x1b[31mred\x1b[0m, a NUL \x00, a form feed \x0c, U+FFFE \ufffe, <markup> & "quotes"`)
	require.Nil(t, cases["unit/eq/open-close"].Failure)
	require.Nil(t, cases["unit/eq/open-close"].Skipped)
}

// A run that does not finish (here the test binary's -test.timeout ends
// it during unit/eq/sread-wakes, which waits the fixture's 2 s for an
// event the broken queue lost) still accounts for every test: the ones
// that never ran are streamed as failures, the run itself is a failure
// row in the table and the JUnit file, and the status is 1.
func TestRunThatDoesNotFinish(t *testing.T) {
	var out, errb bytes.Buffer
	ju := filepath.Join(t.TempDir(), "r.xml")
	code := run([]string{"-C", "testdata/broken", "-timeout", "1s", "-t", "unit/eq/sread-wakes,unit/eq/read-allocs",
		"-junit", ju}, &out, &errb)
	require.Equal(t, exitFail, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	total, lines, extra, table := parseRun(t, out.String())
	require.Equal(t, 2, total)
	require.Equal(t, "unit/eq/sread-wakes", lines[0].test)
	require.Equal(t, "fail", lines[0].result)
	require.Contains(t, lines[0].reason, "panic: test timed out after 1s")
	require.Equal(t, "unit/eq/read-allocs", lines[1].test)
	require.Equal(t, "fail", lines[1].result)
	require.Equal(t, "not run: the test process ended first", lines[1].reason)
	require.Len(t, extra, 1)
	require.Equal(t, "(run)", extra[0].test)
	require.Equal(t, "fail", extra[0].result)
	require.Equal(t, "1 of 2 tests did not run", extra[0].reason)
	require.Regexp(t, `(?m)^eqbug +\(run\) +fail +1 of 2 tests did not run$`, table)

	doc := readJUnit(t, ju)
	require.Len(t, doc.Suites, 1)
	cases := map[string]junitCase{}
	for _, c := range doc.Suites[0].Cases {
		cases[c.Name] = c
	}
	require.Len(t, cases, 2, "the test that was cut short and the run")
	require.Equal(t, 2, doc.Failures)
	require.Contains(t, cases["unit/eq/sread-wakes"].SystemOut.Text, "panic: test timed out after 1s")
	require.Equal(t, "1 of 2 tests did not run", cases["(run)"].Failure.Message)
}

// A selection that holds no test runs nothing and exits with status 1:
// for a provider named with -p, and when no provider has a test in it.
func TestNothingRan(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-C", "testdata/broken", "-p", "eqbug", "-t", "unit/eq/nosuchtest"}, &out, &errb)
	require.Equal(t, exitFail, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, errb.String(), "eqbug: nothing to run: its TestConformance runs no test matching -t unit/eq/nosuchtest")
	require.Empty(t, out.String())

	out.Reset()
	errb.Reset()
	code = run([]string{"-C", "testdata/broken", "-t", "cm"}, &out, &errb)
	require.Equal(t, exitFail, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, errb.String(), "note: eqbug left out: its TestConformance runs no test matching -t cm")
	require.Contains(t, errb.String(), "nothing to run: no provider has a test in the selection -t cm")
	require.Empty(t, out.String())
}

// Text that XML 1.0 forbids or discourages becomes visible escapes; the
// rest, markup included, goes through the encoder and parses back as it
// was.
func TestJUnitXMLText(t *testing.T) {
	for in, want := range map[string]string{
		"plain <a> & \"b\"\ttab\nline": "plain <a> & \"b\"\ttab\nline",
		"\x1b[1mbold\x1b[0m":           `\x1b[1mbold\x1b[0m`,
		"nul \x00 bell \a del \x7f":    `nul \x00 bell \x07 del \x7f`,
		"c1 \u0085 ok \u00e9 \u2028":   "c1 \\x85 ok \u00e9 \u2028",
		"nonchars \ufffe \uffff":       `nonchars \ufffe \uffff`,
		"bad utf-8 \xff\xfe ok":        `bad utf-8 \xff\xfe ok`,
		"replacement \ufffd astral 𝄞":  "replacement \ufffd astral 𝄞",
	} {
		require.Equal(t, want, xmlText(in), "%q", in)
	}
	rs := []result{
		{Provider: "p", Test: "a/\x01b", Result: "fail", Reason: "r", details: "why \x1b[31m]]> <x>", output: "out \x00 ]]> end"},
		{Provider: "p", Test: "c", Result: "skip", Reason: "r", details: "skip \x02"},
		{Provider: "q", Test: "d", Result: "pass"},
	}
	b, err := junitXML(nil, rs)
	require.NoError(t, err)
	var doc junitSuites
	require.NoError(t, xml.Unmarshal(b, &doc), "%s", b)
	require.Equal(t, 3, doc.Tests)
	require.Equal(t, 1, doc.Failures)
	require.Equal(t, 1, doc.Skipped)
	require.Len(t, doc.Suites, 2)
	c := doc.Suites[0].Cases[0]
	require.Equal(t, `a/\x01b`, c.Name)
	require.Equal(t, `why \x1b[31m]]> <x>`, c.Failure.Message)
	require.Equal(t, `why \x1b[31m]]> <x>`, c.Failure.Text)
	require.Equal(t, `out \x00 ]]> end`, c.SystemOut.Text)
	require.Equal(t, `skip \x02`, doc.Suites[0].Cases[1].Skipped.Message)
}
