package shm_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformance runs the conformance suite's unit, rdm, tagged and rma
// groups on the provider, in one process and across two.
func TestConformance(t *testing.T) {
	fabtests.Run(t, fabtests.Config{Provider: "shm", Groups: []string{"unit", "rdm", "tagged", "rma"}})
}
