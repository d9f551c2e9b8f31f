package shm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/stretchr/testify/require"
)

// TestConformance runs the conformance suite's unit (AV included), rdm,
// tagged and rma groups on the provider, in one process and across two,
// and checks that this process left no region file in /dev/shm (the
// suite checks goroutines and descriptors itself).
func TestConformance(t *testing.T) {
	fabtests.Run(t, fabtests.Config{Provider: "shm", Groups: []string{"unit", "rdm", "tagged", "rma", "close", "concurrency", "badinput", "faults"}})
	left, _ := filepath.Glob(filepath.Join("/dev/shm", "gofabric-shm."+itoa(os.Getuid())+"."+itoa(os.Getpid())+"*"))
	require.Empty(t, left, "region files left behind")
}

// TestConformanceNoCMA runs the same groups with cross-memory attach
// disabled, as where the kernel refuses it: large messages go through
// the bounce chunks and RMA in inline pieces.
func TestConformanceNoCMA(t *testing.T) {
	t.Setenv("FI_SHM_DISABLE_CMA", "1")
	fabtests.Run(t, fabtests.Config{Provider: "shm", Groups: []string{"rdm", "tagged", "rma/rdm"}})
}
