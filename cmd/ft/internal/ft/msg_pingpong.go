package ft

import (
	"io"

	"github.com/gofabric/gofabric/fi"
)

// msg_pingpong (benchmarks/msg_pingpong.c): latency of messages over a
// connection (FI_EP_MSG). The server listens on its data port (-s, -B)
// and accepts one client; -o tagged asks for tagged messages through a
// shared receive context, which gofabric does not have.
func init() {
	register(&program{
		name:      "msg_pingpong",
		desc:      "Ping-pong latency of messages over a connected (MSG) endpoint.",
		optstring: "h" + optsCS + optsInfo + optsAPI + optsBenchmark,
		usage: benchmarkUsage(func(w io.Writer) {
			opt(w, "-o <op>", "msg (default) or tagged (refused: needs a shared receive context)")
		}),
		setup: func(s *Session) error {
			s.benchmarkHints(fi.EPTypeMsg)
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
			err := s.eachSize(s.pingpong)
			if err == nil {
				err = s.finalize()
			}
			// fi_shutdown; its result is ignored, as in C (the peer may
			// have shut the connection down first).
			_ = s.cm.Shutdown(0)
			return err
		},
	})
}
