package ft

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// anyLength is the expected length of a receive whose length is not
// checked.
const anyLength = -1

// pollsPerClockCheck is how many empty polls a busy wait makes between two
// looks at the clock.
const pollsPerClockCheck = 256

// isTagged reports whether the program sends tagged messages (hints' caps,
// as C decides).
func (s *Session) isTagged() bool { return s.hints.Caps&fi.CapTagged != 0 }

// progressOne reads one completion from cq and counts it, to make room
// for an operation the provider refused with FI_EAGAIN (ft_progress).
func (s *Session) progressOne(cq eq.CompletionQueue, cntr *uint64) error {
	if cq == nil {
		return nil
	}
	n, err := cq.Read(s.comp[:])
	switch {
	case n > 0:
		*cntr++
	case err == nil || err == fi.EAGAIN:
	case err == fi.EAVAIL:
		*cntr++
		return s.cqReadErr(cq)
	default:
		return callErr("fi_cq_read", err)
	}
	return nil
}

// retry is the FT_POST loop's bookkeeping for a post the provider refused
// with FI_EAGAIN: progress the queue, and give up once limit passed with
// no post accepted (C retries forever).
type retry struct {
	polls int
	start time.Time
}

func (r *retry) again(s *Session, cq eq.CompletionQueue, cntr *uint64, op string) error {
	if err := s.progressOne(cq, cntr); err != nil {
		return err
	}
	r.polls++
	if r.polls%pollsPerClockCheck != 0 {
		return nil
	}
	limit := s.limit()
	if limit <= 0 {
		return nil
	}
	now := time.Now()
	if r.start.IsZero() {
		r.start = now
	} else if now.Sub(r.start) > limit {
		return errors.Wrapf(fi.ETIMEDOUT, "%s: the provider refused it (FI_EAGAIN) for %v", op, limit)
	}
	return nil
}

// Directions of postRetry: which queue to progress and which sequence
// to count an accepted post in.
const (
	txDir = false
	rxDir = true
)

// postRetry is C's FT_POST loop: it calls post until the provider takes
// the operation, progressing the direction's CQ on FI_EAGAIN (giving up
// as retry.again says), and counts the accepted post in tx_seq or
// rx_seq. op names the call in errors.
func (s *Session) postRetry(rx bool, op string, post func() error) error {
	cq, cntr, seq := s.txcq, &s.txCQCntr, &s.txSeq
	if rx {
		cq, cntr, seq = s.rxcq, &s.rxCQCntr, &s.rxSeq
	}
	var r retry
	for {
		err := post()
		if err == nil {
			*seq++
			return nil
		}
		if err != fi.EAGAIN {
			return callErr(op, err)
		}
		if err := r.again(s, cq, cntr, op); err != nil {
			return err
		}
	}
}

// postTx posts a send of size payload bytes from txBuf (ft_post_tx): a
// tagged send with tag ftTag, or tx_seq, for tagged tests.
func (s *Session) postTx(size int, ctx any) error {
	buf := s.txBuf[:s.txPrefix+size]
	return s.postRetry(txDir, "transmit", func() error {
		if s.isTagged() {
			tag := s.ftTag
			if tag == 0 {
				tag = s.txSeq
			}
			return s.tagged.TSend(buf, s.mrDesc, s.remote, tag, ctx)
		}
		return s.msg.Send(buf, s.mrDesc, s.remote, ctx)
	})
}

// tx sends size bytes and waits for the send's completion (ft_tx),
// filling the payload with the pattern first in a timed loop under -v.
func (s *Session) tx(size int) error {
	if s.opts.Has(OptVerifyData | OptActive) {
		fillBuf(s.txBuf[s.txPrefix:][:size])
	}
	if err := s.postTx(size, &s.txCtx); err != nil {
		return err
	}
	return s.getTxComp(s.txSeq)
}

