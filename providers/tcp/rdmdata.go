//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// Data transfer of RDM endpoints (fi_msg(3), fi_tagged(3), fi_rma(3)) in
// rxm's protocol (docs/wire-tcp.md, §3.3-§3.5). Messages of up to 16384
// bytes go eager: untagged ones behind a 64-byte rxm header, tagged ones in
// the raw tagged form of the tcp header; longer ones go by rendezvous: the
// sender registers its buffer under an rxm key and sends a descriptor, the
// receiver reads the data with tcp RMA reads straight into the posted
// buffer and answers read-done, on which the send completes. A receiving
// connection reads the rxm header first and matches it, then places the
// payload straight into the matched buffer; a message no receive matches
// is kept (eager payload copied into a pooled buffer, rendezvous as its
// descriptor) until one is posted.

const (
	// rdmInjectSize is rxm's inject size over tcp: 128 - the 64-byte rxm
	// header.
	rdmInjectSize = 64
	// rdmQueueSize is the default transmit and receive depth of RDM
	// entries, C's; hints may ask for up to rdmMaxTxSize and rdmMaxRxSize.
	rdmQueueSize = 2048
	// unexpMax is how many unexpected eager messages are kept before the
	// connections whose next message finds no receive wait for one (TCP
	// back-pressure on the sender).
	unexpMax = 256
)

// rdmRecv is a posted receive.
type rdmRecv struct {
	iov    [iovLimit][]byte
	niov   int
	size   int
	ctx    any
	src    fi.Addr
	tagged bool
	report bool
	tag    uint64
	ignore uint64
}

// matches reports whether a message of (tagged, tag, src) matches r.
func (r *rdmRecv) matches(tagged bool, tag uint64, src fi.Addr) bool {
	return r.tagged == tagged && (!tagged || (r.tag^tag)&^r.ignore == 0) && (r.src == fi.AddrUnspec || r.src == src)
}

// msgInfo is what a receive completion of a message reports.
type msgInfo struct {
	flags fi.Flags
	tag   uint64
	data  uint64
	size  uint64 // the whole message
	src   fi.Addr
}

// rdmRx is a connection's receive state for the rxm packet in hand.
type rdmRx struct {
	connID  uint64 // the peer's index for us: conn_id of what we send
	ourID   uint64 // our index for the peer: conn_id of what we receive
	peerPID uint32
	buf     [rxmwire.HeaderSize + rxmwire.RndvDescSize]byte
	h       rxmwire.Header
	msg     msgInfo
	unexp   *unexpMsg
}

// unexpMsg is a message that arrived before a receive matched it.
type unexpMsg struct {
	msgInfo
	tagged bool
	buf    []byte // eager payload
	rndv   bool
	desc   rxmwire.RndvDesc
	msgID  uint64
	conn   *endpoint
}

// matcher holds the posted receives and unexpected messages of an RDM
// endpoint, under its mu.
type matcher struct {
	recvs, trecvs []rdmRecv
	unexp, tunexp []*unexpMsg
	free          []*unexpMsg
	n             int  // unexpected messages allocated
	starved       bool // a connection waits for an unexpected buffer
}

func (m *matcher) init() {
	m.recvs = make([]rdmRecv, 0, 64)
	m.trecvs = make([]rdmRecv, 0, 64)
}

// arrive finds the posted receive a message matches and removes it, or
// else gives a buffer to keep the message in (nil when the pool is out).
func (m *matcher) arrive(tagged bool, tag uint64, src fi.Addr) (rdmRecv, bool, *unexpMsg) {
	if r, ok, _ := m.arriveNoBuf(tagged, tag, src); ok {
		return r, true, nil
	}
	if len(m.free) == 0 && m.n < unexpMax {
		m.n++
		m.free = append(m.free, &unexpMsg{buf: make([]byte, 0, rxmwire.EagerLimit)})
	}
	if len(m.free) == 0 {
		m.starved = true
		return rdmRecv{}, false, nil
	}
	u := m.free[len(m.free)-1]
	m.free = m.free[:len(m.free)-1]
	return rdmRecv{}, false, u
}

