//go:build linux

package tcp

// Wire codec of the tcp provider's MSG connections: the format of the C
// libfabric 1.17 tcp provider ("tcpx"; the 1.17 net provider's MSG format is
// the same). Reference: docs/wire-tcp.md, §2.3-§2.6 and §5. Offsets
// are in bytes.
//
// CM message (§2.3): the first bytes of each direction of a connection, a
// 32-byte header and 0..256 bytes of private data, written in one write.
//
//	off size       field      value
//	0   u8         version    3
//	1   u8         type       0 connect request, 1 accept, 6 reject
//	2   u16 BE     seg_size   private-data length, 0..256
//	4   u32        seg_no     0
//	8   u64        conn_id    0
//	16  u64        msg_id     0
//	24  u64 host   conn_data  1 in the sender's byte order (requests and
//	                          accepts: the endianness probe); in rejects
//	                          gofabric's reject code (§2.9): 0 a consumer
//	                          reject (C's only value), 1 backlog full,
//	                          2 listener closing
//
// Data message (§2.4): a base header, header extensions, then the payload.
//
//	off size       field        value
//	0   u8         version      3
//	1   u8         op           0 msg, 1 tagged, 2 read request,
//	                            3 read response, 4 write
//	2   u16        flags        0x1 CQ data, 0x4 delivery complete,
//	                            0x8 commit complete, 0x80 tag on op 0
//	4   u8         op_data      0, or 2 on an ACK (op 0, flags 0, size 16)
//	5   u8         rma_iov_cnt  RMA iovs that follow (ops 2 and 4); a
//	                            stale value on the other ops, ignored
//	6   u8         hdr_size     16 + extensions, at most 120
//	7   u8         rsvd         0 (a sequence id in C debug builds), ignored
//	8   u64        size         hdr_size + payload length
//	16  extensions, in order:   cq_data u64 (flag 0x1); tag u64 (op 1, or
//	                            op 0 with flag 0x80); rma_iov_cnt RMA iovs
//	                            {addr, len, key u64} (ops 2 and 4)
//
// Header sizes (§2.4): 16 plain, 24 with CQ data or a tag, 32 with both,
// 16+24n read request, 16+24n write, 24+24n write with CQ data. A read
// request has no payload; its response (op 3) has hdr_size 16 and carries
// the requested bytes (§2.5.4).
//
// Byte order (§2.3): flags, size and every u64 extension use the order the
// peer's conn_data announced: little-endian when it reads 01 00 .. 00,
// big-endian when it reads 00 .. 00 01. Single bytes are never swapped. The
// Go side always announces little-endian.

import (
	"encoding/binary"
	"io"
	"math"
	"math/bits"

	"github.com/cockroachdb/errors"

	"github.com/gofabric/gofabric/fi"
)

// CM protocol constants (§2.3, §5).
const (
	cmVersion     = 3                            // CM header version (TCPX_CTRL_HDR_VERSION)
	cmHeaderSize  = 32                           // fixed CM header length
	cmMaxDataSize = 256                          // most private data a CM message carries
	cmMaxMsgSize  = cmHeaderSize + cmMaxDataSize // largest CM message
)

// cmType is the type byte of a CM message (ofi_ctrl_hdr.type).
type cmType uint8

// The CM message types the tcp provider sends (§2.3).
const (
	cmConnReq  cmType = 0 // connect request, active to passive side (fi_connect)
	cmConnResp cmType = 1 // accept, passive to active side (fi_accept)
	cmReject   cmType = 6 // reject ("nack"), passive to active side (fi_reject)
)

// rejectCode says why a reject was sent (docs/wire-tcp.md, §2.9): the
// conn_data of a reject, which C 1.17's tcp and net providers set to 0 and
// never read on a reject. gofabric writes it little-endian, as every
// multibyte field it sends.
type rejectCode uint8

// Reject codes (§2.9).
const (
	// rejectConsumer: the application refused the request (fi_reject,
	// or it dropped the request); every C reject carries 0.
	rejectConsumer rejectCode = 0
	// rejectBacklogFull: the passive endpoint's backlog of requests
	// reported and not yet answered (ep.BacklogSetter) was full.
	rejectBacklogFull rejectCode = 1
	// rejectClosing: the passive endpoint was closing (or not listening
	// yet) when the request arrived, or closed with it pending.
	rejectClosing rejectCode = 2
)

