//go:build linux

package rxm_test

import (
	"testing"

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
	fabtests.Run(t, fabtests.Config{Provider: testName, Groups: []string{"rdm", "tagged", "rma/rdm", "close", "peer-killed"}})
}
