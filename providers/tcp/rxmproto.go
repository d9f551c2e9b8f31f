//go:build linux

package tcp

// Wire codec of ofi_rxm over tcp, the protocol of C libfabric 1.17's RDM
// endpoints for the tcp provider ("tcp;ofi_rxm"). Reference:
// docs/wire-tcp.md, §3 and §5. rxm runs over tcp MSG
// connections (proto.go): its CM records are the private data of the tcp CM
// messages, its packets the payload of untagged tcp messages. All multibyte
// fields are in the sender's host order; rxm connects only peers of the same
// order and the Go side speaks little-endian, so every field here is
// little-endian. Offsets are in bytes.
//
// Connect record (§3.2), private data of the tcp connect request, 24 bytes:
//
//	off size  field           value
//	0   u8    version         1, checked
//	1   u8    endianness      2 little-endian (1 big-endian), checked
//	2   u8    ctrl_version    4, checked
//	3   u8    op_version      3, checked (packets carry 2)
//	4   u16   port            the connecting side's listening port
//	6   u8    flow_ctrl       0 local, 1 credits, 2 none (sent: 2)
//	7   u8    padding         ignored
//	8   u32   eager_limit     must equal the acceptor's (16384), checked
//	12  u32   rx_size         informational (4096)
//	16  u64   client_conn_id  pid<<32 | the connector's index for the peer
//
// Accept record (§3.2), private data of the tcp accept, 16 bytes:
//
//	0   u64   server_conn_id  pid<<32 | the acceptor's index for the peer
//	8   u32   rx_size         informational (4096)
//	12  u8    flow_ctrl       as above
//	13  3     padding         ignored
//
// Reject record (§3.2), private data of the tcp reject, 2 bytes: version
// u8 1, reason u8 (0 unspecified, 1 refused, 2 already connected).
//
// Packet header (§3.3), the first 64 bytes of every untagged tcp message:
//
//	0   u8    version    4 (control header)
//	1   u8    type       0 eager, 1 SAR segment, 2 rendezvous request,
//	                     3 rendezvous read done, 4 atomic, 5 atomic
//	                     response, 6 credit, 7 rendezvous write data,
//	                     8 rendezvous write done
//	2   u16   seg_size   SAR: bytes in this segment
//	4   u32   seg_no     SAR: segment number
//	8   u64   conn_id    the receiver's index for the sender (its record's
//	                     conn_id, low 32 bits)
//	16  u64   msg_id     sender's id (types 1, 2, 6), echoed (3, 7, 8)
//	24  u64   ctrl_data  SAR: segment kind in bits 0-1; credit: credits
//	32  u8    version    2 (operation header), not checked
//	33  u8    rx_index   0
//	34  u8    op         0 message, 1 tagged (6-8 atomics)
//	35  u8    op_data    0
//	36  u32   flags      0, or 0x00020000: data is remote CQ data
//	40  u64   size       total message length
//	48  u64   data       remote CQ data
//	56  u64   tag        tag of op 1
//
// C senders reuse their buffers without clearing them, so a field a type
// does not use may hold a stale value (a read-done's size is the previous
// message's, an eager message's msg_id is whatever was there): parsers check
// only what the receiver of each type relies on, and keep the rest so that a
// parsed header re-encodes to the same bytes.
//
// Rendezvous descriptor (§3.5), the 104 bytes after a type 2 or 7 header:
// four RMA iovs {addr, len, key u64} (entries past count ignored), count u8
// (1..4), 7 bytes of padding (ignored).

import (
	"encoding/binary"
	"math/bits"

	"github.com/cockroachdb/errors"

	"github.com/gofabric/gofabric/fi"
)

