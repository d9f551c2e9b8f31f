package ft

import (
	"io"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// dgram_pingpong (benchmarks/dgram_pingpong.c): latency of datagrams
// (FI_EP_DGRAM). Datagrams may be lost, so the sides always synchronize
// over the out-of-band socket (as with -b; port 3000 unless -E/-b name
// one) and a receive gives up after -T seconds (5). The client needs -s
// too unless -E carries the addresses: without it the client looks up its
// own address instead of the server's. One more receive than C counts is
// kept posted, so that the peer's last message always finds one.
func init() {
	register(&program{
		name:      "dgram_pingpong",
		desc:      "Ping-pong latency of datagrams (DGRAM endpoints).",
		optstring: "hT:" + optsCS + optsInfo + optsBenchmark,
		usage: benchmarkUsage(func(w io.Writer) {
			opt(w, "-T <timeout>", "seconds a receive may wait (5)")
		}),
		init: func(s *Session) { s.opts.Timeout = 5 },
		parse: func(s *Session, o getopt.Option) (bool, error) {
			if o.Short != 'T' {
				return false, nil
			}
			n, err := atoi(o, o.Arg)
			if err != nil {
				return true, err
			}
			s.opts.Timeout, s.opts.TimeoutSet = n, true
			return true, nil
		},
		setup: func(s *Session) error {
			s.opts.Flags |= OptOOBSync
			s.benchmarkHints(fi.EPTypeDgram)
			if s.opts.Has(OptSize) {
				s.hints.EPAttr.MaxMsgSize = s.opts.TransferSize
			}
			s.hints.Caps = fi.CapMsg
			s.hints.Mode |= fi.ModeContext
			return nil
		},
		run: func(s *Session) error {
			if err := s.initFabric(); err != nil {
				return err
			}
			// The extra receive C posts straight with fi_recv, outside
			// rx_seq.
			if err := s.msg.Recv(s.rxBuf[:s.rxSize+s.rxPrefix], s.mrDesc, 0, &s.rxCtx); err != nil {
				return callErr("fi_recv", err)
			}
			if err := s.eachSize(s.pingpong); err != nil {
				return err
			}
			return s.finalize()
		},
	})
}
