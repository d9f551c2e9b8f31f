package rxmwire

import (
	"encoding/binary"
	"math/bits"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// The atomic protocol (docs/wire-tcp.md, §3.11): an atomic request
// (TypeAtomic) carries the operation in the header's op (OpAtomic,
// OpFetchAtomic, OpCompareAtomic) and tag (datatype, operation and the
// number of target segments in its first three bytes), then a body of
// four target segments and the operand and compare elements; the atomic
// response (TypeAtomicResp) echoes the request's msg_id, op, datatype
// and operation and carries a status and the old values.

// The ops of atomic packets (types 4 and 5; ofi_op_atomic,
// ofi_op_atomic_fetch and ofi_op_atomic_compare).
const (
	OpAtomic        Op = 6 // fi_atomic and its forms: no result
	OpFetchAtomic   Op = 7 // fi_fetch_atomic and its forms
	OpCompareAtomic Op = 8 // fi_compare_atomic and its forms
)

const (
	// AtomicIOCLimit is the number of target segments a request has
	// room for (RXM_IOV_LIMIT).
	AtomicIOCLimit = 4
	// AtomicIOCSize is one target segment on the wire (struct
	// fi_rma_ioc: addr, count, key).
	AtomicIOCSize = 24
	// AtomicReqFixed is the part of a request body before the operand:
	// the four target segments, all sent.
	AtomicReqFixed = AtomicIOCLimit * AtomicIOCSize
	// AtomicRespFixed is the part of a response body before the result:
	// status and result_len, both big-endian.
	AtomicRespFixed = 8
)

// AtomicIOC is one target segment of an atomic request (struct
// fi_rma_ioc): the remote address, the count in elements and the key.
type AtomicIOC struct {
	Addr, Count, Key uint64
}

// AtomicReq is a decoded atomic request (§3.11.2): its kind, datatype,
// operation and target segments, with the operand and compare elements
// as slices of the body it was parsed from.
type AtomicReq struct {
	Op       Op
	Datatype ep.Datatype
	AtomicOp ep.AtomicOp
	IOC      [AtomicIOCLimit]AtomicIOC
	// NIOC is the number of valid entries of IOC (ioc_count).
	NIOC int
	// Elems is the sum of the segments' counts and Bytes the size of the
	// target that makes (Elems elements of Datatype): of the operand,
	// compare and result where the operation has them.
	Elems, Bytes int
	// Operand and Compare alias the body; nil where the request has none.
	Operand, Compare []byte
}

// IOCs returns the valid target segments; it aliases r.
func (r *AtomicReq) IOCs() []AtomicIOC { return r.IOC[:r.NIOC] }

// AtomicTag returns the tag word of an atomic header: datatype, operation
// and ioc_count in its first three bytes (C's struct rxm_atomic_hdr
// overlays them on the tag).
func AtomicTag(dt ep.Datatype, op ep.AtomicOp, nioc int) uint64 {
	return uint64(uint8(dt)) | uint64(uint8(op))<<8 | uint64(uint8(nioc))<<16
}

// AtomicFields returns the datatype, operation and ioc_count an atomic
// header carries in its tag.
func (h *Header) AtomicFields() (ep.Datatype, ep.AtomicOp, int) {
	return ep.Datatype(h.Tag & 0xff), ep.AtomicOp(h.Tag >> 8 & 0xff), int(h.Tag >> 16 & 0xff)
}

// PutAtomicIOCs writes the four target segments of a request body into
// b[:AtomicReqFixed], iocs first and zeros after them (C leaves those
// stale), and returns AtomicReqFixed. More than four segments, or b
// shorter than AtomicReqFixed, panics. It never allocates.
func PutAtomicIOCs(b []byte, iocs []AtomicIOC) int {
	_ = b[AtomicReqFixed-1]
	clear(b[:AtomicReqFixed])
	for i, s := range iocs {
		o := i * AtomicIOCSize
		binary.LittleEndian.PutUint64(b[o:], s.Addr)
		binary.LittleEndian.PutUint64(b[o+8:], s.Count)
		binary.LittleEndian.PutUint64(b[o+16:], s.Key)
	}
	return AtomicReqFixed
}

// ParseAtomicReq decodes the request whose header is h (type TypeAtomic,
// parsed by ParseHeader) and whose body, the bytes after the header, is
// body. limit is the most operand plus compare bytes, and result bytes,
// one request may carry (the eager limit less AtomicReqFixed, §3.11.7).
// It returns bare fi.EIO, the cue to drop the connection, for what
// §3.11.8 lists as structural faults: an op other than 6, 7 or 8; flags;
// a datatype above 15 or operation above 18; more than four segments;
// counts whose bytes overflow or pass limit; a size that is not the body's
// length, or not 96 plus the operand and compare bytes the kind and
// operation imply. It does not look at registrations, nor at whether the
// datatype and operation go together: those are answered, not dropped.
// r aliases body. It never allocates.
func ParseAtomicReq(h *Header, body []byte, limit int, r *AtomicReq) error {
	if h.Op < OpAtomic || h.Op > OpCompareAtomic || h.Flags != 0 || h.Size != uint64(len(body)) ||
		len(body) < AtomicReqFixed {
		return fi.EIO
	}
	dt, op, nioc := h.AtomicFields()
	if dt > ep.Uint128 || op > ep.OpMSwap || nioc > AtomicIOCLimit || h.Tag>>24 != 0 {
		return fi.EIO
	}
	size, err := kit.AtomicSize(dt)
	if err != nil {
		return fi.EIO
	}
	*r = AtomicReq{Op: h.Op, Datatype: dt, AtomicOp: op, NIOC: nioc}
	var elems uint64
	for i := range nioc {
		o := i * AtomicIOCSize
		s := AtomicIOC{
			Addr:  binary.LittleEndian.Uint64(body[o:]),
			Count: binary.LittleEndian.Uint64(body[o+8:]),
			Key:   binary.LittleEndian.Uint64(body[o+16:]),
		}
		r.IOC[i] = s
		var carry uint64
		if elems, carry = bits.Add64(elems, s.Count, 0); carry != 0 {
			return fi.EIO
		}
	}
	hi, n := bits.Mul64(elems, uint64(size))
	if hi != 0 || n > uint64(limit) {
		return fi.EIO
	}
	var operand, compare uint64
	if op != ep.OpAtomicRead {
		operand = n
	}
	if h.Op == OpCompareAtomic {
		compare = n
	}
	if operand+compare > uint64(limit) || uint64(len(body)) != AtomicReqFixed+operand+compare {
		return fi.EIO
	}
	r.Elems, r.Bytes = int(elems), int(n)
	if operand > 0 {
		r.Operand = body[AtomicReqFixed : AtomicReqFixed+operand]
	}
	if compare > 0 {
		r.Compare = body[AtomicReqFixed+operand:]
	}
	return nil
}

// PutAtomicResp writes a response body's fixed part, status (0 or a
// negative errno) and result_len, both big-endian, into
// b[:AtomicRespFixed] and returns AtomicRespFixed; the result bytes
// follow it. b shorter than AtomicRespFixed panics.
func PutAtomicResp(b []byte, status int32, resultLen int) int {
	_ = b[AtomicRespFixed-1]
	binary.BigEndian.PutUint32(b, uint32(status))
	binary.BigEndian.PutUint32(b[4:], uint32(resultLen))
	return AtomicRespFixed
}

// ParseAtomicResp decodes the body of a response (type TypeAtomicResp)
// whose header is h: its status and result, which aliases body. It
// returns bare fi.EIO, the cue to drop the connection, for an op other
// than 6, 7 or 8, a size other than the body's length, a body shorter
// than 8 bytes or other than 8 plus result_len, or a positive status
// (§3.11.8). It never allocates.
func ParseAtomicResp(h *Header, body []byte) (status int32, result []byte, err error) {
	if h.Op < OpAtomic || h.Op > OpCompareAtomic || h.Size != uint64(len(body)) || len(body) < AtomicRespFixed {
		return 0, nil, fi.EIO
	}
	status = int32(binary.BigEndian.Uint32(body))
	n := binary.BigEndian.Uint32(body[4:])
	if status > 0 || uint64(n) != uint64(len(body)-AtomicRespFixed) {
		return 0, nil, fi.EIO
	}
	return status, body[AtomicRespFixed:], nil
}
