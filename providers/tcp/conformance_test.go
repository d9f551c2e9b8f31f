//go:build linux

package tcp_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformance runs the conformance suite's groups on the provider,
// the ways an application waits (close-while-waiting, wait-sizes,
// peer-killed), connection bursts and fabnet's context-taking calls
// (context) included; what the provider lacks (FI_EP_DGRAM endpoints)
// skips.
func TestConformance(t *testing.T) {
	cleanEnv(t)
	fabtests.Run(t, fabtests.Config{Provider: "tcp", Groups: []string{"unit", "cm", "msg", "rdm", "tagged", "multi-recv", "rma", "atomic", "close", "concurrency", "badinput", "faults",
		"wait", "close-while-waiting", "wait-sizes", "peer-killed", "burst", "context"}})
}
