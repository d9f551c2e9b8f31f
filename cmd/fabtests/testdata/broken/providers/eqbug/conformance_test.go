// Package eqbug_test is a fixture of cmd/fabtests' tests (run with
// -C testdata/broken): the conformance suite over the udp provider
// wrapped in providers/hook with the fault EQLosesWrites, so that
// unit/eq/write-read fails for real, and unit/eq/peek excluded with a
// reason full of characters that XML 1.0 forbids; and a test that waits
// for the runner to have streamed a line.
package eqbug_test

import (
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/providers/hook"
	_ "github.com/gofabric/gofabric/providers/udp"
	"github.com/stretchr/testify/require"
)

// Excluded is unit/eq/peek's exclusion reason.
const Excluded = "fixture: \x1b[31mred\x1b[0m, a NUL \x00, a form feed \f, U+FFFE \ufffe, <markup> & \"quotes\""

func TestConformance(t *testing.T) {
	require.NoError(t, hook.Register("hook_eqbug", "udp", hook.Faults{EQLosesWrites: true}))
	fabtests.Run(t, fabtests.Config{
		Provider: "udp;hook_eqbug",
		Groups:   []string{"unit/eq"},
		Exclude:  map[string]string{"unit/eq/peek": Excluded},
		// The lost event is waited for this long.
		Timeout: 2 * time.Second,
	})
}

// streamedEnv names the file that TestConformanceStreamed waits for.
const streamedEnv = "GOFABRIC_FIXTURE_STREAMED"

// TestConformanceStreamed is the fixture of the runner's streaming test:
// its one test, unit/eq/streamed, passes once the file that streamedEnv
// names exists, which the runner's test creates when the runner printed
// the line of TestConformance's unit/eq/open-close: that is, while this
// process still runs. It gives up after a minute. Under
// fabtests.PlanEnv, or without streamedEnv, it passes at once.
func TestConformanceStreamed(t *testing.T) {
	t.Run("unit/eq", func(t *testing.T) {
		t.Run("streamed", func(t *testing.T) {
			name := os.Getenv(streamedEnv)
			if os.Getenv(fabtests.PlanEnv) != "" || name == "" {
				return
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(name); err == nil {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("the runner printed no line for unit/eq/open-close while this test ran")
				}
			}
		})
	})
}
