package ft

import (
	"io"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// rdm_pingpong (benchmarks/rdm_pingpong.c): latency of untagged messages
// between reliable unconnected endpoints (FI_EP_RDM), addresses exchanged
// in band unless -E or -b.
func init() {
	register(&program{
		name:      "rdm_pingpong",
		desc:      "Ping-pong latency of messages between RDM endpoints.",
		optstring: "Uh" + optsCS + optsInfo + optsBenchmark,
		usage:     benchmarkUsage(usageDeliveryComplete),
		parse:     parseDeliveryComplete,
		setup: func(s *Session) error {
			s.benchmarkHints(fi.EPTypeRDM)
			s.hints.Caps = fi.CapMsg
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
			return s.finalize()
		},
	})
}

// parseDeliveryComplete handles -U: sends complete when delivered
// (FI_DELIVERY_COMPLETE in the transmit op flags).
func parseDeliveryComplete(s *Session, o getopt.Option) (bool, error) {
	if o.Short != 'U' {
		return false, nil
	}
	s.hints.TxAttr.OpFlags |= fi.FlagDeliveryComplete
	return true, nil
}

func usageDeliveryComplete(w io.Writer) {
	opt(w, "-U", "sends complete on delivery (FI_DELIVERY_COMPLETE)")
}
