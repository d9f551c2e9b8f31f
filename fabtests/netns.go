package fabtests

import (
	"testing"

	"github.com/gofabric/gofabric/internal/reftest"
)

// The multicast group runs inside a network namespace of its own, so that
// what it sends touches no real network: netns_linux.go makes one with
// ip-netns(8). Other systems have no network namespaces, and there the
// group is skipped (netns_other.go), or fails under GOFABRIC_STRICT.

// netnsEnv is set, to the namespace's name, in the process that runs a
// group inside its namespace.
const netnsEnv = "GOFABRIC_FABTESTS_NETNS"

// netnsMissing skips t because no namespace can be made, or fails it
// under GOFABRIC_STRICT (see Config.Strict): a strict run has root and ip(8).
func netnsMissing(t testing.TB, format string, args ...any) {
	t.Helper()
	reftest.Missing(t, "network namespace unavailable: "+format, args...)
}
