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
//	40  u64 key         RMA key
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
)

// Protocols of the payload.
const (
	protoInline = 0 // in the slot
	protoCMA    = 1 // in the sender's memory: the receiver reads it with process_vm_readv
	protoSAR    = 2 // in opSAR chunks that follow
)

// Slot flags.
const (
	flagCQData = 1 // the message or write carries remote CQ data
	// flagAck asks the receiver of an inline or SAR message to answer
	// (opAck) once the message is in a receive buffer: the sender's
	// FI_DELIVERY_COMPLETE. CMA messages are always answered.
	flagAck = 2
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
	b[0], b[1] = h.op, h.proto
	le.PutUint16(b[2:], h.flags)
	le.PutUint32(b[4:], n)
	le.PutUint64(b[8:], h.size)
	le.PutUint64(b[16:], tag)
	le.PutUint64(b[24:], h.data)
	le.PutUint64(b[32:], h.msgID)
	le.PutUint64(b[40:], h.key)
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
	}
	if h.flags&^(flagCQData|flagAck) != 0 || h.size > 1<<62 {
		return false
	}
	if h.flags&flagAck != 0 && (h.op != opMsg && h.op != opTagged || h.proto == protoCMA) {
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
		}
		return false
	case opAck:
		return h.inlineLen <= inlineMax
	case opSAR:
		return h.aux < sarChunks && h.inlineLen <= sarChunk && h.inlineLen > 0
	case opBye:
		return true
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
