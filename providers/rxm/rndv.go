package rxm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// The read-based rendezvous (C's rxm_msg.c rxm_send_rndv and rxm_cq.c
// rxm_handle_rndv, docs/wire-tcp.md §3.5), for messages above the eager
// limit. The sender registers its buffers with the core domain for
// remote reads, under rxm's own keys, and sends a rendezvous request:
// the rxm header and a descriptor of those buffers. The receiver, once a
// receive matches the request (posted first or later), reads the data
// into the receive's buffers with one core read per remote buffer, then
// sends read-done, which echoes the request's msg_id; the receive
// completes when that send completes, the send when read-done arrives.

// rxmKeyBase is the high bit of rxm's internal MR keys (C's
// FI_PROV_SPECIFIC on its key counter).
const rxmKeyBase = 0x80000000

// keyTries is how many keys an internal registration tries before it
// gives up on fi.ENOKEY (C's rxm_msg_mr_reg_internal).
const keyTries = 1024

// registerInternal registers b with the core domain for access (the
// peers' reads of a rendezvous send; the core's own use of a buffer under
// FI_MR_LOCAL) under the next rxm key, trying further keys while the core
// says a key is taken (a core that chooses its keys ignores rxm's).
func (d *domain) registerInternal(b []byte, access fi.Access) (fi.MR, error) {
	var err error
	for range keyTries {
		key := rxmKeyBase | uint64(d.mrKey.Add(1)-1)&(rxmKeyBase-1)
		var mr fi.MR
		mr, err = fi.RegisterMR(d.core, &fi.MRAttr{Buf: b, Access: access, RequestedKey: key}, 0)
		if err == nil {
			return mr, nil
		}
		if !errors.Is(err, fi.ENOKEY) {
			break
		}
	}
	return nil, errors.Wrapf(err, "%s: register %d bytes", d.fabric.Prov(), len(b))
}

// sendRndv sends the rendezvous request for op over c in tx, whose
// header h is filled but for type and msg_id; mu is held. On an error tx
// is freed.
func (e *endpoint) sendRndv(c *conn, tx *txBuf, op *kit.Op, h *rxmwire.Header) error {
	tx.kind, tx.conn, tx.awaitsPeer = txRndv, c, true
	e.rndvOut++
	var bufs [iovLimit][]byte
	n, err := op.CopyIOV(bufs[:], e.domain.fabric.Prov())
	if err != nil {
		e.putTx(tx)
		return err
	}
	virt := e.domain.coreInfo.DomainAttr != nil && e.domain.coreInfo.DomainAttr.MRMode&fi.MRModeVirtAddr != 0
	var desc rxmwire.RndvDesc
	for i, b := range bufs[:n] {
		if len(b) == 0 {
			continue
		}
		var key uint64
		if m, ok := appMR(op, i); ok && e.mrLocal {
			// Under FI_MR_LOCAL the application's region serves (C's
			// rxm_send_rndv with a desc).
			key = m.core.Key()
		} else {
			mr, err := e.domain.registerInternal(b, fi.AccessRemoteRead)
			if err != nil {
				e.putTx(tx)
				return fi.Code(err)
			}
			tx.mrs[desc.Count], key = mr, mr.Key()
		}
		var addr uint64
		if virt {
			addr = bufAddr(b)
		}
		desc.IOV[desc.Count] = rxmwire.RMAIOV{Addr: addr, Len: uint64(len(b)), Key: key}
		desc.Count++
	}
	h.Type, h.MsgID = rxmwire.TypeRndvReq, uint64(tx.gen)<<32|uint64(tx.idx)
	rxmwire.PutHeader(tx.hdr[:], h)
	rxmwire.PutRndv(tx.hdr[rxmwire.HeaderSize:], &desc)
	tx.iov[0] = tx.hdr[:]
	tx.msg = ep.Message{IOV: tx.iov[:1], Addr: fi.AddrUnspec, Context: tx}
	if e.mrLocal {
		if err := e.bounceOf(tx); err != nil {
			e.putTx(tx)
			return err
		}
		tx.iov[0] = tx.bounce[:copy(tx.bounce, tx.hdr[:])]
		tx.desc[0] = tx.bdesc
		tx.msg.Desc = tx.desc[:1]
	}
	if err := c.msg.SendMsg(&tx.msg, 0); err != nil {
		e.putTx(tx)
		return transient(err)
	}
	return nil
}

