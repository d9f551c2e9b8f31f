package ft

import (
	"bytes"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// rdm_multi_client (functional/rdm_multi_client.c): a persistent RDM
// server and clients that come and go. The client program runs -C
// clients (1) one after another, each setting up its endpoint from
// scratch, exchanging addresses and playing -I rounds (1000) of
// ping-pong of the transfer size (1024, -S) before it closes everything;
// the server plays with each in turn, exchanging addresses anew between
// two. With -E or -b the clients share one out-of-band socket, as C's,
// whose ft_free_res leaves it open. -R gives every client after the first
// the first one's address; -U asks for FI_DELIVERY_COMPLETE.
func init() {
	register(&program{
		name:      "rdm_multi_client",
		desc:      "A persistent RDM server and clients that come and go, one after another.",
		optstring: uniqueOpts("URh" + optsAddr + optsInfo + optsCS),
		usage: functionalUsage(true, func(w io.Writer) {
			usageDeliveryComplete(w)
			opt(w, "-R", "every client after the first takes the first one's address")
		}),
		init: func(s *Session) {
			s.opts.Flags |= OptSize
			s.local = &multiClientOpts{}
		},
		parse: func(s *Session, o getopt.Option) (bool, error) {
			if o.Short == 'R' {
				s.local.(*multiClientOpts).reuseAddr = true
				return true, nil
			}
			return parseDeliveryComplete(s, o)
		},
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeRDM
			s.hints.Caps = fi.CapMsg
			s.hints.Mode = fi.ModeContext
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			if !s.opts.IsClient() {
				return s.multiClientServer()
			}
			reuse := s.local.(*multiClientOpts).reuseAddr
			var name []byte
			for i := 0; i < s.opts.NumConnections; i++ {
				fmt.Fprintf(s.stdout, "Starting client: %d\n", i)
				var err error
				if name, err = s.multiClient(i, reuse, name); err != nil {
					return errors.Wrapf(err, "run_client %d", i)
				}
				if err := s.freeRes(); err != nil {
					fmt.Fprintf(s.stderr, "%s: [warn] close: %v\n", s.prog.name, err)
				}
			}
			return nil
		},
	})
}

// multiClientOpts are rdm_multi_client's own options.
type multiClientOpts struct {
	reuseAddr bool // -R
}

// multiClientPingpong plays -I rounds of ping-pong with the peer
// (run_pingpong): the client sends first.
func (s *Session) multiClientPingpong() error {
	fmt.Fprintln(s.stdout, "Start ping-pong.")
	size := s.opts.TransferSize
	for i := 0; i < s.opts.Iterations; i++ {
		var err error
		if s.opts.IsClient() {
			if err = s.tx(size); err == nil {
				err = s.rx(size)
			}
		} else {
			if err = s.rx(size); err == nil {
				err = s.tx(size)
			}
		}
		if err != nil {
			return errors.Wrapf(err, "ping-pong round %d of %d", i+1, s.opts.Iterations)
		}
	}
	fmt.Fprintln(s.stdout, "Ping-pong succeeds.")
	return nil
}

// multiClientServer plays with -C clients in turn (run_server).
func (s *Session) multiClientServer() error {
	if err := s.initFabric(); err != nil {
		return errors.Wrap(err, "ft_init_fabric")
	}
	for n := s.opts.NumConnections; n > 0; n-- {
		if err := s.multiClientPingpong(); err != nil {
			return errors.Wrap(err, "run_pingpong")
		}
		if n > 1 {
			// The next client is a new process: wait for it as long as
			// it takes.
			s.contact = false
			if err := s.initAV(); err != nil {
				return errors.Wrap(err, "ft_init_av")
			}
		}
	}
	return nil
}

// multiClient is one client (run_client): set up from scratch (keeping
// the out-of-band socket), with the first client's address name when
// reuse, exchange addresses and play. It returns the first client's
// address.
func (s *Session) multiClient(id int, reuse bool, name []byte) ([]byte, error) {
	if err := s.initOOB(); err != nil {
		return nil, errors.Wrap(err, "ft_init_oob")
	}
	info, err := s.getinfo(s.hints)
	if err != nil {
		return nil, errors.Wrap(err, "ft_getinfo")
	}
	s.setInfo(info)
	if err := s.openFabricRes(); err != nil {
		return nil, errors.Wrap(err, "ft_open_fabric_res")
	}
	if id > 0 && reuse {
		s.info.SrcAddr = bytes.Clone(name)
	}
	if err := s.allocActiveRes(); err != nil {
		return nil, errors.Wrap(err, "ft_alloc_active_res")
	}
	if err := s.enableEPRecv(); err != nil {
		return nil, errors.Wrap(err, "ft_enable_ep_recv")
	}
	if err := s.initAV(); err != nil {
		return nil, errors.Wrap(err, "ft_init_av")
	}
	if id == 0 {
		if name, err = s.endpointName(); err != nil {
			return nil, err
		}
	}
	return name, s.multiClientPingpong()
}