// release returns u to the pool; it reports whether a connection waited
// for one.
func (m *matcher) release(u *unexpMsg) bool {
	buf := u.buf[:0]
	*u = unexpMsg{buf: buf}
	m.free = append(m.free, u)
	s := m.starved
	m.starved = false
	return s
}

// take removes and returns the first unexpected message receive r
// matches, or nil.
func (m *matcher) take(r *rdmRecv) *unexpMsg {
	l := &m.unexp
	if r.tagged {
		l = &m.tunexp
	}
	for k, u := range *l {
		if r.matches(u.tagged, u.tag, u.src) {
			copy((*l)[k:], (*l)[k+1:])
			(*l)[len(*l)-1] = nil
			*l = (*l)[:len(*l)-1]
			return u
		}
	}
	return nil
}

// kick wakes the connections that wait for a posted receive or buffer.
func (r *rdmEndpoint) kick() {
	r.cmMu.Lock()
	defer r.cmMu.Unlock()
	for c := range r.conns {
		if c.recvStalled.Load() {
			if a := c.auto.Load(); a != nil {
				a.Kick()
			}
		}
	}
}

// completeRecv reports a receive of info with placed bytes.
func (r *rdmEndpoint) completeRecv(ctx any, report bool, info *msgInfo, placed int) {
	if over := info.size - uint64(placed); over > 0 {
		if r.RxCQ != nil {
			_ = r.RxCQ.CompleteErr(&eq.CQError{Context: ctx, Flags: info.flags, Len: placed, Data: info.data,
				Tag: info.tag, OLen: int(min(over, uint64(maxInt))), Err: fi.ETRUNC})
		}
		if k := r.Cntr[kit.CntrRecv]; k != nil {
			_ = k.AddErr(1)
		}
		return
	}
	if report && r.RxCQ != nil {
		_ = r.RxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: info.flags, Len: placed, Data: info.data, Tag: info.tag}, info.src)
	}
	if k := r.Cntr[kit.CntrRecv]; k != nil {
		_ = k.Add(1)
	}
}

// failRecvCtx completes a receive with an error.
func (r *rdmEndpoint) failRecvCtx(ctx any, flags fi.Flags, code fi.Errno) {
	if r.RxCQ != nil {
		_ = r.RxCQ.CompleteErr(&eq.CQError{Context: ctx, Flags: flags, Err: code})
	}
	if k := r.Cntr[kit.CntrRecv]; k != nil {
		_ = k.AddErr(1)
	}
}

// recvFailed fails the receive a connection was filling.
func (r *rdmEndpoint) recvFailed(cur *rxEntry, rx *rdmRx, code fi.Errno) {
	r.failRecvCtx(cur.ctx, rx.msg.flags, code)
}

// dropConn forgets the unexpected rendezvous requests that came over
// connection c, which is gone: their data cannot be read any more. Eager
// messages it delivered stay, complete.
func (m *matcher) dropConn(c *endpoint) {
	for _, l := range []*[]*unexpMsg{&m.unexp, &m.tunexp} {
		kept := (*l)[:0]
		for _, u := range *l {
			if u.rndv && u.conn == c {
				m.release(u)
				continue
			}
			kept = append(kept, u)
		}
		clear((*l)[len(kept):])
		*l = kept
	}
}

// dropUnexp returns an unexpected buffer that was being filled.
func (r *rdmEndpoint) dropUnexp(u *unexpMsg) {
	if u == nil {
		return
	}
	r.mu.Lock()
	r.mt.release(u)
	r.mu.Unlock()
}

