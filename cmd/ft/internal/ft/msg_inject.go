package ft

import (
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// msg_inject (functional/msg_inject.c): sends whose buffer may be reused
// early. The client sends -I messages (1) of tag 0xabcd between RDM
// endpoints with tagged messages, the server receives each and, under -v,
// checks the payload. -A inject sends with FI_INJECT and overwrites the
// buffer right after posting; -A inj_complete sends with
// FI_INJECT_COMPLETE and overwrites it once the send completed; either
// way the client waits for each send's completion, with its context. The
// flag goes in the transmit op flags (fi_tsend), or with -N on each
// fi_tsendmsg. As in C, -A inject cuts the size to the hints' inject size,
// which the program leaves at 0: its messages are empty.
func init() {
	register(&program{
		name:      "msg_inject",
		desc:      "Tagged sends with FI_INJECT or FI_INJECT_COMPLETE whose buffer is overwritten early.",
		optstring: uniqueOpts("NvhA:" + optsCS + optsAddr + optsInfo),
		usage: functionalUsage(true, func(w io.Writer) {
			opt(w, "-N", "send with fi_tsendmsg and the flag, not fi_tsend and op flags")
			opt(w, "-v", "fill and check the payloads")
			opt(w, "-A <flag>", "inject (FI_INJECT) or inj_complete (FI_INJECT_COMPLETE)")
		}),
		init: func(s *Session) {
			s.opts.Iterations = 1
			s.local = &injectOpts{}
		},
		parse: func(s *Session, o getopt.Option) (bool, error) {
			m := s.local.(*injectOpts)
			switch o.Short {
			case 'N':
				m.sendMsg = true
			case 'A':
				switch {
				case hasPrefixFold(o.Arg, "inj_complete"):
					m.flag = fi.FlagInjectComplete
				case hasPrefixFold(o.Arg, "inject"):
					m.flag = fi.FlagInject
				default:
					fmt.Fprintln(s.stdout, "Unsupported flag")
					return true, errors.Wrapf(fi.EOTHER, "-A %s: the flag is inject or inj_complete", o.Arg)
				}
			default:
				return false, nil
			}
			return true, nil
		},
		setup: func(s *Session) error {
			h := s.hints
			h.EPAttr.Type = fi.EPTypeRDM
			h.Mode = fi.ModeContext
			h.Caps = fi.CapTagged
			h.DomainAttr.ResourceMgmt = fi.RMEnabled
			h.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error { return s.msgInject(s.local.(*injectOpts)) },
	})
}

// injectOpts are msg_inject's own options.
type injectOpts struct {
	sendMsg bool     // -N: fi_tsendmsg with the flag
	flag    fi.Flags // -A: FI_INJECT or FI_INJECT_COMPLETE, 0 without -A
}

// injectTag is the tag of the test's messages (ft_tag).
const injectTag = 0xabcd

// opFlagsName is fi_tostr(FI_TYPE_OP_FLAGS) of f, which is empty for
// none.
func opFlagsName(f fi.Flags) string {
	if f == 0 {
		return ""
	}
	return f.String()
}

// msgInject is msg_inject's run_test.
func (s *Session) msgInject(m *injectOpts) error {
	if !m.sendMsg {
		s.hints.TxAttr.OpFlags |= m.flag
	}
	if err := s.initFabric(); err != nil {
		return err
	}
	size := s.opts.TransferSize
	if m.flag&fi.FlagInject != 0 && size > s.hints.TxAttr.InjectSize {
		size = s.hints.TxAttr.InjectSize
	}
	if size > s.txSize || size > s.rxSize {
		return errors.Wrapf(fi.EMSGSIZE, "-S %d is larger than the %d-byte buffers", size, min(s.txSize, s.rxSize))
	}
	name := opFlagsName(m.flag)
	fmt.Fprintf(s.stdout, "Start testing %s\n", name)
	s.ftTag = injectTag
	var injCtx opContext
	for i := 0; i < s.opts.Iterations; i++ {
		var err error
		if s.opts.IsClient() {
			err = s.injectSend(m, size)
		} else {
			err = s.injectRecv(size, &injCtx)
		}
		if err != nil {
			return errors.Wrapf(err, "message %d of %d", i+1, s.opts.Iterations)
		}
	}
	fmt.Fprintf(s.stdout, "GOOD: Completed %s Testing\n", name)
	return nil
}

// injectSend sends one message (send_msg) and, with -A, overwrites the
// buffer right after posting (FI_INJECT: the provider copied it) or after
// the completion (FI_INJECT_COMPLETE), waiting for the completion either
// way. Without -A it waits for nothing, as C.
func (s *Session) injectSend(m *injectOpts, size int) error {
	payload := s.txBuf[s.txPrefix:][:size]
	if s.opts.Has(OptVerifyData) {
		fillBuf(payload)
	}
	if m.sendMsg {
		msg := ep.TaggedMessage{IOV: [][]byte{s.txBuf[:s.txPrefix+size]}, Desc: []any{s.mrDesc}, Addr: s.remote, Tag: injectTag, Context: &s.txCtx}
		var r retry
		for {
			err := s.tagged.TSendMsg(&msg, m.flag)
			if err == nil {
				break
			}
			if err != fi.EAGAIN {
				return callErr("fi_tsendmsg", err)
			}
			if err := r.again(s, s.txcq, &s.txCQCntr, "fi_tsendmsg"); err != nil {
				return err
			}
		}
	} else if err := s.postTx(size, &s.txCtx); err != nil {
		return err
	}
	switch {
	case m.flag&fi.FlagInject != 0:
		fill(payload, 0xb)
		if err := s.injectVerify(s.txcq, &s.txCtx, false, s.limit(), "send"); err != nil {
			return err
		}
		s.txCQCntr++
	case m.flag&fi.FlagInjectComplete != 0:
		if err := s.injectVerify(s.txcq, &s.txCtx, false, s.limit(), "send"); err != nil {
			return err
		}
		s.txCQCntr++
		fill(payload, 0xb)
	}
	return nil
}

// injectRecv receives one message into the receive buffer (receive_msg)
// and, under -v, checks it.
func (s *Session) injectRecv(size int, ctx *opContext) error {
	if err := s.postRxCtx(size, ctx); err != nil {
		return err
	}
	if err := s.injectVerify(s.rxcq, ctx, true, s.rxTimeout(), "receive"); err != nil {
		return err
	}
	s.rxCQCntr++
	if n := s.comp[0].Len - s.rxPrefix; n != size {
		return errors.Wrapf(fi.EMSGSIZE, "received a %d-byte message where the test sends %d bytes (does the peer run the same -A and -S?)", n, size)
	}
	if s.opts.Has(OptVerifyData) {
		return s.checkBuf(s.rxBuf[s.rxPrefix:][:size])
	}
	return nil
}

// postRxCtx posts a receive as postRx does, with its own context.
func (s *Session) postRxCtx(size int, ctx *opContext) error {
	buf := s.rxBuf[:min(max(size, maxCtrlMsg)+s.rxPrefix, len(s.rxBuf))]
	return s.postRetry(rxDir, "receive", func() error {
		return s.tagged.TRecv(buf, s.mrDesc, s.remote, s.ftTag, 0, ctx)
	})
}

// injectVerify reads the next completion of cq, which must be the
// operation of ctx (and, for a receive, carry the test's tag):
// ft_cq_read_verify. Its failures are C's -FI_EOTHER.
func (s *Session) injectVerify(cq eq.CompletionQueue, ctx *opContext, rx bool, timeout time.Duration, what string) error {
	if err := s.readOneComp(cq, timeout, what); err != nil {
		return err
	}
	return s.verifyComp(ctx, rx, injectTag)
}

// fill sets every byte of b to v (memset).
func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}