// postInject injects size bytes (ft_post_inject): no completion comes,
// so the send counts as completed at once.
func (s *Session) postInject(size int) error {
	buf := s.txBuf[:s.txPrefix+size]
	err := s.postRetry(txDir, "inject", func() error {
		if s.isTagged() {
			return s.tagged.TInject(buf, s.remote, s.txSeq)
		}
		return s.msg.Inject(buf, s.remote)
	})
	if err == nil {
		s.txCQCntr++
	}
	return err
}

// inject is ft_inject: postInject, after filling the payload in a timed
// loop under -v.
func (s *Session) inject(size int) error {
	if s.opts.Has(OptVerifyData | OptActive) {
		fillBuf(s.txBuf[s.txPrefix:][:size])
	}
	return s.postInject(size)
}

// postRx posts a receive into rxBuf of at least maxCtrlMsg bytes
// (ft_post_rx): a tagged receive of tag ftTag, or rx_seq, for tagged
// tests.
func (s *Session) postRx(size int) error {
	buf := s.rxBuf[:min(max(size, maxCtrlMsg)+s.rxPrefix, len(s.rxBuf))]
	return s.postRetry(rxDir, "receive", func() error {
		if s.isTagged() {
			tag := s.ftTag
			if tag == 0 {
				tag = s.rxSeq
			}
			return s.tagged.TRecv(buf, s.mrDesc, s.remote, tag, 0, &s.rxCtx)
		}
		return s.msg.Recv(buf, s.mrDesc, s.remote, &s.rxCtx)
	})
}

// rx waits for the next receive, which must hold size bytes, checks its
// payload in a timed loop under -v, and posts the receive again (ft_rx).
func (s *Session) rx(size int) error {
	if err := s.getRxComp(s.rxSeq, size); err != nil {
		return err
	}
	if s.opts.Has(OptVerifyData | OptActive) {
		if err := s.checkBuf(s.rxBuf[s.rxPrefix:][:size]); err != nil {
			return err
		}
	}
	return s.postRx(s.rxSize)
}

// getRxComp waits until total receives have completed (ft_get_rx_comp),
// on the receive CQ or counter. Each receive must hold expect bytes
// (anyLength: any), and for tagged tests carry the tag due.
func (s *Session) getRxComp(total uint64, expect int) error {
	s.lastRxLen = anyLength
	switch {
	case s.opts.Has(OptRxCQ):
		return s.getCQComp(s.rxcq, &s.rxCQCntr, total, true, expect, s.rxTimeout())
	case s.rxcntr != nil:
		return s.getCntrComp(s.rxcntr, total, s.rxTimeout(), "receive")
	}
	return errors.Wrap(fi.EOTHER, "Trying to get a RX completion when no RX CQ or counter were opened")
}

// getTxComp waits until total sends have completed (ft_get_tx_comp).
func (s *Session) getTxComp(total uint64) error {
	switch {
	case s.opts.Has(OptTxCQ):
		return s.getCQComp(s.txcq, &s.txCQCntr, total, false, anyLength, s.limit())
	case s.txcntr != nil:
		return s.getCntrComp(s.txcntr, total, s.limit(), "transmit")
	}
	return errors.Wrap(fi.EOTHER, "Trying to get a TX completion when no TX CQ or counter were opened")
}

// getCQComp reads cq until *cur reaches total (ft_get_cq_comp), the
// completion method's way: busy polling (spin), or blocking reads (sread,
// yield). A wait that sees no completion for timeout (0: no bound) fails
// with fi.ENODATA, as C's "timeout expired"; an error entry is read and
// returned.
func (s *Session) getCQComp(cq eq.CompletionQueue, cur *uint64, total uint64, rx bool, expect int, timeout time.Duration) error {
	var err error
	switch s.opts.CompMethod {
	case CompWaitFD:
		err = s.fdWaitForComp(cq, cur, total, rx, expect, timeout)
	case CompSRead, CompYield, CompWaitSet:
		err = s.waitForComp(cq, cur, total, rx, expect, timeout)
	default:
		err = s.spinForComp(cq, cur, total, rx, expect, timeout)
	}
	if errors.Is(err, fi.EAVAIL) {
		*cur++
		return s.cqReadErr(cq)
	}
	return err
}

