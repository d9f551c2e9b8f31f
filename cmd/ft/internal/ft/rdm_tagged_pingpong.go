package ft

import "github.com/gofabric/gofabric/fi"

// rdm_tagged_pingpong (benchmarks/rdm_tagged_pingpong.c): rdm_pingpong
// with tagged messages; every message's tag is its sequence number, which
// the receiver checks. As in C, a failing finalize does not fail the run.
func init() {
	register(&program{
		name:      "rdm_tagged_pingpong",
		desc:      "Ping-pong latency of tagged messages between RDM endpoints.",
		optstring: "Uh" + optsCS + optsInfo + optsBenchmark,
		usage:     benchmarkUsage(usageDeliveryComplete),
		parse:     parseDeliveryComplete,
		setup: func(s *Session) error {
			s.benchmarkHints(fi.EPTypeRDM)
			s.hints.Caps = fi.CapTagged
			s.hints.Mode |= fi.ModeContext
			return nil
		},
		run: func(s *Session) error {
			if err := s.initFabric(); err != nil {
				return err
			}
			if err := s.eachSize(s.pingpong); err != nil {
				return err
			}
			s.ignoredFinalize(s.finalize())
			return nil
		},
	})
}
