//go:build linux

package shm

import "encoding/binary"

// Slot format: slotSize bytes, the first 8 the ring's sequence word
// (ring.go), then the body, little-endian. The sequence word and the
// header share the slot's first cache line, and up to 64 bytes of inline
// payload its second: a small message moves two cache lines.
//
//	0   u8  op          opMsg, opTagged, opWrite, opRead, opAck, opSAR, opBye, opAtomic
//	1   u8  proto       protoInline, protoCMA, protoSAR
//	2   u16 flags       flagCQData, flagAck
//	4   u32 len         inline: payload bytes in the slot; opSAR: bytes in the
//	                    chunk; protoCMA: the number of segments
//	8   u64 size        the operation's total length
//	16  u64 tag         opAck: the status (an errno, 0 for success);
//	                    opSAR: the chunk index; opAtomic: atomicTag
//	24  u64 data        remote CQ data
//	32  u64 msgID       the sender's cookie, echoed by opAck
//	40  u64 key         RMA key; protoBuf: the chunk index
//	48  u64 addr        RMA address (offset in the target region); opSAR:
//	                    offset of the chunk; opAck: offset of read data
//	56  ...             inline payload (up to inlineMax bytes), or the CMA
//	                    segments {addr u64, len u64}
const (
	slotHdr   = 56
	slotBody  = slotSize - 8
	inlineMax = slotBody - slotHdr
	maxCMAIOV = 4
)

// Operations.
const (
	opMsg    = 1 // a message (fi_send...)
	opTagged = 2 // a tagged message (fi_tsend...)
	opWrite  = 3 // an RMA write: the target validates key and range, then places the data
	opRead   = 4 // an RMA read: the target validates, then sends the data back
	opAck    = 5 // the answer to a CMA message, an RMA operation or a refused one
	opSAR    = 6 // one chunk of a SAR message, in the sender's bounce area
	opBye    = 7 // the peer releases its entry (it closes)
	// opAtomic is an atomic operation (fi_atomic(3)), always inline: tag
	// holds the operation, the datatype and the call's family
	// (atomicTag), size the target's bytes (at most inlineMax), and the
	// payload the operand then, for a compare, the compare operand
	// (nothing for FI_ATOMIC_READ). The target checks key, range and
	// rights as for RMA, applies it with kit.ApplyAtomicExclusive and
	// answers with opAck: the status and, for fetch and compare, the old
	// values inline.
	opAtomic = 8
	// opGrant is the receiver's offer, for a CMA message flagged
	// flagSplit, to let the sender write the message's tail into the
	// receive buffer itself (process_vm_writev) while the receiver reads
	// its head: the two copies then overlap. msgID names the message,
	// tag the offset in it, size the length, addr the receiver's
	// address, data the split's number. The sender says it is done in
	// its entry (pSplit).
	opGrant = 9
)

// splitMin is the smallest CMA message the receiver splits (opGrant):
// below it the extra answer costs more than the overlap saves.
const splitMin = 32 << 10

// Protocols of the payload.
const (
	protoInline = 0 // in the slot
	protoCMA    = 1 // in the sender's memory: the receiver reads it with process_vm_readv
	protoSAR    = 2 // in opSAR chunks that follow
	// protoBuf: in one bounce chunk of the sender's entry, named by the
	// slot (key: the chunk index; len: the bytes), for messages of
	// inlineMax+1 to bufMax bytes (C 1.17's inject buffers, which it
	// uses up to 4 KiB). The sender copies the message there and
	// completes at once; the receiver copies it out, or, with no
	// receive posted, holds the chunk (busy word chunkHeld) until one
	// is, and then frees it. Two copies, no system call, no answer.
	protoBuf = 3
)

// bufMax is the largest protoBuf message (C 1.17's inject size). Above
// it the receiver's copy of freshly written chunk lines, which come from
// the sender's cache one by one, costs more than process_vm_readv's one
// copy: fi_pingpong -p shm at 8 KiB took 1.88 us this way against 1.75
// us by CMA, at 16 KiB 3.1 against 2.3 us (4 KiB: 1.08-1.39 against
// 1.39-1.51).
const bufMax = 4096

// Values of a bounce chunk's busy word.
const (
	chunkFree = 0
	chunkBusy = 1 // filled by the sender; its slot waits in the ring
	chunkHeld = 2 // a protoBuf message the owner keeps for a later receive
)

// Slot flags.
const (
	flagCQData = 1 // the message or write carries remote CQ data
	// flagAck asks the receiver of an inline or SAR message to answer
	// (opAck) once the message is in a receive buffer: the sender's
	// FI_DELIVERY_COMPLETE. CMA messages are always answered.
	flagAck = 2
	// flagSplit offers, on a CMA message, to write its tail into the
	// receiver's memory when asked (opGrant).
	flagSplit = 4
)