// cancel removes the posted receive with context ctx and fails it with
// fi.ECANCELED.
func (m *matcher) cancel(r *rdmEndpoint, ctx any) bool {
	r.mu.Lock()
	var found *rdmRecv
	var got rdmRecv
	for _, l := range []*[]rdmRecv{&m.recvs, &m.trecvs} {
		for k := range *l {
			if kit.SameContext((*l)[k].ctx, ctx) {
				got = (*l)[k]
				found = &got
				*l = append((*l)[:k], (*l)[k+1:]...)
				break
			}
		}
		if found != nil {
			break
		}
	}
	r.mu.Unlock()
	if found == nil {
		return false
	}
	r.failRecvCtx(got.ctx, recvFlags(got.tagged), fi.ECANCELED)
	return true
}

// flush fails every posted receive with code and drops unexpected
// messages (Close).
func (m *matcher) flush(r *rdmEndpoint, code fi.Errno) {
	r.mu.Lock()
	recvs := append(append([]rdmRecv(nil), m.recvs...), m.trecvs...)
	m.recvs, m.trecvs, m.unexp, m.tunexp = m.recvs[:0], m.trecvs[:0], nil, nil
	r.mu.Unlock()
	for i := range recvs {
		r.failRecvCtx(recvs[i].ctx, recvFlags(recvs[i].tagged), code)
	}
}

func recvFlags(tagged bool) fi.Flags {
	if tagged {
		return fi.FlagRecv | fi.FlagTagged
	}
	return fi.FlagRecv | fi.FlagMsg
}

// --- the receive side of a connection (called under its mu) ---

// rxmDispatch takes a message (tcp op 0) of an RDM connection whose tcp
// header is parsed: a raw tagged message is matched now; an untagged one
// starts with the rxm header, read first.
func (d *dataPath) rxmDispatch(e *endpoint, payload uint64) (bool, error) {
	h := &d.rhdr
	if !h.hasTag() {
		if payload < rxmwire.HeaderSize {
			return false, fi.EIO
		}
		d.kind = rkRxmHdr
		d.setDst1(d.rx.buf[:rxmwire.HeaderSize], rxmwire.HeaderSize)
	} else {
		if payload > rxmwire.EagerLimit {
			return false, fi.EIO
		}
		m := &d.rx.msg
		*m = msgInfo{flags: fi.FlagRecv | fi.FlagTagged, tag: h.tag, size: payload, src: d.rdm.source(e.peer)}
		if h.flags&flagCQData != 0 {
			m.flags |= fi.FlagRemoteCQData
			m.data = h.cqData
		}
		if !d.rxmMatch(e, true) {
			return false, nil
		}
	}
	d.ackSlot = -1
	if h.needsAck() {
		d.ackSlot = d.take()
	}
	d.rleft = payload
	d.rstate = rsPayload
	return true, nil
}

// setDst1 points the destination cursor at b, for n payload bytes.
func (d *dataPath) setDst1(b []byte, n int) {
	d.dst[0], d.dstN = b, 1
	d.dstI, d.dstOff, d.placed = 0, 0, 0
	d.dstLeft = n
	if len(b) == 0 {
		d.dstI = 1
	}
}

// rxmMatch points the payload of the message d.rx.msg at the receive it
// matches, or at an unexpected buffer; false when neither is there.
func (d *dataPath) rxmMatch(e *endpoint, tagged bool) bool {
	r := d.rdm
	m := &d.rx.msg
	r.mu.Lock()
	rcv, ok, u := r.mt.arrive(tagged, m.tag, m.src)
	r.mu.Unlock()
	switch {
	case ok:
		d.cur = rxEntry{niov: rcv.niov, size: rcv.size, report: rcv.report, ctx: rcv.ctx, iov: rcv.iov}
		d.kind = rkMsg
		d.setDst(d.cur.iov[:d.cur.niov], int(min(m.size, uint64(d.cur.size))))
	case u != nil:
		u.msgInfo, u.tagged = *m, tagged
		u.buf = u.buf[:m.size]
		d.rx.unexp = u
		d.kind = rkUnexp
		d.setDst1(u.buf, len(u.buf))
	default:
		return false
	}
	return true
}

