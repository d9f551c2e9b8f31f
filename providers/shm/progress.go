//go:build linux

package shm

import (
	"math/bits"
	"os"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// The data path of an endpoint, all under its mu: outbound connections to
// peers' inboxes, the inbound entries of its own inbox, transmit entries
// waiting for answers or streaming, posted receives, unexpected messages
// and answers to send. Nothing here blocks or allocates once an endpoint
// has met its peers.

const (
	// answerCredits bounds the answers a sender may be owed by one peer
	// at a time (peer.busy): a slot that asks for an answer waits while
	// that many are outstanding. A receiver then never owes more than
	// ackQSize answers, so its answer queue never fills, and it never
	// stops taking slots from its inbox for want of room for an answer.
	// Without the bound, two endpoints writing to each other with many
	// operations in flight could fill both rings with requests and both
	// answer queues, each waiting for the other to take a slot
	// (fabtests' rma_bw -o write at 64 B stopped after ~1200 writes).
	answerCredits = 16
	ackQSize      = maxPeers * answerCredits
	slotsPerVisit = 64 // slots taken from one peer per progress call
)

// myPID is the process id claimers write into the entries they claim.
var myPID = uint32(os.Getpid())

// epoch is the origin of the endpoints' monotonic check times.
var epoch = time.Now()

// txKind is the kind of a transmit entry.
type txKind uint8

const (
	txSend txKind = iota
	txTSend
	txWrite
	txRead
	txAtomic
)

// txEntry is an operation that needs more than one slot or an answer: a
// CMA or SAR message, an RMA operation, or a message queued behind one.
type txEntry struct {
	kind    txKind
	peer    *peer
	iov     [iovLimit][]byte
	niov    int
	size    int
	ctx     any
	cqFlags fi.Flags
	report  bool
	inject  bool
	cnt     int
	tag     uint64
	data    uint64
	cqData  bool
	dc      bool   // FI_DELIVERY_COMPLETE: inline and SAR messages wait for an answer
	key     uint64 // RMA
	addr    uint64 // RMA: remote offset
	alen    int    // atomic: request payload bytes in inline (operand, compare)
	idx     int32
	gen     uint32
	// Progress of the operation.
	sent int  // bytes handed over (SAR chunks, RMA pieces)
	hdr  bool // the first slot is out
	acks int  // answers outstanding
	// granted: the receiver had us write the tail (opGrant).
	granted bool
	err     fi.Errno
	inline  [inlineMax]byte // an injected payload; an atomic's operand and compare bytes
}

// rxEntry is a posted receive, or a message's part of an FI_MULTI_RECV
// buffer (multirecv.go).
type rxEntry struct {
	iov         [iovLimit][]byte
	niov, size  int
	ctx         any
	tag, ignore uint64
	src         fi.Addr
	tagged      bool
	report      bool
	// mr is 1 + the index in dataPath.mrs of the FI_MULTI_RECV buffer
	// the entry is (owner) or a message's part of; 0 for other
	// receives. An int16 (the pool has at most 1024+32 entries) keeps
	// the entry at 160 bytes.
	mr    int16
	owner bool
}

// unexEntry is a message that arrived before its receive: its header,
// its inline payload or CMA segments, and where it came from.
type unexEntry struct {
	h     slotHeader
	in    int
	nonce uint64 // the claimer of entry in when it came
	pid   int
	src   fi.Addr
	segs  [maxCMAIOV][2]uint64
	data  [inlineMax]byte
}

// ackEntry is an answer waiting for room in a peer's ring.
type ackEntry struct {
	in     int
	msgID  uint64
	status uint32
	off    uint64
	n      int
	// grant: an opGrant of glen bytes at offset goff of the message,
	// to be written at off.
	grant           bool
	goff, glen, seq uint64
	data            [inlineMax]byte
}

// peer is an outbound connection: an entry claimed in a peer's inbox.
type peer struct {
	name  string
	nameb []byte
	r     *region
	idx   int
	off   int // the entry's offset in r.mem
	q     *txRing
	bell  unix.SockaddrUnix
	out   []int32 // transmit entries with slots still to send, in order
	busy  int     // answers this peer owes us (at most answerCredits)
	chunk uint64  // next SAR chunk number
	// chunkAt is the ring index of the slot that last named each bounce
	// chunk, and chunkUsed the chunks named so far: a chunk still busy
	// after the owner consumed that slot, or busy before any use, was
	// set by something else.
	chunkAt   [sarChunks]uint64
	chunkUsed uint8
	// bad says why the entry cannot be trusted any more (the sender
	// gives it up at its next look), or is empty.
	bad string
}

// inbound is the owner's view of an entry of its inbox.
type inbound struct {
	active bool
	q      rxRing
	name   string
	nameb  []byte
	pid    int
	cma    bool // we may read and write the peer's memory
	reply  *peer
	// src is the peer's fi.Addr in our AV, valid while its version is
	// srcVer (0: not looked up yet).
	src    fi.Addr
	srcVer uint64
	// nonce is the claimer's incarnation, bell its doorbell.
	nonce uint64
	bell  unix.SockaddrUnix
	// A SAR message being received.
	sar      bool
	sarRecv  rxEntry
	sarSize  int
	sarGot   int
	sarH     slotHeader
	sarSrc   fi.Addr
	sarPlace int // bytes placed in the buffer
	// A split CMA message (opGrant): the receiver read the head, the
	// sender writes the tail from splitM on and then says so (pSplit).
	// splitSeq numbers the entry's split messages.
	split     bool
	splitR    rxEntry
	splitH    slotHeader
	splitSrc  fi.Addr
	splitSegs [maxCMAIOV][2]uint64
	splitM    int
	splitErr  bool // reading the head failed
	splitSeq  uint64
}

type dataPath struct {
	peers    map[string]*peer
	plist    []*peer // the peers, for iteration
	byAddr   []*peer // peers by fi.Addr, valid while the AV's version is cacheVer
	cacheVer uint64
	// gone holds the peers whose inbox went away or cut us off: the next
	// send to one fails with fi.ECONNRESET (true: not reported yet),
	// later ones connect again, failing while there is no inbox.
	gone map[string]bool
	// quarantine is when entries of the inbox were taken from live
	// claimers (zero: not in quarantine).
	quarantine [maxPeers]time.Time
	// held are the bounce chunks of each entry that unexpected protoBuf
	// messages hold (busy word chunkHeld). An entry released while it
	// holds some stays in quarantine until they are delivered.
	held [maxPeers]uint8
	// splits counts the inbound entries with a split message pending.
	splits   int
	ins      [maxPeers]inbound
	tx       [queueSize]txEntry
	txFree   []int32
	recvs    []rxEntry // posted untagged receives, in order
	trecvs   []rxEntry // posted tagged receives, in order
	unexPool [queueSize]unexEntry
	unexFree []int32
	unexp    []int32 // unexpected untagged messages, in order
	tunexp   []int32 // unexpected tagged messages, in order
	acks     [ackQSize]ackEntry
	ackHead  int
	ackN     int
	cma      cmaIOV
	old      [inlineMax]byte // the old values of an atomic being applied
	polls    uint32
	checked  time.Time
	// unlinked is set once the inbox file was found removed (logged
	// once).
	unlinked bool
	// mrs are the states of the FI_MULTI_RECV buffers posted or still
	// holding messages, mrFree the free ones (multirecv.go), made at
	// the endpoint's first such receive; minMulti is
	// FI_OPT_MIN_MULTI_RECV, which buffers take when posted; rxSize is
	// rx_attr.size.
	mrs      []kit.MultiRecv
	mrFree   []int32
	minMulti int
	rxSize   int
}

// init readies the data path for txSize transmit entries (operations
// that wait for an answer, stream, or queue behind one; inline messages
// that go out at once take none) and rxSize posted receives of each kind
// (tagged and untagged): tx_attr.size and rx_attr.size.
func (d *dataPath) init(txSize, rxSize int) {
	d.peers = make(map[string]*peer)
	d.gone = make(map[string]bool)
	d.txFree = make([]int32, txSize)
	d.unexFree = make([]int32, queueSize)
	// The pools are left as they were allocated, untouched: their
	// pages take no memory until traffic uses them (a transmit entry
	// learns its index when taken).
	for i := range queueSize {
		d.unexFree[i] = int32(queueSize - 1 - i)
	}
	for i := range txSize {
		d.txFree[i] = int32(txSize - 1 - i)
	}
	d.recvs = make([]rxEntry, 0, rxSize)
	d.rxSize, d.minMulti = rxSize, defMinMultiRecv
	d.trecvs = make([]rxEntry, 0, rxSize)
	d.unexp = make([]int32, 0, queueSize)
	d.tunexp = make([]int32, 0, queueSize)
}

// progress moves everything as far as it goes without blocking; every
// checkEvery it checks the peers (checkPeers). idle says the endpoint
// had nothing to do (the clock is then read at once).
func (d *dataPath) progress(e *endpoint, idle bool) {
	d.receive(e)
	d.flushAcks(e)
	d.pushAll(e)
	if d.polls++; idle || d.polls&63 == 0 {
		if now := time.Now(); now.Sub(d.checked) >= checkEvery {
			d.checked = now
			d.checkPeers(e)
		}
	}
}

// pushAll sends what the peers' queued entries still have to send.
func (d *dataPath) pushAll(e *endpoint) {
	for k := 0; k < len(d.plist); {
		p := d.plist[k]
		if len(p.out) > 0 && d.pushOut(e, p) {
			continue // p was dropped: the next one moved to k
		}
		k++
	}
}

// pending reports whether anything but the rings needs progress.
func (d *dataPath) pending() bool {
	if d.ackN > 0 || d.splits > 0 {
		return true
	}
	for _, p := range d.plist {
		if len(p.out) > 0 || p.busy > 0 {
			return true
		}
	}
	return false
}

// anyInput reports whether a ring holds a slot or answers wait: a reader
// about to sleep must run progress first.
func (d *dataPath) anyInput(e *endpoint) bool {
	active := e.region.active()
	for i := range maxPeers {
		if active&(1<<i) == 0 {
			continue
		}
		in := &d.ins[i]
		if !in.active {
			if e.region.word32(pageSize+i*entrySize+pReady).Load() == 1 {
				return true // a new claimer to adopt
			}
			continue // a stray bit: checkPeers clears it
		}
		if s, _ := in.q.front(); s != nil {
			return true
		}
		if w := e.region.word64(pageSize + i*entrySize + pSplit).Load(); in.split && w>>3 == in.splitSeq && w&7 != 0 && w&7 != doneClaimed {
			return true
		}
	}
	return d.ackN > 0
}

// askForRoom runs before the endpoint sleeps: it asks the owner of every
// inbox it has messages or answers waiting for room in to ring it when
// it made room (pWant), then tries once more, and reports whether that
// moved anything (then the caller must not sleep).
func (d *dataPath) askForRoom(e *endpoint) bool {
	var before uint64
	asked := false
	for _, p := range d.plist {
		before += p.q.tail
		if len(p.out) > 0 {
			p.r.word32(p.off + pWant).Store(1)
			asked = true
		}
	}
	if d.ackN > 0 {
		if p := d.ins[d.acks[d.ackHead].in].reply; p != nil {
			p.r.word32(p.off + pWant).Store(1)
			asked = true
		}
	}
	if !asked {
		return false
	}
	n := len(d.plist)
	d.flushAcks(e)
	d.pushAll(e)
	var after uint64
	for _, p := range d.plist {
		after += p.q.tail
	}
	return after != before || len(d.plist) != n
}

// notifyRoom rings the doorbell of entry i's claimer if it asked to be
// told when there is room again (the owner just made some).
func (d *dataPath) notifyRoom(e *endpoint, i int) {
	w := e.region.word32(pageSize + i*entrySize + pWant)
	if w.Load() != 0 && w.Swap(0) != 0 {
		e.ringer.ring(&d.ins[i].bell)
	}
}

// ---- outbound ----

// valid reports whether p's owner still serves its inbox and our entry
// there is still ours (the owner did not cut us off). A few loads, on
// two cache lines.
func (p *peer) valid(nonce uint64) bool {
	r := p.r
	return r.word32(p.off+pReady).Load() == 1 && r.word64(p.off+pNonce).Load() == nonce &&
		r.word32(p.off+pClaim).Load() == myPID && r.word64(hMagic).Load() == regionMagic
}

// peerFor returns the connection to the endpoint at dest, connecting on
// first use. It returns bare fi.EAGAIN while the peer's inbox does not
// exist (the peer may start later) or has no free entry, and fi.EINVAL
// for an address the AV does not hold.
func (d *dataPath) peerFor(e *endpoint, dest fi.Addr) (*peer, error) {
	if v := e.av.Version(); v != d.cacheVer {
		clear(d.byAddr)
		d.byAddr, d.cacheVer = d.byAddr[:0], v
	} else if uint64(dest) < uint64(len(d.byAddr)) {
		if p := d.byAddr[dest]; p != nil && p.valid(e.nonce) {
			return p, nil
		}
	}
	p, err := d.lookupPeer(e, dest)
	if err == nil && uint64(dest) < 1<<20 {
		for uint64(len(d.byAddr)) <= uint64(dest) {
			d.byAddr = append(d.byAddr, nil)
		}
		d.byAddr[dest] = p
	}
	return p, err
}

// lookupPeer is peerFor without the cache.
func (d *dataPath) lookupPeer(e *endpoint, dest fi.Addr) (*peer, error) {
	name, ok := e.av.Addr(dest)
	if !ok {
		return nil, fi.EINVAL
	}
	if p := d.peers[string(name)]; p != nil {
		if p.valid(e.nonce) {
			return p, nil
		}
		// The owner closed, or let our entry go (it judged us dead or
		// broken): what we had in flight is lost.
		d.resetPeer(e, p)
	}
	unreported, gone := d.gone[string(name)]
	if unreported {
		// Say once that messages to it may be lost; the next send
		// connects again.
		d.gone[string(name)] = false
		return nil, fi.ECONNRESET
	}
	p, err := d.connect(e, string(name))
	if err == fi.EAGAIN && gone {
		return nil, fi.ECONNRESET // it was there and died or closed; it may come back
	}
	return p, err
}

// resetPeer drops p, whose inbox went away or cut us off: what was in
// flight to it fails with fi.ECONNRESET, and the next send to it says
// so unless the owner closed its endpoint (or died) after it took
// everything we sent, with nothing in flight: then nothing was lost, and
// a new endpoint of its name is sent to without an error (a server whose
// client closed and came back under the same name may learn of the
// goodbye only after the new one wrote). An owner that still serves its
// inbox cut us off: that is always reported.
func (d *dataPath) resetPeer(e *endpoint, p *peer) {
	lost := d.failPeer(e, p, fi.ECONNRESET)
	if p.r.ownerOpen() || !p.q.loadHead() || p.q.headSeen != p.q.tail || p.bad != "" {
		lost = true
	}
	d.disconnect(e, p, false)
	d.gone[p.name] = lost
}

// abandon gives up our entry in p's inbox, whose state we found
// inconsistent (overwritten by something else): its owner releases it
// (checkInbound), and p is reset.
func (d *dataPath) abandon(e *endpoint, p *peer, why string) {
	fi.Logger(provName).Warn("shm: gave up an entry in a peer's inbox", "peer", p.name, "why", why)
	if p.valid(e.nonce) {
		p.r.word32(p.off + pReady).Store(readyAbandoned)
	}
	d.resetPeer(e, p)
	d.gone[p.name] = true // always reported
}

// checkPeer checks the words of p's entry that its owner writes against
// what we know (a few loads): the head moves between the last head seen
// and our tail, and a chunk is busy only while its slot waits in the
// ring.
func (d *dataPath) checkPeer(p *peer) string {
	if p.bad != "" {
		return p.bad
	}
	if !p.q.loadHead() {
		return "the ring head went backwards or past the tail"
	}
	h := p.q.headSeen
	for k := range sarChunks {
		busyOff, _ := p.r.sarChunkMem(p.off, k)
		switch b := p.r.word64(busyOff).Load(); {
		case b > chunkHeld:
			return "a bounce chunk's busy word holds garbage"
		case b == chunkHeld && p.chunkUsed&(1<<k) == 0:
			return "a bounce chunk is held that no slot named"
		case b == chunkBusy && (p.chunkUsed&(1<<k) == 0 || h > p.chunkAt[k]):
			return "a bounce chunk is busy that no slot in the ring names"
		}
	}
	return ""
}

// freeChunk returns a free bounce chunk of p's entry, the one after the
// last used first, or -1 when all are in flight or held by the owner.
func (p *peer) freeChunk() int {
	for j := range sarChunks {
		k := int((p.chunk + uint64(j)) % sarChunks)
		busy, _ := p.r.sarChunkMem(p.off, k)
		if p.r.word64(busy).Load() == chunkFree {
			return k
		}
	}
	return -1
}

// warm writes a byte into each cache line of the first n bytes of the
// chunk the next protoBuf message takes, if it is free: the lines, which
// the receiver read when it last copied a message out of that chunk,
// then move into this core's cache while nothing waits for them, and the
// next message's copy does not wait for them one by one. Nobody reads a
// free chunk.
func (p *peer) warm(n int) {
	k := int(p.chunk % sarChunks)
	busy, chunk := p.r.sarChunkMem(p.off, k)
	if p.r.word64(busy).Load() != chunkFree {
		return
	}
	chunk = chunk[:min(n, len(chunk))]
	for o := 0; o < len(chunk); o += 64 {
		chunk[o] = 0
	}
}

// connect claims an entry in the inbox of name.
func (d *dataPath) connect(e *endpoint, name string) (*peer, error) {
	r, err := openRegion(name)
	if err != nil {
		return nil, fi.EAGAIN
	}
	pid := uint32(unix.Getpid())
	for i := range maxPeers {
		off := pageSize + i*entrySize
		if !r.word32(off+pClaim).CompareAndSwap(0, pid) {
			continue
		}
		ent := r.entry(i)
		clear(ent[pName : pName+maxNameLen])
		copy(ent[pName:], e.name)
		r.word64(off + pPID).Store(uint64(pid))
		r.word64(off + pNonce).Store(e.region.nonce())
		r.word64(off + pProbe).Store(bufAddr64(e.probe))
		r.word64(off + pProbeVal).Store(e.probe[1])
		r.word32(off + pCMA).Store(0)
		r.word32(off + pWant).Store(0)
		p := &peer{name: name, nameb: []byte(name), r: r, idx: i, off: off, q: newTxRing(r, i), bell: unixAddr(name)}
		r.word32(off + pReady).Store(1)
		for {
			old := r.word64(hActive).Load()
			if r.word64(hActive).CompareAndSwap(old, old|1<<i) {
				break
			}
		}
		p.out = make([]int32, 0, queueSize)
		delete(d.gone, name)
		d.peers[name] = p
		d.plist = append(d.plist, p)
		return p, nil
	}
	r.close()
	return nil, fi.EAGAIN
}

// cmaOK reports whether the peer may read and write our memory (it probed
// it): large messages then go by CMA, else through the bounce buffers.
func (p *peer) cmaOK() bool { return p.r.word32(pageSize+p.idx*entrySize+pCMA).Load() == cmaYes }

// disconnect says goodbye to a peer and unmaps its inbox.
func (d *dataPath) disconnect(e *endpoint, p *peer, bye bool) {
	if bye && p.valid(e.nonce) && p.r.ownerAlive() {
		if s := p.q.reserve(); s != nil {
			h := slotHeader{op: opBye}
			h.put(s)
			p.q.commit()
			e.ringPeer(p)
		}
	}
	delete(d.peers, p.name)
	for k, x := range d.byAddr {
		if x == p {
			d.byAddr[k] = nil
		}
	}
	for k, x := range d.plist {
		if x == p {
			d.plist = append(d.plist[:k], d.plist[k+1:]...)
			break
		}
	}
	p.r.close()
	for i := range d.ins {
		if d.ins[i].reply == p {
			d.ins[i].reply = nil
		}
	}
}

// pushOut sends what queued entries still have to send, in order. It
// reports true when it dropped p instead (its inbox went away, cut us
// off, or holds garbage).
func (d *dataPath) pushOut(e *endpoint, p *peer) (dropped bool) {
	if !p.valid(e.nonce) {
		d.resetPeer(e, p)
		return true
	}
	for len(p.out) > 0 {
		t := &d.tx[p.out[0]]
		if !d.pushEntry(e, p, t) {
			switch {
			case p.q.bad:
				d.abandon(e, p, "the ring head went backwards or past the tail")
				return true
			case p.bad != "":
				d.abandon(e, p, p.bad)
				return true
			}
			return false
		}
		copy(p.out, p.out[1:])
		p.out = p.out[:len(p.out)-1]
		if t.acks == 0 {
			d.finish(e, t)
		}
	}
	return false
}

// cmaState returns the owner's answer to p's CMA probe, or 0 while it
// has not answered.
func (p *peer) cmaState() uint32 { return p.r.word32(p.off + pCMA).Load() }

// pushEntry sends the slots of t that fit; it reports true once all are
// out.
func (d *dataPath) pushEntry(e *endpoint, p *peer, t *txEntry) bool {
	defer e.ringPeer(p)
	switch t.kind {
	case txSend, txTSend:
		op := byte(opMsg)
		if t.kind == txTSend {
			op = opTagged
		}
		h := slotHeader{op: op, size: uint64(t.size), tag: t.tag, data: t.data, msgID: d.msgID(t)}
		if t.cqData {
			h.flags = flagCQData
		}
		if t.dc {
			h.flags |= flagAck
		}
		if t.size <= inlineMax {
			if t.dc && p.busy >= answerCredits {
				return false
			}
			s := p.q.reserve()
			if s == nil {
				return false
			}
			h.proto, h.inlineLen = protoInline, uint32(t.size)
			h.put(s)
			gather(s[slotHdr:], t.iov[:t.niov])
			p.q.commit()
			if t.dc {
				t.hdr, t.sent, t.acks = true, t.size, 1
				p.busy++
			}
			return true
		}
		if !t.hdr && !t.dc && t.size <= bufMax {
			if k := p.freeChunk(); k >= 0 {
				s := p.q.reserve()
				if s == nil {
					return false
				}
				busy, chunk := p.r.sarChunkMem(p.off, k)
				copyAt(chunk[:t.size], t.iov[:t.niov], 0)
				p.r.word64(busy).Store(chunkBusy)
				h.proto, h.inlineLen, h.aux = protoBuf, uint32(t.size), uint32(k)
				h.put(s)
				p.chunkAt[k], p.chunkUsed = p.q.tail, p.chunkUsed|1<<k
				p.chunk = uint64(k) + 1
				p.q.commit()
				t.hdr, t.sent = true, t.size
				return true
			}
		}
		if !t.hdr && p.cmaState() == 0 {
			return false // the owner has not probed us yet: wait for its answer to choose
		}
		if !t.hdr && p.cmaOK() {
			if p.busy >= answerCredits {
				return false
			}
			s := p.q.reserve()
			if s == nil {
				return false
			}
			h.flags &^= flagAck // answered anyway
			if t.size >= splitMin {
				h.flags |= flagSplit
			}
			h.proto, h.niov = protoCMA, uint32(t.niov)
			h.put(s)
			for k, b := range t.iov[:t.niov] {
				putCMASeg(s, k, bufAddr(b), uint64(len(b)))
			}
			p.q.commit()
			t.hdr, t.acks, t.sent = true, 1, t.size
			p.busy++
			return true
		}
		if !t.hdr {
			if t.dc && p.busy >= answerCredits {
				return false
			}
			s := p.q.reserve()
			if s == nil {
				return false
			}
			h.proto = protoSAR
			h.put(s)
			p.q.commit()
			t.hdr = true
			if t.dc {
				t.acks = 1 // the answer comes once the last chunk is placed
				p.busy++
			}
		}
		for t.sent < t.size {
			k := p.freeChunk()
			if k < 0 {
				p.bad = d.checkPeer(p)
				return false
			}
			busyOff, chunk := p.r.sarChunkMem(p.off, k)
			s := p.q.reserve()
			if s == nil {
				return false
			}
			n := copyAt(chunk, t.iov[:t.niov], t.sent)
			p.r.word64(busyOff).Store(chunkBusy)
			c := slotHeader{op: opSAR, msgID: h.msgID, inlineLen: uint32(n), addr: uint64(t.sent), aux: uint32(k)}
			c.put(s)
			p.chunkAt[k], p.chunkUsed = p.q.tail, p.chunkUsed|1<<k
			p.q.commit()
			p.chunk = uint64(k) + 1
			t.sent += n
		}
		return true
	case txWrite, txRead:
		op := byte(opWrite)
		if t.kind == txRead {
			op = opRead
		}
		if !t.hdr && t.size > inlineMax && p.cmaState() == 0 {
			return false // wait for the probe's answer to choose
		}
		if !t.hdr && t.size > inlineMax && p.cmaOK() {
			if p.busy >= answerCredits {
				return false
			}
			s := p.q.reserve()
			if s == nil {
				return false
			}
			h := slotHeader{op: op, proto: protoCMA, size: uint64(t.size), key: t.key, addr: t.addr,
				data: t.data, msgID: d.msgID(t), niov: uint32(t.niov)}
			if t.cqData {
				h.flags = flagCQData
			}
			h.put(s)
			for k, b := range t.iov[:t.niov] {
				putCMASeg(s, k, bufAddr(b), uint64(len(b)))
			}
			p.q.commit()
			t.hdr, t.acks, t.sent = true, 1, t.size
			p.busy++
			return true
		}
		// Inline pieces of at most inlineMax bytes, each answered; the
		// remote CQ data rides on the last one.
		for t.sent < t.size || !t.hdr {
			if p.busy >= answerCredits {
				return false
			}
			s := p.q.reserve()
			if s == nil {
				return false
			}
			n := min(t.size-t.sent, inlineMax)
			h := slotHeader{op: op, proto: protoInline, size: uint64(n), key: t.key, addr: t.addr + uint64(t.sent),
				msgID: d.msgID(t)}
			if op == opWrite {
				h.inlineLen = uint32(n)
				copyAt(s[slotHdr:slotHdr+n], t.iov[:t.niov], t.sent)
			}
			if t.cqData && t.sent+n == t.size {
				h.flags, h.data = flagCQData, t.data
			}
			h.put(s)
			p.q.commit()
			t.hdr = true
			t.sent += n
			t.acks++
			p.busy++
		}
		return true
	case txAtomic:
		return d.pushAtomic(p, t)
	}
	return true
}

// msgID is t's cookie: its index and generation.
func (d *dataPath) msgID(t *txEntry) uint64 { return uint64(t.gen)<<32 | uint64(t.idx) }

// finish completes a transmit entry and frees it.
func (d *dataPath) finish(e *endpoint, t *txEntry) {
	if t.err != 0 {
		e.failTx(t.ctx, t.cqFlags, t.cnt, t.err, t.inject)
	} else {
		e.completeTx(t.ctx, t.cqFlags, t.report, t.cnt)
	}
	i := t.idx
	*t = txEntry{idx: i, gen: t.gen + 1}
	d.txFree = append(d.txFree, i)
}

// answered handles an opAck for one of our entries.
func (d *dataPath) answered(e *endpoint, h *slotHeader, slot []byte) {
	i := int(h.msgID & 0xffffffff)
	if i >= queueSize {
		return
	}
	t := &d.tx[i]
	if t.gen != uint32(h.msgID>>32) || t.acks == 0 || t.peer == nil {
		return // stale or forged: ignore
	}
	if h.niov != 0 && t.err == 0 {
		t.err = fi.Errno(h.niov)
	}
	if t.kind == txRead && h.inlineLen > 0 && t.err == 0 {
		off := int(h.addr - t.addr)
		if off >= 0 && off+int(h.inlineLen) <= t.size {
			scatterAt(t.iov[:t.niov], off, slot[slotHdr:slotHdr+int(h.inlineLen)])
		}
	}
	if t.kind == txAtomic && h.inlineLen > 0 && t.err == 0 && int(h.inlineLen) == t.size {
		scatterAt(t.iov[:t.niov], 0, slot[slotHdr:slotHdr+int(h.inlineLen)])
	}
	t.acks--
	t.peer.busy--
	if t.acks == 0 && t.sent >= t.size && t.hdr {
		d.finish(e, t)
	}
}

// checkPeers fails the operations of peers whose process died and frees
// the inbox entries of senders that died.
//
// It also checks every word of the inbox and of the entries we hold in
// peers' inboxes that the other side writes and that we can check, so
// that state overwritten by a third process (of this user: no other can
// reach the files) ends in an error on that peer instead of a stall: an
// outbound entry that went wrong is given up (abandon: its in-flight
// operations fail with fi.ECONNRESET), an inbound one is cut off
// (checkInbound), and an overwritten header is written again, cutting
// every peer off.
func (d *dataPath) checkPeers(e *endpoint) {
	e.nextCheck.Store(int64(time.Since(epoch) + checkEvery))
	for k := 0; k < len(d.plist); {
		p := d.plist[k]
		switch {
		case !p.r.ownerOpen(), !p.valid(e.nonce):
			d.resetPeer(e, p)
			continue
		}
		if why := d.checkPeer(p); why != "" {
			d.abandon(e, p, why)
			continue
		}
		k++
	}
	r := e.region
	if !d.unlinked && r.unlinked() {
		d.unlinked = true
		fi.Logger(provName).Warn("shm: the inbox file was removed by another process: peers that have not connected yet cannot reach this endpoint",
			"path", r.path)
	}
	if !r.headerIntact() {
		for i := range d.ins {
			if d.ins[i].active {
				d.cut(e, i, "the inbox header was overwritten")
			}
		}
		r.writeHeader()
	}
	now := time.Now()
	active := r.word64(hActive).Load()
	if active>>maxPeers != 0 {
		fi.Logger(provName).Warn("shm: cleared active bits of entries that do not exist", "bits", active>>maxPeers<<maxPeers)
		for {
			old := r.word64(hActive).Load()
			if r.word64(hActive).CompareAndSwap(old, old&(1<<maxPeers-1)) {
				break
			}
		}
	}
	var stray uint64
	for i := range d.ins {
		in := &d.ins[i]
		off := pageSize + i*entrySize
		switch {
		case in.active:
			d.checkInbound(e, i)
		case !d.quarantine[i].IsZero():
			if now.Sub(d.quarantine[i]) >= checkEvery && d.held[i] == 0 {
				d.quarantine[i] = time.Time{}
				clearEntry(r, i)
				r.word32(off + pClaim).Store(0)
			}
		case active&(1<<i) != 0 && r.word32(off+pReady).Load() != 1:
			// An active bit no claimer set (a claimer marks its
			// entry ready first).
			clearBit(r, i)
			stray |= 1 << i
		}
	}
	if stray != 0 {
		fi.Logger(provName).Warn("shm: cleared active bits of entries nobody claimed", "bits", stray)
	}
}

// checkInbound checks the words of entry i that its claimer writes
// once, and the owner's own words there, against what the owner knows,
// and cuts the claimer off when they changed; it releases the entry of a
// claimer that died.
func (d *dataPath) checkInbound(e *endpoint, i int) {
	in := &d.ins[i]
	if !pidAlive(in.pid) {
		d.release(e, i, fi.ECONNRESET, false)
		return
	}
	r := e.region
	off := pageSize + i*entrySize
	cma := uint32(cmaNo)
	if in.cma {
		cma = cmaYes
	}
	why := ""
	switch ready := r.word32(off + pReady).Load(); {
	case ready == readyAbandoned:
		why = "it gave its entry up (it found the entry inconsistent)"
	case ready != 1 || r.word32(off+pClaim).Load() != uint32(in.pid) || r.word64(off+pPID).Load() != uint64(in.pid) ||
		r.word64(off+pNonce).Load() != in.nonce:
		why = "the entry's claim words were overwritten"
	case r.word64(hActive).Load()&(1<<i) == 0:
		why = "the entry's active bit was cleared"
	case r.word64(off+pHead).Load() != in.q.head:
		why = "the ring head was overwritten"
	case !seqPlausible(r.headSeq(i, in.q.head), in.q.head):
		why = "the ring was overwritten"
	case r.word32(off+pCMA).Load() != cma:
		why = "the entry's CMA word was overwritten"
	default:
		for k := range sarChunks {
			busy, _ := r.sarChunkMem(off, k)
			if b := r.word64(busy).Load(); b > chunkHeld || (b == chunkHeld) != (d.held[i]&(1<<k) != 0) {
				why = "a bounce chunk's busy word was overwritten"
			}
		}
	}
	if why != "" {
		d.cut(e, i, why)
	}
}

// failPeer completes every entry bound for p with code; it reports
// whether there was any.
func (d *dataPath) failPeer(e *endpoint, p *peer, code fi.Errno) (failed bool) {
	for i := range d.tx {
		t := &d.tx[i]
		if t.peer == p {
			t.err, t.acks = code, 0
			d.finish(e, t)
			failed = true
		}
	}
	p.out, p.busy = p.out[:0], 0
	return failed
}

// shutdown fails everything pending with ECANCELED and leaves every peer.
func (d *dataPath) shutdown(e *endpoint) {
	for len(d.plist) > 0 {
		p := d.plist[0]
		d.failPeer(e, p, fi.ECANCELED)
		d.disconnect(e, p, true)
	}
	for i := range d.ins {
		if in := &d.ins[i]; in.active {
			// Ring the claimer: it finds its entry gone at once.
			b := in.bell
			d.release(e, i, fi.ECANCELED, false)
			if b.Name != "" {
				e.ringer.ring(&b)
			}
		}
	}
	for _, r := range d.recvs {
		e.failRecv(&r, fi.ECANCELED, 0)
	}
	for _, r := range d.trecvs {
		e.failRecv(&r, fi.ECANCELED, 0)
	}
	d.recvs, d.trecvs = d.recvs[:0], d.trecvs[:0]
	d.ackHead, d.ackN = 0, 0
}

// ---- inbound ----

// receive takes slots from every active entry of the inbox.
func (d *dataPath) receive(e *endpoint) {
	active := e.region.active()
	for active != 0 {
		i := bits.TrailingZeros64(active)
		active &^= 1 << i
		in := &d.ins[i]
		if !in.active && !d.adopt(e, i) {
			continue
		}
		if in.split {
			d.finishSplit(e, i)
		}
		popped := 0
		for range slotsPerVisit {
			if d.ackN == ackQSize {
				break // no room for answers: come back later
			}
			s, _ := in.q.front()
			if s == nil {
				break
			}
			var h slotHeader
			if !h.parse(s) {
				d.broken(e, i, "malformed slot")
				break
			}
			if in.split && h.op != opAck && h.op != opGrant && !d.revokeSplit(e, i) {
				// A later message waits for the split one's tail,
				// which its sender is writing now; answers go on.
				break
			}
			done, bad := d.slot(e, i, &h, s)
			if bad {
				d.broken(e, i, "slot out of sequence")
				break
			}
			if !done {
				break
			}
			in.q.pop()
			popped++
			if h.op == opBye {
				d.leaving(e, i)
				break
			}
		}
		if in.active && popped > 0 {
			in.q.publish()
			d.notifyRoom(e, i)
		}
	}
}

// leaving handles a claimer's goodbye: its entry is released, and if we
// send to the same endpoint and it closed, that connection is reset now
// rather than at the next check.
func (d *dataPath) leaving(e *endpoint, i int) {
	name := d.ins[i].name
	d.release(e, i, fi.ECONNRESET, false)
	if p := d.peers[name]; p != nil && !p.r.ownerOpen() {
		d.resetPeer(e, p)
	}
}

// adopt starts serving entry i once its claimer marked it ready: it
// learns the peer and probes whether cross-memory attach works.
func (d *dataPath) adopt(e *endpoint, i int) bool {
	off := pageSize + i*entrySize
	r := e.region
	if r.word32(off+pReady).Load() != 1 {
		return false
	}
	in := &d.ins[i]
	*in = inbound{active: true, q: newRxRing(r, i), name: r.peerName(i), pid: int(r.word64(off + pPID).Load()),
		nonce: r.word64(off + pNonce).Load()}
	in.nameb = []byte(in.name)
	e.adopted.Store(e.adopted.Load() | 1<<i)
	if checkName(in.nameb) != nil || r.word32(off+pClaim).Load() != uint32(in.pid) {
		d.cut(e, i, "the claimer wrote an invalid name or pid")
		return false
	}
	in.bell = unixAddr(in.name)
	var probe [2]uint64
	d.cma.addLocal(bytesOf(&probe))
	d.cma.addRemote(r.word64(off+pProbe).Load(), 16)
	n, err := d.cma.read(in.pid)
	in.cma = err == nil && n == 16 && probe[0] == probeMagic && probe[1] == r.word64(off+pProbeVal).Load() && !e.noCMA
	if in.cma {
		r.word32(off + pCMA).Store(cmaYes)
	} else {
		r.word32(off + pCMA).Store(cmaNo)
	}
	d.notifyRoom(e, i) // a claimer may wait for the answer
	return true
}

// broken cuts off the peer of entry i, which wrote what no correct peer
// writes.
func (d *dataPath) broken(e *endpoint, i int, why string) { d.cut(e, i, why) }

// cut cuts off the live claimer of entry i, whose entry holds what no
// correct peer and no correct owner leave there: it logs why, releases
// the entry with fi.EIO (a SAR message in progress from it fails) and
// keeps it from the next claimer for a while (claimQuarantine). The
// claimer finds its entry gone at its next look and fails what it had in
// flight with fi.ECONNRESET.
func (d *dataPath) cut(e *endpoint, i int, why string) {
	fi.Logger(provName).Warn("shm: cut off a peer", "peer", d.ins[i].name, "why", why)
	d.release(e, i, fi.EIO, true)
}

// release frees entry i of the inbox: a SAR message in progress fails
// with code, the rest of the ring is dropped. With quarantine (the
// claimer lives and did not leave), nobody may claim the entry until
// checkPeers frees it later; the claimer's doorbell is rung, so that a
// blocked claimer looks at its entry soon.
func (d *dataPath) release(e *endpoint, i int, code fi.Errno, quarantine bool) {
	in := &d.ins[i]
	if in.sar {
		e.failRecv(&in.sarRecv, code, in.sarH.data)
	}
	if in.split {
		d.dropSplit(e, i)
		e.failRecv(&in.splitR, code, in.splitH.data)
		d.splits--
	}
	r := e.region
	off := pageSize + i*entrySize
	clearEntry(r, i)
	r.word32(off + pReady).Store(0)
	clearBit(r, i)
	if !quarantine && d.held[i] != 0 {
		// Unexpected messages still hold chunks of the entry: no new
		// claimer may write there before they are delivered.
		r.word32(off + pClaim).Store(claimQuarantine)
		d.quarantine[i] = time.Now()
	} else if quarantine {
		r.word32(off + pClaim).Store(claimQuarantine)
		d.quarantine[i] = time.Now()
		if in.bell.Name != "" {
			e.ringer.ring(&in.bell)
		}
	} else {
		r.word32(off + pClaim).Store(0)
	}
	e.adopted.Store(e.adopted.Load() &^ (1 << i))
	*in = inbound{}
}

// clearEntry empties entry i's ring and bounce chunks for the next
// claimer.
func clearEntry(r *region, i int) {
	off := pageSize + i*entrySize
	r.resetRing(i)
	for k := range sarChunks {
		busy, _ := r.sarChunkMem(off, k)
		r.word64(busy).Store(0)
	}
	r.word32(off + pWant).Store(0)
}

// clearBit clears entry i's bit in the active-peer bitmap.
func clearBit(r *region, i int) {
	for {
		old := r.word64(hActive).Load()
		if r.word64(hActive).CompareAndSwap(old, old&^(1<<i)) {
			return
		}
	}
}

// slot handles one slot from entry i. done false leaves it in the ring
// (no receive yet for a SAR message, no room for the answer); bad drops
// the peer.
func (d *dataPath) slot(e *endpoint, i int, h *slotHeader, s []byte) (done, bad bool) {
	in := &d.ins[i]
	switch h.op {
	case opAck:
		d.answered(e, h, s)
		return true, false
	case opBye:
		return true, false
	case opGrant:
		d.granted(e, i, h)
		return true, false
	case opSAR:
		if !in.sar || h.msgID != in.sarH.msgID || int(h.addr) != in.sarGot || in.sarGot+int(h.inlineLen) > in.sarSize {
			return false, true
		}
		busy, chunk := e.region.sarChunkMem(pageSize+i*entrySize, int(h.aux))
		n := int(h.inlineLen)
		if in.sarPlace < in.sarRecv.size {
			k := min(n, in.sarRecv.size-in.sarPlace)
			scatterAt(in.sarRecv.iov[:in.sarRecv.niov], in.sarPlace, chunk[:k])
			in.sarPlace += k
		}
		e.region.word64(busy).Store(0)
		in.sarGot += n
		if in.sarGot == in.sarSize {
			in.sar = false
			d.delivered(e, &in.sarRecv, &in.sarH, in.sarSrc, in.sarPlace)
			if in.sarH.flags&flagAck != 0 {
				d.queueAck(i, in.sarH.msgID, 0, 0, nil) // the loop left room
			}
		}
		return true, false
	case opMsg, opTagged:
		if in.sar {
			return false, true
		}
		src := d.source(e, in)
		tagged := h.op == opTagged
		k := d.match(tagged, h.tag, src)
		if h.proto == protoSAR {
			if k < 0 {
				return false, false // waits at the head of this peer's ring for a receive
			}
			in.sar, in.sarRecv, in.sarSize, in.sarGot, in.sarH, in.sarSrc, in.sarPlace = true, d.takeFor(tagged, k, h.size), int(h.size), 0, *h, src, 0
			return true, false
		}
		if h.proto == protoBuf {
			busy, chunk := e.region.sarChunkMem(pageSize+i*entrySize, int(h.aux))
			if d.held[i]&(1<<h.aux) != 0 || e.region.word64(busy).Load() != chunkBusy {
				return false, true // the chunk is not the sender's to name
			}
			if k < 0 {
				if !d.stash(e, i, h, s, src) {
					return false, false
				}
				d.held[i] |= 1 << h.aux
				e.region.word64(busy).Store(chunkHeld)
				return true, false
			}
			r := d.takeFor(tagged, k, h.size)
			d.deliver(e, i, &r, h, chunk, nil, in.pid, src)
			e.region.word64(busy).Store(chunkFree)
			return true, false
		}
		if k < 0 {
			return d.stash(e, i, h, s, src), false
		}
		r := d.takeFor(tagged, k, h.size)
		var segs [maxCMAIOV][2]uint64
		if h.proto == protoCMA {
			for k := range int(h.niov) {
				segs[k][0], segs[k][1] = cmaSeg(s, k)
			}
			if h.flags&flagSplit != 0 && in.cma && r.niov == 1 && r.mr == 0 && h.size >= splitMin &&
				uint64(r.size) >= h.size && d.ackN+1 < ackQSize {
				d.startSplit(e, i, &r, h, &segs, src)
				return true, false
			}
		}
		d.deliver(e, i, &r, h, s[slotHdr:], &segs, in.pid, src)
		return true, false
	case opWrite, opRead:
		return d.serveRMA(e, i, h, s), false
	case opAtomic:
		return d.serveAtomic(e, i, h, s)
	}
	return false, true
}

// startSplit starts receiving the CMA message h from entry i into r
// (one segment, large enough) in two halves that copy at once: it asks
// the sender to write the tail (opGrant, sent at once), reads the head
// itself, and leaves the rest to finishSplit. Until then the entry's
// later slots wait.
func (d *dataPath) startSplit(e *endpoint, i int, r *rxEntry, h *slotHeader, segs *[maxCMAIOV][2]uint64, src fi.Addr) {
	in := &d.ins[i]
	n := int(h.size)
	m := n / 2 &^ 63
	a := &d.acks[(d.ackHead+d.ackN)%ackQSize]
	*a = ackEntry{in: i, msgID: h.msgID, off: bufAddr(r.iov[0][m:n]), grant: true, goff: uint64(m), glen: uint64(n - m)}
	d.ackN++
	in.splitSeq = (in.splitSeq + 1) & (1<<61 - 1)
	a.seq = in.splitSeq
	e.region.word64(pageSize + i*entrySize + pSplit).Store(in.splitSeq << 3)
	d.flushAcks(e)
	in.split, in.splitR, in.splitH, in.splitSrc, in.splitSegs, in.splitM = true, *r, *h, src, *segs, m
	d.splits++
	d.cma.addLocal(r.iov[0][:m])
	addRemoteRange(&d.cma, segs, int(h.niov), 0, m)
	k, err := d.cma.read(in.pid)
	in.splitErr = err != nil || k != m
}

// finishSplit completes entry i's split message once its sender said it
// wrote the tail (reading the tail itself when the sender could not);
// false while it has not, or while no answer fits.
func (d *dataPath) finishSplit(e *endpoint, i int) bool {
	in := &d.ins[i]
	off := pageSize + i*entrySize
	r := e.region
	w := r.word64(off + pSplit).Load()
	st := w & 7
	if d.ackN == ackQSize || w>>3 != in.splitSeq || st != doneOK && st != doneFailed && st != doneRevoked {
		return false // not answered yet, or being written
	}
	n := int(in.splitH.size)
	if st != doneOK && !in.splitErr {
		d.cma.addLocal(in.splitR.iov[0][in.splitM:n])
		addRemoteRange(&d.cma, &in.splitSegs, int(in.splitH.niov), in.splitM, n-in.splitM)
		k, err := d.cma.read(in.pid)
		in.splitErr = err != nil || k != n-in.splitM
	}
	in.split = false
	d.splits--
	status := uint32(0)
	if in.splitErr {
		status = uint32(fi.EIO)
		e.failRecv(&in.splitR, fi.EIO, in.splitH.data)
	} else {
		d.delivered(e, &in.splitR, &in.splitH, in.splitSrc, n)
	}
	in.splitR = rxEntry{}
	d.queueAck(i, in.splitH.msgID, status, 0, nil)
	return true
}

// revokeSplit runs when a later message from entry i finds its split
// message pending: if the sender has not started on the tail it takes
// the grant back (the sender then skips it) and reads the tail itself,
// so that the ring goes on without waiting for the sender (two endpoints
// splitting messages to each other would wait for each other's grants
// queued behind those messages). False while the sender is writing the
// tail, or no answer fits.
func (d *dataPath) revokeSplit(e *endpoint, i int) bool {
	seq := d.ins[i].splitSeq << 3
	e.region.word64(pageSize+i*entrySize+pSplit).CompareAndSwap(seq, seq|doneRevoked)
	return d.finishSplit(e, i)
}

// dropSplit takes back the grant of entry i's split message, whose
// receive fails: once the sender started writing the tail into the
// receive buffer, it waits (at most splitDrain) until the sender is done
// or dead, so that no write reaches the buffer after the application
// got it back. The wait only happens when an entry is released in the
// few microseconds of that write.
func (d *dataPath) dropSplit(e *endpoint, i int) {
	in := &d.ins[i]
	w := e.region.word64(pageSize + i*entrySize + pSplit)
	seq := in.splitSeq << 3
	if w.CompareAndSwap(seq, seq|doneRevoked) {
		return
	}
	for end := time.Now().Add(splitDrain); w.Load() == seq|doneClaimed && pidAlive(in.pid) && time.Now().Before(end); {
		time.Sleep(20 * time.Microsecond)
	}
}

// splitDrain bounds dropSplit's wait.
const splitDrain = 100 * time.Millisecond

// granted handles an opGrant from entry i for one of our CMA messages:
// it writes the tail asked for into the receiver's memory, then says so
// in our entry of its inbox. A grant that does not fit a message we sent
// that peer is ignored (the receiver, finding no answer, waits; a
// receiver that forges grants only harms its own messages).
func (d *dataPath) granted(e *endpoint, i int, h *slotHeader) {
	k := int(h.msgID & 0xffffffff)
	if k >= queueSize {
		return
	}
	t := &d.tx[k]
	if t.gen != uint32(h.msgID>>32) || t.acks != 1 || t.peer == nil || t.granted || !t.hdr ||
		t.kind != txSend && t.kind != txTSend || t.peer.name != d.ins[i].name ||
		h.tag >= uint64(t.size) || h.size != uint64(t.size)-h.tag {
		return
	}
	t.granted = true
	p := t.peer
	seq := h.data << 3
	if h.data >= 1<<61 || !p.r.word64(p.off+pSplit).CompareAndSwap(seq, seq|doneClaimed) {
		return // the receiver took the grant back (revokeSplit)
	}
	addLocalRange(&d.cma, t.iov[:t.niov], int(h.tag), int(h.size))
	d.cma.addRemote(h.addr, h.size)
	n, err := d.cma.write(p.r.pid())
	st := uint64(doneOK)
	if err != nil || n != int(h.size) {
		st = doneFailed
	}
	p.r.word64(p.off + pSplit).Store(seq | st)
	e.ringPeer(p)
}

// addRemoteRange adds the part [off, off+n) of the remote segments segs
// (nseg of them, in order) to c.
func addRemoteRange(c *cmaIOV, segs *[maxCMAIOV][2]uint64, nseg, off, n int) {
	for k := range nseg {
		a, l := segs[k][0], int(segs[k][1])
		if off >= l {
			off -= l
			continue
		}
		take := min(l-off, n)
		c.addRemote(a+uint64(off), uint64(take))
		n -= take
		off = 0
		if n == 0 {
			return
		}
	}
}

// addLocalRange adds the part [off, off+n) of the segments iov to c.
func addLocalRange(c *cmaIOV, iov [][]byte, off, n int) {
	for _, b := range iov {
		if off >= len(b) {
			off -= len(b)
			continue
		}
		take := min(len(b)-off, n)
		c.addLocal(b[off : off+take])
		n -= take
		off = 0
		if n == 0 {
			return
		}
	}
}

// source returns the fi.Addr of in's peer in our AV (fi.AddrUnspec, i.e.
// FI_ADDR_NOTAVAIL, when it is not there).
func (d *dataPath) source(e *endpoint, in *inbound) fi.Addr {
	if v := e.av.Version() + 1; v != in.srcVer {
		in.src, in.srcVer = e.av.Find(in.nameb), v
	}
	return in.src
}

// match finds the first posted receive a message of (tagged, tag, src)
// matches, or -1.
func (d *dataPath) match(tagged bool, tag uint64, src fi.Addr) int {
	if tagged {
		for k := range d.trecvs {
			r := &d.trecvs[k]
			if (r.tag^tag)&^r.ignore == 0 && (r.src == fi.AddrUnspec || r.src == src) {
				return k
			}
		}
		return -1
	}
	for k := range d.recvs {
		if r := &d.recvs[k]; r.src == fi.AddrUnspec || r.src == src {
			return k
		}
	}
	return -1
}

// take removes posted receive k.
func (d *dataPath) take(tagged bool, k int) rxEntry {
	l := &d.recvs
	if tagged {
		l = &d.trecvs
	}
	r := (*l)[k]
	copy((*l)[k:], (*l)[k+1:])
	(*l)[len(*l)-1] = rxEntry{}
	*l = (*l)[:len(*l)-1]
	return r
}

// stash keeps an unexpected inline or CMA message; false when the pool is
// full (the slot stays in the ring).
func (d *dataPath) stash(e *endpoint, i int, h *slotHeader, s []byte, src fi.Addr) bool {
	if len(d.unexFree) == 0 {
		return false
	}
	u := d.unexFree[len(d.unexFree)-1]
	d.unexFree = d.unexFree[:len(d.unexFree)-1]
	x := &d.unexPool[u]
	x.h, x.in, x.nonce, x.pid, x.src = *h, i, d.ins[i].nonce, d.ins[i].pid, src
	switch h.proto {
	case protoBuf: // the payload stays in its chunk (held)
	case protoInline:
		copy(x.data[:], s[slotHdr:slotHdr+int(h.inlineLen)])
	default:
		for k := range int(h.niov) {
			a, n := cmaSeg(s, k)
			x.segs[k] = [2]uint64{a, n}
		}
	}
	if h.op == opTagged {
		d.tunexp = append(d.tunexp, u)
	} else {
		d.unexp = append(d.unexp, u)
	}
	return true
}

// deliver places a message into receive r and completes it: inline
// payload from data, or CMA segments (from the slot s or from segs). It
// answers entry i's claimer, for a CMA message or one with flagAck,
// unless i is -1 (the claimer left; the caller checked there is room
// for an answer).
func (d *dataPath) deliver(e *endpoint, i int, r *rxEntry, h *slotHeader, data []byte, segs *[maxCMAIOV][2]uint64, pid int, src fi.Addr) {
	switch h.proto {
	case protoInline, protoBuf:
		n := scatterAt(r.iov[:r.niov], 0, data[:h.inlineLen])
		d.delivered(e, r, h, src, n)
		if h.flags&flagAck != 0 && i >= 0 {
			d.queueAck(i, h.msgID, 0, 0, nil)
		}
	case protoCMA:
		want := int(min(h.size, uint64(r.size)))
		for _, b := range r.iov[:r.niov] {
			if want <= 0 {
				break
			}
			b = b[:min(len(b), want)]
			d.cma.addLocal(b)
			want -= len(b)
		}
		for k := range int(h.niov) {
			d.cma.addRemote(segs[k][0], segs[k][1])
		}
		n, err := d.cma.read(pid)
		status := uint32(0)
		if err != nil {
			status = uint32(fi.EIO)
			e.failRecv(r, fi.EIO, h.data)
		} else {
			d.delivered(e, r, h, src, n)
		}
		if i >= 0 {
			d.queueAck(i, h.msgID, status, 0, nil)
		}
	}
}

// delivered completes receive r with n bytes of the message h placed.
func (d *dataPath) delivered(e *endpoint, r *rxEntry, h *slotHeader, src fi.Addr, n int) {
	flags := fi.FlagRecv | fi.FlagMsg
	if h.op == opTagged {
		flags = fi.FlagRecv | fi.FlagTagged
	}
	var data uint64
	if h.flags&flagCQData != 0 {
		flags |= fi.FlagRemoteCQData
		data = h.data
	}
	// A message in an FI_MULTI_RECV buffer says where it landed
	// (fi_cq_data_entry's buf); the buffer may be released after it.
	var buf []byte
	released := false
	if r.mr != 0 {
		buf = r.iov[0][:n]
		flags, released = d.mrs[r.mr-1].Done(flags)
	}
	if h.size > uint64(n) {
		if e.RxCQ != nil {
			_ = e.RxCQ.CompleteErr(&eq.CQError{Context: r.ctx, Flags: flags, Len: n, Buf: buf, Data: data, Tag: h.tag,
				OLen: int(h.size) - n, Err: fi.ETRUNC, SrcAddr: nil})
		}
		if c := e.Cntr[kit.CntrRecv]; c != nil {
			_ = c.AddErr(1)
		}
	} else {
		if r.report && e.RxCQ != nil {
			_ = e.RxCQ.CompleteOverflow(eq.Completion{Context: r.ctx, Flags: flags, Len: n, Buf: buf, Data: data, Tag: h.tag}, src)
		}
		if c := e.Cntr[kit.CntrRecv]; c != nil {
			_ = c.Add(1)
		}
	}
	if released {
		d.releaseMulti(e, int32(r.mr-1))
	}
}

// failRecv completes receive r with an error. A posted FI_MULTI_RECV
// buffer (only cancelled: code is fi.ECANCELED) is released with its
// cancellation entry once no message streams into it (cancelMulti).
func (e *endpoint) failRecv(r *rxEntry, code fi.Errno, data uint64) {
	d := &e.dp
	if r.owner {
		d.cancelMulti(e, int32(r.mr-1))
		return
	}
	flags := fi.FlagRecv | fi.FlagMsg
	if r.tagged {
		flags = fi.FlagRecv | fi.FlagTagged
	}
	released := false
	if r.mr != 0 {
		flags, released = d.mrs[r.mr-1].Done(flags)
	}
	if e.RxCQ != nil {
		_ = e.RxCQ.CompleteErr(&eq.CQError{Context: r.ctx, Flags: flags, Len: 0, Data: data, Err: code})
	}
	if c := e.Cntr[kit.CntrRecv]; c != nil {
		_ = c.AddErr(1)
	}
	if released {
		d.releaseMulti(e, int32(r.mr-1))
	}
}

// serveRMA validates and carries out an RMA operation from entry i and
// queues its answer; false when no answer fits now (the slot waits).
func (d *dataPath) serveRMA(e *endpoint, i int, h *slotHeader, s []byte) bool {
	if d.ackN == ackQSize {
		return false
	}
	in := &d.ins[i]
	access := fi.AccessRemoteWrite
	if h.op == opRead {
		access = fi.AccessRemoteRead
	}
	mem, err := e.domain.mrs.Verify(h.key, h.addr, int(h.size), access)
	if err != nil || h.size > uint64(maxInt) {
		d.queueAck(i, h.msgID, uint32(fi.EACCES), h.addr, nil)
		return true
	}
	status := uint32(0)
	switch {
	case h.proto == protoInline && h.op == opWrite:
		copy(mem, s[slotHdr:slotHdr+int(h.inlineLen)])
	case h.proto == protoInline: // read
		d.queueAck(i, h.msgID, 0, h.addr, mem)
		if c := e.Cntr[kit.CntrRemoteRead]; c != nil {
			_ = c.Add(1)
		}
		return true
	case !in.cma:
		status = uint32(fi.EOPNOTSUPP)
	default:
		d.cma.addLocal(mem)
		for k := range int(h.niov) {
			d.cma.addRemote(cmaSeg(s, k))
		}
		var n int
		var err error
		if h.op == opWrite {
			n, err = d.cma.read(in.pid)
		} else {
			n, err = d.cma.write(in.pid)
		}
		if err != nil || n != len(mem) {
			status = uint32(fi.EIO)
		}
	}
	if status == 0 {
		if h.op == opWrite {
			if h.flags&flagCQData != 0 && e.RxCQ != nil {
				_ = e.RxCQ.CompleteOverflow(eq.Completion{Flags: fi.FlagRMA | fi.FlagRemoteWrite | fi.FlagRemoteCQData,
					Len: int(h.size), Data: h.data}, d.source(e, in))
			}
			if c := e.Cntr[kit.CntrRemoteWrite]; c != nil {
				_ = c.Add(1)
			}
		} else if c := e.Cntr[kit.CntrRemoteRead]; c != nil {
			_ = c.Add(1)
		}
	}
	d.queueAck(i, h.msgID, status, h.addr, nil)
	return true
}

const maxInt = int(^uint(0) >> 1)

// queueAck queues an answer for entry i's peer. The caller checked there
// is room.
func (d *dataPath) queueAck(i int, msgID uint64, status uint32, off uint64, data []byte) {
	a := &d.acks[(d.ackHead+d.ackN)%ackQSize]
	a.in, a.msgID, a.status, a.off, a.grant = i, msgID, status, off, false
	a.n = copy(a.data[:], data)
	d.ackN++
}

// flushAcks sends queued answers while the peers' rings have room.
func (d *dataPath) flushAcks(e *endpoint) {
	retried := false
	for d.ackN > 0 {
		a := &d.acks[d.ackHead]
		in := &d.ins[a.in]
		p := in.reply
		if p == nil && in.name != "" {
			if p = d.peers[in.name]; p == nil {
				p, _ = d.connect(e, in.name)
			}
			in.reply = p
		}
		if p != nil && !p.valid(e.nonce) {
			// Our entry in its inbox is gone: connect anew, once.
			d.resetPeer(e, p)
			if !retried {
				retried = true
				continue
			}
			p = nil
		}
		if p != nil {
			s := p.q.reserve()
			if s == nil && p.q.bad {
				d.abandon(e, p, "the ring head went backwards or past the tail")
				continue
			}
			if s == nil {
				return
			}
			h := slotHeader{op: opAck, msgID: a.msgID, niov: a.status, addr: a.off, inlineLen: uint32(a.n)}
			if a.grant {
				h = slotHeader{op: opGrant, msgID: a.msgID, addr: a.off, tag: a.goff, size: a.glen, data: a.seq}
			}
			h.put(s)
			copy(s[slotHdr:], a.data[:a.n])
			p.q.commit()
			e.ringPeer(p)
		}
		d.ackHead = (d.ackHead + 1) % ackQSize
		d.ackN--
	}
}

// postRecv posts a receive: an unexpected message that matches is
// delivered at once, else the receive waits in order. An FI_MULTI_RECV
// buffer (multi set) takes every unexpected message that matches until
// it is full (postMulti).
func (d *dataPath) postRecv(e *endpoint, r *rxEntry, multi bool) error {
	if multi {
		return d.postMulti(e, r)
	}
	l := &d.unexp
	if r.tagged {
		l = &d.tunexp
	}
	for k, u := range *l {
		x := &d.unexPool[u]
		if r.tagged && (r.tag^x.h.tag)&^r.ignore != 0 || r.src != fi.AddrUnspec && r.src != x.src {
			continue
		}
		in, ok := d.unexAnswer(e, x)
		if !ok {
			return fi.EAGAIN
		}
		copy((*l)[k:], (*l)[k+1:])
		*l = (*l)[:len(*l)-1]
		d.deliver(e, in, r, &x.h, d.unexData(e, x), &x.segs, x.pid, x.src)
		d.unhold(e, x)
		d.unexFree = append(d.unexFree, u)
		return nil
	}
	if r.tagged {
		if len(d.trecvs) == cap(d.trecvs) {
			return fi.EAGAIN
		}
		d.trecvs = append(d.trecvs, *r)
	} else {
		if len(d.recvs) == cap(d.recvs) {
			return fi.EAGAIN
		}
		d.recvs = append(d.recvs, *r)
	}
	return nil
}

// unexData returns the payload of the unexpected message x: its own
// copy, or for protoBuf the chunk it holds.
func (d *dataPath) unexData(e *endpoint, x *unexEntry) []byte {
	if x.h.proto == protoBuf {
		_, chunk := e.region.sarChunkMem(pageSize+x.in*entrySize, int(x.h.aux))
		return chunk
	}
	return x.data[:]
}

// unhold frees the chunk the unexpected protoBuf message x held once it
// was delivered: back to its sender if the entry still has the claimer
// that sent it (which may wait for room), else the entry, kept from
// claimers while it held chunks, may be freed by checkPeers.
func (d *dataPath) unhold(e *endpoint, x *unexEntry) {
	if x.h.proto != protoBuf {
		return
	}
	i := x.in
	d.held[i] &^= 1 << x.h.aux
	if in := &d.ins[i]; in.active && in.nonce == x.nonce {
		busy, _ := e.region.sarChunkMem(pageSize+i*entrySize, int(x.h.aux))
		e.region.word64(busy).Store(chunkFree)
		d.notifyRoom(e, i)
	}
}

// unexAnswer returns the inbox entry whose claimer the unexpected
// message x is answered to once delivered, -1 when its sender left
// (nobody to answer); ok is false when x needs an answer and the answer
// queue stays full (the message must wait).
func (d *dataPath) unexAnswer(e *endpoint, x *unexEntry) (in int, ok bool) {
	in = x.in
	if a := &d.ins[in]; !a.active || a.nonce != x.nonce {
		in = -1
	}
	if in >= 0 && (x.h.proto == protoCMA || x.h.flags&flagAck != 0) && d.ackN == ackQSize {
		if d.flushAcks(e); d.ackN == ackQSize {
			return in, false
		}
	}
	return in, true
}

// cancelRecv removes the posted receive with context ctx and completes it
// with fi.ECANCELED (an FI_MULTI_RECV buffer: see cancelMulti).
func (d *dataPath) cancelRecv(e *endpoint, ctx any) bool {
	for _, tagged := range []bool{false, true} {
		l := d.recvs
		if tagged {
			l = d.trecvs
		}
		for k := range l {
			if kit.SameContext(l[k].ctx, ctx) {
				r := d.take(tagged, k)
				e.failRecv(&r, fi.ECANCELED, 0)
				return true
			}
		}
	}
	return false
}

// gather copies the segments into dst, which holds their total length.
func gather(dst []byte, iov [][]byte) {
	for _, b := range iov {
		dst = dst[copy(dst, b):]
	}
}

// copyAt copies from the segments, starting at offset off of their
// concatenation, into dst; it returns the bytes copied.
func copyAt(dst []byte, iov [][]byte, off int) int {
	n := 0
	for _, b := range iov {
		if off >= len(b) {
			off -= len(b)
			continue
		}
		k := copy(dst[n:], b[off:])
		n += k
		off = 0
		if n == len(dst) {
			break
		}
	}
	return n
}

// scatterAt copies src into the segments at offset off of their
// concatenation, as far as they reach; it returns the bytes copied.
func scatterAt(iov [][]byte, off int, src []byte) int {
	n := 0
	for _, b := range iov {
		if off >= len(b) {
			off -= len(b)
			continue
		}
		k := copy(b[off:], src[n:])
		n += k
		off = 0
		if n == len(src) {
			break
		}
	}
	return n
}
