package fabtests_test

// This file shows how a provider written outside this repository runs the
// conformance suite from its own go test. In the provider's module:
//
//	package myprov_test
//
//	import (
//		"testing"
//
//		"github.com/gofabric/gofabric/fabtests"
//		_ "example.com/myprov" // registers "myprov" with fi.Register
//	)
//
//	func TestConformance(t *testing.T) {
//		fabtests.Run(t, fabtests.Config{Provider: "myprov"})
//	}
//
// The test below is that pattern, run on this package's fake provider, with
// the two knobs a provider uses most: Groups to run a subset, and Exclude to
// skip a test with a reason, like libfabric's per-provider exclude files.

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

func TestOutOfTreeProvider(t *testing.T) {
	fabtests.Run(t, fabtests.Config{
		Provider: fakeName,
		Groups:   []string{"unit/eq", "unit/cntr"},
		Exclude:  map[string]string{"unit/eq/peek": "example: a provider without FI_PEEK"},
	})
}
