package ft

import (
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// RMA: the exchange of memory keys (ft_exchange_keys), posting RMA
// operations (ft_post_rma, ft_post_rma_inject) and benchmark_shared.c's
// bandwidth_rma(), which rma_bw runs.

// keyBlockSize is sizeof(struct fi_rma_iov): addr, len and key, 8 bytes
// each in the host's byte order, the block ft_exchange_keys sends.
const keyBlockSize = 24

// remoteMR is a peer's memory window as ft_exchange_keys gets it (struct
// fi_rma_iov): the address to pass to RMA calls (a virtual address with
// FI_MR_VIRT_ADDR, else an offset into the MR), its length and its key.
type remoteMR struct {
	addr, len, key uint64
}

// rmaEP returns the endpoint's RMA operations.
func (s *Session) rmaEP() (ep.RMA, error) {
	r, ok := s.ep.(ep.RMA)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "fi_write: %s's endpoint has no RMA operations", s.info.FabricAttr.ProvName)
	}
	return r, nil
}

// exchangeKeys sends the peer the window of this side's receive buffer,
// which the peer's RMA operations target, and reads the peer's
// (ft_exchange_keys): a 24-byte fi_rma_iov as a message each way, then a
// new receive and an ft_sync. The address is the buffer's virtual address
// with FI_MR_VIRT_ADDR (or FI_MR_BASIC), else its offset in the MR; the
// key is fi_mr_key's. C leaves the length field uninitialized; ft sends
// the buffer's length. A peer's block shorter than 24 bytes is refused
// with fi.EMSGSIZE.
func (s *Session) exchangeKeys() (remoteMR, error) {
	var peer remoteMR
	mode := s.info.DomainAttr.MRMode
	if mode&fi.MRModeRaw != 0 {
		return peer, errors.Wrapf(fi.ENOSYS, "fi_mr_raw_attr: %s asks for FI_MR_RAW keys, which ft does not exchange", s.info.FabricAttr.ProvName)
	}
	if s.mr == nil {
		return peer, errors.AssertionFailedf("ft: an RMA test without a registered buffer")
	}
	own := remoteMR{addr: uint64(s.rxPrefix), len: uint64(len(s.rxBuf) - s.rxPrefix), key: s.mr.Key()}
	if mode == fi.MRModeBasic || mode&fi.MRModeVirtAddr != 0 {
		own.addr = uint64(uintptrOf(s.rxBuf[s.rxPrefix:]))
	}
	b := s.txBuf[s.txPrefix:][:keyBlockSize]
	binary.NativeEndian.PutUint64(b[0:], own.addr)
	binary.NativeEndian.PutUint64(b[8:], own.len)
	binary.NativeEndian.PutUint64(b[16:], own.key)
	if err := s.tx(keyBlockSize); err != nil {
		return peer, errors.Wrap(err, "ft_exchange_keys: sending our key")
	}
	if err := s.getRxComp(s.rxSeq, anyLength); err != nil {
		return peer, errors.Wrap(err, "ft_exchange_keys: waiting for the peer's key")
	}
	if s.lastRxLen != anyLength && s.lastRxLen < keyBlockSize {
		return peer, errors.Wrapf(fi.EMSGSIZE, "ft_exchange_keys: the peer's key block is %d bytes; an fi_rma_iov is %d", s.lastRxLen, keyBlockSize)
	}
	r := s.rxBuf[s.rxPrefix:][:keyBlockSize]
	peer = remoteMR{addr: binary.NativeEndian.Uint64(r[0:]), len: binary.NativeEndian.Uint64(r[8:]), key: binary.NativeEndian.Uint64(r[16:])}
	if err := s.postRx(s.rxSize); err != nil {
		return peer, err
	}
	return peer, errors.Wrap(s.sync(), "ft_exchange_keys")
}

// cqData is the remote CQ data rma_bw's writes carry (ft_init_cq_data):
// 0x0123456789abcdef cut to the domain's cq_data_size.
func (s *Session) cqData() uint64 {
	const data = 0x0123456789abcdef
	n := s.info.DomainAttr.CQDataSize
	if n >= 8 {
		return data
	}
	return data & (1<<(8*uint(n)) - 1)
}

// postRMA posts one RMA operation of size bytes against the peer's
// window (ft_post_rma): a write or a write with CQ data from the transmit
// buffer, or a read into the receive buffer. A refused post (FI_EAGAIN)
// is retried after reading a transmit completion.
func (s *Session) postRMA(op RMAOp, size int, peer remoteMR, ctx any) error {
	r, err := s.rmaEP()
	if err != nil {
		return err
	}
	name := rmaCall(op, false)
	var rt retry
	for {
		switch op {
		case RMAWrite:
			err = r.Write(s.txBuf[:size], s.mrDesc, s.remote, peer.addr, peer.key, ctx)
		case RMAWriteData:
			err = r.WriteData(s.txBuf[:size], s.mrDesc, s.cqData(), s.remote, peer.addr, peer.key, ctx)
		case RMARead:
			err = r.Read(s.rxBuf[:size], s.mrDesc, s.remote, peer.addr, peer.key, ctx)
		default:
			return errors.AssertionFailedf("ft: unknown RMA operation %d", op)
		}
		if err == nil {
			s.txSeq++
			return nil
		}
		if err != fi.EAGAIN {
			return callErr(name, err)
		}
		if err := rt.again(s, s.txcq, &s.txCQCntr, name); err != nil {
			return err
		}
	}
}