// readDoneArrived completes the rendezvous send msgID names, which went
// over c, once its request's send completed too: false when there is no
// such send (a protocol violation). mu is held.
func (e *endpoint) readDoneArrived(c *conn, msgID uint64) bool {
	idx, gen := uint32(msgID), uint32(msgID>>32)
	if int(idx) >= len(e.txs) {
		return false
	}
	tx := e.txs[idx]
	if !tx.inUse || tx.kind != txRndv || tx.gen != gen || tx.conn != c || tx.done {
		return false
	}
	tx.done = true
	if tx.sent {
		e.txDone(tx, 0, 0)
	}
	return true
}

// arrivedRndv takes a rendezvous request: a posted receive it matches
// starts reading, else it waits as unexpected. False: the descriptor is
// bad. mu is held.
func (e *endpoint) arrivedRndv(c *conn, h *rxmwire.Header, body []byte) bool {
	m := unexpected{src: e.srcOf(c), tagged: h.Op == rxmwire.OpTagged, tag: h.Tag, cqData: h.Data, hasCQ: h.HasCQData(),
		rndv: true, size: h.Size, msgID: h.MsgID, conn: c}
	if rxmwire.ParseRndv(body, h.Size, &m.desc) != nil || h.Size > uint64(maxInt) {
		return false
	}
	if i := e.match(m.tagged, m.tag, m.src); i >= 0 {
		r := e.takeRecv(i, m.size)
		e.startRndv(c, &r, &m)
		return true
	}
	e.unexp = append(e.unexp, m)
	return true
}

// rndvPhase is where a rendezvous receive is.
type rndvPhase uint8

const (
	phReading  rndvPhase = iota // reads posted, or to post
	phDone                      // read-done to send
	phDoneSent                  // read-done sent: its completion ends the receive
	phFinished                  // to complete
)

// rndvRecv is a receive reading a rendezvous message (C's rxm_rx_buf in
// RXM_RNDV_READ): its reads, then its read-done. It is the context of the
// read-done send; its reads have their own.
type rndvRecv struct {
	c      *conn
	ctx    any
	report bool
	flags  fi.Flags
	tag    uint64
	data   uint64
	size   uint64
	msgID  uint64
	src    fi.Addr
	phase  rndvPhase
	reads  [iovLimit]rndvRead
	// nreads reads are to post; next is the next to post, pending those
	// posted and not completed; placed the bytes they read.
	nreads, next, pending, placed int
	err                           fi.Errno
	// queued says it waits in its connection's deferred queue.
	queued bool
	// mrs are the registrations of the receive's buffers under
	// FI_MR_LOCAL when the application gave no descriptors.
	mrs [iovLimit]fi.MR
	hdr [rxmwire.HeaderSize]byte
	iov [1][]byte
	msg ep.Message
	// multi is the multi-receive buffer the receive is part of, mbuf its
	// part (nil for other receives).
	multi *multiRecv
	mbuf  []byte
}

// rndvRead is one core read of a rendezvous receive, and its context.
type rndvRead struct {
	rr   *rndvRecv
	iov  [iovLimit][]byte
	desc [iovLimit]any
	rma  [1]ep.RMAIOV
	msg  ep.RMAMessage
}

