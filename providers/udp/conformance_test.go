package udp_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformance runs the conformance suite's unit groups on the
// provider; the counter and MR groups skip (the domain has neither, as in
// C).
func TestConformance(t *testing.T) {
	cleanEnv(t)
	fabtests.Run(t, fabtests.Config{Provider: "udp", Groups: []string{"unit"}})
}