// spinForComp is ft_spin_for_comp: fi_cq_read in a loop.
func (s *Session) spinForComp(cq eq.CompletionQueue, cur *uint64, total uint64, rx bool, expect int, timeout time.Duration) error {
	var start time.Time
	polls := 0
	for *cur < total {
		n, err := cq.Read(s.comp[:])
		if n > 0 {
			if err := s.checkComp(rx, expect); err != nil {
				return err
			}
			*cur++
			polls, start = 0, time.Time{}
			continue
		}
		if err != nil && err != fi.EAGAIN {
			return err
		}
		if timeout <= 0 {
			continue
		}
		if polls++; polls%pollsPerClockCheck != 0 {
			continue
		}
		now := time.Now()
		if start.IsZero() {
			start = now
		} else if now.Sub(start) > timeout {
			return s.timeoutErr(timeout, rx, *cur, total)
		}
	}
	return nil
}

// waitForComp is ft_wait_for_comp: fi_cq_sread until the count is
// reached.
func (s *Session) waitForComp(cq eq.CompletionQueue, cur *uint64, total uint64, rx bool, expect int, timeout time.Duration) error {
	for *cur < total {
		ctx := s.arm(timeout)
		n, err := cq.SRead(ctx, s.comp[:])
		expired := s.disarm()
		if n > 0 {
			if err := s.checkComp(rx, expect); err != nil {
				return err
			}
			*cur++
			continue
		}
		switch {
		case expired:
			return s.timeoutErr(timeout, rx, *cur, total)
		case errors.Is(err, fi.EAVAIL):
			return fi.EAVAIL
		case err != nil && fi.Code(err) != fi.EAGAIN:
			return callErr("fi_cq_sread", err)
		}
	}
	return nil
}

// fdWaitForComp is ft_fdwait_for_comp (-c fd): when fi_trywait says the
// queue may be waited on, poll(2) its wait descriptor, then fi_cq_read.
// A poll that sees nothing for timeout (0: no bound) fails as C's
// does; the session's end (a signal) is noticed within a second.
func (s *Session) fdWaitForComp(cq eq.CompletionQueue, cur *uint64, total uint64, rx bool, expect int, timeout time.Duration) error {
	fd, err := eq.WaitFD(cq)
	if err != nil {
		return callErr("fi_control(FI_GETWAIT)", err)
	}
	w := cq.(eq.FDWaiter) // eq.WaitFD succeeded
	for *cur < total {
		switch err := w.TryWait(); {
		case err == nil:
			if err := s.pollFD(fd, timeout); err != nil {
				if fi.Code(err) == fi.ETIMEDOUT {
					return s.timeoutErr(timeout, rx, *cur, total)
				}
				return err
			}
		case err != fi.EAGAIN:
			return callErr("fi_trywait", err)
		}
		n, err := cq.Read(s.comp[:])
		if n > 0 {
			if err := s.checkComp(rx, expect); err != nil {
				return err
			}
			*cur++
			continue
		}
		if err != nil && err != fi.EAGAIN {
			return err
		}
	}
	return nil
}

// pollFD waits until fd is readable: fi.ETIMEDOUT after timeout (when
// positive), the session's error when it ends.
func (s *Session) pollFD(fd int, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		slice := time.Second
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return fi.ETIMEDOUT
			}
			slice = min(slice, left)
		}
		ready, err := pollReadable(fd, slice)
		switch {
		case err != nil:
			return callErr("poll", err)
		case ready:
			return nil
		}
	}
}