// startRndv starts reading the rendezvous message m, which came over c,
// into receive r: one read per remote buffer, as much as r holds; mu is
// held.
func (e *endpoint) startRndv(c *conn, r *posted, m *unexpected) {
	var rr *rndvRecv
	if k := len(e.rrs); k > 0 {
		rr = e.rrs[k-1]
		e.rrs = e.rrs[:k-1]
	} else {
		rr = &rndvRecv{}
	}
	rr.c, rr.ctx, rr.report, rr.flags, rr.size, rr.msgID, rr.src = c, r.ctx, r.report, recvFlags(m.tagged), m.size, m.msgID, m.src
	if r.multi != nil {
		rr.multi, rr.mbuf = r.multi, r.iov[0]
	}
	if m.tagged {
		rr.tag = m.tag
	}
	if m.hasCQ {
		rr.flags, rr.data = rr.flags|fi.FlagRemoteCQData, m.cqData
	}
	want := min(m.size, uint64(kit.IOVLen(r.iov[:r.niov])))
	if err := e.registerRecv(r, &rr.mrs); err != nil {
		rr.fail(fi.Code(err))
		want = 0
	}
	off := 0
	for _, v := range m.desc.IOVs() {
		if want == 0 {
			break
		}
		n := min(v.Len, want)
		rd := &rr.reads[rr.nreads]
		k := sliceIOV(&rd.iov, &rd.desc, r.iov[:r.niov], r.desc[:r.niov], off, int(n))
		if k < 0 {
			break // more pieces than a read takes: truncated there
		}
		rd.rr = rr
		rd.rma[0] = ep.RMAIOV{Addr: v.Addr, Len: int(n), Key: v.Key}
		rd.msg = ep.RMAMessage{IOV: rd.iov[:k], Addr: fi.AddrUnspec, RMAIOV: rd.rma[:], Context: rd}
		if e.mrLocal {
			rd.msg.Desc = rd.desc[:k]
		}
		rr.nreads++
		rr.placed += int(n)
		off += int(n)
		want -= n
	}
	e.rndvStep(rr)
}

