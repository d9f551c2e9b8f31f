package tcp_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformance runs the conformance suite's unit groups on the
// provider. The AV groups skip (FI_EP_MSG domains have no address
// vectors), as do the tests that need endpoints until they exist.
func TestConformance(t *testing.T) {
	cleanEnv(t)
	fabtests.Run(t, fabtests.Config{Provider: "tcp", Groups: []string{"unit", "cm", "msg"}})
}