// rxmPacket acts on a complete rxm header (rkRxmHdr) or rendezvous
// descriptor (rkRxmBody). False: the packet waits for a buffer.
func (d *dataPath) rxmPacket(e *endpoint) (bool, error) {
	rx := &d.rx
	h := &rx.h
	if d.kind == rkRxmBody {
		return d.rxmRndvReq(e)
	}
	if err := rxmwire.ParseHeader(rx.buf[:rxmwire.HeaderSize], d.rleft, h); err != nil {
		return false, err
	}
	if h.ConnID != rx.ourID {
		return false, fi.EIO
	}
	switch h.Type {
	case rxmwire.TypeEager:
		if h.Size > rxmwire.EagerLimit {
			return false, fi.EIO
		}
		tagged := h.Op == rxmwire.OpTagged
		rx.msg = msgInfo{flags: recvFlags(tagged), tag: h.Tag, size: h.Size, src: d.rdm.source(e.peer)}
		if !tagged {
			rx.msg.tag = 0
		}
		if h.HasCQData() {
			rx.msg.flags |= fi.FlagRemoteCQData
			rx.msg.data = h.Data
		}
		return d.rxmMatch(e, tagged), nil
	case rxmwire.TypeRndvReq:
		if h.Size > uint64(maxInt) {
			return false, fi.EIO
		}
		d.kind = rkRxmBody
		d.setDst1(rx.buf[rxmwire.HeaderSize:], rxmwire.RndvDescSize)
		return true, nil
	case rxmwire.TypeRndvReadDone:
		if !d.rdm.readDone(e, h.MsgID) {
			return false, fi.EIO
		}
		d.kind = rkDrop
		d.setDst(nil, 0)
		return true, nil
	}
	// SAR, atomics, credits and the write-based rendezvous are not
	// spoken (doc.go): the peer is configured otherwise.
	return false, fi.EIO
}

// rxmRndvReq acts on a complete rendezvous request: it is matched and its
// reads start, or it is kept.
func (d *dataPath) rxmRndvReq(e *endpoint) (bool, error) {
	rx := &d.rx
	h := &rx.h
	var desc rxmwire.RndvDesc
	if err := rxmwire.ParseRndv(rx.buf[rxmwire.HeaderSize:], h.Size, &desc); err != nil {
		return false, err
	}
	tagged := h.Op == rxmwire.OpTagged
	rx.msg = msgInfo{flags: recvFlags(tagged), tag: h.Tag, size: h.Size, src: d.rdm.source(e.peer)}
	if !tagged {
		rx.msg.tag = 0
	}
	if h.HasCQData() {
		rx.msg.flags |= fi.FlagRemoteCQData
		rx.msg.data = h.Data
	}
	r := d.rdm
	r.mu.Lock()
	rcv, ok, u := r.mt.arrive(tagged, rx.msg.tag, rx.msg.src)
	if u != nil {
		u.msgInfo, u.tagged, u.rndv, u.desc, u.msgID, u.conn = rx.msg, tagged, true, desc, h.MsgID, e
		if tagged {
			r.mt.tunexp = append(r.mt.tunexp, u)
		} else {
			r.mt.unexp = append(r.mt.unexp, u)
		}
	}
	r.mu.Unlock()
	if !ok && u == nil {
		return false, nil
	}
	if ok && !r.startReads(e, &rcv, &rx.msg, &desc, h.MsgID) {
		r.failRecvCtx(rcv.ctx, rx.msg.flags, fi.ECANCELED)
	}
	d.kind = rkDrop
	d.setDst(nil, 0)
	return true, nil
}