// cmHeader is one decoded CM message: the fields of the 32-byte header that
// carry information, and the private data. The 1.17 wire format has no
// error field: a reject is reported by the active side as fi.ECONNREFUSED
// with the reject's private data (§2.3, step 4), and gofabric's reason for
// it, where a gofabric peer gave one (reject, §2.9).
type cmHeader struct {
	typ cmType
	// reject is the reject code of a reject (§2.9), rejectConsumer in the
	// other types.
	reject rejectCode
	// bigEndian is the sender's byte order as announced by conn_data in a
	// request or accept: false for 01 00 .. 00 (every host the Go side
	// talks to in practice), true for 00 .. 00 01. The data headers of the
	// connection use that order (dataCodec.bigEndian). The Go side always
	// sends false. Always false in a reject, whose conn_data is its reject code.
	bigEndian bool
	// data is the private data, at most cmMaxDataSize bytes. After
	// parseCMHeader or readCM it aliases the caller's buffer.
	data []byte
}

// len returns the encoded length of h: the header and its private data.
func (h *cmHeader) len() int { return cmHeaderSize + len(h.data) }

// appendCM appends the encoding of h to b and returns the extended slice; it
// allocates only when b lacks capacity, so appendCM(buf[:0], &h) with a
// cmMaxMsgSize buffer encodes in place. The caller writes the result in one
// write (§2.3: the C receiver reads header and data with one recv each, and
// nothing may precede them). conn_data is 1 in the order h.bigEndian selects,
// and h.reject, little-endian, in a reject (§2.9). It fails with fi.EINVAL
// for an unknown type or reject code, or more than cmMaxDataSize bytes of
// private data.
func appendCM(b []byte, h *cmHeader) ([]byte, error) {
	if !h.typ.valid() {
		return b, errors.Wrapf(fi.EINVAL, "tcp: cm: cannot encode message type %d", h.typ)
	}
	if len(h.data) > cmMaxDataSize {
		return b, errors.Wrapf(fi.EINVAL, "tcp: cm: private data of %d bytes exceeds %d", len(h.data), cmMaxDataSize)
	}
	var hdr [cmHeaderSize]byte
	hdr[0] = cmVersion
	hdr[1] = byte(h.typ)
	binary.BigEndian.PutUint16(hdr[2:], uint16(len(h.data)))
	if h.typ == cmReject {
		if h.reject > rejectClosing {
			return b, errors.Wrapf(fi.EINVAL, "tcp: cm: reject code %d is reserved", h.reject)
		}
		hdr[24] = byte(h.reject)
	} else {
		if h.bigEndian {
			hdr[31] = 1
		} else {
			hdr[24] = 1
		}
	}
	b = append(b, hdr[:]...)
	return append(b, h.data...), nil
}

// parseCMHeader decodes the CM message at the start of b, which holds the
// bytes received so far: the 32-byte header and all the private data it
// announces must be there; bytes after the message are left alone (they
// belong to the data stream). Every field is checked; a violation is an
// error wrapping fi.EIO, the code of every wire-protocol violation in this
// package:
//
//   - fewer than 32 bytes, or less private data than seg_size announces;
//   - version other than 3 (the C receiver's "cm protocol version mismatch");
//   - a type other than 0, 1 or 6;
//   - seg_size above 256 (the C tcp receiver would silently read only 256
//     bytes and misparse the rest; the net provider refuses it, as here);
//   - seg_no, conn_id or msg_id not 0 (reserved: the C receiver ignores
//     them, every C sender zeroes them);
//   - conn_data other than 1 (either order) in a request or accept, or a
//     reject code other than 0, 1 or 2 (little-endian, as gofabric writes
//     them; C writes 0) in a reject.
//
// The returned data aliases b. Whether the type suits the receiver's state
// (an accept on a passive endpoint...) is for the caller to check.
func parseCMHeader(b []byte) (cmHeader, error) {
	h, n, err := parseCMFixed(b)
	if err != nil {
		return cmHeader{}, err
	}
	if len(b)-cmHeaderSize < n {
		return cmHeader{}, errors.Wrapf(fi.EIO, "tcp: cm: private data truncated: %d of %d bytes received", len(b)-cmHeaderSize, n)
	}
	h.data = b[cmHeaderSize : cmHeaderSize+n : cmHeaderSize+n]
	return h, nil
}

