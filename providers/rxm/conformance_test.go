//go:build linux

package rxm_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformanceRDM runs fabtests' groups of FI_EP_RDM endpoints over
// tcp;ofi_gorxm: messages of every size (eager and rendezvous), tagged
// messages, RMA, closing, concurrency, bad input, the ways an
// application waits, a killed peer, connection bursts, and fabnet's
// blocking calls with a context (the FI_EP_RDM half of context).
func TestConformanceRDM(t *testing.T) {
	fabtests.Run(t, fabtests.Config{Provider: testName, Groups: []string{"rdm", "tagged", "rma/rdm", "atomic", "multi-recv", "close", "unit/waitfd", "wait",
		"close-while-waiting", "concurrency", "badinput", "peer-killed", "wait-sizes", "burst", "context"}})
}
