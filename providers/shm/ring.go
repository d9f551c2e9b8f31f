package shm

// The ring of a peer entry is a single-producer single-consumer queue of
// ringSlots fixed-size slots: the peer that claimed the entry produces,
// the region's owner consumes. head and tail count slots since the entry
// was created; slot i is at index i % ringSlots.

// txRing is the producer side, kept by a sending endpoint for one peer.
type txRing struct {
	r        *region
	entry    int    // offset of the peer entry in r.mem
	tail     uint64 // next slot to fill (the shared tail's value)
	headSeen uint64 // the last head read
}

func newTxRing(r *region, i int) *txRing {
	off := pageSize + i*entrySize
	q := &txRing{r: r, entry: off}
	q.headSeen = r.word64(off + pHead).Load()
	q.tail = q.headSeen
	r.word64(off + pTail).Store(q.tail)
	return q
}

// reserve returns the next free slot to fill, or nil when the ring is
// full.
func (q *txRing) reserve() []byte {
	if q.tail-q.headSeen >= ringSlots {
		q.headSeen = q.r.word64(q.entry + pHead).Load()
		if q.tail-q.headSeen >= ringSlots {
			return nil
		}
	}
	off := q.entry + pSlots + int(q.tail%ringSlots)*slotSize
	return q.r.mem[off : off+slotSize : off+slotSize]
}

// commit publishes the slot reserve returned.
func (q *txRing) commit() {
	q.tail++
	q.r.word64(q.entry + pTail).Store(q.tail)
}

// rxRing is the consumer side, kept by a region's owner for each entry.
type rxRing struct {
	r        *region
	entry    int
	head     uint64
	tailSeen uint64
}

func newRxRing(r *region, i int) rxRing {
	off := pageSize + i*entrySize
	h := r.word64(off + pHead).Load()
	return rxRing{r: r, entry: off, head: h, tailSeen: h}
}

// front returns the oldest published slot, nil when there is none, and
// ok false when the producer's tail is impossible (behind the head or
// more than a ring ahead): the peer is broken or hostile.
func (q *rxRing) front() (slot []byte, ok bool) {
	if q.head == q.tailSeen {
		q.tailSeen = q.r.word64(q.entry + pTail).Load()
		if q.head == q.tailSeen {
			return nil, true
		}
		if q.tailSeen-q.head > ringSlots {
			return nil, false
		}
	}
	off := q.entry + pSlots + int(q.head%ringSlots)*slotSize
	return q.r.mem[off : off+slotSize : off+slotSize], true
}

// pop releases the slot front returned.
func (q *rxRing) pop() {
	q.head++
	q.r.word64(q.entry + pHead).Store(q.head)
}

// sarChunkMem returns chunk k of the entry's bounce area: its busy word's
// offset and its data bytes.
func (r *region) sarChunkMem(entry, k int) (busy int, data []byte) {
	off := entry + pSAR + k*sarStride
	return off, r.mem[off+64 : off+64+sarChunk : off+64+sarChunk]
}
