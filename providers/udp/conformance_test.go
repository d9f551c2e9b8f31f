//go:build linux

package udp_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestConformance runs the conformance suite's unit, dgram and multicast
// groups on the provider (multicast in a network namespace the suite
// creates), and the FI_EP_DGRAM halves of close-while-waiting,
// wait-sizes and context (fabnet's blocking calls); the counter and MR groups and the counter wait style skip
// (the domain has neither, as in C).
func TestConformance(t *testing.T) {
	cleanEnv(t)
	fabtests.Run(t, fabtests.Config{Provider: "udp", Groups: []string{"unit", "wait", "dgram", "multicast", "close-while-waiting", "wait-sizes", "context"}})
}
