// Package docrefs holds the repository-wide test of documentation
// references: what the code and the package documentation cite must ship
// with the module. A user of the module has the repository and nothing
// beside it, so
//
//   - no Go file outside scripts/ and .ci/ names the development directory
//     kept beside the repository, or the documents in it (only .ci/run and
//     scripts/ may, and they hand its tools to the tests through
//     FABTESTS_BIN and VERBS_VM);
//   - every docs/*.md page a Go file, a docs page or the README cites
//     exists, and so does every section cited with it ("docs/wire-tcp.md,
//     §2.3"): a numbered heading of that page;
//   - a bare section number ("§2.4") in a Go file refers to the one docs
//     page the file cites, or else the one its package cites, and must be a
//     heading there; in a docs page it refers to the page itself;
//   - the README lists every docs page.
//
// Docs pages keep their section numbers stable for that reason: add
// sections at the end of a level instead of renumbering.
package docrefs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// outside are the names of what lies beside the repository and not in it:
// the directory (written in pieces so that this file does not name it) and
// the documents it holds.
var outside = []string{
	".." + "/shared",
	"shared" + "/specs", "shared" + "/design", "shared" + "/tools",
	"shared" + "/prototypes", "shared" + "/seeds", "shared" + "/hooks",
	"wire-tcp-1.17" + ".md", "ARCHITECTURE" + ".md", "STYLE-ANCHORS" + ".md",
	"KIT-AND-API-ANCHORS" + ".md", "perf-anchors" + ".md",
}

// exempt are the top directories allowed to name what lies outside, and
// this package, whose tests spell out what the rules catch.
var exempt = []string{"scripts", ".ci", "internal/docrefs"}

var (
	citeRe = regexp.MustCompile(`docs/[A-Za-z0-9_.\-/]+\.md`)
	sectRe = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
)

// file is one scanned text file.
type file struct {
	path string
	text string
}

