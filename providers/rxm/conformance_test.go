//go:build linux

package rxm_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// rendezvous is the reason of the exclusions below: messages above the
// eager limit (16384 bytes) need rendezvous, which step 3 of the
// layering adds; until then such a send returns fi.EMSGSIZE.
const rendezvous = "rendezvous: step 3"

// TestConformanceRDM runs fabtests' groups of FI_EP_RDM endpoints over
// tcp;ofi_gorxm, but for the tests that send more than 16384 bytes.
func TestConformanceRDM(t *testing.T) {
	fabtests.Run(t, fabtests.Config{Provider: testName, Groups: []string{"rdm", "tagged", "close", "unit/waitfd", "close-while-waiting", "concurrency", "burst"},
		Exclude: map[string]string{
			"rdm/send-recv/2proc": rendezvous, // sizes up to 1 MiB
			"rdm/sizes":           rendezvous, // 64 KiB and 1 MiB
			"rdm/peer-gone":       rendezvous, // 1 MiB sends
			"tagged/unexpected":   rendezvous, // a 70000-byte message
		}})
}
