package rxm

import (
	"sync/atomic"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// SAR, segmentation and reassembly (C's rxm_msg.c rxm_send_sar and
// rxm_cq.c rxm_handle_seg_data; docs/wire-tcp.md §3.6): a message above
// the eager limit and up to the SAR limit goes as segments of eager-limit
// bytes, each an rxm packet of type 1 with the whole message's header
// (size, tag, CQ data), its own seg_size and seg_no (from 0), the kind
// first, middle or last in ctrl_data, and the same msg_id. Each segment
// is copied into a transmit buffer of its own, so that the send allocates
// nothing and works over cores that need registered buffers; the send
// completes when every segment's send has. The receiver matches the first
// segment to a receive (or keeps the message as unexpected, its data
// gathered in a pooled buffer, until a receive matches), places the
// segments in order at their offset, and completes the receive at the
// last, with fi.ETRUNC when it was too small. Segments of different
// messages may interleave on a connection; those of one arrive in order.

// maxSegSize is the largest segment the 16-bit seg_size field carries: an
// eager limit above it turns SAR off (C's rule).
const maxSegSize = 1<<16 - 1

// sarSent counts segmented messages sent (for the tests).
var sarSent atomic.Int64

// sarRx is a segmented message arriving over a connection (C's
// rxm_rx_buf with its SAR state): matched to a receive (r, placed bytes
// of it filled), or unexpected with its data so far.
type sarRx struct {
	c        *conn
	msgID    uint64
	size     uint64
	off      uint64 // payload bytes arrived
	next     uint32 // the seg_no expected next
	matched  bool
	complete bool // every segment arrived (unexpected)
	r        posted
	placed   int
	data     []byte
	src      fi.Addr
	tagged   bool
	tag      uint64
	cqData   uint64
	hasCQ    bool
}

// sendSAR sends op, whose header h is filled but for the SAR fields, in
// segments over c, with tx as the operation; mu is held. The first
// segment the core refuses gives fi.EAGAIN, nothing sent; a later one
// waits in the connection's deferred queue, and the rest go from there.
func (e *endpoint) sendSAR(c *conn, tx *txBuf, op *kit.Op, h *rxmwire.Header) error {
	n, err := op.CopyIOV(tx.src[:], e.domain.fabric.Prov())
	if err != nil {
		e.putTx(tx)
		return err
	}
	size := int(h.Size)
	tx.kind, tx.conn, tx.nsrc = txSAR, c, n
	tx.nseg = (size + e.eager - 1) / e.eager
	tx.sarHdr = *h
	tx.sarHdr.Type, tx.sarHdr.MsgID = rxmwire.TypeSeg, uint64(tx.gen)<<32|uint64(tx.idx)
	if err := e.postSegment(tx); err != nil {
		e.putTx(tx)
		return err
	}
	sarSent.Add(1)
	e.sarStep(tx)
	return nil
}

// postSegment sends tx's next segment; mu is held. Bare fi.EAGAIN when
// the core refuses it for now.
func (e *endpoint) postSegment(tx *txBuf) error {
	c := tx.conn
	if c.closed {
		return fi.ECANCELED
	}
	s := e.getSeg()
	if err := e.bounceOf(s); err != nil {
		e.putSeg(s)
		return err
	}
	off := tx.next * e.eager
	n := min(e.eager, int(tx.sarHdr.Size)-off)
	h := &tx.sarHdr
	h.SegSize, h.SegNo, h.CtrlData = uint16(n), uint32(tx.next), rxmwire.SegMiddle
	switch tx.next {
	case 0:
		h.CtrlData = rxmwire.SegFirst
	case tx.nseg - 1:
		h.CtrlData = rxmwire.SegLast
	}
	k := rxmwire.PutHeader(s.bounce, h)
	k += gather(s.bounce[k:k+n], tx.src[:tx.nsrc], off)
	s.iov[0] = s.bounce[:k]
	s.msg = ep.Message{IOV: s.iov[:1], Addr: fi.AddrUnspec, Context: s}
	if s.bdesc != nil {
		s.desc[0] = s.bdesc
		s.msg.Desc = s.desc[:1]
	}
	if err := c.msg.SendMsg(&s.msg, 0); err != nil {
		e.putSeg(s)
		return transient(err)
	}
	s.parent = tx
	tx.next++
	tx.pending++
	return nil
}

// gather copies the bytes of iov from offset off into dst and returns
// how many.
func gather(dst []byte, iov [][]byte, off int) int {
	n := 0
	for _, b := range iov {
		if n == len(dst) {
			break
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		n += copy(dst[n:], b[off:])
		off = 0
	}
	return n
}

// sarStep moves a segmented send on after an event: it sends what the
// core takes, waits in the deferred queue for the rest, and completes
// when every segment is done. mu is held.
func (e *endpoint) sarStep(tx *txBuf) {
	if tx.queued {
		return // the deferred queue moves it, in order
	}
	if e.sarAdvance(tx) {
		tx.queued = true
		e.deferOp(tx.conn, deferredOp{sar: tx})
	}
}

// sarAdvance sends tx's segments while the core takes them and completes
// tx when all are done; true when the core refused one for now. mu is
// held.
func (e *endpoint) sarAdvance(tx *txBuf) bool {
	for tx.err == 0 && tx.next < tx.nseg {
		err := e.postSegment(tx)
		if err == fi.EAGAIN && !tx.conn.closed {
			return true
		}
		if err != nil {
			tx.fail(fi.Code(err))
		}
	}
	if tx.pending == 0 {
		e.txDone(tx, 0, tx.err)
	}
	return false
}

// fail records a segmented send's first error: no further segment goes.
func (tx *txBuf) fail(code fi.Errno) {
	if tx.err == 0 {
		tx.err = code
	}
}

// segDone takes the end of segment s's send; mu is held.
func (e *endpoint) segDone(s *txBuf, code fi.Errno) {
	tx := s.parent
	e.putSeg(s)
	if tx == nil {
		return
	}
	tx.pending--
	if code != 0 {
		tx.fail(code)
	}
	if tx.queued {
		if tx.err == 0 || tx.pending > 0 {
			return // the deferred queue sends the rest
		}
		tx.queued = false // removed from the queue when it runs next
		e.unqueue(tx)
	}
	if tx.next == tx.nseg || tx.err != 0 {
		if tx.pending == 0 {
			e.txDone(tx, 0, tx.err)
		}
	}
}

// unqueue takes tx out of its connection's deferred queue; mu is held.
func (e *endpoint) unqueue(tx *txBuf) {
	c := tx.conn
	for i, op := range c.deferred {
		if op.sar == tx {
			c.deferred = append(c.deferred[:i], c.deferred[i+1:]...)
			c.deferred[len(c.deferred) : len(c.deferred)+1][0] = deferredOp{}
			break
		}
	}
}

// getSeg takes a free segment buffer; mu is held.
func (e *endpoint) getSeg() *txBuf {
	if k := len(e.segFree); k > 0 {
		s := e.segFree[k-1]
		e.segFree = e.segFree[:k-1]
		s.inUse = true
		return s
	}
	return &txBuf{kind: txSeg, inUse: true}
}

// putSeg frees segment buffer s; mu is held.
func (e *endpoint) putSeg(s *txBuf) {
	s.reset()
	s.kind = txSeg
	e.segFree = append(e.segFree, s)
}

// arrivedSeg takes a SAR segment over c; false when it breaks the
// protocol (a segment of no message begun, out of order, or more data
// than the message's size). mu is held.
func (e *endpoint) arrivedSeg(c *conn, h *rxmwire.Header, payload []byte) bool {
	kind := h.CtrlData & rxmwire.SegMask
	var s *sarRx
	if kind == rxmwire.SegFirst {
		if h.SegNo != 0 || h.Size > uint64(maxInt) || findSAR(c, h.MsgID) != nil {
			return false
		}
		s = e.getSar()
		s.c, s.msgID, s.size = c, h.MsgID, h.Size
		s.src, s.tagged, s.tag = e.srcOf(c), h.Op == rxmwire.OpTagged, h.Tag
		s.cqData, s.hasCQ = h.Data, h.HasCQData()
		c.sars = append(c.sars, s)
		if i := e.match(s.tagged, s.tag, s.src); i >= 0 {
			s.r, s.matched = e.takeRecv(i, s.size), true
		} else {
			s.data = e.getSarBuf()
			e.unexp = append(e.unexp, unexpected{src: s.src, tagged: s.tagged, tag: s.tag, sar: s})
		}
	} else if s = findSAR(c, h.MsgID); s == nil || h.SegNo != s.next || h.Size != s.size {
		return false
	}
	if s.off+uint64(len(payload)) > s.size {
		return false
	}
	s.next++
	if s.matched {
		s.placed += scatter(&s.r, int(s.off), payload)
	} else {
		s.data = append(s.data, payload...)
	}
	s.off += uint64(len(payload))
	if kind != rxmwire.SegLast {
		return true
	}
	if s.off != s.size {
		return false
	}
	removeSAR(c, s)
	if s.matched {
		e.sarComplete(s)
	} else {
		s.complete = true
	}
	return true
}

// matchSAR gives the unexpected segmented message s receive r: the data
// so far is placed, and the rest as it comes; a complete one completes.
// mu is held.
func (e *endpoint) matchSAR(s *sarRx, r *posted) {
	s.r, s.matched = *r, true
	s.placed = scatter(&s.r, 0, s.data)
	e.putSarBuf(s.data)
	s.data = nil
	if s.complete {
		e.sarComplete(s)
	}
}

// sarComplete completes the receive of the reassembled message s and
// frees s; mu is held.
func (e *endpoint) sarComplete(s *sarRx) {
	flags := recvFlags(s.tagged)
	var data, tag uint64
	if s.hasCQ {
		flags, data = flags|fi.FlagRemoteCQData, s.cqData
	}
	if s.tagged {
		tag = s.tag
	}
	e.rxComplete(s.r.ctx, s.r.report, flags, s.placed, s.size, data, tag, s.src, s.r.multi, s.r.iov[0])
	e.putSar(s)
}

// dropSARs fails the receives matched to segmented messages that were
// still arriving over c with code; the unexpected ones go with the
// connection's other unexpected messages. mu is held.
func (e *endpoint) dropSARs(c *conn, code fi.Errno) {
	for _, s := range c.sars {
		if s.matched {
			e.recvFailed(&eq.CQError{Context: s.r.ctx, Flags: recvFlags(s.tagged), Len: s.placed, Err: code}, s.r.multi)
			e.putSar(s)
		}
	}
	clear(c.sars)
	c.sars = c.sars[:0]
}

// scatter copies p into r's buffers from offset off and returns how many
// bytes fit.
func scatter(r *posted, off int, p []byte) int {
	n := 0
	for _, b := range r.iov[:r.niov] {
		if len(p) == 0 {
			break
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		k := copy(b[off:], p)
		off = 0
		n += k
		p = p[k:]
	}
	return n
}

// findSAR returns the segmented message msgID arriving over c, nil if
// none.
func findSAR(c *conn, msgID uint64) *sarRx {
	for _, s := range c.sars {
		if s.msgID == msgID {
			return s
		}
	}
	return nil
}

// removeSAR takes s out of c's arriving messages.
func removeSAR(c *conn, s *sarRx) {
	for i, x := range c.sars {
		if x == s {
			last := len(c.sars) - 1
			c.sars[i] = c.sars[last]
			c.sars[last] = nil
			c.sars = c.sars[:last]
			return
		}
	}
}

// getSar takes a free reassembly; mu is held.
func (e *endpoint) getSar() *sarRx {
	if k := len(e.sarFree); k > 0 {
		s := e.sarFree[k-1]
		e.sarFree = e.sarFree[:k-1]
		return s
	}
	return &sarRx{}
}

// putSar frees reassembly s; mu is held.
func (e *endpoint) putSar(s *sarRx) {
	*s = sarRx{}
	e.sarFree = append(e.sarFree, s)
}

// sarBufCap is the capacity of the pooled buffers of unexpected
// segmented messages: the SAR limit, bounded (a longer message from a
// peer with a higher limit grows its buffer).
func (e *endpoint) sarBufCap() int { return max(e.eager, min(e.sarLimit, 1<<20)) }

// getSarBuf returns an empty pooled buffer for an unexpected segmented
// message's data; mu is held.
func (e *endpoint) getSarBuf() []byte {
	if k := len(e.sarBufs); k > 0 {
		b := e.sarBufs[k-1]
		e.sarBufs = e.sarBufs[:k-1]
		return b
	}
	return make([]byte, 0, e.sarBufCap())
}

// putSarBuf returns such a buffer to the pool; mu is held.
func (e *endpoint) putSarBuf(b []byte) {
	if cap(b) >= e.sarBufCap() {
		e.sarBufs = append(e.sarBufs, b[:0])
	}
}