// problems checks the repository in fsys (its root is the module's) and
// returns what breaks the rules, one line each, sorted.
func problems(fsys fs.FS) ([]string, error) {
	var goFiles []file
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(exempt, p)) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		goFiles = append(goFiles, file{p, string(b)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	pages, err := fs.Glob(fsys, "docs/*.md")
	if err != nil {
		return nil, err
	}

	var out []string
	report := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	headings := map[string]map[string]bool{} // page -> its section numbers, nil when it does not exist
	sections := func(page string) map[string]bool {
		if s, ok := headings[page]; ok {
			return s
		}
		b, err := fs.ReadFile(fsys, page)
		if err != nil {
			headings[page] = nil
			return nil
		}
		headings[page] = numberedHeadings(string(b))
		return headings[page]
	}
	// checkCites checks the explicit citations of f and returns the pages
	// it cites and the byte offsets of the section numbers that belong to
	// a citation.
	checkCites := func(f file) (cited []string, used map[int]bool) {
		used = map[int]bool{}
		for _, m := range citeRe.FindAllStringIndex(f.text, -1) {
			page := f.text[m[0]:m[1]]
			secs := sections(page)
			if secs == nil {
				report("%s: cites %s, which is not in the repository", f.path, page)
				continue
			}
			if !slices.Contains(cited, page) {
				cited = append(cited, page)
			}
			for _, s := range citedSections(f.text, m[1]) {
				used[s.off] = true
				if !secs[s.num] {
					report("%s: cites %s, §%s, which has no such numbered heading", f.path, page, s.num)
				}
			}
		}
		return cited, used
	}
	checkBare := func(f file, used map[int]bool, page, why string) {
		for _, m := range sectRe.FindAllStringSubmatchIndex(f.text, -1) {
			if used[m[0]] {
				continue
			}
			num := f.text[m[2]:m[3]]
			switch {
			case page == "":
				report("%s: §%s names no document: cite the docs page (\"docs/<page>.md, §%s\")%s", f.path, num, num, why)
			case !sections(page)[num]:
				report("%s: §%s refers to %s%s, which has no such numbered heading", f.path, num, page, why)
			}
		}
	}

	// Go files: nothing from outside; citations that resolve.
	type goResult struct {
		f     file
		cited []string
		used  map[int]bool
	}
	var results []goResult
	pkgCites := map[string][]string{} // directory -> pages its files cite
	for _, f := range goFiles {
		for _, o := range outside {
			if strings.Contains(f.text, o) {
				report("%s: names %q, which is not in the repository (only scripts/ and .ci/ may)", f.path, o)
			}
		}
		cited, used := checkCites(f)
		results = append(results, goResult{f, cited, used})
		dir := path.Dir(f.path)
		for _, c := range cited {
			if !slices.Contains(pkgCites[dir], c) {
				pkgCites[dir] = append(pkgCites[dir], c)
			}
		}
	}
	for _, r := range results {
		page, why := "", ""
		switch {
		case len(r.cited) == 1:
			page = r.cited[0]
		case len(r.cited) > 1:
			why = fmt.Sprintf(" (the file cites %s: say which)", strings.Join(r.cited, " and "))
		case len(pkgCites[path.Dir(r.f.path)]) == 1:
			page = pkgCites[path.Dir(r.f.path)][0]
			why = " (the page its package cites)"
		}
		checkBare(r.f, r.used, page, why)
	}

	// Docs pages: nothing from outside; citations of other pages resolve,
	// bare sections are the page's own.
	for _, p := range pages {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		f := file{p, string(b)}
		for _, o := range outside {
			if strings.Contains(f.text, o) {
				report("%s: names %q, which is not in the repository", f.path, o)
			}
		}
		_, used := checkCites(f)
		checkBare(f, used, p, "")
	}

	// The README: its citations resolve, and it lists every page.
	if b, err := fs.ReadFile(fsys, "README.md"); err == nil {
		f := file{"README.md", string(b)}
		checkCites(f)
		for _, p := range pages {
			if !strings.Contains(f.text, p) {
				report("README.md: does not list %s (section Documents)", p)
			}
		}
	} else {
		report("README.md: %v", err)
	}
	sort.Strings(out)
	return out, nil
}

// section is a section number cited after a page, at byte offset off of
// its "§".
type section struct {
	num string
	off int
}

// citedSections returns the section numbers that follow a citation ending
// at offset i of text: "docs/x.md, §2.3", "§2.3-§2.6 and §5", "§2.5, §2.8,"
// continued on the next comment line.
func citedSections(text string, i int) []section {
	var out []section
	for {
		j := i
		for j < len(text) && strings.ContainsRune(" \t\r\n,-/", rune(text[j])) {
			j++
		}
		if strings.HasPrefix(text[j:], "and ") {
			i = j + len("and ")
			continue
		}
		m := sectRe.FindStringSubmatchIndex(text[j:])
		if m == nil || m[0] != 0 {
			return out
		}
		out = append(out, section{text[j+m[2] : j+m[3]], j})
		i = j + m[1]
	}
}

// numberedHeadings returns the section numbers of the markdown headings of
// text ("## 2. The tcp provider" is 2, "### 2.3 CM messages" is 2.3),
// outside fenced code blocks.
func numberedHeadings(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	numRe := regexp.MustCompile(`^\d+(?:\.\d+)*$`)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(strings.TrimLeft(line, "#"))
		if len(fields) == 0 {
			continue
		}
		if n := strings.TrimSuffix(fields[0], "."); numRe.MatchString(n) {
			out[n] = true
		}
	}
	return out
}

// moduleRoot returns the directory of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the working directory")
		dir = parent
	}
}

// TestRepository applies the rules to the module.
func TestRepository(t *testing.T) {
	root := moduleRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages, "docs/*.md: the documents the code cites")
	got, err := problems(os.DirFS(root))
	require.NoError(t, err)
	require.Empty(t, got, "documentation references that a user of the module cannot follow")
}