// rxmFinish completes the message whose payload is all in.
func (d *dataPath) rxmFinish(e *endpoint) {
	r := d.rdm
	switch d.kind {
	case rkMsg:
		r.completeRecv(d.cur.ctx, d.cur.report, &d.rx.msg, d.placed)
		d.cur = rxEntry{}
	case rkUnexp:
		u := d.rx.unexp
		d.rx.unexp = nil
		r.mu.Lock()
		rcv, ok, _ := r.mt.arriveNoBuf(u.tagged, u.tag, u.src)
		if !ok {
			if u.tagged {
				r.mt.tunexp = append(r.mt.tunexp, u)
			} else {
				r.mt.unexp = append(r.mt.unexp, u)
			}
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.deliverEager(&rcv, u)
	}
}

// arriveNoBuf is arrive without the unexpected buffer.
func (m *matcher) arriveNoBuf(tagged bool, tag uint64, src fi.Addr) (rdmRecv, bool, *unexpMsg) {
	l := &m.recvs
	if tagged {
		l = &m.trecvs
	}
	for k := range *l {
		if (*l)[k].matches(tagged, tag, src) {
			r := (*l)[k]
			copy((*l)[k:], (*l)[k+1:])
			(*l)[len(*l)-1] = rdmRecv{}
			*l = (*l)[:len(*l)-1]
			return r, true, nil
		}
	}
	return rdmRecv{}, false, nil
}

// deliverEager copies the kept message u into receive rcv, completes it
// and frees u.
func (r *rdmEndpoint) deliverEager(rcv *rdmRecv, u *unexpMsg) {
	n := 0
	src := u.buf
	for _, b := range rcv.iov[:rcv.niov] {
		if len(src) == 0 {
			break
		}
		k := copy(b, src)
		src = src[k:]
		n += k
	}
	r.completeRecv(rcv.ctx, rcv.report, &u.msgInfo, n)
	r.mu.Lock()
	starved := r.mt.release(u)
	r.mu.Unlock()
	if starved {
		r.kick()
	}
}

// --- rendezvous, receiver side ---

// rndvRecv is a receive that reads a rendezvous message.
type rndvRecv struct {
	ctx     any
	report  bool
	info    msgInfo
	msgID   uint64
	pending int
	placed  int
	err     fi.Errno
}

// startReads reads the message desc describes into rcv over connection c
// (its mu held): one tcp read per remote iov, as rxm does; read-done goes
// out when they all completed. It reports false, and does nothing, when c
// cannot carry the first read (it is gone): the caller decides what
// becomes of the receive.
func (r *rdmEndpoint) startReads(c *endpoint, rcv *rdmRecv, info *msgInfo, desc *rxmwire.RndvDesc, msgID uint64) bool {
	rr := &rndvRecv{ctx: rcv.ctx, report: rcv.report, info: *info, msgID: msgID}
	want := int(min(info.size, uint64(rcv.size)))
	off := 0
	for _, v := range desc.IOVs() {
		if want == 0 {
			break
		}
		n := int(min(v.Len, uint64(want)))
		a := txArgs{ctx: rr, internal: true, locked: true, nrma: 1}
		a.rma[0] = rmaIOV{addr: v.Addr, len: uint64(n), key: v.Key}
		a.niov = sliceIOV(&a.iov, rcv.iov[:rcv.niov], off, n)
		if a.niov < 0 {
			break // more pieces than an operation takes: truncated
		}
		if err := c.post(&a, txRead); err != nil {
			if rr.pending == 0 {
				return false
			}
			rr.err = fi.Code(err)
			break
		}
		rr.pending++
		rr.placed += n
		off += n
		want -= n
	}
	if rr.pending == 0 {
		r.rndvFinish(c, rr)
	}
	return true
}

// sliceIOV puts the n bytes at offset off of iov into dst; the count, or
// -1 when they span more than dst holds.
func sliceIOV(dst *[iovLimit][]byte, iov [][]byte, off, n int) int {
	k := 0
	for _, b := range iov {
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
		dst[k] = b
		k++
		n -= len(b)
	}
	return k
}

// opDone is the end of an internal operation of connection c (its mu
// held): a rendezvous read.
func (r *rdmEndpoint) opDone(c *endpoint, ctx any, code fi.Errno) {
	rr, ok := ctx.(*rndvRecv)
	if !ok {
		return
	}
	if code != 0 && rr.err == 0 {
		rr.err = code
	}
	if rr.pending--; rr.pending == 0 {
		r.rndvFinish(c, rr)
	}
}

// rndvFinish answers read-done and completes the receive (c's mu held).
func (r *rdmEndpoint) rndvFinish(c *endpoint, rr *rndvRecv) {
	if rr.err != 0 {
		r.failRecvCtx(rr.ctx, rr.info.flags, rr.err)
		return
	}
	h := rxmwire.Header{Type: rxmwire.TypeRndvReadDone, ConnID: c.dp.rx.connID, MsgID: rr.msgID}
	a := txArgs{internal: true, locked: true}
	a.npre = rxmwire.PutHeader(a.pre[:], &h)
	if err := c.post(&a, txSend); err != nil {
		r.failRecvCtx(rr.ctx, rr.info.flags, fi.Code(err))
		return
	}
	r.completeRecv(rr.ctx, rr.report, &rr.info, rr.placed)
}

// --- rendezvous, sender side ---

// rndvSend is a rendezvous send waiting for the receiver's read-done.
type rndvSend struct {
	inUse   bool
	gen     uint16
	conn    *endpoint
	ctx     any
	report  bool
	cqFlags fi.Flags
	mrs     [iovLimit]*kit.MR
}

// rndvID is the msg_id of slot i in generation gen.
func rndvID(i int, gen uint16) uint64 { return uint64(gen)<<16 | uint64(i) }

// sendRndv sends a rendezvous request for a's payload over c.
func (r *rdmEndpoint) sendRndv(c *endpoint, a *rdmArgs, n int) error {
	r.rndvMu.Lock()
	if len(r.rndvFree) == 0 {
		r.rndvMu.Unlock()
		return fi.EAGAIN
	}
	i := int(r.rndvFree[len(r.rndvFree)-1])
	r.rndvFree = r.rndvFree[:len(r.rndvFree)-1]
	s := &r.rndv[i]
	s.gen++
	s.inUse, s.conn, s.ctx = true, c, a.ctx
	s.report = !r.TxSel || a.flags&fi.FlagCompletion != 0
	s.cqFlags = fi.FlagSend | fi.FlagMsg
	if a.tagged {
		s.cqFlags = fi.FlagSend | fi.FlagTagged
	}
	var desc rxmwire.RndvDesc
	for _, b := range a.iov[:a.niov] {
		if len(b) == 0 {
			continue
		}
		var mr *kit.MR
		var err error
		for range 16 {
			key := rxmKeyBase | r.mrKey
			r.mrKey = (r.mrKey + 1) & (rxmKeyBase - 1)
			mr, err = r.domain.mrs.Register(&fi.MRAttr{Buf: b, Access: fi.AccessRemoteRead, RequestedKey: key}, 0)
			if err == nil {
				break
			}
		}
		if err != nil {
			r.freeRndvLocked(i)
			r.rndvMu.Unlock()
			return errors.Wrap(err, "tcp: rdm: rendezvous registration")
		}
		s.mrs[desc.Count] = mr
		desc.IOV[desc.Count] = rxmwire.RMAIOV{Addr: 0, Len: uint64(len(b)), Key: mr.Key()}
		desc.Count++
	}
	gen := s.gen
	r.rndvMu.Unlock()

	h := rxmwire.Header{Type: rxmwire.TypeRndvReq, ConnID: c.dp.rx.connID, MsgID: rndvID(i, gen), Size: uint64(n)}
	if a.tagged {
		h.Op, h.Tag = rxmwire.OpTagged, a.tag
	}
	if a.flags&fi.FlagRemoteCQData != 0 {
		h.Flags, h.Data = rxmwire.FlagCQData, a.data
	}
	t := txArgs{internal: true}
	t.npre = rxmwire.PutHeader(t.pre[:], &h)
	t.npre += rxmwire.PutRndv(t.pre[rxmwire.HeaderSize:], &desc)
	if err := c.post(&t, txSend); err != nil {
		r.rndvMu.Lock()
		if s.inUse && s.gen == gen {
			r.freeRndvLocked(i)
		}
		r.rndvMu.Unlock()
		return err
	}
	return nil
}

// rxmKeyBase is the high bit of rxm's internal MR keys (§3.5).
const rxmKeyBase = 0x80000000

// freeRndvLocked deregisters slot i's memory and frees it.
func (r *rdmEndpoint) freeRndvLocked(i int) {
	s := &r.rndv[i]
	for k, mr := range s.mrs {
		if mr != nil {
			_ = mr.Close()
			s.mrs[k] = nil
		}
	}
	s.inUse, s.conn, s.ctx = false, nil, nil
	r.rndvFree = append(r.rndvFree, uint16(i))
}

// readDone completes the rendezvous send msgID of connection c: false
// when c has no such send (a protocol violation).
func (r *rdmEndpoint) readDone(c *endpoint, msgID uint64) bool {
	i := int(msgID & 0xffff)
	r.rndvMu.Lock()
	if i >= len(r.rndv) || !r.rndv[i].inUse || r.rndv[i].conn != c || rndvID(i, r.rndv[i].gen) != msgID {
		r.rndvMu.Unlock()
		return false
	}
	s := &r.rndv[i]
	ctx, report, flags := s.ctx, s.report, s.cqFlags
	r.freeRndvLocked(i)
	r.rndvMu.Unlock()
	if report && r.TxCQ != nil {
		_ = r.TxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: flags}, fi.AddrUnspec)
	}
	if k := r.Cntr[kit.CntrSend]; k != nil {
		_ = k.Add(1)
	}
	return true
}

