package ft

import (
	"fmt"
	"io"

	"github.com/gofabric/gofabric/fi"
)

// benchmarkHints sets the hints the benchmarks' mains share: the endpoint
// type, the FI_MR_* mode of the options, FI_THREAD_DOMAIN, the
// low-latency traffic class and -F's address format.
func (s *Session) benchmarkHints(t fi.EPType) {
	h := s.hints
	h.EPAttr.Type = t
	h.DomainAttr.MRMode = s.opts.MRMode
	h.DomainAttr.Threading = fi.ThreadDomain
	h.TxAttr.TClass = fi.TCLowLatency
	h.AddrFormat = s.opts.AddrFormat
}

// benchmarkUsage prints the option lines of a benchmark: the common,
// client-server and benchmark options, extra (the program's own), and the
// long options.
func benchmarkUsage(extra func(w io.Writer)) func(w io.Writer) {
	return func(w io.Writer) {
		usageCommon(w)
		usageCS(w)
		if extra != nil {
			extra(w)
		}
		usageBenchmark(w)
		usageLong(w)
	}
}

// ignoredFinalize reports the failure of a finalize whose result the C
// program drops (rdm_tagged_pingpong and rdm_cntr_pingpong call
// ft_finalize and return the pingpong's result): printed, not failed.
func (s *Session) ignoredFinalize(err error) {
	if err != nil {
		fmt.Fprintf(s.stderr, "%s: [warn] ft_finalize failed (the C program ignores this too): %v\n", s.prog.name, err)
	}
}
