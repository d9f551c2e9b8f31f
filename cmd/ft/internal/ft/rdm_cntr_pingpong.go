package ft

import "github.com/gofabric/gofabric/fi"

// rdm_cntr_pingpong (benchmarks/rdm_cntr_pingpong.c): rdm_pingpong with
// completion counters instead of completion queues (the CQs are still
// opened, bound with FI_SELECTIVE_COMPLETION, and only drive progress),
// waiting with fi_cntr_wait unless -c spin. As in C, a failing finalize
// does not fail the run.
func init() {
	register(&program{
		name:      "rdm_cntr_pingpong",
		desc:      "Ping-pong latency of messages between RDM endpoints, completions counted.",
		optstring: "h" + optsCS + optsInfo + optsBenchmark,
		usage:     benchmarkUsage(nil),
		init: func(s *Session) {
			s.opts.Flags = OptRxCntr | OptTxCntr
			s.opts.CompMethod = CompSRead
		},
		setup: func(s *Session) error {
			s.benchmarkHints(fi.EPTypeRDM)
			s.hints.Caps = fi.CapMsg
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