// TestRules shows that each rule catches what it is for, on a small
// repository in memory, so that TestRepository cannot pass vacuously.
func TestRules(t *testing.T) {
	up, specs := outside[0], outside[1] // the directory beside the repository, and its specs
	page := "# A page\n\n## 1. One\n\n### 1.2 One two\n\n```\n# 9. not a heading\n```\n\nSee §1.2 and docs/b.md, §3.\n"
	good := fstest.MapFS{
		"go.mod":        {Data: []byte("module x\n")},
		"README.md":     {Data: []byte("## Documents\n\n- docs/a.md\n- docs/b.md, §3\n")},
		"docs/a.md":     {Data: []byte(page)},
		"docs/b.md":     {Data: []byte("## 3. Three\n\nAs §3 says.\n")},
		"p/a.go":        {Data: []byte("package p\n\n// Codec (docs/a.md, §1.2-§1 and\n// §1.2). Also §1.\nfunc A() {}\n")},
		"p/b.go":        {Data: []byte("package p\n\n// Bare numbers use the package's page: §1.2.\nfunc B() {}\n")},
		"scripts/x.go":  {Data: []byte("package x\n\n// " + up + "/tools/fabtests is allowed here.\n")},
		".ci/y.go":      {Data: []byte("package y\n\n// " + up + "/specs too.\n")},
		"q/testdata.go": {Data: []byte("package q\n\n// No sections, no citations.\n")},
	}
	got, err := problems(good)
	require.NoError(t, err)
	require.Empty(t, got)

	for _, c := range []struct {
		name, file, text, want string
	}{
		{"shared directory", "p/c.go", "package p\n\n// See " + up + "/tools/verbs-vm.\n", `p/c.go: names "` + up + `"`},
		{"shared document", "p/c.go", "package p\n\n// See " + specs + "/wire-tcp-1.17.md, §2.\n", `p/c.go: names "` + specs + `"`},
		{"shared document by name", "p/c.go", "package p\n\n// The rule of ARCHITECTURE.md §4.\n", `p/c.go: names "ARCHITECTURE.md"`},
		{"missing page", "p/c.go", "package p\n\n// See docs/nope.md.\n", "p/c.go: cites docs/nope.md, which is not in the repository"},
		{"missing section", "p/c.go", "package p\n\n// See docs/a.md, §1.3.\n", "p/c.go: cites docs/a.md, §1.3, which has no such numbered heading"},
		{"missing section in a range", "p/c.go", "package p\n\n// See docs/a.md, §1-§2.\n", "p/c.go: cites docs/a.md, §2, which has no such numbered heading"},
		{"missing section on the next line", "p/c.go", "package p\n\n// See docs/a.md, §1,\n// §7.\n", "p/c.go: cites docs/a.md, §7, which has no such numbered heading"},
		{"heading inside a code block", "p/c.go", "package p\n\n// See docs/a.md, §9.\n", "p/c.go: cites docs/a.md, §9, which has no such numbered heading"},
		{"bare section of the file's page", "p/c.go", "package p\n\n// docs/b.md, §3; then §4.\n", "p/c.go: §4 refers to docs/b.md, which has no such numbered heading"},
		{"bare section of the package's page", "p/c.go", "package p\n\n// As §8 says.\n", "p/c.go: §8 refers to docs/a.md (the page its package cites), which has no such numbered heading"},
		{"bare section, no page", "r/c.go", "package r\n\n// As §2.3 says.\n", "r/c.go: §2.3 names no document"},
		{"bare section, two pages", "r/c.go", "package r\n\n// docs/a.md, §1 and docs/b.md, §3; §1.\n", "r/c.go: §1 names no document: cite the docs page (\"docs/<page>.md, §1\") (the file cites docs/a.md and docs/b.md: say which)"},
		{"page names shared", "docs/c.md", "# C\n\nRun " + up + "/tools/x.\n", `docs/c.md: names "` + up + `"`},
		{"page's own section", "docs/b.md", "## 3. Three\n\nAs §5 says.\n", "docs/b.md: §5 refers to docs/b.md, which has no such numbered heading"},
		{"page cites another's section", "docs/b.md", "## 3. Three\n\nSee docs/a.md, §2.\n", "docs/b.md: cites docs/a.md, §2, which has no such numbered heading"},
		{"page not in the README", "docs/c.md", "# C\n", "README.md: does not list docs/c.md"},
		{"README cites a missing page", "README.md", "- docs/a.md\n- docs/b.md\n- docs/gone.md\n", "README.md: cites docs/gone.md, which is not in the repository"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := fstest.MapFS{}
			for k, v := range good {
				bad[k] = v
			}
			bad[c.file] = &fstest.MapFile{Data: []byte(c.text)}
			got, err := problems(bad)
			require.NoError(t, err)
			require.NotEmpty(t, got, "the rule must catch it")
			require.True(t, slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, c.want) }),
				"want a problem starting with %q, got %q", c.want, got)
		})
	}
}
