package fabtests_test

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
)

// TestFake runs the suite's groups on the in-package fake provider, which
// is made only of the framework's shared pieces.
func TestFake(t *testing.T) {
	fabtests.Run(t, fabtests.Config{Provider: fakeName})
}