// readCM reads one CM message from r into buf: exactly the 32-byte header,
// then exactly the private data it announces, never a byte more (what
// follows on the connection is data messages). The header is checked as by
// parseCMHeader before the private data is read. A stream that ends early
// gives an error wrapping fi.ECONNRESET; other read errors are wrapped
// as they are (fi.Code finds their errno or deadline). The returned data
// aliases buf.
func readCM(r io.Reader, buf *[cmMaxMsgSize]byte) (cmHeader, error) {
	if got, err := io.ReadFull(r, buf[:cmHeaderSize]); err != nil {
		return cmHeader{}, cmReadErr(err, got, cmHeaderSize)
	}
	h, n, err := parseCMFixed(buf[:cmHeaderSize])
	if err != nil {
		return cmHeader{}, err
	}
	if got, err := io.ReadFull(r, buf[cmHeaderSize:cmHeaderSize+n]); err != nil {
		return cmHeader{}, cmReadErr(err, cmHeaderSize+got, cmHeaderSize+n)
	}
	h.data = buf[cmHeaderSize : cmHeaderSize+n : cmHeaderSize+n]
	return h, nil
}

func cmReadErr(err error, got, want int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.Wrapf(fi.ECONNRESET, "tcp: cm: connection closed after %d of %d bytes", got, want)
	}
	return errors.Wrapf(err, "tcp: cm: read after %d of %d bytes", got, want)
}

// parseCMFixed checks the 32-byte header at the start of b and returns it
// with the announced private-data length.
func parseCMFixed(b []byte) (cmHeader, int, error) {
	if len(b) < cmHeaderSize {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: short header: %d of %d bytes", len(b), cmHeaderSize)
	}
	if b[0] != cmVersion {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: protocol version %d, want %d", b[0], cmVersion)
	}
	h := cmHeader{typ: cmType(b[1])}
	if !h.typ.valid() {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: unknown message type %d", b[1])
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n > cmMaxDataSize {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: private data length %d exceeds %d", n, cmMaxDataSize)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != 0 {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: reserved seg_no is %#x, want 0", v)
	}
	if v := binary.BigEndian.Uint64(b[8:]); v != 0 {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: reserved conn_id is %#x, want 0", v)
	}
	if v := binary.BigEndian.Uint64(b[16:]); v != 0 {
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: reserved msg_id is %#x, want 0", v)
	}
	probe := binary.LittleEndian.Uint64(b[24:])
	switch {
	case h.typ == cmReject:
		if probe > uint64(rejectClosing) {
			return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: reject carries conn_data %#x, want a reject code 0 to %d", probe, rejectClosing)
		}
		h.reject = rejectCode(probe)
	case probe == 1:
	case probe == 1<<56:
		h.bigEndian = true
	default:
		return cmHeader{}, 0, errors.Wrapf(fi.EIO, "tcp: cm: conn_data %#x is no endianness probe (1 in either byte order)", probe)
	}
	return h, n, nil
}

func (t cmType) valid() bool { return t == cmConnReq || t == cmConnResp || t == cmReject }

// Data-message protocol constants (§2.4, §5).
const (
	dataVersion        = 3   // data header version (TCPX_HDR_VERSION)
	dataBaseHeaderSize = 16  // base header length, the shortest header
	maxDataHeaderSize  = 120 // longest header: write with CQ data and 4 RMA iovs
	rmaIOVLimit        = 4   // most RMA iovs in one read request or write (TCPX_IOV_LIMIT)
	rmaIOVSize         = 24  // wire size of one RMA iov {addr, len, key}
	opDataAck          = 2   // op_data of an ACK (TCPX_OP_ACK)
)

// dataOp is the op byte of a data header (libfabric's ofi_op_* values).
type dataOp uint8

// The data operations (§2.4); 5 and up are protocol errors.
const (
	opMsg     dataOp = 0 // send (fi_send...) and ACK; tagged with flagTagged
	opTagged  dataOp = 1 // tagged send for a peer matching tags in the tcp layer
	opReadReq dataOp = 2 // RMA read request (fi_read), no payload
	opReadRsp dataOp = 3 // RMA read response, the requested bytes
	opWrite   dataOp = 4 // RMA write (fi_write), the data to place
)

// dataFlags are the flag bits of a data header.
type dataFlags uint16

