//go:build linux

package tcp_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformance runs the conformance suite's unit, cm and msg groups on
// the provider; only the AV group skips (FI_EP_MSG domains have no address
// vectors).
func TestConformance(t *testing.T) {
	cleanEnv(t)
	fabtests.Run(t, fabtests.Config{Provider: "tcp", Groups: []string{"unit", "cm", "msg", "rdm", "tagged", "rma", "close", "concurrency", "badinput", "faults"}})
}
