package ft

import (
	"io"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// multi_recv (functional/multi_recv.c): a stream of messages into
// multi-receive buffers (FI_MULTI_RECV, fi_msg(3)). Both sides post two
// buffers of half a receive region each, the region holding 128 messages
// of the transfer size (1024, -S) but at most 4 MiB, with FI_MULTI_RECV in
// the receive op flags (fi_recv), or with -M on each fi_recvmsg, and
// FI_OPT_MIN_MULTI_RECV set to the transfer size; after a meeting over
// the out-of-band socket (always on: port 3000 unless -E or -b name one)
// the client sends -I messages (1000), each waited for, and the server
// takes their completions: each must carry the transfer size and a part
// of the region other than the previous one's (checked against the
// pattern under -v), and the completion flagged FI_MULTI_RECV must come
// after as many messages as one buffer holds, whereupon that buffer is
// posted again. Both sides print show_perf's row, then meet once more.
// -e rdm (the default) runs it between RDM endpoints, -e msg over a
// connection.
//
// C's main takes -M as its own: it is not -M <mode> here. It refuses
// sizes above 1 MiB with EIO before anything else, as ft does; ft also
// refuses -S 0 with EINVAL (C divides by zero).
func init() {
	register(&program{
		name:      "multi_recv",
		desc:      "Streaming RDM client-server using multi recv buffer.",
		optstring: uniqueOpts("Mhv" + optsCS + optsInfo),
		usage: functionalUsage(true, func(w io.Writer) {
			opt(w, "-M", "post the buffers with fi_recvmsg and FI_MULTI_RECV, not fi_recv and op flags")
			opt(w, "-v", "fill and check the payloads")
		}),
		init: func(s *Session) {
			s.opts.Flags |= OptSize | OptSkipMsgAlloc | OptOOBCtrl
			s.local = &multiRecv{}
		},
		parse: func(s *Session, o getopt.Option) (bool, error) {
			if o.Short != 'M' {
				return false, nil
			}
			s.local.(*multiRecv).recvMsg = true
			return true, nil
		},
		setup: func(s *Session) error {
			switch size := s.opts.TransferSize; {
			case size > multiRecvMaxXfer:
				return errors.Wrapf(fi.EIO, "Use smaller transfer size (max %d)", multiRecvMaxXfer)
			case size == 0:
				return errors.Wrap(fi.EINVAL, "-S 0: multi_recv counts the messages a buffer holds by their size, which must be at least 1 byte")
			}
			h := s.hints
			h.Caps = fi.CapMsg | fi.CapMultiRecv
			h.Mode = fi.ModeContext
			h.DomainAttr.MRMode = s.opts.MRMode
			h.RxAttr.OpFlags = fi.FlagMultiRecv
			s.cqFormat = eq.FormatData
			return nil
		},
		run: func(s *Session) error {
			if err := s.initEndpoint(); err != nil {
				return err
			}
			m := s.local.(*multiRecv)
			defer m.close()
			if err := s.multiRecvAlloc(m); err != nil {
				return err
			}
			if err := ep.SetOpt(s.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv, s.opts.TransferSize); err != nil {
				return callErr("fi_setopt(FI_OPT_MIN_MULTI_RECV)", err)
			}
			for i := range m.ctx {
				if err := s.multiRecvPost(m, i); err != nil {
					return err
				}
			}
			err := s.multiRecvTest(m)
			// The last meeting's result is ignored, as in C.
			_ = s.sync()
			return err
		},
	})
}

// multiRecvMaxXfer is MAX_XFER_SIZE: the largest transfer size, and a
// quarter of the largest receive region.
const multiRecvMaxXfer = 1 << 20

// multiRecv is multi_recv's state: its option and the receive region.
type multiRecv struct {
	recvMsg bool // -M: fi_recvmsg with FI_MULTI_RECV

	// rx is the receive region, posted as two buffers of half its size;
	// mr and desc are its registration (mr_multi_recv), nil when the
	// domain needs none.
	rx   []byte
	mr   fi.MR
	desc any
	// ctx are the two buffers' contexts (ctx_multi_recv).
	ctx [2]opContext
	// perBuf is how many messages fill one buffer (comp_per_buf).
	perBuf int
	msg    ep.Message
}

// close closes the receive region's MR (free_res: before the endpoint, as
// in C).
func (m *multiRecv) close() {
	if m.mr != nil {
		_ = m.mr.Close()
		m.mr = nil
	}
}

// multiRecvAlloc is alloc_ep_res: a transmit buffer of the transfer size,
// registered for sends (FT_MR_KEY), and the receive region of 128
// messages, at most 4 MiB, registered for receives (FT_MR_KEY + 1).
func (s *Session) multiRecvAlloc(m *multiRecv) error {
	size := s.opts.TransferSize
	if size > s.maxMsgSize() {
		return errors.Wrapf(fi.EOTHER, "transfer size is larger than the maximum size of the data transfer supported by the provider (%s: %d)",
			s.info.FabricAttr.ProvName, s.maxMsgSize())
	}
	s.txSize = size + s.txPrefix
	s.txBuf = alloc(s.txSize, false)
	mr, desc, err := s.regMR(s.txBuf, fi.Access(fi.CapSend), mrKey)
	if err != nil {
		return err
	}
	s.mr, s.mrDesc = mr, desc

	rxSize := min(size*128, multiRecvMaxXfer*4)
	m.perBuf = rxSize / 2 / size
	m.rx = alloc(rxSize, false)
	s.rxBuf, s.rxSize = m.rx, rxSize
	if m.mr, m.desc, err = s.regMR(m.rx, fi.Access(fi.CapRecv), mrKey+1); err != nil {
		return err
	}
	m.ctx = [2]opContext{{"multi-receive buffer 0"}, {"multi-receive buffer 1"}}
	m.msg = ep.Message{IOV: make([][]byte, 1), Desc: []any{m.desc}, Addr: s.remote}
	return nil
}

// multiRecvPost posts buffer i, the i-th half of the receive region
// (repost_recv): with fi_recv and the op flags' FI_MULTI_RECV, or with -M
// fi_recvmsg and the flag. C posts once, without FT_POST's retries: a
// retry would read the completions the test waits for.
func (s *Session) multiRecvPost(m *multiRecv, i int) error {
	half := len(m.rx) / 2
	buf := m.rx[i*half : (i+1)*half : (i+1)*half]
	if m.recvMsg {
		m.msg.IOV[0], m.msg.Context = buf, &m.ctx[i]
		if err := s.msg.RecvMsg(&m.msg, fi.FlagMultiRecv); err != nil {
			return callErr("fi_recvmsg", err)
		}
	} else if err := s.msg.Recv(buf, m.desc, s.remote, &m.ctx[i]); err != nil {
		return callErr("fi_recv", err)
	}
	return nil
}

// multiRecvTest is run_test: a meeting, then the client's sends or the
// server's receives, timed, and the result row.
func (s *Session) multiRecvTest(m *multiRecv) error {
	if err := s.sync(); err != nil {
		return err
	}
	size := s.opts.TransferSize
	s.start()
	if s.opts.IsClient() {
		for i := 0; i < s.opts.Iterations; i++ {
			if err := s.tx(size); err != nil {
				return errors.Wrapf(err, "message %d of %d", i+1, s.opts.Iterations)
			}
		}
	} else if err := s.multiRecvWait(m, s.opts.Iterations); err != nil {
		return err
	}
	s.stop()
	s.showPerf("", size, s.opts.Iterations, 1)
	return nil
}

// multiRecvWait takes n receive completions (wait_for_recv_completion),
// reading the receive CQ one entry at a time as C does, and checks each:
// the transfer size; a part of the receive region, not the one the
// previous message took (ft also wants the whole message inside the
// region); the pattern under -v; and, on the completion flagged
// FI_MULTI_RECV (on a message or an entry of its own), that its buffer
// took exactly perBuf messages: that buffer is then posted again. A wait
// that sees no completion for the receive timeout fails with ENODATA.
func (s *Session) multiRecvWait(m *multiRecv, n int) error {
	size := s.opts.TransferSize
	lo := uintptrOf(m.rx)
	hi := lo + uintptr(len(m.rx))
	var last uintptr
	perBuf, got := 0, 0
	timeout := s.rxTimeout()
	var start time.Time
	polls := 0
	for got < n {
		k, err := s.rxcq.Read(s.comp[:])
		switch {
		case k > 0:
			polls, start = 0, time.Time{}
		case err == nil || err == fi.EAGAIN:
			if timeout <= 0 {
				continue
			}
			if polls++; polls%pollsPerClockCheck != 0 {
				continue
			}
			if now := time.Now(); start.IsZero() {
				start = now
			} else if now.Sub(start) > timeout {
				return s.timeoutErr(timeout, true, uint64(got), uint64(n))
			}
			continue
		case err == fi.EAVAIL:
			return s.cqReadErr(s.rxcq)
		default:
			return callErr("fi_cq_read", err)
		}
		c := &s.comp[0]
		if c.Flags&fi.FlagRecv != 0 {
			if c.Len-s.rxPrefix != size {
				return errors.Wrapf(fi.EIO, "completion length %d, expected %d (message %d of %d; does the peer run the same -S?)", c.Len-s.rxPrefix, size, got+1, n)
			}
			p := uintptrOf(c.Buf)
			if len(c.Buf) == 0 || p < lo || p >= hi || p == last {
				return errors.Wrapf(fi.EIO, "returned completion buffer %#x out of range (message %d of %d: the receive region is %#x-%#x, the previous message's part %#x)",
					p, got+1, n, lo, hi, last)
			}
			if p+uintptr(len(c.Buf)) > hi || len(c.Buf) < c.Len {
				return errors.Wrapf(fi.EIO, "message %d of %d: its %d bytes at %#x (a part of %d bytes) reach past the receive region %#x-%#x",
					got+1, n, c.Len, p, len(c.Buf), lo, hi)
			}
			if s.opts.Has(OptVerifyData | OptActive) {
				if err := s.checkBuf(c.Buf[s.rxPrefix:][:size]); err != nil {
					return errors.Wrapf(err, "message %d of %d", got+1, n)
				}
			}
			perBuf++
			got++
			last = p
		}
		if c.Flags&fi.FlagMultiRecv != 0 {
			if perBuf != m.perBuf {
				return errors.Wrapf(fi.EIO, "Received %d completions per buffer, expected %d", perBuf, m.perBuf)
			}
			perBuf = 0
			i := 0
			switch c.Context {
			case &m.ctx[0]:
			case &m.ctx[1]:
				i = 1
			default:
				return errors.Wrapf(fi.EOTHER, "an FI_MULTI_RECV completion came with the context %v, which is neither buffer's", c.Context)
			}
			if err := s.multiRecvPost(m, i); err != nil {
				return err
			}
		}
	}
	return nil
}
