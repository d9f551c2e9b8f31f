// Package portability holds the repository-wide tests that the module
// builds for systems other than Linux: the transports need Linux, but the
// API (fi, eq, ep), the conformance suite (fabtests), the provider
// registry (providers/all, whose Linux-only providers register stand-ins
// that decline with the reason) and the tools must compile everywhere, so
// that code written against them builds on a developer's Mac or Windows
// machine. It also runs providers/all's tests on js/wasm under Node.js,
// the one system other than Linux this host can execute, where the
// stand-ins must decline by name.
package portability

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/internal/reftest"
)

// targets are the systems the module must build for besides Linux.
var targets = []struct{ goos, goarch string }{
	{"darwin", "arm64"},
	{"darwin", "amd64"},
	{"windows", "amd64"},
	{"freebsd", "amd64"},
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err, "go env GOMOD")
	gomod := strings.TrimSpace(string(out))
	require.NotEmpty(t, gomod, "not inside a module")
	require.NotEqual(t, os.DevNull, gomod, "not inside a module")
	return filepath.Dir(gomod)
}

func TestBuildsElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the module for 4 other systems (about a minute the first time, for their standard libraries)")
	}
	root := moduleRoot(t)
	for _, tg := range targets {
		t.Run(tg.goos+"/"+tg.goarch, func(t *testing.T) {
			cmd := exec.Command("go", "build", "./...")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS="+tg.goos, "GOARCH="+tg.goarch, "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "GOOS=%s GOARCH=%s CGO_ENABLED=0 go build ./... (Linux-only files need //go:build linux and a fallback):\n%s",
				tg.goos, tg.goarch, out)
		})
	}
}

func TestStandInsDecline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs providers/all's tests for js/wasm")
	}
	reftest.Tool(t, "node", "nodejs")
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err, "go env GOROOT")
	wasmExec := filepath.Join(strings.TrimSpace(string(out)), "lib", "wasm", "go_js_wasm_exec")

	cmd := exec.Command("go", "test", "-count=1", "-v", "-exec="+wasmExec, "./providers/all/")
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "GOOS=js GOARCH=wasm go test -exec=%s ./providers/all/:\n%s", wasmExec, out)
	require.Contains(t, string(out), "--- PASS: TestGetInfoNamesLinuxOnlyProviders", "the off-Linux test ran:\n%s", out)
}