// The data-header flags (§2.4). Bit 0x2 (transmit complete) is defined in C
// but never sent and is refused here like every other unknown bit.
const (
	flagCQData           dataFlags = 0x01 // a cq_data u64 follows the base header (ops 0, 1, 4)
	flagDeliveryComplete dataFlags = 0x04 // receiver ACKs after receiving the whole message (ops 0, 1, 4)
	flagCommitComplete   dataFlags = 0x08 // receiver commits, then ACKs (ops 0, 1, 4; meant for writes)
	flagTagged           dataFlags = 0x80 // a tag u64 follows (op 0; redundant on op 1)

	knownFlags = flagCQData | flagDeliveryComplete | flagCommitComplete | flagTagged
)

// rmaIOV is one RMA iov of a read request or write (ofi_rma_iov): the
// target region is len bytes at addr (an offset into the registered region,
// or a virtual address under FI_MR_VIRT_ADDR) of the region with key.
type rmaIOV struct {
	addr, len, key uint64
}

// dataHeader is one decoded data-message header, or one to encode. It is a
// plain value of fixed size: keep one per connection direction and reuse it.
//
// To send: set op, flags and the extension fields the flags call for, then
// setPayloadLen, then dataCodec.putDataHeader; the payload follows the
// header bytes. ackHeader and readRspHeader build the two messages the
// receiver side answers with.
//
// On receipt (dataCodec.parseDataHeader): payloadLen bytes of payload follow
// the header. The endpoint then acts on isAck (match FIFO to sends awaiting
// an ACK), op (deliver, match a tag, serve a read from rmaIOV, place a
// write, match a read response FIFO to outstanding reads) and needsAck (send
// ackHeader once the whole message is received, before reporting the
// completion, §2.5.5).
type dataHeader struct {
	op     dataOp
	flags  dataFlags
	opData uint8 // 0, or opDataAck
	// rmaIOVCnt is the wire rma_iov_cnt: the number of valid rmaIOV entries
	// on opReadReq and opWrite (0..4). Other ops carry a stale value that
	// means nothing (C reuses buffers); it is kept only so that a parsed
	// header re-encodes to the same bytes. Senders leave it 0.
	rmaIOVCnt uint8
	rsvd      uint8  // reserved byte (a sequence id in C debug builds), ignored; senders leave it 0
	size      uint64 // total message length: header plus payload
	cqData    uint64 // remote CQ data, valid with flagCQData
	tag       uint64 // valid when hasTag
	rmaIOV    [rmaIOVLimit]rmaIOV
}

// hasTag reports whether the header carries a tag: every opTagged header,
// and opMsg with flagTagged (the form rxm peers use, §2.5.2).
func (h *dataHeader) hasTag() bool { return h.op == opTagged || h.flags&flagTagged != 0 }

// isAck reports whether h is an ACK of a delivery- or commit-complete
// message (§2.5.5).
func (h *dataHeader) isAck() bool { return h.op == opMsg && h.opData == opDataAck }

// needsAck reports whether the receiver must answer h with an ACK once the
// whole message is in (§2.5.5).
func (h *dataHeader) needsAck() bool {
	return !h.isAck() && h.flags&(flagDeliveryComplete|flagCommitComplete) != 0
}

// rmaIOVs returns the valid RMA iovs: rmaIOVCnt entries on opReadReq and
// opWrite, none on other ops. It aliases h.
func (h *dataHeader) rmaIOVs() []rmaIOV {
	if h.op != opReadReq && h.op != opWrite {
		return nil
	}
	return h.rmaIOV[:h.rmaIOVCnt]
}

// rmaLen returns the sum of the lengths of rmaIOVs: the bytes a read
// request asks for, or the room a write targets. After parseDataHeader it
// does not overflow.
func (h *dataHeader) rmaLen() uint64 {
	var n uint64
	for _, v := range h.rmaIOVs() {
		n += v.len
	}
	return n
}

// headerLen returns hdr_size for h's op, flags and (on opReadReq and
// opWrite) rmaIOVCnt. For a parsed header it equals the wire's hdr_size.
func (h *dataHeader) headerLen() int {
	n := dataBaseHeaderSize
	if h.flags&flagCQData != 0 {
		n += 8
	}
	if h.hasTag() {
		n += 8
	}
	if h.op == opReadReq || h.op == opWrite {
		n += rmaIOVSize * int(h.rmaIOVCnt)
	}
	return n
}