// checkComp checks the completion just read: a receive's tag (tagged
// tests: ftTag, or the number of receives completed before it, as C's
// ft_tag_is_valid; within the window for bandwidth tests) and, unless
// expect is anyLength, its length. C does not check lengths; ft does, so
// that a peer sending sizes the test does not expect is caught.
func (s *Session) checkComp(rx bool, expect int) error {
	c := &s.comp[0]
	if !rx || (s.rxcq == s.txcq && c.Flags&fi.FlagRecv == 0) {
		return nil
	}
	if s.isTagged() {
		want := s.ftTag
		if want == 0 {
			want = s.rxCQCntr
		}
		valid := c.Tag == want
		if s.opts.Has(OptBW) {
			w := uint64(s.opts.WindowSize)
			valid = want < c.Tag+w && c.Tag < want+w
		}
		if !valid {
			return errors.Wrapf(fi.EOTHER, "Tag mismatch!. Expected: %d, actual: %d", want, c.Tag)
		}
	}
	n := c.Len - s.rxPrefix
	s.lastRxLen = n
	if n < 0 || n > len(s.rxBuf)-s.rxPrefix {
		return errors.Wrapf(fi.EMSGSIZE, "a receive completed with %d bytes, which the %d-byte buffer cannot hold", c.Len, len(s.rxBuf))
	}
	if expect != anyLength && n != expect {
		return errors.Wrapf(fi.EMSGSIZE, "received a %d-byte message where the test expects %d bytes (does the peer run the same sizes?)", n, expect)
	}
	return nil
}

// cqReadErr reads the error entry at the head of cq and returns it as
// C's ft_cq_readerr reports it.
func (s *Session) cqReadErr(cq eq.CompletionQueue) error {
	e, err := cq.ReadErr()
	if err != nil {
		return callErr("fi_cq_readerr", err)
	}
	return errors.Wrapf(e, "cq_readerr %d (%v), provider errno: %d", int(e.Err), e.Err, e.ProvErrno)
}

// timeoutErr is C's "Ns timeout expired" (FI_ENODATA).
func (s *Session) timeoutErr(timeout time.Duration, rx bool, cur, total uint64) error {
	kind := "transmit"
	if rx {
		kind = "receive"
	}
	return errors.Wrapf(fi.ENODATA, "%ds timeout expired: %d of %d %s completions after %v without one", int(timeout/time.Second), cur, total, kind, timeout)
}

// getCntrComp waits until cntr reaches total (ft_get_cntr_comp): reading
// it in a loop (spin), or with fi_cntr_wait (the other methods). A rise of
// the counter's error count fails the wait (C waits on).
func (s *Session) getCntrComp(cntr eq.Counter, total uint64, timeout time.Duration, kind string) error {
	errs := cntr.ReadErr()
	if s.opts.CompMethod == CompSpin {
		var start time.Time
		polls := 0
		last := cntr.Read()
		for last < total {
			if polls++; polls%pollsPerClockCheck == 0 {
				if e := cntr.ReadErr(); e != errs {
					return s.cntrErr(kind, e-errs, last, total)
				}
				if timeout > 0 {
					now := time.Now()
					if start.IsZero() {
						start = now
					} else if now.Sub(start) > timeout {
						return s.cntrTimeout(kind, timeout, last, total)
					}
				}
			}
			if v := cntr.Read(); v != last {
				last, polls, start = v, 0, time.Time{}
			}
		}
		return nil
	}
	for {
		ctx := s.arm(timeout)
		err := cntr.Wait(ctx, total)
		expired := s.disarm()
		switch {
		case err == nil:
			return nil
		case expired:
			return s.cntrTimeout(kind, timeout, cntr.Read(), total)
		case errors.Is(err, fi.EAVAIL):
			return s.cntrErr(kind, cntr.ReadErr()-errs, cntr.Read(), total)
		default:
			return callErr("fi_cntr_wait", err)
		}
	}
}

