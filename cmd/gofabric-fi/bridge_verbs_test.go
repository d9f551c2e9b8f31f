//go:build cgo && linux && verbs

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gofabric/gofabric/internal/reftest"
)

// verbsLibEnv names the directory of the library built with -tags verbs
// (install.sh DIR -tags verbs): the test runs in the Soft-RoCE VM, which
// has no Go toolchain to build it, so scripts/test.sh builds it on the
// host and shares the directory.
const verbsLibEnv = "GOFABRIC_FI_VERBS_DIR"

// TestVerbsFromC runs C's fi_pingpong, two processes, over goverbs from
// C: FI_EP_MSG on goverbs, FI_EP_RDM on gofabric's rxm offered as the
// utility provider ofi_gorxm (goverbs;ofi_gorxm), and on C's own ofi_rxm
// layered over goverbs (goverbs;ofi_rxm: C asks the core for its fabric
// with hints of a fabric_attr alone, and registers memory with its
// internal OFI_MR_NOCACHE flag), with -c: each side checks the
// payloads. The C processes run with FI_UNIVERSE_SIZE=127, which C's
// rxm needs on rxe (its one verbs CQ is sized by it).
func TestVerbsFromC(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband"); err != nil {
		t.Skip("this host has no RDMA device (no /sys/class/infiniband); run the verbs tests in the Soft-RoCE VM (README)")
	}
	dir := os.Getenv(verbsLibEnv)
	if dir == "" {
		reftest.Missing(t, "%s is not set: it names the directory of the library built with install.sh DIR -tags verbs (scripts/test.sh builds it)", verbsLibEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "libgoverbs-fi.so")); err != nil {
		reftest.Missing(t, "%s=%s holds no library built with -tags verbs: %v", verbsLibEnv, dir, err)
	}
	pp := reftest.Tool(t, "fi_pingpong", "libfabric-bin")
	for _, c := range []struct{ prov, ep string }{
		{"goverbs", "msg"},
		{"goverbs;ofi_gorxm", "rdm"},
		{"goverbs;ofi_rxm", "rdm"},
	} {
		t.Run(c.prov+"/"+c.ep, func(t *testing.T) {
			port := freePort(t)
			e := env(dir, "FI_UNIVERSE_SIZE=127")
			args := []string{"-p", c.prov, "-e", c.ep, "-I", "20", "-c"}
			pair(t, port,
				command(e, pp, append(args, "-B", port)...),
				command(e, pp, append(args, "-P", port, "127.0.0.1")...))
		})
	}
}