// failRndv fails the rendezvous sends over c (all of them for nil).
func (r *rdmEndpoint) failRndv(c *endpoint, code fi.Errno) {
	type failed struct {
		ctx   any
		flags fi.Flags
	}
	var fs []failed
	r.rndvMu.Lock()
	for i := range r.rndv {
		s := &r.rndv[i]
		if s.inUse && (c == nil || s.conn == c) {
			fs = append(fs, failed{s.ctx, s.cqFlags})
			r.freeRndvLocked(i)
		}
	}
	r.rndvMu.Unlock()
	for _, f := range fs {
		if r.TxCQ != nil {
			_ = r.TxCQ.CompleteErr(&eq.CQError{Context: f.ctx, Flags: f.flags, Err: code})
		}
		if k := r.Cntr[kit.CntrSend]; k != nil {
			_ = k.AddErr(1)
		}
	}
}

// --- the application's calls ---

// rdmArgs are one transmit call's arguments, built on the caller's stack.
type rdmArgs struct {
	iov    [iovLimit][]byte
	niov   int
	dest   fi.Addr
	ctx    any
	data   uint64
	tag    uint64
	flags  fi.Flags
	inject bool
	tagged bool
}

// ready checks the endpoint can carry data.
func (r *rdmEndpoint) ready() error {
	if !r.enabled.Load() || r.closed.Load() {
		if r.closed.Load() {
			return fi.EBADF
		}
		return fi.EOPBADSTATE
	}
	return nil
}