// payloadLen returns the payload length, size minus headerLen. Valid on a
// parsed header or after setPayloadLen.
func (h *dataHeader) payloadLen() uint64 { return h.size - uint64(h.headerLen()) }

// setPayloadLen sets size to headerLen plus n. Call it after op, flags and
// rmaIOVCnt are final.
func (h *dataHeader) setPayloadLen(n uint64) { h.size = uint64(h.headerLen()) + n }

// ackHeader returns the ACK a receiver sends for a message whose needsAck is
// true: op 0, op_data 2, flags 0, size 16 (§2.5.5).
func ackHeader() dataHeader {
	return dataHeader{op: opMsg, opData: opDataAck, size: dataBaseHeaderSize}
}

// readRspHeader returns the header of the response to the read request req
// (§2.5.4): op 3, hdr_size 16, size 16 + req.rmaLen(), and req's flags,
// rma_iov_cnt and reserved byte copied, as the C target does. The payload is
// the requested bytes of every iov of req, in order.
func readRspHeader(req *dataHeader) dataHeader {
	rsp := dataHeader{op: opReadRsp, flags: req.flags, rmaIOVCnt: req.rmaIOVCnt, rsvd: req.rsvd}
	rsp.setPayloadLen(req.rmaLen())
	return rsp
}

// dataCodec encodes and decodes the data headers of one connection. The
// zero value speaks little-endian and accepts payloads up to math.MaxInt.
// It is read-only once the connection is up and safe for concurrent use.
type dataCodec struct {
	// bigEndian selects big-endian multibyte fields: the peer's
	// cmHeader.bigEndian (§2.3).
	bigEndian bool
	// maxPayload is the largest payload accepted: of a message, of a read
	// response, and of the response a read request asks for. 0 means
	// math.MaxInt, the most a Go buffer can hold. Set it from the
	// endpoint's max_msg_size.
	maxPayload uint64
}

func (c *dataCodec) limit() uint64 {
	if c.maxPayload == 0 {
		return math.MaxInt
	}
	return c.maxPayload
}

func (c *dataCodec) u16(b []byte) uint16 {
	v := binary.LittleEndian.Uint16(b)
	if c.bigEndian {
		v = bits.ReverseBytes16(v)
	}
	return v
}

func (c *dataCodec) u64(b []byte) uint64 {
	v := binary.LittleEndian.Uint64(b)
	if c.bigEndian {
		v = bits.ReverseBytes64(v)
	}
	return v
}

func (c *dataCodec) put16(b []byte, v uint16) {
	if c.bigEndian {
		v = bits.ReverseBytes16(v)
	}
	binary.LittleEndian.PutUint16(b, v)
}

func (c *dataCodec) put64(b []byte, v uint64) {
	if c.bigEndian {
		v = bits.ReverseBytes64(v)
	}
	binary.LittleEndian.PutUint64(b, v)
}

