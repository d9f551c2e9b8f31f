package ft

import (
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// unexpected_msg (functional/unexpected_msg.c): tagged messages that
// arrive before their receives. In each of 600 iterations (-I) both sides
// send -M messages (5) of the transfer size (1024, -S), tags 0x1234 and
// up, meet over the out-of-band socket (always on: port 3000 unless -E or
// -b name one), then post the receives one at a time in the reverse order
// of the tags, each taking the peer's message of its tag from the
// provider's unexpected queue. -C sends each message with its size as
// remote CQ data, which the receiver checks. -e msg runs it over a
// connection, -e rdm (the default) between RDM endpoints.
//
// C's main takes -C and -M as its own: they are not -C <connections> and
// -M <mode> here. It checks payloads under -v, but -v is not one of its
// options.
func init() {
	register(&program{
		name:      "unexpected_msg",
		desc:      "Tagged messages that arrive before their receives are posted.",
		optstring: uniqueOpts("CM:h" + optsCS + optsInfo),
		usage: functionalUsage(true, func(w io.Writer) {
			opt(w, "-C", "send each message with remote CQ data (its size)")
			opt(w, "-M <count>", "messages in flight each way (5)")
		}),
		init: func(s *Session) {
			s.opts.Iterations = 600
			s.opts.Flags |= OptOOBCtrl | OptSkipMsgAlloc
			s.opts.MRMode = fi.MRModeLocal | fi.MRModeAllocated
			s.local = &unexpectedOpts{count: 5}
		},
		parse: func(s *Session, o getopt.Option) (bool, error) {
			u := s.local.(*unexpectedOpts)
			switch o.Short {
			case 'C':
				u.sendData = true
			case 'M':
				n, err := atoi(o, o.Arg)
				if err != nil {
					return true, err
				}
				if n < 1 {
					return true, errors.Wrapf(fi.EINVAL, "-M %s: at least one message", o.Arg)
				}
				u.count = n
			default:
				return false, nil
			}
			return true, nil
		},
		setup: func(s *Session) error {
			h := s.hints
			h.Mode = fi.ModeContext
			h.DomainAttr.MRMode = s.opts.MRMode
			h.DomainAttr.ResourceMgmt = fi.RMEnabled
			h.RxAttr.TotalBufferedRecv = 0
			h.Caps = fi.CapTagged
			return nil
		},
		run: func(s *Session) error {
			if err := s.initEndpoint(); err != nil {
				return err
			}
			return s.unexpectedLoop(s.local.(*unexpectedOpts))
		},
	})
}

// unexpectedOpts are unexpected_msg's own options.
type unexpectedOpts struct {
	sendData bool // -C
	count    int  // -M: concurrent_msgs
}

// unexpectedTag is the first message's tag (op_tag).
const unexpectedTag = 0x1234

// unexpectedLoop is run_test_loop, after alloc_bufs: count transmit
// buffers and count receive buffers of the transfer size.
func (s *Session) unexpectedLoop(u *unexpectedOpts) error {
	size := s.opts.TransferSize
	s.txSize, s.rxSize = size+s.txPrefix, size+s.rxPrefix
	s.buf = alloc((s.txSize+s.rxSize)*u.count, false)
	s.rxBuf, s.txBuf = s.buf[:s.rxSize*u.count], s.buf[s.rxSize*u.count:]
	if s.info.DomainAttr != nil && s.info.DomainAttr.MRMode&fi.MRModeLocal != 0 {
		mr, desc, err := s.regMR(s.buf, fi.Access(fi.CapSend|fi.CapRecv), mrKey)
		if err != nil {
			return err
		}
		s.mr, s.mrDesc = mr, desc
	}
	txCtx, rxCtx := make([]opContext, u.count), make([]opContext, u.count)
	for j := range txCtx {
		txCtx[j].name = fmt.Sprintf("send %d", j)
		rxCtx[j].name = fmt.Sprintf("receive %d", j)
	}
	data := uint64(size)
	pid := os.Getpid()
	for i := 0; i < s.opts.Iterations; i++ {
		for j := 0; j < u.count; j++ {
			buf := s.txBuf[j*s.txSize:][:s.txSize]
			if err := s.unexpectedSend(buf, data, u.sendData, unexpectedTag+uint64(j), &txCtx[j]); err != nil {
				fmt.Fprintf(s.stdout, "ERROR send_msg returned %d\n", -int(fi.Code(err)))
				return errors.Wrapf(err, "iteration %d, message %d", i, j)
			}
			_, _ = s.txcq.Read(nil) // progress the sends
		}
		if err := s.sync(); err != nil {
			return errors.Wrapf(err, "iteration %d", i)
		}
		for j := 0; j < u.count; j++ {
			tag := unexpectedTag + uint64(u.count-1-j)
			// C posts max(size, 256) bytes at each buffer, which reach
			// into the next ones when the size is below 256; ft stops
			// them at the end of the buffer region.
			off := j * s.rxSize
			n := min(max(size, maxCtrlMsg)+s.rxPrefix, len(s.buf)-off)
			if err := s.unexpectedRecv(s.buf[off:][:n], tag, &rxCtx[j]); err != nil {
				fmt.Fprintf(s.stdout, "ERROR recv_msg returned %d\n", -int(fi.Code(err)))
				return errors.Wrapf(err, "iteration %d, message %d", i, j)
			}
			_, _ = s.txcq.Read(nil) // progress the sends
			if err := s.unexpectedWaitRecv(u, tag, &rxCtx[j], size); err != nil {
				return errors.Wrapf(err, "iteration %d, message %d", i, j)
			}
		}
		if err := s.getTxComp(s.txSeq); err != nil {
			return errors.Wrapf(err, "iteration %d", i)
		}
		if i%100 == 0 {
			fmt.Fprintf(s.stdout, "PID %d GOOD iter %d/%d completed\n", pid, i, s.opts.Iterations)
		}
	}
	// The last meeting's result is ignored, as in C.
	_ = s.sync()
	fmt.Fprintf(s.stdout, "PID %d GOOD all done\n", pid)
	return nil
}

// unexpectedSend posts one tagged send of buf (ft_post_tx_buf), with
// remote CQ data when sendData.
func (s *Session) unexpectedSend(buf []byte, data uint64, sendData bool, tag uint64, ctx *opContext) error {
	return s.postRetry(txDir, "transmit", func() error {
		if sendData {
			return s.tagged.TSendData(buf, s.mrDesc, data, s.remote, tag, ctx)
		}
		return s.tagged.TSend(buf, s.mrDesc, s.remote, tag, ctx)
	})
}

// unexpectedRecv posts one tagged receive into buf (ft_post_rx_buf).
func (s *Session) unexpectedRecv(buf []byte, tag uint64, ctx *opContext) error {
	return s.postRetry(rxDir, "receive", func() error {
		return s.tagged.TRecv(buf, s.mrDesc, s.remote, tag, 0, ctx)
	})
}

// unexpectedWaitRecv waits for the receive just posted (wait_recv) and
// checks it: C checks the CQ data under -C; ft checks too that the
// completion is that receive's, with its tag and the transfer size.
func (s *Session) unexpectedWaitRecv(u *unexpectedOpts, tag uint64, ctx *opContext, size int) error {
	if err := s.readOneComp(s.rxcq, s.rxTimeout(), "receive"); err != nil {
		fmt.Fprintf(s.stdout, "ERROR fi_cq_(s)read returned %d %s\n", -int(fi.Code(err)), fi.Code(err))
		return err
	}
	if err := s.verifyComp(ctx, true, tag); err != nil {
		return err
	}
	c := &s.comp[0]
	if c.Len-s.rxPrefix != size {
		return errors.Wrapf(fi.EMSGSIZE, "received a %d-byte message where the test sends %d bytes (does the peer run the same -S?)", c.Len-s.rxPrefix, size)
	}
	if u.sendData && c.Data != uint64(size) {
		fmt.Fprintf(s.stdout, "ERROR incorrect remote CQ data value. Got %d, expected %d\n", c.Data, size)
		return errors.Wrapf(fi.EOTHER, "the message carries the remote CQ data %d where the peer sends its size %d", c.Data, size)
	}
	return nil
}