// postRMAInject injects a write, or a write with CQ data, of size bytes
// (ft_post_rma_inject): no completion comes, so it counts as completed at
// once.
func (s *Session) postRMAInject(op RMAOp, size int, peer remoteMR) error {
	r, err := s.rmaEP()
	if err != nil {
		return err
	}
	name := rmaCall(op, true)
	var rt retry
	for {
		switch op {
		case RMAWrite:
			err = r.InjectWrite(s.txBuf[:size], s.remote, peer.addr, peer.key)
		case RMAWriteData:
			err = r.InjectWriteData(s.txBuf[:size], s.cqData(), s.remote, peer.addr, peer.key)
		default:
			return errors.AssertionFailedf("ft: RMA operation %d cannot be injected", op)
		}
		if err == nil {
			s.txSeq++
			s.txCQCntr++
			return nil
		}
		if err != fi.EAGAIN {
			return callErr(name, err)
		}
		if err := rt.again(s, s.txcq, &s.txCQCntr, name); err != nil {
			return err
		}
	}
}

// rmaCall is the libfabric call an RMA operation is posted with.
func rmaCall(op RMAOp, inject bool) string {
	switch {
	case op == RMARead:
		return "fi_read"
	case op == RMAWriteData && inject:
		return "fi_inject_writedata"
	case op == RMAWriteData:
		return "fi_writedata"
	case inject:
		return "fi_inject_write"
	}
	return "fi_write"
}

// bwRMAComp ends a window of RMA operations (bw_rma_comp): writes with CQ
// data end as a message window does (the client waits for its writes and
// the server's acknowledgement, the server for the writes' completions,
// whose lengths it does not check, then acknowledges); writes and reads
// end when their transmit completions are in.
func (s *Session) bwRMAComp(op RMAOp) error {
	if op != RMAWriteData {
		return s.getTxComp(s.txSeq)
	}
	if s.opts.IsClient() {
		return s.bwTxComp()
	}
	return s.bwRxComp(anyLength)
}

// bandwidthRMA is benchmark_shared.c's bandwidth_rma(): after an
// ft_sync, Warmup+Iterations RMA operations of TransferSize bytes in
// windows of -W. Writes and reads run on both sides at once (the
// bandwidth is both directions'); writes with CQ data go from the client
// to the server, which posts a receive for each when the provider needs
// one (FI_RX_CQ_DATA) and checks its buffer under -v. Writes below the
// inject size are injected. As in bandwidth, -v fills the payload once a
// size rather than before every write.
func (s *Session) bandwidthRMA(w *window, peer remoteMR) error {
	if err := s.checkBandwidthSize(); err != nil {
		return err
	}
	op, size, inject := s.opts.RMAOp, s.opts.TransferSize, s.injectSize()
	if err := s.sync(); err != nil {
		return err
	}
	if op == RMAWriteData && s.opts.IsClient() && s.opts.Has(OptVerifyData) {
		fillBuf(s.txBuf[s.txPrefix:][:size])
	}
	rxCQData := s.info.RxAttr != nil && s.info.RxAttr.Mode&fi.ModeRxCQData != 0
	rounds := s.opts.Iterations + s.opts.Warmup
	j := 0
	for i := 0; i < rounds; i++ {
		if i == s.opts.Warmup {
			s.start()
		}
		var err error
		switch {
		case op == RMARead:
			err = s.postRMA(op, size, peer, &w.tx[j])
		case op == RMAWriteData && !s.opts.IsClient():
			if rxCQData {
				err = s.postRx(0)
			} else {
				// No receive to post: count one, so that the window
				// waits for the write's completion.
				s.rxSeq++
			}
		case size < inject:
			err = s.postRMAInject(op, size, peer)
		default:
			err = s.postRMA(op, size, peer, &w.tx[j])
		}
		if err != nil {
			return s.inLoop(err, i)
		}
		if j++; j == len(w.tx) {
			if err := s.bwRMAComp(op); err != nil {
				return s.inLoop(err, i)
			}
			j = 0
		}
	}
	if err := s.bwRMAComp(op); err != nil {
		return s.inLoop(err, rounds-1)
	}
	if rounds == s.opts.Warmup {
		s.start()
	}
	s.stop()
	s.showPerf("", size, s.opts.Iterations, 1)
	return nil
}