// parseDataHeader decodes the data header at the start of b into h. It
// returns the header length n and nil when the whole header is in b: the
// payload (h.payloadLen() bytes) starts at b[n]. It returns the number of
// bytes the header needs and fi.EAGAIN when b is too short (first 16, then
// hdr_size once the base header is in and valid): read more, call again.
// Otherwise the header breaks the protocol and the connection must be
// dropped (§2.6): fi.EIO for
//
//   - version other than 3 (not checked by C, always 3 from C senders);
//   - op 5 or above (C drops the connection too);
//   - flag bits other than 0x1, 0x4, 0x8, 0x80, or flags the op cannot
//     carry: 0x80 only on ops 0 and 1, 0x1/0x4/0x8 not on ops 2 and 3;
//   - op_data other than 0, or 2 (ACK) on anything but op 0 with flags 0;
//   - rma_iov_cnt above 4 on ops 2 and 4;
//   - hdr_size not equal to the size op, flags and (ops 2, 4) rma_iov_cnt
//     give, which also bounds it by 120;
//   - size below hdr_size; a read request or ACK with a payload; a write
//     whose payload exceeds the room its RMA iovs describe, or whose iov
//     lengths overflow;
//
// and fi.EMSGSIZE for a payload, or the payload a read request asks for,
// above the codec's maxPayload. Errors are bare fi.Errno values; h holds
// garbage unless the error is nil. It never allocates.
func (c *dataCodec) parseDataHeader(b []byte, h *dataHeader) (int, error) {
	if len(b) < dataBaseHeaderSize {
		return dataBaseHeaderSize, fi.EAGAIN
	}
	if b[0] != dataVersion {
		return 0, fi.EIO
	}
	*h = dataHeader{
		op:        dataOp(b[1]),
		flags:     dataFlags(c.u16(b[2:])),
		opData:    b[4],
		rmaIOVCnt: b[5],
		rsvd:      b[7],
		size:      c.u64(b[8:]),
	}
	switch h.op {
	case opMsg, opTagged:
	case opReadReq, opReadRsp:
		if h.flags != 0 {
			return 0, fi.EIO
		}
	case opWrite:
		if h.flags&flagTagged != 0 {
			return 0, fi.EIO
		}
	default:
		return 0, fi.EIO
	}
	if h.flags&^knownFlags != 0 {
		return 0, fi.EIO
	}
	switch h.opData {
	case 0:
	case opDataAck:
		if h.op != opMsg || h.flags != 0 || h.size != dataBaseHeaderSize {
			return 0, fi.EIO
		}
	default:
		return 0, fi.EIO
	}
	rma := h.op == opReadReq || h.op == opWrite
	if rma && h.rmaIOVCnt > rmaIOVLimit {
		return 0, fi.EIO
	}
	n := h.headerLen()
	if int(b[6]) != n || h.size < uint64(n) {
		return 0, fi.EIO
	}
	payload := h.size - uint64(n)
	if h.op == opReadReq && payload != 0 {
		return 0, fi.EIO
	}
	if payload > c.limit() {
		return 0, fi.EMSGSIZE
	}
	if len(b) < n {
		return n, fi.EAGAIN
	}
	off := dataBaseHeaderSize
	if h.flags&flagCQData != 0 {
		h.cqData = c.u64(b[off:])
		off += 8
	}
	if h.hasTag() {
		h.tag = c.u64(b[off:])
		off += 8
	}
	if !rma {
		return n, nil
	}
	var room uint64
	for i := range h.rmaIOVCnt {
		v := &h.rmaIOV[i]
		v.addr = c.u64(b[off:])
		v.len = c.u64(b[off+8:])
		v.key = c.u64(b[off+16:])
		off += rmaIOVSize
		var carry uint64
		if room, carry = bits.Add64(room, v.len, 0); carry != 0 {
			return 0, fi.EIO
		}
	}
	if h.op == opReadReq && room > c.limit() {
		return 0, fi.EMSGSIZE
	}
	if h.op == opWrite && payload > room {
		return 0, fi.EIO
	}
	return n, nil
}

// putDataHeader encodes h at the start of b and returns the header length,
// h.headerLen(); b must hold at least that many bytes (maxDataHeaderSize
// always suffices), or it panics. hdr_size is computed, size is h.size as
// set (see setPayloadLen). h must be a header parseDataHeader accepts; only
// the rmaIOVCnt entries of rmaIOV are written on ops 2 and 4, and
// rmaIOVCnt above rmaIOVLimit there panics. It never allocates.
func (c *dataCodec) putDataHeader(b []byte, h *dataHeader) int {
	n := h.headerLen()
	_ = b[n-1]
	b[0] = dataVersion
	b[1] = byte(h.op)
	c.put16(b[2:], uint16(h.flags))
	b[4] = h.opData
	b[5] = h.rmaIOVCnt
	b[6] = byte(n)
	b[7] = h.rsvd
	c.put64(b[8:], h.size)
	off := dataBaseHeaderSize
	if h.flags&flagCQData != 0 {
		c.put64(b[off:], h.cqData)
		off += 8
	}
	if h.hasTag() {
		c.put64(b[off:], h.tag)
		off += 8
	}
	for _, v := range h.rmaIOVs() {
		c.put64(b[off:], v.addr)
		c.put64(b[off+8:], v.len)
		c.put64(b[off+16:], v.key)
		off += rmaIOVSize
	}
	return n
}

// appendDataHeader appends the encoding of h to b, as putDataHeader does,
// and returns the extended slice; it allocates only when b lacks capacity
// (for staging several small messages in one send buffer).
func (c *dataCodec) appendDataHeader(b []byte, h *dataHeader) []byte {
	var hdr [maxDataHeaderSize]byte
	n := c.putDataHeader(hdr[:], h)
	return append(b, hdr[:n]...)
}
