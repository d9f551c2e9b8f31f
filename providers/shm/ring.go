//go:build linux

package shm

// The ring of a peer entry is a single-producer single-consumer queue of
// ringSlots fixed-size slots: the peer that claimed the entry produces,
// the region's owner consumes. head and tail count slots since the entry
// was created; slot i is at index i % ringSlots. Each slot starts with a
// sequence word: the producer writes the body, then stores i+1 there; the
// consumer polls that word, so that a message costs the cache lines of
// its slot and nothing else. The shared head tells the producer which
// slots are free again.

// txRing is the producer side, kept by a sending endpoint for one peer.
type txRing struct {
	r        *region
	entry    int    // offset of the peer entry in r.mem
	tail     uint64 // next slot to fill (the shared tail's value)
	headSeen uint64 // the last head read
	// bad is set when the shared head went where no owner moves it
	// (backwards, or past the tail): the entry was overwritten.
	bad bool
}

func newTxRing(r *region, i int) *txRing {
	off := pageSize + i*entrySize
	q := &txRing{r: r, entry: off}
	q.headSeen = r.word64(off + pHead).Load()
	q.tail = q.headSeen
	return q
}

// reserve returns the body of the next free slot to fill, or nil when
// the ring is full (or found bad).
func (q *txRing) reserve() []byte {
	if q.tail-q.headSeen >= ringSlots {
		if !q.loadHead() || q.tail-q.headSeen >= ringSlots {
			return nil
		}
	}
	off := q.entry + pSlots + int(q.tail%ringSlots)*slotSize
	return q.r.mem[off+8 : off+slotSize : off+slotSize]
}

// loadHead reads the shared head; false (and bad set) when it moved
// where the owner never moves it.
func (q *txRing) loadHead() bool {
	h := q.r.word64(q.entry + pHead).Load()
	if h < q.headSeen || h > q.tail {
		q.bad = true
		return false
	}
	q.headSeen = h
	return true
}

// commit publishes the slot reserve returned. Then, while the peer
// takes the slot, it writes a byte into the next free slot's payload
// line: that moves the line into this core's cache now, so that the next
// message does not wait for it (the sequence line cannot be taken early:
// the consumer polls it).
func (q *txRing) commit() {
	off := q.entry + pSlots + int(q.tail%ringSlots)*slotSize
	q.tail++
	q.r.word64(off).Store(q.tail)
	if q.tail-q.headSeen < ringSlots {
		next := q.entry + pSlots + int(q.tail%ringSlots)*slotSize
		q.r.mem[next+64] = 0
	}
}

// rxRing is the consumer side, kept by a region's owner for each entry.
type rxRing struct {
	r     *region
	entry int
	head  uint64
}

func newRxRing(r *region, i int) rxRing {
	off := pageSize + i*entrySize
	return rxRing{r: r, entry: off, head: r.word64(off + pHead).Load()}
}

// front returns the body of the oldest published slot, or nil when there
// is none. A producer that writes a wrong sequence word only stalls its
// own ring.
func (q *rxRing) front() (slot []byte, ok bool) {
	off := q.entry + pSlots + int(q.head%ringSlots)*slotSize
	if q.r.word64(off).Load() != q.head+1 {
		return nil, true
	}
	return q.r.mem[off+8 : off+slotSize : off+slotSize], true
}

// seqPlausible reports whether seq, the sequence word of the slot at head
// h of a ring, is one a producer can have left there: h+1 (published),
// 0 (cleared) or h+1-ringSlots (the slot of the previous lap). Anything
// else was written by something else, and the ring would stall on it.
func seqPlausible(seq, h uint64) bool {
	return seq == h+1 || seq == 0 || h >= ringSlots && seq == h+1-ringSlots
}

// headSeq returns the sequence word of the slot at entry i's head h.
func (r *region) headSeq(i int, h uint64) uint64 {
	return r.word64(pageSize + i*entrySize + pSlots + int(h%ringSlots)*slotSize).Load()
}

// active returns the active-peer bitmap, without the bits of entries that
// do not exist (which only something else than a claimer sets).
func (r *region) active() uint64 { return r.word64(hActive).Load() & (1<<maxPeers - 1) }

// ready reports, from shared words only, whether entry i's ring holds a
// published slot.
func (r *region) ready(i int) bool {
	entry := pageSize + i*entrySize
	h := r.word64(entry + pHead).Load()
	return r.word64(entry+pSlots+int(h%ringSlots)*slotSize).Load() == h+1
}

// resetRing empties entry i's ring for the next claimer, which starts at
// the head: every sequence word is cleared, so that nothing a gone
// producer wrote can pass for a new slot.
func (r *region) resetRing(i int) {
	entry := pageSize + i*entrySize
	for k := range ringSlots {
		r.word64(entry + pSlots + k*slotSize).Store(0)
	}
}

// pop releases the slot front returned.
func (q *rxRing) pop() { q.head++ }

// publish tells the producer which slots are free again: the consumer
// calls it once per visit, not per slot.
func (q *rxRing) publish() { q.r.word64(q.entry + pHead).Store(q.head) }

// sarChunkMem returns chunk k of the entry's bounce area: its busy word's
// offset and its data bytes.
func (r *region) sarChunkMem(entry, k int) (busy int, data []byte) {
	off := entry + pSAR + k*sarStride
	return off, r.mem[off+64 : off+64+sarChunk : off+64+sarChunk]
}