// sliceIOV puts the n bytes at offset off of iov into dst, and their
// descriptors (desc, one per iov) into ddst, and returns how many pieces
// that took, or -1 when more than dst holds.
func sliceIOV(dst *[iovLimit][]byte, ddst *[iovLimit]any, iov [][]byte, desc []any, off, n int) int {
	k := 0
	for i, b := range iov {
		if n == 0 {
			break
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b = b[off:]
		off = 0
		if len(b) > n {
			b = b[:n]
		}
		if len(b) == 0 {
			continue
		}
		if k == iovLimit {
			return -1
		}
		dst[k], ddst[k] = b, desc[i]
		k++
		n -= len(b)
	}
	return k
}

// fail records rr's first error; no further read is posted.
func (rr *rndvRecv) fail(code fi.Errno) {
	if rr.err == 0 {
		rr.err = code
	}
	if rr.phase == phReading {
		rr.nreads = rr.next
	}
}

// readDone takes the end of one of rr's reads.
func (rr *rndvRecv) readDone(code fi.Errno) {
	rr.pending--
	if code != 0 {
		rr.fail(code)
	}
}

// doneSent takes the end of rr's read-done send.
func (rr *rndvRecv) doneSent(code fi.Errno) {
	if code != 0 && rr.err == 0 {
		rr.err = code
	}
	rr.phase = phFinished
}

// rndvStep moves rr on after an event; a step the core refuses for now
// puts it in its connection's deferred queue. mu is held.
func (e *endpoint) rndvStep(rr *rndvRecv) {
	if rr.queued {
		return // the deferred queue moves it, in order
	}
	if e.advance(rr) {
		rr.queued = true
		e.deferOp(rr.c, deferredOp{rr: rr})
	}
}

// deferOp puts op at the end of c's deferred queue; mu is held.
func (e *endpoint) deferOp(c *conn, op deferredOp) {
	if len(c.deferred) == 0 {
		e.deferConns = append(e.deferConns, c)
	}
	c.deferred = append(c.deferred, op)
}

// advance posts what rr can post now and completes it when it is over;
// true when the core refused (fi.EAGAIN) or read-done waits for the
// peer's conn_id, so that rr waits in the deferred queue. mu is held.
func (e *endpoint) advance(rr *rndvRecv) bool {
	c := rr.c
	switch rr.phase {
	case phReading:
		for rr.err == 0 && rr.next < rr.nreads {
			if c.closed || c.rma == nil {
				rr.fail(fi.ECANCELED)
				break
			}
			err := c.rma.ReadMsg(&rr.reads[rr.next].msg, 0)
			if notYet(err) {
				return true
			}
			if err != nil {
				rr.fail(fi.Code(err))
				break
			}
			rr.next++
			rr.pending++
		}
		if rr.pending > 0 {
			return false
		}
		if rr.err != 0 {
			e.rndvFinish(rr)
			return false
		}
		rr.phase = phDone
		fallthrough
	case phDone:
		if c.closed {
			rr.fail(fi.ECANCELED)
			e.rndvFinish(rr)
			return false
		}
		if !c.idKnown {
			return true
		}
		h := rxmwire.Header{Type: rxmwire.TypeRndvReadDone, ConnID: c.remoteID, MsgID: rr.msgID}
		rxmwire.PutHeader(rr.hdr[:], &h)
		rr.iov[0] = rr.hdr[:]
		rr.msg = ep.Message{IOV: rr.iov[:], Addr: fi.AddrUnspec, Context: rr}
		var flags fi.Flags
		if e.mrLocal {
			flags = fi.FlagInject // rr.hdr is not registered: the core copies it
		}
		switch err := c.msg.SendMsg(&rr.msg, flags); {
		case notYet(err):
			return true
		case err != nil:
			rr.fail(fi.Code(err))
			e.rndvFinish(rr)
			return false
		}
		rr.phase = phDoneSent
	case phFinished:
		e.rndvFinish(rr)
	}
	return false
}

// rndvFinish completes rr's receive, an error entry if it failed, and
// frees rr; mu is held.
func (e *endpoint) rndvFinish(rr *rndvRecv) {
	if rr.err != 0 {
		e.recvFailed(&eq.CQError{Context: rr.ctx, Flags: rr.flags, Tag: rr.tag, Data: rr.data, Err: rr.err}, rr.multi)
	} else {
		e.rxComplete(rr.ctx, rr.report, rr.flags, rr.placed, rr.size, rr.data, rr.tag, rr.src, rr.multi, rr.mbuf)
	}
	closeMRs(&rr.mrs)
	*rr = rndvRecv{}
	e.rrs = append(e.rrs, rr)
}

// runDeferred posts the deferred operations again, each connection's in
// order, until the core refuses one (C's rxm_ep_progress_deferred_queue);
// mu is held.
func (e *endpoint) runDeferred() {
	kept := e.deferConns[:0]
	for _, c := range e.deferConns {
		i := 0
		for ; i < len(c.deferred); i++ {
			if tx := c.deferred[i].resp; tx != nil {
				if e.sendResp(tx) {
					break
				}
				if c.closed {
					i = 0 // sendResp dropped the connection, and its queue with it
					break
				}
				tx.queued = false
				continue
			}
			if rr := c.deferred[i].rr; rr != nil {
				rr.queued = false
				if e.advance(rr) {
					rr.queued = true
					break
				}
				continue
			}
			tx := c.deferred[i].sar
			tx.queued = false
			if e.sarAdvance(tx) {
				tx.queued = true
				break
			}
		}
		n := copy(c.deferred, c.deferred[i:])
		clear(c.deferred[n:])
		c.deferred = c.deferred[:n]
		if n > 0 {
			kept = append(kept, c)
		}
	}
	clear(e.deferConns[len(kept):])
	e.deferConns = kept
}
