package gofabric_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/internal/exampletest"
	"github.com/stretchr/testify/require"
)

// The quickstart is example_test.go, a whole-file example that go test
// runs and checks against its Output. README.md and the package doc
// (doc.go) show it word for word; these tests keep the three equal, so
// that what a newcomer copies is what the tests ran.

const quickstartFile = "example_test.go"

// readQuickstart returns example_test.go.
func readQuickstart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(quickstartFile)
	require.NoError(t, err)
	return string(b)
}

// requireSameText fails with the first line where got differs from want.
func requireSameText(t *testing.T, want, got, where string) {
	t.Helper()
	if want == got {
		return
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if i >= len(w) || i >= len(g) || wl != gl {
			t.Fatalf("%s differs from %s at line %d:\n%s: %q\n%s: %q\n(%s has %d lines, %s %d)",
				where, quickstartFile, i+1, quickstartFile, wl, where, gl, quickstartFile, len(w), where, len(g))
		}
	}
}

// readmeQuickstart returns the Go code block of README.md that follows
// its "go get github.com/gofabric/gofabric" line, with a newline after
// each line.
func readmeQuickstart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if l == "go get github.com/gofabric/gofabric" {
			start = i
			break
		}
	}
	require.GreaterOrEqual(t, start, 0, "README.md has no line \"go get github.com/gofabric/gofabric\"")
	for i := start + 1; i < len(lines); i++ {
		if lines[i] != "```go" {
			continue
		}
		var code strings.Builder
		for _, l := range lines[i+1:] {
			if l == "```" {
				return code.String()
			}
			code.WriteString(l + "\n")
		}
		t.Fatalf("README.md: the ```go block at line %d is not closed", i+1)
	}
	t.Fatal("README.md has no ```go block after its go get line")
	return ""
}

func TestQuickstartInREADME(t *testing.T) {
	requireSameText(t, readQuickstart(t), readmeQuickstart(t), "README.md's quickstart")
}

func TestQuickstartInPackageDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	require.NotNil(t, f.Doc, "doc.go has no package comment")
	var p comment.Parser
	for _, b := range p.Parse(f.Doc.Text()).Content {
		if c, ok := b.(*comment.Code); ok && strings.HasPrefix(c.Text, "package gofabric_test\n") {
			requireSameText(t, readQuickstart(t), c.Text, "doc.go's quickstart")
			return
		}
	}
	t.Fatal("doc.go's package comment has no code block that starts with \"package gofabric_test\"")
}

// TestQuickstartIsWholeFileExample checks that go/doc takes
// example_test.go as a whole-file example (one Example function, other
// top-level declarations, no tests), which is how pkg.go.dev and go doc
// -http show it, and that it checks its output.
func TestQuickstartIsWholeFileExample(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), quickstartFile, nil, parser.ParseComments)
	require.NoError(t, err)
	exs := doc.Examples(f)
	require.Len(t, exs, 1, "example_test.go must hold exactly one Example function")
	require.Empty(t, exs[0].Name, "the quickstart is the package's Example")
	require.IsType(t, &ast.File{}, exs[0].Code, "go/doc does not take example_test.go as a whole-file example")
	require.NotEmpty(t, exs[0].Output, "the quickstart must check its output (// Output:)")
}

func TestQuickstartLeaksNothing(t *testing.T) {
	exampletest.NoLeaks(t, Example)
}
