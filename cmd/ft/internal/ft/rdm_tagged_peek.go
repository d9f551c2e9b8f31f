package ft

import (
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// rdm_tagged_peek (functional/rdm_tagged_peek.c): tagged receives that
// search before they take (FI_PEEK, FI_CLAIM, FI_DISCARD). The server
// sends five tagged messages of the transfer size (1024 bytes unless -S),
// tags 0x900d to 0x900d+4, and waits for a one-byte message of tag 0xabc;
// the client peeks for a tag nobody sent (FI_ENOMSG), then peeks, claims
// and discards its way through the five, and sends the 0xabc message when
// done. Both then finalize, whose result C ignores.
//
// The client's side needs FI_PEEK, FI_CLAIM and FI_DISCARD, which no
// gofabric provider implements yet: ft's client stops with ENOSYS (C's
// "not run" status) and says so. The server's side needs none of them
// and pairs with C's client.
func init() {
	register(&program{
		name:      "rdm_tagged_peek",
		desc:      "Tagged receives that peek, claim and discard (FI_PEEK) between RDM endpoints.",
		optstring: uniqueOpts("h" + optsCS + optsInfo),
		usage:     functionalUsage(true, nil),
		init: func(s *Session) {
			s.opts.Flags |= OptSize
			s.opts.CompMethod = CompSRead
			s.opts.WindowSize = peekMessages
		},
		setup: func(s *Session) error {
			s.hints.DomainAttr.ResourceMgmt = fi.RMEnabled
			s.hints.TxAttr.MsgOrder = fi.OrderSAS
			s.hints.EPAttr.Type = fi.EPTypeRDM
			s.hints.Caps = fi.CapTagged
			s.hints.Mode = fi.ModeContext
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error {
			if s.opts.IsClient() {
				return errors.WithHint(errors.Wrap(fi.ENOSYS,
					"rdm_tagged_peek's client searches with fi_trecvmsg(FI_PEEK, FI_CLAIM, FI_DISCARD), which gofabric's providers do not implement yet"),
					"run ft rdm_tagged_peek as the server, with C's fi_rdm_tagged_peek as the client")
			}
			return s.peekServer()
		},
	})
}

// The tags and count of the messages the test searches for.
const (
	peekMessages = 5
	peekFirstTag = 0x900d
	peekSyncTag  = 0xabc
)

// peekServer is the sending side of rdm_tagged_peek.
func (s *Session) peekServer() error {
	if err := s.initFabric(); err != nil {
		return err
	}
	fmt.Fprintln(s.stdout, "Sending five tagged messages")
	var ctxs [peekMessages]opContext
	// completed counts the sends' completions, read while a refused
	// send is retried or after the last is posted.
	var completed uint64
	for i := range ctxs {
		ctxs[i].name = fmt.Sprintf("peek send %d", i)
		var r retry
		for {
			// C posts each send once and fails on FI_EAGAIN, which tcp's
			// RDM endpoint returns while its connection to the client is
			// still being made (addresses exchanged out of band, -E or
			// -b): ft retries, reading the transmit queue in between.
			err := s.tagged.TSend(s.txBuf[:s.txSize], s.mrDesc, s.remote, peekFirstTag+uint64(i), &ctxs[i])
			if err == nil {
				break
			}
			if err != fi.EAGAIN {
				return callErr("fi_tsend", err)
			}
			if err := r.again(s, s.txcq, &completed, "fi_tsend"); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(s.stdout, "Waiting for messages to complete")
	if err := s.getCQComp(s.txcq, &completed, peekMessages, false, anyLength, s.limit()); err != nil {
		return errors.Wrap(err, "fi_cq_sread")
	}
	var syncCtx opContext
	msg := ep.TaggedMessage{IOV: [][]byte{s.rxBuf[:s.rxSize]}, Desc: []any{s.mrDesc}, Addr: s.remote, Tag: peekSyncTag, Context: &syncCtx}
	if err := s.tagged.TRecvMsg(&msg, 0); err != nil {
		return callErr("fi_trecvmsg", err)
	}
	if err := s.readOneComp(s.rxcq, s.rxTimeout(), "client's sync message"); err != nil {
		return errors.Wrap(err, "Receive sync")
	}
	if err := s.verifyComp(&syncCtx, true, peekSyncTag); err != nil {
		return errors.Wrap(err, "Receive sync")
	}
	s.ignoredFinalize(s.finalize())
	return nil
}