func (s *Session) cntrErr(kind string, errs, have, total uint64) error {
	return errors.Wrapf(fi.EIO, "the %s counter counts %d failed operations (%d of %d succeeded)", kind, errs, have, total)
}

func (s *Session) cntrTimeout(kind string, timeout time.Duration, have, total uint64) error {
	return errors.Wrapf(fi.ENODATA, "%ds timeout expired: the %s counter stayed at %d of %d for %v", int(timeout/time.Second), kind, have, total, timeout)
}

// arm returns the context of one blocking wait bounded by timeout (0: no
// bound). One cancelable context and one timer serve every wait of the
// run: a wait that expires ends the run, so the context is never needed
// again, and re-arming the timer does not allocate.
func (s *Session) arm(timeout time.Duration) context.Context {
	if timeout <= 0 {
		return s.ctx
	}
	if s.waitCtx == nil {
		s.waitCtx, s.waitCancel = context.WithCancel(s.ctx)
		s.waitTimer = time.AfterFunc(timeout, s.waitCancel)
	} else {
		s.waitTimer.Reset(timeout)
	}
	return s.waitCtx
}

// disarm stops the timer arm started and reports whether it expired.
func (s *Session) disarm() bool {
	if s.waitTimer == nil {
		return false
	}
	s.waitTimer.Stop()
	return s.waitCtx.Err() != nil
}

// sync makes the two sides meet (ft_sync): the client sends one byte and
// waits for the server's, over the fabric, or over the out-of-band
// socket with -b.
func (s *Session) sync() error {
	var b [1]byte
	oob := s.opts.Has(OptOOBSync)
	if s.opts.IsClient() {
		if oob {
			if err := s.oob.send(b[:]); err != nil {
				return errors.Wrap(err, "ft_sync")
			}
			return errors.Wrap(s.oob.recv(b[:]), "ft_sync")
		}
		if err := s.tx(1); err != nil {
			return errors.Wrap(err, "ft_sync")
		}
		return errors.Wrap(s.rx(1), "ft_sync")
	}
	if oob {
		if err := s.oob.recv(b[:]); err != nil {
			return errors.Wrap(err, "ft_sync")
		}
		return errors.Wrap(s.oob.send(b[:]), "ft_sync")
	}
	if err := s.rx(1); err != nil {
		return errors.Wrap(err, "ft_sync")
	}
	return errors.Wrap(s.tx(1), "ft_sync")
}

// finalize is ft_finalize (ft_finalize_ep): a 4-byte send with
// FI_TRANSMIT_COMPLETE, then the wait for its completion and for the
// peer's, so that neither side closes while the other still sends.
//
// Unlike C, on a connected endpoint a send that completes with
// FI_ECANCELED (flushed) counts when the peer's own message then
// arrives: the peer disconnects only once it has received ours, and over
// RDMA (Soft-RoCE) its disconnect can reach us before the
// acknowledgement of our send does, which flushes a send that was
// delivered. Without the peer's message the error stands.
func (s *Session) finalize() error {
	err := s.postRetry(txDir, "ft_finalize: sendmsg", func() error {
		if s.isTagged() {
			s.tfin.Addr, s.tfin.Tag = s.remote, s.txSeq
			return s.tagged.TSendMsg(&s.tfin, fi.FlagTransmitComplete)
		}
		s.fin.Addr = s.remote
		return s.msg.SendMsg(&s.fin, fi.FlagTransmitComplete)
	})
	if err != nil {
		return err
	}
	txErr := s.getTxComp(s.txSeq)
	if txErr != nil && !(s.info.EPAttr.Type == fi.EPTypeMsg && fi.Code(txErr) == fi.ECANCELED) {
		return errors.Wrap(txErr, "ft_finalize")
	}
	if err := s.getRxComp(s.rxSeq, 4); err != nil {
		if txErr != nil {
			return errors.Wrap(txErr, "ft_finalize")
		}
		return errors.Wrap(err, "ft_finalize")
	}
	return nil
}
