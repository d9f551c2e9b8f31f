package ft

import "github.com/gofabric/gofabric/fi"

// rdm_tagged_bw (benchmarks/rdm_tagged_bw.c): bandwidth of tagged
// messages between RDM endpoints, a window of -W sends in flight (see
// window.go). Receives may complete out of order within a window, so a
// receive's tag must lie within a window of the count of receives
// completed, as C checks. As in C, a failing finalize does not fail the
// run.
func init() {
	register(&program{
		name:      "rdm_tagged_bw",
		desc:      "Bandwidth test for RDM endpoints using tagged messages.",
		optstring: "Uh" + optsCS + optsInfo + optsBenchmark,
		usage:     benchmarkUsage(usageDeliveryComplete),
		init:      func(s *Session) { s.opts.Flags |= OptBW },
		parse:     parseDeliveryComplete,
		setup: func(s *Session) error {
			s.bandwidthHints(fi.EPTypeRDM)
			s.hints.Caps = fi.CapTagged
			s.hints.Mode |= fi.ModeContext
			return nil
		},
		run: func(s *Session) error {
			if err := s.initFabric(); err != nil {
				return err
			}
			w := s.newWindow()
			if err := s.eachSize(func() error { return s.bandwidth(w) }); err != nil {
				return err
			}
			s.ignoredFinalize(s.finalize())
			return nil
		},
	})
}
