package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The JUnit XML schema as Jenkins, GitLab, GitHub's test reporters and
// Ant's junitreport read it.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Errors    int         `xml:"errors,attr"`
		Skipped   int         `xml:"skipped,attr"`
		Time      string      `xml:"time,attr"`
		Timestamp string      `xml:"timestamp,attr,omitempty"`
		Hostname  string      `xml:"hostname,attr,omitempty"`
		Cases     []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Classname string        `xml:"classname,attr"`
		Name      string        `xml:"name,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitMessage `xml:"failure"`
		Skipped   *junitMessage `xml:"skipped"`
		SystemOut *junitText    `xml:"system-out"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",cdata"`
	}
	// junitText is an element's text, as CDATA (readable in the file).
	junitText struct {
		Text string `xml:",cdata"`
	}
)

// Limits of what a test case carries: its message, and its failure's
// text and output (the end of the output is kept, where a failure's
// cause is).
const (
	maxMessage = 1000
	maxText    = 64 << 10
)

// writeJUnit writes the results as JUnit XML to name: a testsuite per
// provider, in the order they ran, a testcase per row.
func writeJUnit(name string, runs []*provRun, rs []result) error {
	b, err := junitXML(runs, rs)
	if err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// junitXML returns the results as a JUnit XML document.
func junitXML(runs []*provRun, rs []result) ([]byte, error) {
	host, _ := os.Hostname()
	doc := junitSuites{Name: "fabtests"}
	index := map[string]int{}
	suite := func(p string) *junitSuite {
		i, ok := index[p]
		if !ok {
			i = len(doc.Suites)
			index[p] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: p, Hostname: xmlText(host)})
		}
		return &doc.Suites[i]
	}
	var total time.Duration
	for _, pr := range runs {
		s := suite(pr.name)
		s.Timestamp = pr.start.UTC().Format("2006-01-02T15:04:05")
		s.Time = seconds(pr.dur.Seconds())
		total += pr.dur
	}
	for _, r := range rs {
		s := suite(r.Provider)
		c := junitCase{Classname: xmlText("fabtests." + r.Provider), Name: xmlText(r.Test), Time: seconds(r.Seconds)}
		s.Tests++
		switch r.Result {
		case "fail":
			s.Failures++
			c.Failure = &junitMessage{Message: xmlText(cut(r.details, maxMessage, false)), Type: "fail",
				Text: xmlText(cut(r.details, maxText, true))}
			if r.output != "" {
				c.SystemOut = &junitText{xmlText(cut(r.output, maxText, true))}
			}
		case "skip":
			s.Skipped++
			c.Skipped = &junitMessage{Message: xmlText(cut(r.details, maxMessage, false))}
		}
		s.Cases = append(s.Cases, c)
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		if s.Time == "" {
			s.Time = seconds(0)
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
	}
	doc.Time = seconds(total.Seconds())
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("JUnit XML: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// seconds formats a duration in seconds as JUnit's time attribute.
func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

// cut shortens s to at most n bytes on a character boundary, keeping its
// end when tail is set, and says how much it left out.
func cut(s string, n int, tail bool) string {
	if len(s) <= n {
		return s
	}
	if tail {
		i := len(s) - n
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		return fmt.Sprintf("[%d bytes cut]\n", i) + s[i:]
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf(" [%d bytes cut]", len(s)-i)
}

// xmlText makes s fit for an XML 1.0 document: characters that XML 1.0
// does not allow (control characters other than tab, newline and carriage
// return; U+FFFE, U+FFFF; bytes that are not UTF-8) and the C1 controls
// and DEL it discourages become the text \xNN or \uNNNN, so that test
// output with terminal escapes survives as something readable. The
// encoder escapes the markup characters.
func xmlText(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) || r == utf8.RuneError {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case xmlChar(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += w
	}
	return b.String()
}

// xmlChar says whether r may appear as it is in an XML 1.0 document: the
// Char production, without the discouraged DEL and C1 controls.
func xmlChar(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20:
		return false
	case r >= 0x7f && r <= 0x9f:
		return false
	case r <= 0xd7ff:
		return true
	case r >= 0xe000 && r <= 0xfffd:
		return true
	case r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}
