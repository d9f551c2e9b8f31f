package ft

import "github.com/gofabric/gofabric/fi"

// msg (functional/msg.c): the simplest connected (FI_EP_MSG) exchange.
// The server listens on its data port and accepts one client, which sends
// it the greeting; the server checks it. Both then shut the connection
// down.
func init() {
	register(&program{
		name:      "msg",
		desc:      "A greeting from client to server over a connected (MSG) endpoint.",
		optstring: "h" + optsAddr + optsInfo,
		usage:     functionalUsage(false, nil),
		init:      func(s *Session) { s.opts.Flags |= OptSize },
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeMsg
			s.hints.Caps = fi.CapMsg
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			if err := s.connectMsg(); err != nil {
				return err
			}
			err := s.sendRecvGreeting()
			// fi_shutdown, its result ignored as in C.
			_ = s.cm.Shutdown(0)
			return err
		},
	})
}
