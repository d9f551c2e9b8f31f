package ft

import (
	"fmt"
	"io"

	"github.com/gofabric/gofabric/fi"
)

// rma_bw (benchmarks/rma_bw.c): bandwidth of RMA operations (-o write,
// the default, read or writedata) over a connection (-e msg) or between
// RDM endpoints (-e rdm, the default), a window of -W operations in
// flight. After the endpoints are up the two sides exchange the keys of
// their buffers (rma.go); reads and writes then run from both sides at
// once, writes with CQ data from the client only. As in C, a failing
// finalize does not fail the run. C sets the hints' address format before
// reading the options, so its -F does nothing; ft honours -F. C exits
// with the negated error (an FI_E* code from 256 up wraps around to a
// small status there); ft exits as the other programs do.
func init() {
	register(&program{
		name:      "rma_bw",
		desc:      "Bandwidth test using RMA operations.",
		optstring: "Uh" + optsCS + optsInfo + optsAPI + optsBenchmark,
		usage: benchmarkUsage(func(w io.Writer) {
			usageDeliveryComplete(w)
			opt(w, "-o <op>", "rma op type: read|write|writedata (default: write)")
			fmt.Fprintf(w, "Note: read/write bw tests are bidirectional.\n      writedata bw test is unidirectional from the client side.\n")
		}),
		init: func(s *Session) {
			s.opts.Flags |= OptBW
			h := s.hints
			h.Caps = fi.CapMsg | fi.CapRMA
			h.DomainAttr.ResourceMgmt = fi.RMEnabled
			h.Mode = fi.ModeContext
			h.DomainAttr.Threading = fi.ThreadDomain
		},
		parse: parseDeliveryComplete,
		setup: func(s *Session) error {
			h := s.hints
			h.AddrFormat = s.opts.AddrFormat
			h.DomainAttr.MRMode = s.opts.MRMode
			h.TxAttr.TClass = fi.TCBulkData
			return nil
		},
		run: func(s *Session) error {
			if err := s.initEndpoint(); err != nil {
				return err
			}
			peer, err := s.exchangeKeys()
			if err != nil {
				return err
			}
			w := s.newWindow()
			if err := s.eachSize(func() error { return s.bandwidthRMA(w, peer) }); err != nil {
				return err
			}
			s.ignoredFinalize(s.finalize())
			return nil
		},
	})
}
