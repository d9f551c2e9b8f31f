// Package hygiene holds the repository-wide test that keeps built things
// out of git: the module is what every `go get` downloads, so a tracked
// binary or a large file costs every user. It needs a git checkout and
// skips in a module downloaded without one.
package hygiene

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxSize is the largest file allowed outside testdata/.
const maxSize = 1 << 20

// trackedFiles returns the repository's top directory and its tracked
// files, or skips t when this is not a git checkout.
func trackedFiles(t *testing.T) (string, []string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("git not installed: %v", err)
	}
	top, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout (a downloaded module): %v", err)
	}
	root := strings.TrimSpace(string(top))
	out, err := exec.Command(git, "-C", root, "ls-files", "-z").Output()
	require.NoError(t, err, "git ls-files")
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	require.NotEmpty(t, files, "git ls-files listed nothing")
	return root, files
}

// inTestdata reports whether path lies under a testdata directory.
func inTestdata(path string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "testdata")
}

// TestNoBinariesTracked fails when git tracks an executable or object file
// (ELF, Mach-O, PE) anywhere, or a file over 1 MiB outside testdata/.
func TestNoBinariesTracked(t *testing.T) {
	root, files := trackedFiles(t)
	magics := map[string][]byte{
		"ELF":     {0x7f, 'E', 'L', 'F'},
		"Mach-O":  {0xcf, 0xfa, 0xed, 0xfe},
		"PE (MZ)": {'M', 'Z'},
	}
	var bad []string
	for _, f := range files {
		path := filepath.Join(root, f)
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		if st.Size() > maxSize && !inTestdata(f) {
			bad = append(bad, fmt.Sprintf("%s: %.1f MiB (over 1 MiB outside testdata/)", f, float64(st.Size())/(1<<20)))
			continue
		}
		head := make([]byte, 4)
		fd, err := os.Open(path)
		require.NoError(t, err)
		n, _ := fd.Read(head)
		fd.Close()
		for kind, magic := range magics {
			if bytes.HasPrefix(head[:n], magic) {
				bad = append(bad, f+": a tracked "+kind+" binary")
			}
		}
	}
	require.Empty(t, bad, "built files are tracked in git (git rm --cached them and extend .gitignore)")
}

// TestGitignoreCoversBuilds fails when the outputs of the usual build
// commands would not be ignored: test binaries and the commands built at
// the top of the repository.
func TestGitignoreCoversBuilds(t *testing.T) {
	root, _ := trackedFiles(t)
	for _, p := range []string{"providers/tcp/tcp.test", "fi.test", "fi_pingpong", "fi_info", "cmd/fi_pingpong/fi_pingpong"} {
		err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", p).Run()
		require.NoError(t, err, "%s is not covered by .gitignore", p)
	}
}

// TestLicense fails without the LICENSE file the README names.
func TestLicense(t *testing.T) {
	root, files := trackedFiles(t)
	require.Contains(t, files, "LICENSE")
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	require.NoError(t, err)
	require.Contains(t, string(b), "BSD 2-Clause License")
}
