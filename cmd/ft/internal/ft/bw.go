package ft

import (
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// bw (functional/bw.c): a bandwidth test with data verification over RDM
// (-e rdm, the default) or MSG endpoints (-e msg). For each size the
// client posts one window of -W sends (64), each from a buffer of its own,
// and waits for their completions; the server, after sleeping -T seconds
// (to let the client get ahead), posts a window of receives into buffers
// of their own and, with -v, checks every one of them. A one-byte
// exchange (or ft_sync over the socket with -b) ends each size; the row
// counts the window's transfers. Unlike the benchmarks, bw takes neither
// -I (the window is the count) nor -k, -j, and it has no finalize.
//
// C registers each window buffer on its own (keys FT_TX_MR_KEY+i and
// FT_RX_MR_KEY+i) when the domain asks for registration, sized for the
// largest size of the table (8 MiB each); ft sizes them for the largest
// size the run uses and registers them the same way.
func init() {
	register(&program{
		name:      "bw",
		desc:      "A bandwidth test with data verification.",
		optstring: "UW:vT:h" + optsCS + optsInfo,
		usage: func(w io.Writer) {
			usageCommon(w)
			usageCS(w)
			opt(w, "-T sleep_time", "Receive side delay before starting")
			opt(w, "-v", "Enable data verification")
			opt(w, "-W window_size", "Set transmit window size before waiting for completion")
			usageDeliveryComplete(w)
		},
		init: func(s *Session) {
			s.hints.EPAttr.Type = fi.EPTypeRDM
			s.local = &bwOptions{}
		},
		parse: func(s *Session, o getopt.Option) (bool, error) {
			switch o.Short {
			case 'T':
				n, err := atoi(o, o.Arg)
				if err != nil {
					return true, err
				}
				if n < 0 {
					return true, errors.Wrapf(fi.EINVAL, "-T %s: the sleep time cannot be negative", o.Arg)
				}
				s.local.(*bwOptions).sleep = time.Duration(n) * time.Second
				return true, nil
			}
			return parseDeliveryComplete(s, o)
		},
		setup: func(s *Session) error {
			h := s.hints
			h.Caps = fi.CapMsg
			h.Mode = fi.ModeContext
			h.DomainAttr.MRMode = s.opts.MRMode
			if h.EPAttr.Type == fi.EPTypeDgram {
				return errors.Wrap(fi.EINVAL, "This test does not support DGRAM endpoints")
			}
			if s.opts.Has(OptVerifyData) {
				h.TxAttr.MsgOrder |= fi.OrderSAS
				h.RxAttr.MsgOrder |= fi.OrderSAS
			}
			return nil
		},
		run: runBW,
	})
}

// bwOptions are bw's own options (Session.local).
type bwOptions struct {
	// sleep is -T: how long the server sleeps before each size, so that
	// the client gets ahead.
	sleep time.Duration
}

// bwSlots are bw's window buffers (tx_ctx_arr and rx_ctx_arr with
// FT_OPT_ALLOC_MULT_MR): a buffer, its MR (nil when the domain needs
// none) and a context for each operation of a window, each way.
type bwSlots struct {
	tx, rx []bwSlot
}

type bwSlot struct {
	buf  []byte
	mr   fi.MR
	desc any
	ctx  opContext
}

// allocSlots allocates and registers the window buffers, each large
// enough for the largest size the run uses (at least a control message)
// and the prefix.
func (s *Session) allocSlots() (*bwSlots, error) {
	largest := 0
	if s.opts.Has(OptSize) {
		largest = s.opts.TransferSize
	} else {
		for i := range s.opts.Sizes {
			if s.useSize(i) {
				largest = max(largest, s.opts.Sizes[i].size)
			}
		}
	}
	largest = max(largest, maxCtrlMsg)
	n := max(s.opts.WindowSize, 1)
	b := &bwSlots{tx: make([]bwSlot, n), rx: make([]bwSlot, n)}
	access := mrAccess(s.info)
	for i := 0; i < n; i++ {
		for _, sl := range []struct {
			slot   *bwSlot
			prefix int
			key    uint64
			name   string
		}{
			{&b.tx[i], s.txPrefix, mrKey + 1 + uint64(i), "tx window"},
			{&b.rx[i], s.rxPrefix, 0xFFFF + uint64(i), "rx window"},
		} {
			// Not written here: only the sizes a run uses are touched.
			sl.slot.buf = make([]byte, largest+sl.prefix)
			sl.slot.ctx.name = sl.name
			mr, desc, err := s.regMR(sl.slot.buf, access, sl.key)
			if err != nil {
				b.close()
				return nil, err
			}
			sl.slot.mr, sl.slot.desc = mr, desc
		}
	}
	return b, nil
}

// close closes the window buffers' MRs.
func (b *bwSlots) close() {
	for _, side := range [][]bwSlot{b.tx, b.rx} {
		for i := range side {
			if side[i].mr != nil {
				_ = side[i].mr.Close()
				side[i].mr = nil
			}
		}
	}
}

// postSendBuf sends size payload bytes from a window buffer
// (ft_post_tx_buf).
func (s *Session) postSendBuf(sl *bwSlot, size int) error {
	return s.postRetry(txDir, "transmit", func() error {
		return s.msg.Send(sl.buf[:s.txPrefix+size], sl.desc, s.remote, &sl.ctx)
	})
}

// postRecvBuf posts a receive of at least a control message into a
// window buffer (ft_post_rx_buf).
func (s *Session) postRecvBuf(sl *bwSlot, size int) error {
	buf := sl.buf[:min(max(size, maxCtrlMsg)+s.rxPrefix, len(sl.buf))]
	return s.postRetry(rxDir, "receive", func() error {
		return s.msg.Recv(buf, sl.desc, s.remote, &sl.ctx)
	})
}

// runBW is bw's run(): the endpoints, a one-byte exchange each way, then
// run_loop for every size.
func runBW(s *Session) error {
	if err := s.initEndpoint(); err != nil {
		return err
	}
	slots, err := s.allocSlots()
	if err != nil {
		return err
	}
	defer slots.close()
	if err := s.tx(1); err != nil {
		return err
	}
	if err := s.getRxComp(s.rxSeq, 1); err != nil {
		return err
	}
	return s.eachSize(func() error { return s.bwLoop(slots) })
}

// bwLoop is bw's run_loop for one size: one window each way, checked
// under -v, then the exchange that ends the size, then the row.
func (s *Session) bwLoop(b *bwSlots) error {
	size := s.opts.TransferSize
	if size > s.maxMsgSize() {
		return errors.Wrapf(fi.EMSGSIZE, "-S %d is larger than %s's max_msg_size %d", size, s.info.FabricAttr.ProvName, s.maxMsgSize())
	}
	if d := s.local.(*bwOptions).sleep; d > 0 && !s.opts.IsClient() {
		time.Sleep(d)
	}
	s.start()
	if s.opts.IsClient() {
		for i := range b.tx {
			sl := &b.tx[i]
			if s.opts.Has(OptVerifyData | OptActive) {
				fillBuf(sl.buf[s.txPrefix:][:size])
			}
			if err := s.postSendBuf(sl, size); err != nil {
				return s.inWindow(err, i)
			}
		}
		if err := s.getTxComp(s.txSeq); err != nil {
			return s.inWindow(err, len(b.tx))
		}
	} else {
		for i := range b.rx {
			if err := s.postRecvBuf(&b.rx[i], size); err != nil {
				return s.inWindow(err, i)
			}
		}
		if err := s.getRxComp(s.rxSeq, size); err != nil {
			return s.inWindow(err, len(b.rx))
		}
		if s.opts.Has(OptVerifyData | OptActive) {
			for i := range b.rx {
				if err := s.checkBuf(b.rx[i].buf[s.rxPrefix:][:size]); err != nil {
					return s.inWindow(err, i)
				}
			}
		}
	}
	s.stop()
	if err := s.bwSync(); err != nil {
		return err
	}
	s.showPerf("", size, len(b.tx), 1)
	return nil
}

// bwSync ends a size: ft_sync over the socket with -b, else a receive
// posted and one byte each way, the client first (post_rx_sync).
func (s *Session) bwSync() error {
	if s.opts.Has(OptOOBSync) {
		return s.sync()
	}
	if err := s.postRx(s.rxSize); err != nil {
		return err
	}
	if s.opts.IsClient() {
		if err := s.tx(1); err != nil {
			return err
		}
		return s.getRxComp(s.rxSeq, 1)
	}
	if err := s.getRxComp(s.rxSeq, 1); err != nil {
		return err
	}
	return s.tx(1)
}

// inWindow says where a window failed.
func (s *Session) inWindow(err error, i int) error {
	return errors.Wrapf(err, "size %d, operation %d of a window of %d", s.opts.TransferSize, i+1, max(s.opts.WindowSize, 1))
}
