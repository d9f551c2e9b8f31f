package ft

import "github.com/gofabric/gofabric/fi"

// dgram (functional/dgram.c): the greeting over datagram endpoints
// (FI_EP_DGRAM). The addresses go in band unless -E or -b: the client
// sends its own in a datagram, which is lost if the server's endpoint is
// not bound yet (C's runfabtests.sh starts the client a second after the
// server).
func init() {
	register(&program{
		name:      "dgram",
		desc:      "A greeting from client to server in a datagram (DGRAM endpoints).",
		optstring: "h" + optsAddr + optsInfo,
		usage:     functionalUsage(false, nil),
		init:      func(s *Session) { s.opts.Flags |= OptSize },
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeDgram
			s.hints.Caps = fi.CapMsg
			s.hints.Mode = fi.ModeContext
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			if err := s.initFabric(); err != nil {
				return err
			}
			return s.sendRecvGreeting()
		},
	})
}
