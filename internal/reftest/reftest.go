// Package reftest is the tests' access to what lies outside the module:
// the C libfabric reference tools (fi_strerror, fi_info, fi_pingpong from
// libfabric-bin; gcc with libfabric-dev), root, network namespaces, the
// C fabtests and the Soft-RoCE VM.
//
// One switch decides what a missing piece does. By default a test that
// needs something the host lacks skips with the reason, so that the
// tests pass on any machine with Go. With GOFABRIC_STRICT=1 (set by
// .ci/run, which installs and provides everything) a missing piece fails
// the test instead, so that a gap cannot hide behind a skip. Nothing
// keys on the CI variable: hosted CI systems set it on machines that
// have none of these pieces.
//
// Where the pieces are is passed in the environment: FABTESTS_BIN names
// the directory of libfabric's C fabtests programs, VERBS_VM the script
// that runs a test binary inside the Soft-RoCE guest.
package reftest

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// StrictEnv is the environment variable that makes a missing external
// piece fail a test instead of skipping it.
const StrictEnv = "GOFABRIC_STRICT"

// HugePagesEnv goes into the environment of the C fabtests programs the
// tests start: glibc's malloc then asks for transparent huge pages
// (madvise MADV_HUGEPAGE) for its large blocks. A fabtests program run
// without -S allocates and writes a window of 64 buffers of 8 MiB each
// way, 1 GiB, which in 4 KiB pages costs about 0.9 s of CPU in page
// faults on these hosts (0.16 s in huge pages), and the interop suites
// start hundreds of them. It changes how the memory is backed, not what
// the program does; a kernel whose transparent huge pages are off
// ignores it.
const HugePagesEnv = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

// Strict reports whether GOFABRIC_STRICT is set to a true value (1, t,
// true, as strconv.ParseBool reads them).
func Strict() bool {
	v, err := strconv.ParseBool(os.Getenv(StrictEnv))
	return err == nil && v
}

// Missing skips tb with the reason, or fails it under GOFABRIC_STRICT.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if Strict() {
		tb.Fatalf(StrictEnv+" is set and a needed piece is missing: "+format, args...)
	}
	tb.Skipf(format, args...)
}

// Tool returns the path of the reference program name (from Debian package
// pkg), or calls Missing.
func Tool(tb testing.TB, name, pkg string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, "%s (Debian package %s) not installed: %v", name, pkg, err)
	}
	return path
}

// Root calls Missing unless the test runs as root (user switching,
// network namespaces, nftables).
func Root(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Missing(tb, "needs root to %s", why)
	}
}
