package ft

import (
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// rdm_rma_event (functional/rdm_rma_event.c): an RMA write that the
// target sees (FI_RMA_EVENT). Completions are counted, not queued: both
// sides count their operations with counters, the server's receive
// counter counting remote writes too. After the address and key exchange
// and a sync, the client writes the greeting into the server's receive
// buffer and waits for the write's completion; the server waits for its
// receive counter to count the write and checks the greeting. There is no
// finalize. C's tcp provider (tcp;ofi_rxm) has no FI_RMA_EVENT and neither
// has gofabric's: over tcp both sides stop with ENODATA (C's "not run").
func init() {
	register(&program{
		name:      "rdm_rma_event",
		desc:      "An RMA write the target counts (FI_RMA_EVENT) between RDM endpoints.",
		optstring: "h" + optsAddr + optsInfo,
		usage:     functionalUsage(false, nil),
		init: func(s *Session) {
			s.opts.Flags = OptSize | OptRxCntr | OptTxCntr
		},
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeRDM
			s.hints.Caps = fi.CapMsg | fi.CapRMA | fi.CapRMAEvent
			s.hints.Mode = fi.ModeContext
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			if err := s.initFabric(); err != nil {
				return err
			}
			remote, err := s.exchangeKeys()
			if err != nil {
				return err
			}
			if !s.opts.IsClient() {
				if err := s.getRxComp(s.rxSeq, anyLength); err != nil {
					return errors.Wrap(err, "waiting for the client's RMA write")
				}
				got, err := s.checkRecvMsg(greeting)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.stdout, "Received data from Client: %s\n", got)
				return nil
			}
			fmt.Fprintln(s.stdout, "RMA write to server")
			n := len(greeting) + 1
			if n > s.txSize {
				return errors.Wrapf(fi.ETOOSMALL, "Transmit buffer too small: %d bytes for a %d-byte greeting", s.txSize, n)
			}
			copy(s.txBuf[s.txPrefix:], greeting+"\x00")
			rma, err := s.rmaEP()
			if err != nil {
				return err
			}
			var writeCtx opContext
			var r retry
			for {
				// C posts once; ft retries what the provider refuses
				// with FI_EAGAIN, as FT_POST does elsewhere.
				err := rma.Write(s.txBuf[:n], s.mrDesc, s.remote, remote.addr, remote.key, &writeCtx)
				if err == nil {
					break
				}
				if err != fi.EAGAIN {
					return callErr("fi_write", err)
				}
				if err := r.again(s, s.txcq, &s.txCQCntr, "fi_write"); err != nil {
					return err
				}
			}
			s.txSeq++
			if err := s.getTxComp(s.txSeq); err != nil {
				return err
			}
			fmt.Fprintln(s.stdout, "Received a completion event for RMA write")
			return nil
		},
	})
}
