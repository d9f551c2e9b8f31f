package ft

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// rdm (functional/rdm.c): the greeting between reliable unconnected
// endpoints (FI_EP_RDM). With -C N the server stays up for N clients, one
// after another, each a process of its own: between two it posts the
// receive for the next client's address and, with -E or -b, accepts the
// next out-of-band connection (ft_accept_next_client). -U asks for
// FI_DELIVERY_COMPLETE.
func init() {
	register(&program{
		name:      "rdm",
		desc:      "A greeting from client to server between RDM endpoints; -C N serves N clients.",
		optstring: "Uh" + optsAddr + optsInfo,
		usage:     functionalUsage(false, usageDeliveryComplete),
		init:      func(s *Session) { s.opts.Flags |= OptSize },
		parse:     parseDeliveryComplete,
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeRDM
			s.hints.Caps = fi.CapMsg
			s.hints.Mode = fi.ModeContext
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			if err := s.initFabric(); err != nil {
				return err
			}
			nconn := 1
			if s.opts.Has(OptServerPersist) && !s.opts.IsClient() {
				nconn = s.opts.NumConnections
			}
			for i := 1; i <= nconn; i++ {
				if err := s.sendRecvGreeting(); err != nil {
					return err
				}
				if i < nconn {
					if err := s.acceptNextClient(); err != nil {
						return errors.Wrapf(err, "client %d of %d", i+1, nconn)
					}
				}
			}
			return nil
		},
	})
}

// acceptNextClient readies a persistent server for its next client
// (ft_accept_next_client): the receive for the client's address, a new
// out-of-band connection when addresses go over the socket (each client
// is a process of its own), and the address exchange.
func (s *Session) acceptNextClient() error {
	// The next client is a new peer: the server waits for it as long as
	// it takes (until it accepts its socket or has its address).
	s.contact = false
	if !s.opts.Has(OptSkipMsgAlloc) && s.info.Caps&(fi.CapMsg|fi.CapTagged) != 0 {
		if err := s.postRx(max(s.rxSize, maxCtrlMsg)); err != nil {
			return err
		}
	}
	if s.opts.Has(OptOOBAddrExch) {
		if s.oob != nil {
			if err := s.oob.close(); err != nil {
				return errors.Wrap(err, "ft_reset_oob")
			}
			s.oob = nil
		}
		if err := s.initOOB(); err != nil {
			return errors.Wrap(err, "ft_reset_oob")
		}
	}
	return s.initAV()
}