// conn returns the connection to dest, fi.EAGAIN while it opens.
func (r *rdmEndpoint) conn(dest fi.Addr) (*endpoint, error) {
	p := r.peerFor(dest)
	if p == nil {
		return nil, errors.Wrapf(fi.EINVAL, "tcp: rdm: fi_addr %d is not in the address vector", uint64(dest))
	}
	return r.connFor(p)
}

// send sends a message: eager up to 16384 bytes, else by rendezvous.
func (r *rdmEndpoint) send(a *rdmArgs) error {
	if err := r.ready(); err != nil {
		return err
	}
	n := 0
	for _, b := range a.iov[:a.niov] {
		n += len(b)
	}
	if (a.inject || a.flags&fi.FlagInject != 0) && n > rdmInjectSize {
		return errors.Wrapf(fi.EINVAL, "tcp: inject of %d bytes, the inject size is %d", n, rdmInjectSize)
	}
	c, err := r.conn(a.dest)
	if err != nil {
		return err
	}
	if n > rxmwire.EagerLimit {
		err = r.sendRndv(c, a, n)
	} else {
		t := txArgs{iov: a.iov, niov: a.niov, ctx: a.ctx, flags: a.flags, inject: a.inject, data: a.data}
		if a.tagged {
			t.tagged, t.tag = true, a.tag
		} else {
			h := rxmwire.Header{Type: rxmwire.TypeEager, ConnID: c.dp.rx.connID, Size: uint64(n)}
			if a.flags&fi.FlagRemoteCQData != 0 {
				h.Flags, h.Data = rxmwire.FlagCQData, a.data
				t.flags &^= fi.FlagRemoteCQData
			}
			t.npre = rxmwire.PutHeader(t.pre[:], &h)
		}
		err = c.post(&t, txSend)
	}
	if err == fi.ESHUTDOWN || err == fi.ENOTCONN {
		return fi.EAGAIN // the connection is going: the next try opens another
	}
	return err
}