// slotHeader is a decoded slot header.
type slotHeader struct {
	op, proto byte
	flags     uint16
	inlineLen uint32
	size      uint64
	tag, data uint64
	msgID     uint64
	key, addr uint64
	niov      uint32 // also opAck's status
	aux       uint32
}

func (h *slotHeader) put(b []byte) {
	le := binary.LittleEndian
	_ = b[slotHdr-1]
	n, tag := h.inlineLen, h.tag
	switch {
	case h.op == opAck:
		tag = uint64(h.niov)
	case h.op == opSAR:
		tag = uint64(h.aux)
	case h.proto == protoCMA:
		n = h.niov
	}
	key := h.key
	if h.proto == protoBuf {
		key = uint64(h.aux)
	}
	b[0], b[1] = h.op, h.proto
	le.PutUint16(b[2:], h.flags)
	le.PutUint32(b[4:], n)
	le.PutUint64(b[8:], h.size)
	le.PutUint64(b[16:], tag)
	le.PutUint64(b[24:], h.data)
	le.PutUint64(b[32:], h.msgID)
	le.PutUint64(b[40:], key)
	le.PutUint64(b[48:], h.addr)
}

// parse decodes and validates a slot a peer wrote. It reports false for a
// slot no correct peer writes: an unknown op or protocol, lengths beyond
// the slot, a chunk or segment count out of range. It does not allocate.
func (h *slotHeader) parse(b []byte) bool {
	le := binary.LittleEndian
	_ = b[slotHdr-1]
	*h = slotHeader{
		op: b[0], proto: b[1], flags: le.Uint16(b[2:]), inlineLen: le.Uint32(b[4:]),
		size: le.Uint64(b[8:]), tag: le.Uint64(b[16:]), data: le.Uint64(b[24:]),
		msgID: le.Uint64(b[32:]), key: le.Uint64(b[40:]), addr: le.Uint64(b[48:]),
	}
	switch {
	case h.op == opAck:
		if h.tag > 1<<31 {
			return false
		}
		h.niov, h.tag = uint32(h.tag), 0
	case h.op == opSAR:
		if h.tag >= sarChunks {
			return false
		}
		h.aux, h.tag = uint32(h.tag), 0
	case h.proto == protoCMA:
		h.niov, h.inlineLen = h.inlineLen, 0
	case h.proto == protoBuf:
		if h.key >= sarChunks {
			return false
		}
		h.aux, h.key = uint32(h.key), 0
	}
	if h.flags&^(flagCQData|flagAck|flagSplit) != 0 || h.size > 1<<62 {
		return false
	}
	if h.flags&flagSplit != 0 && (h.op != opMsg && h.op != opTagged || h.proto != protoCMA) {
		return false
	}
	if h.flags&flagAck != 0 && (h.op != opMsg && h.op != opTagged || h.proto == protoCMA || h.proto == protoBuf) {
		return false
	}
	switch h.op {
	case opAtomic:
		// The operand and compare bytes are in the slot: at most
		// inlineMax in all, whatever size claims.
		return h.proto == protoInline && h.size > 0 && h.size <= inlineMax && h.tag < 1<<24 && h.inlineLen <= inlineMax &&
			(h.inlineLen == 0 || uint64(h.inlineLen) == h.size || uint64(h.inlineLen) == 2*h.size)
	case opMsg, opTagged, opWrite, opRead:
		switch h.proto {
		case protoInline:
			return h.inlineLen <= inlineMax && uint64(h.inlineLen) == h.size || h.op == opRead && h.inlineLen == 0
		case protoCMA:
			return h.niov >= 1 && h.niov <= maxCMAIOV
		case protoSAR:
			return h.op == opMsg || h.op == opTagged
		case protoBuf:
			return (h.op == opMsg || h.op == opTagged) && h.inlineLen > inlineMax && h.inlineLen <= bufMax && uint64(h.inlineLen) == h.size
		}
		return false
	case opAck:
		return h.inlineLen <= inlineMax
	case opSAR:
		return h.aux < sarChunks && h.inlineLen <= sarChunk && h.inlineLen > 0
	case opBye:
		return true
	case opGrant:
		return h.proto == protoInline && h.inlineLen == 0 && h.size > 0 && h.tag > 0 && h.tag < 1<<62
	}
	return false
}

// cmaSeg returns CMA segment k of a slot.
func cmaSeg(b []byte, k int) (addr, n uint64) {
	off := slotHdr + 16*k
	return binary.LittleEndian.Uint64(b[off:]), binary.LittleEndian.Uint64(b[off+8:])
}

// putCMASeg writes CMA segment k of a slot.
func putCMASeg(b []byte, k int, addr, n uint64) {
	off := slotHdr + 16*k
	binary.LittleEndian.PutUint64(b[off:], addr)
	binary.LittleEndian.PutUint64(b[off+8:], n)
}
