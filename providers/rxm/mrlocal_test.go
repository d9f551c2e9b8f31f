//go:build linux

package rxm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/providers/rxm"
)

// TestRDMMRLocal runs the data tests and fabtests' RDM groups with rxm
// treating tcp as a core that needs registered buffers (FI_MR_LOCAL, as
// verbs): bounce receives and sends from registered slabs, eager
// messages copied, the rendezvous and RMA registering per operation,
// read-done injected. It is verbs' path, checked on any host; the
// Soft-RoCE VM runs the real one (verbs_test.go).
func TestRDMMRLocal(t *testing.T) {
	defer rxm.SetForceMRLocal(true)()
	t.Run("sizes", TestRDMSizes)
	t.Run("truncation", TestRDMTruncation)
	t.Run("eager-allocs", TestRDMEagerAllocs)
	t.Run("sar-allocs", TestRDMSARAllocs)
	t.Run("peer-gone", TestRDMPeerGoneAndBack)
	t.Run("deferred", TestRDMDeferredReads)
	t.Run("atomics", TestRDMAtomics)
	t.Run("atomic-refused", TestRDMAtomicRefused)
	t.Run("multi-recv-sizes", TestRDMMultiRecv)
	fabtests.Run(t, fabtests.Config{Provider: testName, Groups: []string{"rdm", "tagged", "rma/rdm", "atomic", "multi-recv", "close", "peer-killed"}})
}

// TestRDMBounce runs the data tests and fabtests' RDM groups with rxm
// using posted bounce receives over tcp instead of its dynamic receive
// mode: the path of any core without kit.DynRecv that sends from
// unregistered memory (eager payloads sent from the caller's buffers,
// SAR from 16385 to 131072 bytes).
func TestRDMBounce(t *testing.T) {
	defer rxm.SetForceBounce(true)()
	t.Run("sizes", TestRDMSizes)
	t.Run("truncation", TestRDMTruncation)
	t.Run("eager-allocs", TestRDMEagerAllocs)
	t.Run("deferred", TestRDMDeferredReads)
	t.Run("atomics", TestRDMAtomics)
	t.Run("atomic-refused", TestRDMAtomicRefused)
	t.Run("multi-recv-sizes", TestRDMMultiRecv)
	fabtests.Run(t, fabtests.Config{Provider: testName, Groups: []string{"rdm", "tagged", "rma/rdm", "atomic", "multi-recv"}})
}

// TestRDMReceiveModes: over tcp, whose endpoints implement kit.DynRecv,
// rxm takes messages in dynamic receive mode (no bounce receives, no SAR,
// as C's rxm over tcp); with bounce receives forced, or a core that needs
// registered buffers, it posts bounce receives.
func TestRDMReceiveModes(t *testing.T) {
	require.True(t, rxm.UsesDynRecv(openSide(t).e), "over tcp: dynamic receive mode")
	require.False(t, rxm.SARActive())
	func() {
		defer rxm.SetForceBounce(true)()
		require.False(t, rxm.UsesDynRecv(openSide(t).e), "bounce receives forced")
	}()
	defer rxm.SetForceMRLocal(true)()
	require.False(t, rxm.UsesDynRecv(openSide(t).e), "FI_MR_LOCAL core: registered bounce receives")
}
