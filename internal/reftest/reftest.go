// Package reftest is the tests' access to the C libfabric reference tools
// (fi_strerror, fi_info, fi_pingpong from libfabric-bin; gcc with
// libfabric-dev). A missing reference skips the test with the reason, except
// when the CI environment variable is set: CI installs the references, so
// there a missing one fails the test rather than hiding a gap.
package reftest

import (
	"os"
	"os/exec"
	"testing"
)

// Missing skips tb with the reason, or fails it under CI.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("reference missing under CI: "+format, args...)
	}
	tb.Skipf(format, args...)
}

// Tool returns the path of the reference program name (from Debian package
// pkg), or calls Missing.
func Tool(tb testing.TB, name, pkg string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, "%s (package %s) not installed: %v", name, pkg, err)
	}
	return path
}
