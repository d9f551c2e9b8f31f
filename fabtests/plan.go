package fabtests

import (
	"os"
	"testing"
)

// PlanEnv names the environment variable that makes Run list the suite's
// tests instead of running them: with it set to any non-empty value, Run
// runs each selected group as a subtest and each of the group's tests as
// an empty subtest that passes at once, without calling the provider,
// starting peer processes or checking for leaks. A runner reads the plan
// from `go test -json` (the leaves of the subtest tree, with the same
// -run pattern as the real run) to know how many tests a run has before
// it starts; cmd/fabtests does. Libfabric's runfabtests.sh has no such
// listing; this is gofabric's own, one level below `go test -list`,
// which names only top-level tests. Tests that a test runs as its own
// subtests ("1proc" and "2proc", sizes) are not listed: the plan's unit
// is the test as Config.Exclude names it ("unit/eq/peek").
const PlanEnv = "GOFABRIC_FABTESTS_PLAN"

// planning reports whether Run lists the tests rather than running them
// (PlanEnv set, and not in a peer process).
func (s *suite) planning() bool {
	return s.peerTest == "" && os.Getenv(PlanEnv) != ""
}

// plan is Run under PlanEnv: the selected groups as subtests, in which
// run creates each test as an empty subtest.
func (s *suite) plan(t *testing.T) {
	for _, g := range groups {
		if s.selected(g.name) {
			t.Run(g.name, func(t *testing.T) { g.run(t, s) })
		}
	}
}
