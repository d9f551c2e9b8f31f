//go:build linux

package tcp

import (
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// The data path of an endpoint: the transmit queue written to the socket
// with writev, the receive side parsing the byte stream (docs/wire-tcp.md,
// §2.4) into posted buffers, registered memory and read responses. All of
// it runs under the endpoint's mu, from the posting calls and from
// progress (queue reads), without blocking and without allocating.

const (
	// respSlots are the transmit entries kept for the receive side's
	// answers (ACKs and read responses) beyond the application's queue.
	respSlots = 64
	// rbufSize is the receive staging buffer: small messages arrive many
	// to a read; a payload larger than directRead still missing when the
	// buffer is drained is read straight into its destination.
	rbufSize   = 8 << 10
	directRead = 4 << 10
	// rbufSmall is the staging buffer inside the endpoint that a
	// connection reads into until a read fills it: one that carries a
	// message at a time (a ping-pong, most of rxm's connections) never
	// touches the rbufSize one, which stays unbacked by memory (the
	// issue 22 scale figures: 4 KiB less resident per endpoint).
	rbufSmall = 512
)

// txKind is what a transmit entry carries.
type txKind uint8

const (
	txSend    txKind = iota // an application message
	txWrite                 // an application RMA write
	txRead                  // an application RMA read request
	txAck                   // an ACK of a delivery-complete message or write
	txReadRsp               // the answer to a peer's read request
)

// txEntry is one queued transmission: header, payload segments and what
// to report when it completes.
type txEntry struct {
	kind    txKind
	report  bool // write a CQ entry on success
	inject  bool // fi_inject: no completion at all
	ack     bool // completes when the peer's ACK arrives
	cnt     int8 // counter slot, -1 for none
	hdrLen  int
	total   int // header + payload bytes on the wire
	rlen    int // txRead: bytes the response must carry
	ctx     any
	cqFlags fi.Flags
	niov    int
	iov     [iovLimit][]byte // payload, or txRead's destination
	// hdr holds the header, and after it an injected payload: small
	// messages go out as one contiguous segment.
	hdr [maxDataHeaderSize + injectSize]byte
}

// segments appends the entry's unsent bytes, from offset off, to v.
func (t *txEntry) segments(v *iovec, off int) bool {
	if off < t.hdrLen {
		if !v.add(t.hdr[off:t.hdrLen]) {
			return false
		}
		off = 0
	} else {
		off -= t.hdrLen
	}
	if t.kind == txRead {
		return true
	}
	for _, b := range t.iov[:t.niov] {
		if off >= len(b) {
			off -= len(b)
			continue
		}
		if !v.add(b[off:]) {
			return false
		}
		off = 0
	}
	return true
}

// rxEntry is a posted receive.
type rxEntry struct {
	niov   int
	size   int
	report bool
	ctx    any
	iov    [iovLimit][]byte
}

// idxRing is a FIFO of transmit entry indices, of a power-of-two
// capacity at least the transmit pool's, allocated when the endpoint
// opens.
type idxRing struct {
	buf        []int16
	mask       int
	head, size int
}

func (r *idxRing) init(n int) {
	r.buf = make([]int16, pow2(n))
	r.mask = len(r.buf) - 1
}

func (r *idxRing) push(i int) {
	r.buf[(r.head+r.size)&r.mask] = int16(i)
	r.size++
}
func (r *idxRing) at(k int) int { return int(r.buf[(r.head+k)&r.mask]) }
func (r *idxRing) pop() int {
	i := int(r.buf[r.head])
	r.head = (r.head + 1) & r.mask
	r.size--
	return i
}

// pow2 returns the least power of two that is at least n (and 1).
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// rxState is where the receive side is in the stream.
type rxState uint8

const (
	rsHeader   rxState = iota // parsing the next header
	rsDispatch                // header parsed, waiting for a posted receive or transmit room
	rsPayload                 // placing the payload
)

// rxKind is what the payload being placed belongs to.
type rxKind uint8

const (
	rkMsg rxKind = iota
	rkWrite
	rkReadRsp
	rkDyn // the rest of a message, where the dynamic receive handler said (dynrecv.go)
	// rkDynHdr is the prefix of a message for the dynamic receive
	// handler, which the endpoint acts on once it is all in.
	rkDynHdr
)

type dataPath struct {
	fd    int
	codec dataCodec
	iov   iovec

	// The queues are sized when the endpoint opens (tx_attr.size,
	// rx_attr.size) and never grow: pool holds txSize application
	// operations and respSlots answers.
	pool   []txEntry
	free   []int16
	nfree  int
	txSize int     // application operations the queue takes
	sendQ  idxRing // to write, in order
	ackQ   idxRing // written, waiting for the peer's ACK
	readQ  idxRing // read requests written, waiting for the response
	txOff  int     // bytes of sendQ's head already written
	appOps int     // application operations not yet completed

	// recvs is a ring of a power-of-two length (rxMask+1) holding at
	// most rxSize posted receives.
	recvs               []rxEntry
	rxMask, rxSize      int
	recvHead, recvCount int

	rbuf         []byte // small or big
	big          []byte // the rbufSize buffer, allocated at attach
	small        [rbufSmall]byte
	rstart, rend int
	rstate       rxState
	rhdr         dataHeader
	kind         rxKind
	cur          rxEntry          // the receive being filled (rkMsg)
	curTx        int              // the read request being answered (rkReadRsp)
	ackSlot      int              // entry reserved for the ACK, -1 for none
	dst          [iovLimit][]byte // where the payload goes
	dstN, dstI   int
	dstOff       int
	dstLeft      int    // payload bytes still to place
	placed       int    // payload bytes placed
	rleft        uint64 // payload bytes still to consume (placed or dropped)
	// rwait and wwait say the last read found nothing, the last write no
	// room. Then the next read or write asks poll first, which does not
	// take the socket's lock: a read or write of a socket the peer's data
	// or acknowledgements are arriving on makes the kernel queue them to
	// the socket's backlog instead of processing them, which slows large
	// transfers down. A read that follows one that found data goes
	// without: more is likely there, and the extra call would cost.
	// (Polling every idle read, not only while a write waits for room,
	// cut the reads of a 1 MiB RDM ping-pong from 142 to 9 a round trip
	// and its time by about 6%; 64-byte messages did not change.)
	rwait, wwait bool
	// rdrained says the last read took less than it asked for: the
	// socket was empty then, and input arriving since raises a new edge of
	// the socket's edge-triggered registration (sockpoll.Group), whose
	// progress reads again. Until then the receive side does not read: a
	// message costs the epoll_wait that found it and one read, not a
	// third that finds nothing.
	rdrained bool
	// ended says an event told of the end of the peer's stream (or an
	// error): a short read proves nothing then (sockpoll.Member.Ended).
	ended bool
	// txStall says the receive side waits for a free transmit entry (for
	// an ACK or a read response): the flush that frees one pends the
	// endpoint, whose socket raises no event for it.
	txStall bool
	// tagged lets op-0 messages carry a tag (rxm's raw tagged form,
	// §3.4): set on endpoints in dynamic receive mode opened with
	// FI_TAGGED.
	tagged bool
	// dyn is the state of dynamic receive mode (dynrecv.go), nil for an
	// endpoint that fills posted receives.
	dyn *dynRecv
	// watched says the stall watch covers the connection (stall.go): an
	// endpoint in dynamic receive mode.
	watched bool
	// reads counts the read requests queued or written and not yet
	// answered; rspBytes and msgBytes count the payload bytes of read
	// responses and of messages placed. The stall watch (stall.go) reads
	// them; stallSince is when it last saw progress (monoNow), 0 when the
	// connection holds nothing, and heldSeen the count it saw then.
	// short says the socket ran dry within the message being read
	// (endpoint.streams).
	short              bool
	reads              int
	rspBytes, msgBytes uint64
	heldSeen           uint64
	stallSince         int64
}

// init sizes the queues for txSize application operations and rxSize
// posted receives (at most maxTxSize and maxRxSize).
func (d *dataPath) init(txSize, rxSize int) {
	d.fd = -1
	d.ackSlot = -1
	n := txSize + respSlots
	d.txSize = txSize
	d.pool = make([]txEntry, n)
	d.free = make([]int16, n)
	d.nfree = n
	for i := range d.free {
		d.free[i] = int16(n - 1 - i)
	}
	d.sendQ.init(n)
	d.ackQ.init(n)
	d.readQ.init(n)
	d.rxSize = rxSize
	d.recvs = make([]rxEntry, pow2(rxSize))
	d.rxMask = len(d.recvs) - 1
}

func (d *dataPath) attach(fd int, codec dataCodec) {
	d.fd, d.codec = fd, codec
	if d.big == nil {
		d.big = make([]byte, rbufSize)
	}
	d.rbuf = d.small[:]
}

func (d *dataPath) take() int {
	d.nfree--
	return int(d.free[d.nfree])
}

func (d *dataPath) release(i int) {
	t := &d.pool[i]
	t.ctx = nil
	clear(t.iov[:t.niov])
	t.niov = 0
	d.free[d.nfree] = int16(i)
	d.nfree++
}

// progress runs the endpoint's data path: the progress hook of the queues
// and counters it is bound to.
func (e *endpoint) progress() {
	e.mu.Lock()
	e.dp.progress(e)
	e.mu.Unlock()
}

// progress moves data both ways as far as the socket allows, then
// checks the stall watch of a connection in dynamic receive mode.
func (d *dataPath) progress(e *endpoint) {
	if d.fd < 0 {
		return
	}
	// Run for an event (or work of its own): read without asking poll
	// first (rwait), at least once (rdrained).
	d.rdrained, d.rwait = false, false
	if m := e.member.Load(); m != nil && m.Ended() {
		d.ended = true
	}
	if err := d.flush(e); err != nil {
		d.fail(e, err)
		return
	}
	if err := d.recv(e); err != nil {
		d.fail(e, err)
		return
	}
	if d.sendQ.size > 0 {
		if err := d.flush(e); err != nil {
			d.fail(e, err)
			return
		}
	}
	if err := d.watchStall(e); err != nil {
		d.fail(e, err)
		return
	}
	if d.rstate == rsPayload && !d.short {
		// The socket ran dry within a message: the rest streams in.
		d.short = true
		e.streams.Store(true)
	}
}

// waits reports whether the endpoint waits for its socket's events
// (sockpoll.MemberConfig.Waits): queued sends wait for room, or messages
// stream in (the socket ran dry within the last one).
// A lone connection is otherwise read at every queue read without asking
// epoll first, which saves a message and its answer a system call; but a
// read takes the socket's lock, and reading at every queue read while a
// large message streams in holds it often enough to slow the stream,
// where an epoll_wait, which does not take it, reports each new piece
// (fi_pingpong tcp msg, 4 interleaved rounds, reading at every queue read
// against this: 1 MiB 345 against 291 us, 64 KiB 16.9 against 16.4).
func (e *endpoint) waits() bool { return e.sendBlocked.Load() || e.streams.Load() }

// flush writes queued entries until the socket is full or the queue
// empty; written entries complete, or wait for their ACK or response.
func (d *dataPath) flush(e *endpoint) error {
	for d.sendQ.size > 0 {
		d.iov.reset()
		want := 0
		for k := 0; k < d.sendQ.size && !d.iov.full(); k++ {
			t := &d.pool[d.sendQ.at(k)]
			off := 0
			if k == 0 {
				off = d.txOff
			}
			before := d.iov.n
			if !t.segments(&d.iov, off) {
				// partly added: count what went in
				for _, s := range d.iov.v[before:d.iov.n] {
					want += int(s.Len)
				}
				break
			}
			want += t.total - off
		}
		if d.wwait && !ready(d.fd, unix.POLLOUT) {
			d.iov.clear()
			return nil
		}
		n, err := d.iov.writev(d.fd)
		d.iov.clear()
		d.wwait = err == unix.EAGAIN || (err == nil && n < want)
		if err == unix.EAGAIN {
			e.blockSends()
			return nil
		}
		if err != nil {
			return errnoOf(err)
		}
		d.advance(e, n)
		if d.txStall && d.nfree > 0 {
			// The receive side waited for a transmit entry: the next
			// progress continues it.
			d.txStall = false
			e.pend()
		}
		if n < want {
			e.blockSends()
			return nil
		}
	}
	if e.sendBlocked.Load() {
		e.sendBlocked.Store(false)
	}
	return nil
}

// advance accounts n written bytes to the head of the queue.
func (d *dataPath) advance(e *endpoint, n int) {
	for n > 0 {
		i := d.sendQ.at(0)
		t := &d.pool[i]
		rem := t.total - d.txOff
		if n < rem {
			d.txOff += n
			return
		}
		n -= rem
		d.txOff = 0
		d.sendQ.pop()
		d.written(e, i)
	}
}

// written moves a fully written entry on.
func (d *dataPath) written(e *endpoint, i int) {
	t := &d.pool[i]
	switch {
	case t.kind == txRead:
		d.readQ.push(i)
	case t.ack:
		d.ackQ.push(i)
	case t.kind == txAck || t.kind == txReadRsp:
		d.release(i)
	default:
		d.txDone(e, i)
	}
}

// txDone completes an application entry successfully and frees it.
func (d *dataPath) txDone(e *endpoint, i int) {
	t := &d.pool[i]
	if t.kind == txRead {
		d.reads--
	}
	if t.report && e.TxCQ != nil {
		_ = e.TxCQ.CompleteOverflow(eq.Completion{Context: t.ctx, Flags: t.cqFlags}, fi.AddrUnspec)
	}
	if t.cnt >= 0 && e.Cntr[t.cnt] != nil {
		_ = e.Cntr[t.cnt].Add(1)
	}
	d.appOps--
	d.release(i)
}

// txFailed completes an entry with an error entry (application
// operations; injects have no completion to fail) and frees it.
func (d *dataPath) txFailed(e *endpoint, i int, code fi.Errno) {
	t := &d.pool[i]
	if t.kind == txRead {
		d.reads--
	}
	if t.kind == txAck || t.kind == txReadRsp {
		d.release(i)
		return
	}
	if !t.inject && e.TxCQ != nil {
		_ = e.TxCQ.CompleteErr(&eq.CQError{Context: t.ctx, Flags: t.cqFlags, Err: code})
	}
	if t.cnt >= 0 && e.Cntr[t.cnt] != nil {
		_ = e.Cntr[t.cnt].AddErr(1)
	}
	d.appOps--
	d.release(i)
}

// enqueue queues entry i and writes what the socket takes. A socket error
// fails the connection; the operation then completes with an error entry.
func (d *dataPath) enqueue(e *endpoint, i int) {
	d.sendQ.push(i)
	if d.sendQ.size > 1 && e.sendBlocked.Load() {
		return
	}
	if err := d.flush(e); err != nil {
		d.fail(e, err)
	}
}

// recv parses and places incoming data until the socket is empty or the
// stream waits for a posted receive.
func (d *dataPath) recv(e *endpoint) error {
	for {
		switch d.rstate {
		case rsHeader:
			need, err := d.codec.parseDataHeader(d.rbuf[d.rstart:d.rend], &d.rhdr)
			if err == fi.EAGAIN {
				more, err := d.fill(need)
				if err != nil || !more {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			d.rstart += need
			d.rstate = rsDispatch
			d.short = false
		case rsDispatch:
			ok, err := d.dispatch(e)
			if err != nil {
				return err
			}
			e.setStalled(!ok)
			if !ok {
				return nil
			}
		case rsPayload:
			if d.kind == rkDynHdr && d.dstLeft == 0 {
				ok, err := d.dynArrived(e)
				if err != nil {
					return err
				}
				e.setStalled(!ok)
				if !ok {
					if e.dynResume.Load() {
						continue // resumed while the handler decided (dynrecv.go)
					}
					return nil
				}
				continue
			}
			if d.rleft == 0 {
				d.finish(e)
				d.rstate = rsHeader
				// Whether this message came whole foretells the
				// next ones' (waits).
				if e.streams.Load() != d.short {
					e.streams.Store(d.short)
				}
				continue
			}
			if d.rstart < d.rend {
				d.place()
				continue
			}
			d.rstart, d.rend = 0, 0
			if d.dstLeft >= directRead {
				more, err := d.readDirect()
				if err != nil || !more {
					return err
				}
				continue
			}
			more, err := d.fill(1)
			if err != nil || !more {
				return err
			}
		}
	}
}

// errPeerClosed is the end of the peer's stream.
const errPeerClosed = fi.ECONNRESET

// fill reads once into the staging buffer, first making room for need
// bytes from rstart. It reports false when the socket had nothing.
func (d *dataPath) fill(need int) (bool, error) {
	if d.rstart > 0 && (d.rend == len(d.rbuf) || len(d.rbuf)-d.rstart < need) {
		d.rend = copy(d.rbuf, d.rbuf[d.rstart:d.rend])
		d.rstart = 0
	}
	if d.rwait && !ready(d.fd, unix.POLLIN) {
		return false, nil // see rwait
	}
	if d.rdrained {
		return false, nil
	}
	room := len(d.rbuf) - d.rend
	n, err := readResult(readOnce(d.fd, d.rbuf[d.rend:]))
	d.rend += n
	d.rwait = n == 0 && err == nil
	d.rdrained = n > 0 && n < room && !d.ended
	if d.rend == len(d.rbuf) && len(d.rbuf) < len(d.big) {
		// The stream brings more than a message at a time: the
		// connection reads into the big buffer from now on.
		d.rend = copy(d.big, d.rbuf[d.rstart:d.rend])
		d.rstart = 0
		d.rbuf = d.big
	}
	return n > 0, err
}

// readResult maps a non-blocking read's result: bytes read, or 0 and nil
// when the socket had nothing, or an error (errPeerClosed at the end of
// the stream).
func readResult(n int, err error) (int, error) {
	switch {
	case err == unix.EAGAIN:
		return 0, nil
	case err != nil:
		return 0, errnoOf(err)
	case n == 0:
		return 0, errPeerClosed
	}
	return n, nil
}

// place moves staged payload bytes to their destination, or drops them
// (the truncated tail of a message).
func (d *dataPath) place() {
	avail := d.rend - d.rstart
	if uint64(avail) > d.rleft {
		avail = int(d.rleft)
	}
	if d.dstLeft == 0 {
		d.rstart += avail
		d.rleft -= uint64(avail)
		d.msgBytes += uint64(avail)
		return
	}
	src := d.rbuf[d.rstart : d.rstart+min(avail, d.dstLeft)]
	for len(src) > 0 {
		k := copy(d.dst[d.dstI][d.dstOff:], src)
		src = src[k:]
		d.consumed(k)
		d.rstart += k
	}
}

// consumed accounts k bytes placed at the destination cursor.
func (d *dataPath) consumed(k int) {
	d.dstLeft -= k
	d.placed += k
	d.rleft -= uint64(k)
	switch d.kind {
	case rkReadRsp:
		d.rspBytes += uint64(k)
	case rkMsg, rkDyn:
		d.msgBytes += uint64(k)
	}
	for k > 0 {
		room := len(d.dst[d.dstI]) - d.dstOff
		if k < room {
			d.dstOff += k
			return
		}
		k -= room
		d.dstI++
		d.dstOff = 0
	}
	for d.dstI < d.dstN && len(d.dst[d.dstI]) == 0 {
		d.dstI++
	}
}

// readDirect reads payload straight into the destination.
func (d *dataPath) readDirect() (bool, error) {
	if d.rdrained || (d.rwait && !ready(d.fd, unix.POLLIN)) {
		return false, nil
	}
	d.iov.reset()
	left := d.dstLeft
	for i := d.dstI; i < d.dstN && left > 0; i++ {
		b := d.dst[i]
		if i == d.dstI {
			b = b[d.dstOff:]
		}
		if len(b) > left {
			b = b[:left]
		}
		d.iov.add(b)
		left -= len(b)
	}
	n, err := readResult(d.iov.readv(d.fd))
	d.iov.clear()
	d.consumed(n)
	d.rwait = n == 0 && err == nil
	d.rdrained = n > 0 && n < d.dstLeft+n-left && !d.ended
	return n > 0, err
}

// setDst points the destination cursor at iov, for n payload bytes.
func (d *dataPath) setDst(iov [][]byte, n int) {
	d.dstN = copy(d.dst[:], iov)
	d.dstI, d.dstOff, d.placed = 0, 0, 0
	d.dstLeft = n
	for d.dstI < d.dstN && len(d.dst[d.dstI]) == 0 {
		d.dstI++
	}
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

// dispatch acts on the parsed header. It reports false when the message
// must wait: for a posted receive, or for a free entry for its answer.
// Errors break the protocol and drop the connection.
func (d *dataPath) dispatch(e *endpoint) (bool, error) {
	h := &d.rhdr
	payload := h.payloadLen()
	if h.isAck() {
		if d.ackQ.size == 0 {
			return false, fi.EIO // an ACK nobody asked for
		}
		d.txDone(e, d.ackQ.pop())
		d.rstate = rsHeader
		return true, nil
	}
	if h.hasTag() && (!d.tagged || h.op != opMsg) {
		// Tagged messages need a tag-matching receiver (§2.5.2): a plain
		// MSG endpoint is not one; one in dynamic receive mode opened
		// with FI_TAGGED takes rxm's form, op 0 with the tag flag.
		return false, fi.EIO
	}
	needAck := h.needsAck()
	if needAck && d.nfree == 0 {
		d.txStall = true
		return false, nil
	}
	switch h.op {
	case opMsg:
		if d.dyn != nil {
			return d.dynDispatch(payload), nil
		}
		if d.recvCount == 0 {
			return false, nil
		}
		d.cur = d.recvs[d.recvHead]
		d.recvs[d.recvHead] = rxEntry{}
		d.recvHead = (d.recvHead + 1) & d.rxMask
		d.recvCount--
		d.kind = rkMsg
		d.setDst(d.cur.iov[:d.cur.niov], int(min(payload, uint64(d.cur.size))))
	case opWrite:
		var dst [iovLimit][]byte
		for k, v := range h.rmaIOVs() {
			b, err := e.domain.mrs.Verify(v.key, v.addr, int(v.len), fi.AccessRemoteWrite)
			if err != nil || v.len > uint64(maxInt) {
				return false, fi.EACCES
			}
			dst[k] = b
		}
		d.kind = rkWrite
		d.setDst(dst[:h.rmaIOVCnt], int(payload))
	case opReadReq:
		if d.nfree == 0 {
			d.txStall = true
			return false, nil
		}
		var src [iovLimit][]byte
		for k, v := range h.rmaIOVs() {
			b, err := e.domain.mrs.Verify(v.key, v.addr, int(v.len), fi.AccessRemoteRead)
			if err != nil || v.len > uint64(maxInt) {
				return false, fi.EACCES
			}
			src[k] = b
		}
		i := d.take()
		t := &d.pool[i]
		rsp := readRspHeader(h)
		*t = txEntry{kind: txReadRsp, cnt: -1, niov: int(h.rmaIOVCnt), iov: src}
		t.hdrLen = d.codec.putDataHeader(t.hdr[:], &rsp)
		t.total = int(rsp.size)
		d.sendQ.push(i)
		if c := e.Cntr[kit.CntrRemoteRead]; c != nil {
			_ = c.Add(1)
		}
		d.rstate = rsHeader
		return true, nil
	case opReadRsp:
		if d.readQ.size == 0 {
			return false, fi.EIO
		}
		d.curTx = d.readQ.at(0)
		t := &d.pool[d.curTx]
		if payload != uint64(t.rlen) {
			return false, fi.EIO
		}
		d.kind = rkReadRsp
		d.setDst(t.iov[:t.niov], t.rlen)
	default:
		return false, fi.EIO
	}
	d.ackSlot = -1
	if needAck {
		d.ackSlot = d.take()
	}
	d.rleft = payload
	d.rstate = rsPayload
	return true, nil
}

const maxInt = int(^uint(0) >> 1)

// finish completes the message whose payload is all in.
func (d *dataPath) finish(e *endpoint) {
	h := &d.rhdr
	if d.ackSlot >= 0 {
		t := &d.pool[d.ackSlot]
		ack := ackHeader()
		*t = txEntry{kind: txAck, cnt: -1}
		t.hdrLen = d.codec.putDataHeader(t.hdr[:], &ack)
		t.total = t.hdrLen
		d.sendQ.push(d.ackSlot)
		d.ackSlot = -1
	}
	switch d.kind {
	case rkMsg:
		flags := fi.FlagRecv | fi.FlagMsg
		var data uint64
		if h.flags&flagCQData != 0 {
			flags |= fi.FlagRemoteCQData
			data = h.cqData
		}
		c := &d.cur
		if over := h.payloadLen() - uint64(d.placed); over > 0 {
			if e.RxCQ != nil {
				_ = e.RxCQ.CompleteErr(&eq.CQError{Context: c.ctx, Flags: flags, Len: d.placed,
					Data: data, OLen: int(min(over, uint64(maxInt))), Err: fi.ETRUNC})
			}
			if k := e.Cntr[kit.CntrRecv]; k != nil {
				_ = k.AddErr(1)
			}
		} else {
			if c.report && e.RxCQ != nil {
				_ = e.RxCQ.CompleteOverflow(eq.Completion{Context: c.ctx, Flags: flags, Len: d.placed, Data: data}, fi.AddrUnspec)
			}
			if k := e.Cntr[kit.CntrRecv]; k != nil {
				_ = k.Add(1)
			}
		}
		d.cur = rxEntry{}
	case rkWrite:
		if h.flags&flagCQData != 0 && e.RxCQ != nil {
			_ = e.RxCQ.CompleteOverflow(eq.Completion{
				Flags: fi.FlagRMA | fi.FlagRemoteWrite | fi.FlagRemoteCQData, Len: d.placed, Data: h.cqData,
			}, fi.AddrUnspec)
		}
		if k := e.Cntr[kit.CntrRemoteWrite]; k != nil {
			_ = k.Add(1)
		}
	case rkReadRsp:
		d.readQ.pop()
		d.txDone(e, d.curTx)
	case rkDyn:
		d.dynFinish(e)
	}
	clear(d.dst[:d.dstN])
	d.dstN = 0
}

// postRecv queues a receive; if the stream waited for one, it goes on at
// once. It returns bare fi.EAGAIN when the receive queue is full.
func (d *dataPath) postRecv(e *endpoint, r *rxEntry) error {
	if d.recvCount == d.rxSize {
		return fi.EAGAIN
	}
	d.recvs[(d.recvHead+d.recvCount)&d.rxMask] = *r
	d.recvCount++
	if d.rstate == rsDispatch && d.fd >= 0 {
		if err := d.recv(e); err != nil {
			d.fail(e, err)
			return nil
		}
		if d.sendQ.size > 0 {
			if err := d.flush(e); err != nil {
				d.fail(e, err)
				return nil
			}
		}
	}
	return nil
}

// cancelRecv removes the posted receive with context ctx and completes it
// with fi.ECANCELED.
func (d *dataPath) cancelRecv(e *endpoint, ctx any) bool {
	for k := range d.recvCount {
		i := (d.recvHead + k) & d.rxMask
		if !kit.SameContext(d.recvs[i].ctx, ctx) {
			continue
		}
		r := d.recvs[i]
		for j := k; j < d.recvCount-1; j++ {
			d.recvs[(d.recvHead+j)&d.rxMask] = d.recvs[(d.recvHead+j+1)&d.rxMask]
		}
		d.recvCount--
		d.recvs[(d.recvHead+d.recvCount)&d.rxMask] = rxEntry{}
		d.recvFailed(e, &r, fi.ECANCELED)
		return true
	}
	return false
}

func (d *dataPath) recvFailed(e *endpoint, r *rxEntry, code fi.Errno) {
	if e.RxCQ != nil {
		_ = e.RxCQ.CompleteErr(&eq.CQError{Context: r.ctx, Flags: fi.FlagRecv | fi.FlagMsg, Err: code})
	}
	if k := e.Cntr[kit.CntrRecv]; k != nil {
		_ = k.AddErr(1)
	}
}

// setStalled records whether the receive side waits for a posted buffer
// or transmit room (the stall watch does not count that time). The
// socket stays watched, edge-triggered: input arriving meanwhile wakes
// its progress once per arrival at most, and the wait ends in a call
// that continues the receive side (postRecv, a Resume, a flush that
// freed transmit entries: flush). Most calls change nothing and cost a
// load.
func (e *endpoint) setStalled(stalled bool) {
	if e.recvStalled.Load() != stalled {
		e.recvStalled.Store(stalled)
	}
}

// blockSends records that queued sends wait for room in the socket: its
// edge-triggered registration reports the room.
func (e *endpoint) blockSends() {
	if !e.sendBlocked.Load() {
		e.sendBlocked.Store(true)
	}
}

// closeSock closes the socket; the watchers' goroutines end with it.
func (d *dataPath) closeSock(e *endpoint) {
	if d.fd < 0 {
		return
	}
	if m := e.member.Swap(nil); m != nil {
		e.progDone = e.domain.leave(e, m)
	}
	_ = unix.Close(d.fd)
	d.fd = -1
	e.recvStalled.Store(false)
	e.sendBlocked.Store(false)
	e.streams.Store(false)
	d.stallSince = 0
	e.stallAt.Store(0)
}

// fail drops the connection after a socket error, the peer's close or a
// protocol violation: every pending operation completes with an error
// entry (fi.ECANCELED, as in the C provider) and
// the endpoint gets its eq.Shutdown unless it already had one.
func (d *dataPath) fail(e *endpoint, err error) {
	code := fi.Code(err)
	if code != errPeerClosed {
		fi.Logger(provName).Warn("tcp: connection dropped", "err", code)
	}
	d.closeSock(e)
	// A connection that timed out (the peer stopped acknowledging for
	// FI_TCP_USER_TIMEOUT, or held a receive for FI_TCP_STALL_TIMEOUT)
	// says so in its error entries.
	flush := fi.ECANCELED
	if code == fi.ETIMEDOUT {
		flush = fi.ETIMEDOUT
	}
	e.lostWith.Store(int32(flush))
	d.flushAll(e, flush)
	if e.cs.PeerGone() {
		e.postEvent(&eq.Shutdown{Fid: e})
	}
}

// shutdown ends the connection from this side (fi_shutdown, fi_close):
// queued bytes the socket takes at once go out, then FIN; what is still
// pending completes with fi.ECANCELED.
func (d *dataPath) shutdown(e *endpoint) {
	if d.fd >= 0 {
		_ = d.flush(e)
		_ = unix.Shutdown(d.fd, unix.SHUT_RDWR)
		d.closeSock(e)
	}
	d.flushAll(e, fi.ECANCELED)
}

// flushAll completes every pending operation with code.
func (d *dataPath) flushAll(e *endpoint, code fi.Errno) {
	if d.rstate == rsPayload {
		switch d.kind {
		case rkMsg:
			d.recvFailed(e, &d.cur, code)
			d.cur = rxEntry{}
		case rkReadRsp:
			d.readQ.pop()
			d.txFailed(e, d.curTx, code)
		case rkDyn:
			d.dynFailed(e, code)
		}
		clear(d.dst[:d.dstN])
		d.dstN = 0
	}
	e.dynHeld.Store(false) // a held message is gone with the stream
	if d.ackSlot >= 0 {
		d.release(d.ackSlot)
		d.ackSlot = -1
	}
	d.rstate = rsHeader
	d.rstart, d.rend = 0, 0
	d.txOff = 0
	for d.sendQ.size > 0 {
		d.txFailed(e, d.sendQ.pop(), code)
	}
	for d.ackQ.size > 0 {
		d.txFailed(e, d.ackQ.pop(), code)
	}
	for d.readQ.size > 0 {
		d.txFailed(e, d.readQ.pop(), code)
	}
	for d.recvCount > 0 {
		r := d.recvs[d.recvHead]
		d.recvs[d.recvHead] = rxEntry{}
		d.recvHead = (d.recvHead + 1) & d.rxMask
		d.recvCount--
		d.recvFailed(e, &r, code)
	}
}