// rxm protocol constants (§3.2-§3.5, §5).
const (
	rxmCMVersion    = 1     // CM record version (RXM_CM_DATA_VERSION)
	rxmEndianLittle = 2     // endianness byte of a little-endian host
	rxmEndianBig    = 1     // endianness byte of a big-endian host
	rxmCtrlVersion  = 4     // control header version, in records and packets
	rxmCMOpVersion  = 3     // op_version a connect record announces
	rxmOpVersion    = 2     // operation header version the packets carry
	rxmEagerLimit   = 16384 // default eager limit (FI_OFI_RXM_BUFFER_SIZE)
	rxmRxSize       = 4096  // rx_size the records announce
	rxmConnectSize  = 24    // connect record length
	rxmAcceptSize   = 16    // accept record length
	rxmRejectSize   = 2     // reject record length
	rxmHeaderSize   = 64    // packet header length
	rxmRndvDescSize = 104   // rendezvous descriptor length
	rxmRndvIOVLimit = 4     // most RMA iovs in a rendezvous descriptor

	// rxmRndvAnyLength tells parseRxmRndv not to compare the descriptor's
	// length with the message size.
	rxmRndvAnyLength = ^uint64(0)
)

// rxmFlowCtrl is the flow_ctrl byte of connect and accept records.
type rxmFlowCtrl uint8

// The flow_ctrl values (§3.2). rxm over tcp has no credits and sends
// rxmFlowCtrlOff; the others are accepted from peers and mean the same
// over tcp.
const (
	rxmFlowCtrlLocal rxmFlowCtrl = 0 // old peer: each side decides
	rxmFlowCtrlOn    rxmFlowCtrl = 1 // peer supports credit messages
	rxmFlowCtrlOff   rxmFlowCtrl = 2 // no credit flow control
)

// rxmMakeConnID builds a client_conn_id or server_conn_id: the process id
// in the high 32 bits (for spotting duplicate requests), the sender's index
// for the peer in the low 32 (§3.2).
func rxmMakeConnID(pid, index uint32) uint64 { return uint64(pid)<<32 | uint64(index) }

// rxmConnIndex returns the index part of a record's conn_id: the value to
// put in the conn_id of every packet sent to that peer (§3.2).
func rxmConnIndex(id uint64) uint64 { return id & (1<<32 - 1) }

// rxmConnPID returns the process-id part of a record's conn_id.
func rxmConnPID(id uint64) uint32 { return uint32(id >> 32) }

// rxmConnectRecord is a decoded connect record; the fixed fields (versions,
// endianness, padding) are not kept.
type rxmConnectRecord struct {
	port       uint16 // the connector's listening port: with the socket's peer IP, its name
	flowCtrl   rxmFlowCtrl
	eagerLimit uint32
	rxSize     uint32
	connID     uint64 // client_conn_id, see rxmMakeConnID
}

// rxmAcceptRecord is a decoded accept record; padding is not kept.
type rxmAcceptRecord struct {
	connID   uint64 // server_conn_id, see rxmMakeConnID
	rxSize   uint32
	flowCtrl rxmFlowCtrl
}

// appendRxmConnect appends the 24-byte encoding of r to b and returns the
// extended slice; it allocates only when b lacks capacity.
func appendRxmConnect(b []byte, r *rxmConnectRecord) []byte {
	var w [rxmConnectSize]byte
	w[0] = rxmCMVersion
	w[1] = rxmEndianLittle
	w[2] = rxmCtrlVersion
	w[3] = rxmCMOpVersion
	binary.LittleEndian.PutUint16(w[4:], r.port)
	w[6] = byte(r.flowCtrl)
	binary.LittleEndian.PutUint32(w[8:], r.eagerLimit)
	binary.LittleEndian.PutUint32(w[12:], r.rxSize)
	binary.LittleEndian.PutUint64(w[16:], r.connID)
	return append(b, w[:]...)
}

// appendRxmAccept appends the 16-byte encoding of r to b and returns the
// extended slice; it allocates only when b lacks capacity.
func appendRxmAccept(b []byte, r *rxmAcceptRecord) []byte {
	var w [rxmAcceptSize]byte
	binary.LittleEndian.PutUint64(w[0:], r.connID)
	binary.LittleEndian.PutUint32(w[8:], r.rxSize)
	w[12] = byte(r.flowCtrl)
	return append(b, w[:]...)
}

// rxmRecordFault names the first check a CM record failed; the zero value
// means it passed. It lets the bare and the wrapping parsers share one set
// of checks without allocating.
type rxmRecordFault struct {
	field     string
	got, want uint64
}

