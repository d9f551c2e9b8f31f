package ft

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// The bandwidth benchmarks (benchmark_shared.c's bandwidth() and its
// window helpers bw_tx_comp and bw_rx_comp): the client keeps a window of
// -W operations (64) in flight and, after each window, waits for their
// completions and for a 4-byte acknowledgement from the server; the
// server posts a window of receives, waits for them and sends that
// acknowledgement. msg_bw, rdm_tagged_bw and rma_bw run on it.

// window holds the contexts of the transmit operations of one window
// (tx_ctx_arr's contexts in C): every send or RMA operation in flight
// gets its own, as FI_CONTEXT asks. They all use the first transmit and
// receive buffer, as C's benchmarks do (receives use the Session's
// receive context: ft_post_rx's callers in C pass rx_ctx_arr's, which no
// gofabric provider reads).
type window struct {
	tx []opContext
}

// newWindow returns the contexts of a -W window, made once a run.
func (s *Session) newWindow() *window {
	w := &window{tx: make([]opContext, max(s.opts.WindowSize, 1))}
	for i := range w.tx {
		w.tx[i].name = "tx window"
	}
	return w
}

// checkBandwidthSize refuses a transfer larger than the endpoint's
// max_msg_size or than the buffers.
func (s *Session) checkBandwidthSize() error {
	size := s.opts.TransferSize
	if size > s.maxMsgSize() {
		return errors.Wrapf(fi.EMSGSIZE, "-S %d is larger than %s's max_msg_size %d", size, s.info.FabricAttr.ProvName, s.maxMsgSize())
	}
	if size > len(s.txBuf)-s.txPrefix || size > len(s.rxBuf)-s.rxPrefix {
		return errors.AssertionFailedf("ft: a %d-byte transfer does not fit the %d/%d-byte buffers", size, len(s.txBuf), len(s.rxBuf))
	}
	return nil
}

// bwTxComp is bw_tx_comp: the client waits for every send of the window
// to complete, then for the server's 4-byte acknowledgement.
func (s *Session) bwTxComp() error {
	if err := s.getTxComp(s.txSeq); err != nil {
		return err
	}
	return errors.Wrap(s.rx(4), "the server's acknowledgement of a window")
}

// bwRxComp is bw_rx_comp: the server waits for every receive of the
// window but the one kept posted ahead (rx_seq is always one ahead), each
// of expect bytes (anyLength: not checked), checks the buffer under -v
// and acknowledges the window with 4 bytes.
func (s *Session) bwRxComp(expect int) error {
	if err := s.getRxComp(s.rxSeq-1, expect); err != nil {
		return err
	}
	if s.opts.Has(OptVerifyData) {
		if err := s.checkBuf(s.rxBuf[s.rxPrefix:][:s.opts.TransferSize]); err != nil {
			return err
		}
	}
	return errors.Wrap(s.tx(4), "acknowledging a window")
}

// bandwidth is benchmark_shared.c's bandwidth(): after an ft_sync, the
// client sends Warmup+Iterations messages of TransferSize bytes (injected
// below the inject size) in windows of -W, the server receives them the
// same way, and each side prints one row of one transfer an iteration.
//
// Under -v C fills the payload before every send, also while earlier sends
// of the same buffer are in flight; ft fills it once a size, before the
// first, with the same bytes, so that no send's buffer changes under it.
func (s *Session) bandwidth(w *window) error {
	if err := s.checkBandwidthSize(); err != nil {
		return err
	}
	size, inject := s.opts.TransferSize, s.injectSize()
	if err := s.sync(); err != nil {
		return err
	}
	rounds := s.opts.Iterations + s.opts.Warmup
	if s.opts.IsClient() {
		if s.opts.Has(OptVerifyData) {
			fillBuf(s.txBuf[s.txPrefix:][:size])
		}
		j := 0
		for i := 0; i < rounds; i++ {
			if i == s.opts.Warmup {
				s.start()
			}
			var err error
			if size < inject {
				err = s.postInject(size)
			} else {
				err = s.postTx(size, &w.tx[j])
			}
			if err != nil {
				return s.inLoop(err, i)
			}
			if j++; j == len(w.tx) {
				if err := s.bwTxComp(); err != nil {
					return s.inLoop(err, i)
				}
				j = 0
			}
		}
		if err := s.bwTxComp(); err != nil {
			return s.inLoop(err, rounds-1)
		}
	} else {
		j := 0
		for i := 0; i < rounds; i++ {
			if i == s.opts.Warmup {
				s.start()
			}
			if err := s.postRx(size); err != nil {
				return s.inLoop(err, i)
			}
			if j++; j == len(w.tx) {
				if err := s.bwRxComp(size); err != nil {
					return s.inLoop(err, i)
				}
				j = 0
			}
		}
		if err := s.bwRxComp(size); err != nil {
			return s.inLoop(err, rounds-1)
		}
	}
	if rounds == s.opts.Warmup {
		s.start() // no timed iteration: an empty interval
	}
	s.stop()
	s.showPerf("", size, s.opts.Iterations, 1)
	return nil
}
