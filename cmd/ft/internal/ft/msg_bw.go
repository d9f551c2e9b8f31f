package ft

import (
	"io"

	"github.com/gofabric/gofabric/fi"
)

// msg_bw (benchmarks/msg_bw.c): bandwidth of messages over a connection
// (FI_EP_MSG), a window of -W sends in flight (see window.go). The server
// listens on its data port (-s, -B) and accepts one client; -o tagged
// asks for a shared receive context, which gofabric does not have. As in
// C, a failing finalize does not fail the run, and the connection is not
// shut down before the endpoints close.
func init() {
	register(&program{
		name:      "msg_bw",
		desc:      "Bandwidth test for MSG endpoints.",
		optstring: "h" + optsCS + optsInfo + optsAPI + optsBenchmark,
		usage: benchmarkUsage(func(w io.Writer) {
			opt(w, "-o <op>", "msg (default) or tagged (refused: needs a shared receive context)")
		}),
		init: func(s *Session) { s.opts.Flags |= OptBW },
		setup: func(s *Session) error {
			s.bandwidthHints(fi.EPTypeMsg)
			if s.hints.Caps&fi.CapTagged != 0 {
				s.opts.Flags |= OptSRX
			} else {
				s.hints.Caps |= fi.CapMsg
			}
			return nil
		},
		run: func(s *Session) error {
			if err := s.connectMsg(); err != nil {
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

// bandwidthHints sets the hints the bandwidth benchmarks' mains share:
// benchmarkHints' with FI_RM_ENABLED and the bulk-data traffic class.
func (s *Session) bandwidthHints(t fi.EPType) {
	s.benchmarkHints(t)
	s.hints.DomainAttr.ResourceMgmt = fi.RMEnabled
	s.hints.TxAttr.TClass = fi.TCBulkData
}