func (f rxmRecordFault) errno() error {
	if f.field == "" {
		return nil
	}
	return fi.EIO
}

func (f rxmRecordFault) wrap(record string) error {
	switch f.field {
	case "":
		return nil
	case "length":
		return errors.Wrapf(fi.EIO, "tcp: rxm: %s record: %d bytes, want %d", record, f.got, f.want)
	case "flow_ctrl":
		return errors.Wrapf(fi.EIO, "tcp: rxm: %s record: unknown flow_ctrl %d", record, f.got)
	case "endianness":
		if f.got == rxmEndianBig {
			return errors.WithHint(
				errors.Wrapf(fi.EIO, "tcp: rxm: %s record: peer is big-endian (endianness %d, want %d)", record, f.got, f.want),
				"rxm connects only peers of the same byte order; this side is little-endian")
		}
	case "eager_limit":
		return errors.WithHint(
			errors.Wrapf(fi.EIO, "tcp: rxm: %s record: eager_limit %d, want %d", record, f.got, f.want),
			"both sides must use the same FI_OFI_RXM_BUFFER_SIZE")
	}
	return errors.Wrapf(fi.EIO, "tcp: rxm: %s record: %s %d, want %d", record, f.field, f.got, f.want)
}

func rxmConnectFault(b []byte, eagerLimit uint32, r *rxmConnectRecord) rxmRecordFault {
	if len(b) != rxmConnectSize {
		return rxmRecordFault{"length", uint64(len(b)), rxmConnectSize}
	}
	for _, c := range [...]struct {
		field     string
		got, want byte
	}{
		{"version", b[0], rxmCMVersion},
		{"endianness", b[1], rxmEndianLittle},
		{"ctrl_version", b[2], rxmCtrlVersion},
		{"op_version", b[3], rxmCMOpVersion},
	} {
		if c.got != c.want {
			return rxmRecordFault{c.field, uint64(c.got), uint64(c.want)}
		}
	}
	if b[6] > byte(rxmFlowCtrlOff) {
		return rxmRecordFault{"flow_ctrl", uint64(b[6]), uint64(rxmFlowCtrlOff)}
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != eagerLimit {
		return rxmRecordFault{"eager_limit", uint64(v), uint64(eagerLimit)}
	}
	*r = rxmConnectRecord{
		port:       binary.LittleEndian.Uint16(b[4:]),
		flowCtrl:   rxmFlowCtrl(b[6]),
		eagerLimit: eagerLimit,
		rxSize:     binary.LittleEndian.Uint32(b[12:]),
		connID:     binary.LittleEndian.Uint64(b[16:]),
	}
	return rxmRecordFault{}
}

func rxmAcceptFault(b []byte, r *rxmAcceptRecord) rxmRecordFault {
	if len(b) != rxmAcceptSize {
		return rxmRecordFault{"length", uint64(len(b)), rxmAcceptSize}
	}
	if b[12] > byte(rxmFlowCtrlOff) {
		return rxmRecordFault{"flow_ctrl", uint64(b[12]), uint64(rxmFlowCtrlOff)}
	}
	*r = rxmAcceptRecord{
		connID:   binary.LittleEndian.Uint64(b[0:]),
		rxSize:   binary.LittleEndian.Uint32(b[8:]),
		flowCtrl: rxmFlowCtrl(b[12]),
	}
	return rxmRecordFault{}
}

// parseRxmConnect decodes the connect record b (the private data of a tcp
// connect request) into r, checking what the C acceptor checks (§3.2): b is
// exactly 24 bytes, version 1, endianness 2 (a big-endian peer is refused),
// ctrl_version 4, op_version 3, eager_limit equal to eagerLimit (ours,
// normally rxmEagerLimit); and flow_ctrl 0..2. It returns nil or bare
// fi.EIO, the acceptor's cue to reject with rxmRejectRefused; r is set only
// on success. It never allocates. checkRxmConnect says why.
func parseRxmConnect(b []byte, eagerLimit uint32, r *rxmConnectRecord) error {
	return rxmConnectFault(b, eagerLimit, r).errno()
}

// checkRxmConnect is parseRxmConnect for control paths: the error wraps
// fi.EIO and names the field that failed ("tcp: rxm: connect record:
// ..."), with a hint for a big-endian peer or an eager-limit mismatch.
func checkRxmConnect(b []byte, eagerLimit uint32, r *rxmConnectRecord) error {
	return rxmConnectFault(b, eagerLimit, r).wrap("connect")
}

// parseRxmAccept decodes the accept record b (the private data of a tcp
// accept) into r: b is exactly 16 bytes and flow_ctrl 0..2. It returns nil
// or bare fi.EIO; r is set only on success. It never allocates.
func parseRxmAccept(b []byte, r *rxmAcceptRecord) error {
	return rxmAcceptFault(b, r).errno()
}

// checkRxmAccept is parseRxmAccept for control paths: the error wraps
// fi.EIO and names the field that failed ("tcp: rxm: accept record: ...").
func checkRxmAccept(b []byte, r *rxmAcceptRecord) error {
	return rxmAcceptFault(b, r).wrap("accept")
}

// rxmRejectReason is the reason byte of a reject record.
type rxmRejectReason uint8

// The reject reasons (§3.2). A connector that gets rxmRejectConnected
// keeps its peer entry and uses the peer's own connection; any other reason
// ends the attempt.
const (
	rxmRejectUnspec    rxmRejectReason = 0 // no reason given
	rxmRejectRefused   rxmRejectReason = 1 // record failed verification, or no resources
	rxmRejectConnected rxmRejectReason = 2 // already connected: the simultaneous-connect loser
)

// String returns a short description for error messages.
func (r rxmRejectReason) String() string {
	switch r {
	case rxmRejectUnspec:
		return "unspecified"
	case rxmRejectRefused:
		return "connection refused"
	case rxmRejectConnected:
		return "already connected"
	}
	return "unknown reason"
}

// appendRxmReject appends the 2-byte reject record with reason to b.
func appendRxmReject(b []byte, reason rxmRejectReason) []byte {
	return append(b, rxmCMVersion, byte(reason))
}

// parseRxmReject returns the reason of the reject record b (the private
// data of a tcp reject). Like C, it never fails: fewer than 2 bytes or a
// version other than 1 read as rxmRejectRefused; bytes after the second
// are ignored; a reason byte outside 0..2 is returned as it is.
func parseRxmReject(b []byte) rxmRejectReason {
	if len(b) < rxmRejectSize || b[0] != rxmCMVersion {
		return rxmRejectRefused
	}
	return rxmRejectReason(b[1])
}

// rxmType is the type byte of a packet's control header.
type rxmType uint8

// The packet types (§3.3).
const (
	rxmEager         rxmType = 0 // a whole message, size bytes of payload
	rxmSeg           rxmType = 1 // a SAR segment, seg_size bytes of payload
	rxmRndvReq       rxmType = 2 // rendezvous request, a descriptor follows
	rxmRndvReadDone  rxmType = 3 // receiver read all: the sender may complete
	rxmAtomic        rxmType = 4 // atomic request
	rxmAtomicResp    rxmType = 5 // atomic response
	rxmCredit        rxmType = 6 // flow-control credits (never over tcp)
	rxmRndvWriteData rxmType = 7 // receiver's buffers for a write rendezvous, a descriptor follows
	rxmRndvWriteDone rxmType = 8 // sender wrote all: the receiver may complete

	rxmTypeLast = rxmRndvWriteDone
)

// rxmOp is the op byte of a packet's operation header.
type rxmOp uint8

// The ops of message-carrying packets (types 0, 1, 2).
const (
	rxmOpMsg    rxmOp = 0 // untagged message (fi_send...)
	rxmOpTagged rxmOp = 1 // tagged message (fi_tsend...)
)

// rxmFlagCQData is the only op-header flag: data holds remote CQ data
// (FI_REMOTE_CQ_DATA's value).
const rxmFlagCQData uint32 = 0x00020000

// The SAR segment kinds in bits 0-1 of ctrl_data (§3.6).
const (
	rxmSegFirst  = 1
	rxmSegMiddle = 2
	rxmSegLast   = 3
	rxmSegMask   = 3
)

// rxmHeader is one decoded packet header, or one to encode: every field of
// the 64 bytes but the two version bytes (putRxmHeader writes 4 and 2). Keep
// one per direction and reuse it. Senders fill what the type uses, and
// conn_id with rxmConnIndex of the peer's record; other fields stay 0.
type rxmHeader struct {
	typ      rxmType
	segSize  uint16
	segNo    uint32
	connID   uint64
	msgID    uint64
	ctrlData uint64
	rxIndex  uint8
	op       rxmOp
	opData   uint8
	flags    uint32
	size     uint64
	data     uint64
	tag      uint64
}

// hasCQData reports whether data carries remote CQ data.
func (h *rxmHeader) hasCQData() bool { return h.flags&rxmFlagCQData != 0 }

// putRxmHeader encodes h into b[:64] and returns 64; b shorter than 64
// panics. It never allocates.
func putRxmHeader(b []byte, h *rxmHeader) int {
	_ = b[rxmHeaderSize-1]
	b[0] = rxmCtrlVersion
	b[1] = byte(h.typ)
	binary.LittleEndian.PutUint16(b[2:], h.segSize)
	binary.LittleEndian.PutUint32(b[4:], h.segNo)
	binary.LittleEndian.PutUint64(b[8:], h.connID)
	binary.LittleEndian.PutUint64(b[16:], h.msgID)
	binary.LittleEndian.PutUint64(b[24:], h.ctrlData)
	b[32] = rxmOpVersion
	b[33] = h.rxIndex
	b[34] = byte(h.op)
	b[35] = h.opData
	binary.LittleEndian.PutUint32(b[36:], h.flags)
	binary.LittleEndian.PutUint64(b[40:], h.size)
	binary.LittleEndian.PutUint64(b[48:], h.data)
	binary.LittleEndian.PutUint64(b[56:], h.tag)
	return rxmHeaderSize
}

// parseRxmHeader decodes the packet header at the start of b into h. b
// holds at least the 64 header bytes (a tcp message of fewer is a protocol
// violation, §3.4); rest is the number of bytes the tcp message carries
// after them. It checks what a receiver relies on and returns bare fi.EIO,
// the cue to drop the connection, for
//
//   - fewer than 64 bytes, control version other than 4, type above 8;
//   - on the message types 0, 1, 2: op other than 0 or 1, flags other than
//     0 or rxmFlagCQData;
//   - eager: size != rest; SAR: seg_size != rest, seg_size > size, or a
//     segment kind (ctrl_data bits 0-1) of 0; rendezvous request and write
//     data: rest != 104 (the descriptor, parseRxmRndv); read done, write
//     done and credit: rest != 0.
//
// It does not check conn_id (the caller knows which peer sent the message),
// the operation header version, nor the fields C leaves stale: msg_id of
// eager messages, the operation header of types 3 to 8, SAR fields of other
// types, rx_index, op_data, and data and tag when unused. Atomic packets
// (types 4, 5) are checked no further; their body is not decoded here. h
// holds garbage unless the error is nil. It never allocates.
func parseRxmHeader(b []byte, rest uint64, h *rxmHeader) error {
	if len(b) < rxmHeaderSize || b[0] != rxmCtrlVersion || b[1] > byte(rxmTypeLast) {
		return fi.EIO
	}
	*h = rxmHeader{
		typ:      rxmType(b[1]),
		segSize:  binary.LittleEndian.Uint16(b[2:]),
		segNo:    binary.LittleEndian.Uint32(b[4:]),
		connID:   binary.LittleEndian.Uint64(b[8:]),
		msgID:    binary.LittleEndian.Uint64(b[16:]),
		ctrlData: binary.LittleEndian.Uint64(b[24:]),
		rxIndex:  b[33],
		op:       rxmOp(b[34]),
		opData:   b[35],
		flags:    binary.LittleEndian.Uint32(b[36:]),
		size:     binary.LittleEndian.Uint64(b[40:]),
		data:     binary.LittleEndian.Uint64(b[48:]),
		tag:      binary.LittleEndian.Uint64(b[56:]),
	}
	switch h.typ {
	case rxmEager, rxmSeg, rxmRndvReq:
		if h.op > rxmOpTagged || h.flags&^rxmFlagCQData != 0 {
			return fi.EIO
		}
	}
	var ok bool
	switch h.typ {
	case rxmEager:
		ok = h.size == rest
	case rxmSeg:
		ok = uint64(h.segSize) == rest && uint64(h.segSize) <= h.size && h.ctrlData&rxmSegMask != 0
	case rxmRndvReq, rxmRndvWriteData:
		ok = rest == rxmRndvDescSize
	case rxmRndvReadDone, rxmRndvWriteDone, rxmCredit:
		ok = rest == 0
	case rxmAtomic, rxmAtomicResp:
		ok = true
	}
	if !ok {
		return fi.EIO
	}
	return nil
}

// rxmRndvDesc is a decoded rendezvous descriptor (§3.5): the sender's
// registered buffers (type 2) or the receiver's (type 7).
type rxmRndvDesc struct {
	iov   [rxmRndvIOVLimit]rmaIOV
	count uint8 // valid entries of iov, 1..4
}

// iovs returns the valid iovs; it aliases d.
func (d *rxmRndvDesc) iovs() []rmaIOV { return d.iov[:d.count] }

// len returns the sum of the valid iovs' lengths. After parseRxmRndv it
// does not overflow.
func (d *rxmRndvDesc) len() uint64 {
	var n uint64
	for _, v := range d.iovs() {
		n += v.len
	}
	return n
}

// putRxmRndv encodes d into b[:104] and returns 104: the count valid iovs,
// zeros for the unused entries and the padding. b shorter than 104, or a
// count above 4, panics. It never allocates.
func putRxmRndv(b []byte, d *rxmRndvDesc) int {
	_ = b[rxmRndvDescSize-1]
	clear(b[:rxmRndvDescSize])
	for i, v := range d.iovs() {
		off := i * rmaIOVSize
		binary.LittleEndian.PutUint64(b[off:], v.addr)
		binary.LittleEndian.PutUint64(b[off+8:], v.len)
		binary.LittleEndian.PutUint64(b[off+16:], v.key)
	}
	b[rxmRndvIOVLimit*rmaIOVSize] = d.count
	return rxmRndvDescSize
}

// parseRxmRndv decodes the descriptor b, exactly the 104 bytes after a type
// 2 or 7 header, into d. It returns bare fi.EIO for another length, a count
// outside 1..4, iov lengths whose sum overflows, or a sum other than size.
// Pass the request header's size for a rendezvous request (type 2), and
// rxmRndvAnyLength for write data (type 7), whose descriptor may describe
// less than the message (a short receive buffer) and whose header's size is
// stale. Entries past count and the padding are ignored. d holds garbage
// unless the error is nil. It never allocates.
func parseRxmRndv(b []byte, size uint64, d *rxmRndvDesc) error {
	if len(b) != rxmRndvDescSize {
		return fi.EIO
	}
	d.count = b[rxmRndvIOVLimit*rmaIOVSize]
	if d.count == 0 || d.count > rxmRndvIOVLimit {
		return fi.EIO
	}
	var sum, carry uint64
	for i := range d.iov {
		if i >= int(d.count) {
			d.iov[i] = rmaIOV{}
			continue
		}
		off := i * rmaIOVSize
		v := rmaIOV{
			addr: binary.LittleEndian.Uint64(b[off:]),
			len:  binary.LittleEndian.Uint64(b[off+8:]),
			key:  binary.LittleEndian.Uint64(b[off+16:]),
		}
		d.iov[i] = v
		if sum, carry = bits.Add64(sum, v.len, 0); carry != 0 {
			return fi.EIO
		}
	}
	if size != rxmRndvAnyLength && sum != size {
		return fi.EIO
	}
	return nil
}
