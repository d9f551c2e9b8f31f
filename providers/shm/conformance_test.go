//go:build linux

package shm_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/stretchr/testify/require"
)

// TestConformance runs the conformance suite's unit (AV included), rdm,
// tagged, multi-recv, rma, close, concurrency, badinput and faults groups, and the
// waiting groups (close-while-waiting, wait-sizes, peer-killed), burst and
// context (fabnet's blocking calls on FI_EP_RDM; the FI_EP_MSG part skips), on the
// provider, in one process and across two, and checks that this process
// left no inbox or doorbell behind (the suite checks goroutines and
// descriptors itself).
func TestConformance(t *testing.T) {
	// Burst is the inbox's 32 entries: a 33rd sender waits (fi.EAGAIN)
	// until one is free, a documented limit of the provider.
	fabtests.Run(t, fabtests.Config{Provider: "shm", Groups: []string{"unit", "rdm", "tagged", "multi-recv", "rma", "atomic", "close", "concurrency", "badinput", "faults",
		"wait", "close-while-waiting", "wait-sizes", "peer-killed", "burst", "context"}, Burst: 32})
	require.Empty(t, leftovers(), "region files left behind")
}

// TestConformanceNoCMA runs the data groups with cross-memory attach
// disabled, as where the kernel refuses it: large messages go through
// the bounce chunks and RMA in inline pieces.
func TestConformanceNoCMA(t *testing.T) {
	t.Setenv("FI_SHM_DISABLE_CMA", "1")
	fabtests.Run(t, fabtests.Config{Provider: "shm", Groups: []string{"rdm", "tagged", "rma/rdm", "wait-sizes", "peer-killed"}})
}
