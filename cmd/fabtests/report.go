package main

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// stream prints a line per test as it ends, with the count of tests done.
type stream struct {
	w           io.Writer
	runs        []*provRun
	done, total int
	// Column widths: the count's digits, the longest provider and test
	// name of the plan.
	digits, provWidth, nameWidth int
}

func newStream(w io.Writer, runs []*provRun, total int) *stream {
	s := &stream{w: w, runs: runs, total: total, digits: len(strconv.Itoa(total))}
	for _, pr := range runs {
		s.provWidth = max(s.provWidth, len(pr.name))
		for _, name := range pr.plan {
			s.nameWidth = max(s.nameWidth, utf8.RuneCountInString(rel(name)))
		}
	}
	return s
}

// header prints the number of tests, in all and per provider.
func (s *stream) header() {
	var per []string
	for _, pr := range s.runs {
		per = append(per, fmt.Sprintf("%s %d", pr.name, len(pr.plan)))
	}
	fmt.Fprintf(s.w, "fabtests: %d tests (%s)\n", s.total, strings.Join(per, ", "))
}

// test prints the line of a test of the plan that ended and counts it.
func (s *stream) test(prov, name, res string, secs float64, why string) {
	s.done++
	s.line(prov, name, res, secs, why)
}

// extra prints the line of a failure outside the plan's tests, without
// counting it.
func (s *stream) extra(prov, name, res string, secs float64, why string) {
	s.line(prov, name, res, secs, why)
}

func (s *stream) line(prov, name, res string, secs float64, why string) {
	l := fmt.Sprintf("[%*d/%d] %-4s  %-*s  %-*s  %6.2fs", s.digits, s.done, s.total, res,
		s.provWidth, prov, s.nameWidth, name, secs)
	if why != "" {
		l += "  " + why
	}
	fmt.Fprintln(s.w, l)
}

// reason extracts a skip's or failure's message from a test's output: the
// log lines, without the ===, --- and test summary lines, joined by " | ".
// Of a testify failure it keeps the Error and Messages, not the Error
// Trace and Test lines (the output has them).
func reason(out string) string {
	var lines []string
	drop := false // in a testify field that is left out
	for _, l := range strings.Split(out, "\n") {
		if m := testifyField.FindStringSubmatch(l); m != nil {
			drop = m[1] == "Error Trace" || m[1] == "Test"
			l = m[2]
		} else if testifyMore.MatchString(l) {
			if drop {
				continue
			}
		} else {
			drop = false
		}
		t := strings.TrimSpace(l)
		if drop || t == "" || strings.HasPrefix(t, "===") || strings.HasPrefix(t, "---") {
			continue
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, " | ")
}

// A testify failure's fields ("\tError:      \tvalue") and their further
// lines ("\t            \tvalue"), as t.Log indents them.
var (
	testifyField = regexp.MustCompile(`^ *\t([A-Z][a-z]+(?: [A-Z][a-z]+)?):\s*\t(.*)$`)
	testifyMore  = regexp.MustCompile(`^ *\t +\t`)
)

// maxReason is the length of a reason in the table and the stream.
const maxReason = 300

// short makes s one line of at most maxReason characters, with control
// characters written as \xNN (test output can hold terminal escapes).
func short(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
	s = xmlText(strings.ReplaceAll(strings.ReplaceAll(s, "\t", " "), "\r", ""))
	if utf8.RuneCountInString(s) <= maxReason {
		return s
	}
	r := []rune(s)
	return string(r[:maxReason-3]) + "..."
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
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	rows := 0
	for _, r := range rs {
		if r.Result == "pass" && !verbose {
			continue
		}
		if rows == 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "provider\ttest\tresult\treason")
		}
		rows++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Provider, r.Test, r.Result, r.Reason)
	}
	tw.Flush()
}