// recv posts a receive.
func (r *rdmEndpoint) recv(iov [][]byte, src fi.Addr, ctx any, tagged bool, tag, ignore uint64, flags fi.Flags) error {
	if len(iov) > iovLimit {
		return errors.Wrapf(fi.EINVAL, "tcp: recv: %d iovecs, the limit is %d", len(iov), iovLimit)
	}
	if err := r.ready(); err != nil {
		return err
	}
	rcv := rdmRecv{ctx: ctx, src: src, tagged: tagged, tag: tag, ignore: ignore,
		report: !r.RxSel || flags&fi.FlagCompletion != 0}
	rcv.niov = copy(rcv.iov[:], iov)
	rcv.size = kit.IOVLen(iov)
	if r.info.Caps&fi.CapDirectedRecv == 0 {
		rcv.src = fi.AddrUnspec
	}
	r.mu.Lock()
	u := r.mt.take(&rcv)
	if u == nil {
		l := &r.mt.recvs
		if tagged {
			l = &r.mt.trecvs
		}
		if len(*l) >= r.rxSize {
			r.mu.Unlock()
			return fi.EAGAIN
		}
		*l = append(*l, rcv)
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	if !u.rndv {
		r.deliverEager(&rcv, u)
		return nil
	}
	c := u.conn
	c.mu.Lock()
	started := r.startReads(c, &rcv, &u.msgInfo, &u.desc, u.msgID)
	c.mu.Unlock()
	r.mu.Lock()
	if !started {
		// Its sender's connection went between the two locks: the
		// message is lost with it, the receive waits for another.
		l := &r.mt.recvs
		if tagged {
			l = &r.mt.trecvs
		}
		*l = append(*l, rdmRecv{})
		copy((*l)[1:], *l)
		(*l)[0] = rcv
	}
	starved := r.mt.release(u)
	r.mu.Unlock()
	if starved {
		r.kick()
	}
	return nil
}

// rma posts an RMA operation to peer over its connection; completions
// come as those of an FI_EP_MSG endpoint's.
func (r *rdmEndpoint) rma(a *txArgs, peer fi.Addr, kind txKind) error {
	if err := r.ready(); err != nil {
		return err
	}
	c, err := r.conn(peer)
	if err != nil {
		return err
	}
	err = c.post(a, kind)
	if err == fi.ESHUTDOWN || err == fi.ENOTCONN {
		return fi.EAGAIN
	}
	return err
}
