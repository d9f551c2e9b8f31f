// Package rxmwire is the wire codec of C libfabric 1.17's ofi_rxm
// utility provider: the CM records rxm exchanges as the private data of
// its core provider's connection requests, accepts and rejects
// (fi_connect, fi_accept, fi_reject of fi_cm(3)), the 64-byte packet
// header that starts every rxm message on a connection, and the
// rendezvous descriptor. gofabric's tcp provider (its tcp;ofi_rxm
// endpoints) and providers/rxm speak it; docs/wire-tcp.md, §3 and §5, is
// the reference, with the bytes captured from C peers over tcp.
//
// All multibyte fields are in the sender's host order; rxm connects only
// peers of the same order and the Go side speaks little-endian, so every
// field here is little-endian. Offsets are in bytes.
//
// Connect record (§3.2), private data of the connect request, 24 bytes:
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
// Accept record (§3.2), private data of the accept, 16 bytes:
//
//	0   u64   server_conn_id  pid<<32 | the acceptor's index for the peer
//	8   u32   rx_size         informational (4096)
//	12  u8    flow_ctrl       as above
//	13  3     padding         ignored
//
// Reject record (§3.2), private data of the reject, 2 bytes: version u8
// 1, reason u8 (0 unspecified, 1 refused, 2 already connected).
//
// Packet header (§3.3), the first 64 bytes of every rxm message (over
// tcp: of every untagged tcp message):
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
//
// The parsers treat every byte as hostile (FuzzRxmHeader,
// FuzzRxmCMRecord); the data-path ones (Parse*, Put*) never allocate and
// fail with bare fi.EIO, the control-path twins (Check*) say why.
package rxmwire

import (
	"encoding/binary"
	"math/bits"

	"github.com/cockroachdb/errors"

	"github.com/gofabric/gofabric/fi"
)

// rxm protocol constants (§3.2-§3.5, §5).
const (
	CMVersion    = 1     // CM record version (RXM_CM_DATA_VERSION)
	EndianLittle = 2     // endianness byte of a little-endian host
	EndianBig    = 1     // endianness byte of a big-endian host
	CtrlVersion  = 4     // control header version, in records and packets
	CMOpVersion  = 3     // op_version a connect record announces
	OpVersion    = 2     // operation header version the packets carry
	EagerLimit   = 16384 // default eager limit (FI_OFI_RXM_BUFFER_SIZE)
	RxSize       = 4096  // rx_size the records announce
	ConnectSize  = 24    // connect record length
	AcceptSize   = 16    // accept record length
	RejectSize   = 2     // reject record length
	HeaderSize   = 64    // packet header length
	RndvDescSize = 104   // rendezvous descriptor length
	RndvIOVLimit = 4     // most RMA iovs in a rendezvous descriptor

	RMAIOVSize = 24 // one RMA iov of a descriptor {addr, len, key}

	// RndvAnyLength tells ParseRndv not to compare the descriptor's
	// length with the message size.
	RndvAnyLength = ^uint64(0)
)

// FlowCtrl is the flow_ctrl byte of connect and accept records (C's
// RXM_CM_FLOW_CTRL_* values).
type FlowCtrl uint8

// The flow_ctrl values (§3.2). rxm over tcp has no credits and sends
// FlowCtrlOff; the others are accepted from peers and mean the same
// over tcp.
const (
	FlowCtrlLocal FlowCtrl = 0 // old peer: each side decides
	FlowCtrlOn    FlowCtrl = 1 // peer supports credit messages
	FlowCtrlOff   FlowCtrl = 2 // no credit flow control
)

// MakeConnID builds a client_conn_id or server_conn_id: the process id
// in the high 32 bits (for spotting duplicate requests), the sender's index
// for the peer in the low 32 (§3.2).
func MakeConnID(pid, index uint32) uint64 { return uint64(pid)<<32 | uint64(index) }

// ConnIndex returns the index part of a record's conn_id: the value to
// put in the conn_id of every packet sent to that peer (§3.2).
func ConnIndex(id uint64) uint64 { return id & (1<<32 - 1) }

// ConnPID returns the process-id part of a record's conn_id.
func ConnPID(id uint64) uint32 { return uint32(id >> 32) }

// ConnectRecord is a decoded connect record (the connect member of C's
// union rxm_cm_data); the fixed fields (versions, endianness, padding)
// are not kept.
type ConnectRecord struct {
	Port       uint16 // the connector's listening port: with the socket's peer IP, its name
	FlowCtrl   FlowCtrl
	EagerLimit uint32
	RxSize     uint32
	ConnID     uint64 // client_conn_id, see MakeConnID
}

// AcceptRecord is a decoded accept record (the accept member of C's
// union rxm_cm_data); padding is not kept.
type AcceptRecord struct {
	ConnID   uint64 // server_conn_id, see MakeConnID
	RxSize   uint32
	FlowCtrl FlowCtrl
}

// AppendConnect appends the 24-byte encoding of r to b and returns the
// extended slice; it allocates only when b lacks capacity.
func AppendConnect(b []byte, r *ConnectRecord) []byte {
	var w [ConnectSize]byte
	w[0] = CMVersion
	w[1] = EndianLittle
	w[2] = CtrlVersion
	w[3] = CMOpVersion
	binary.LittleEndian.PutUint16(w[4:], r.Port)
	w[6] = byte(r.FlowCtrl)
	binary.LittleEndian.PutUint32(w[8:], r.EagerLimit)
	binary.LittleEndian.PutUint32(w[12:], r.RxSize)
	binary.LittleEndian.PutUint64(w[16:], r.ConnID)
	return append(b, w[:]...)
}

// AppendAccept appends the 16-byte encoding of r to b and returns the
// extended slice; it allocates only when b lacks capacity.
func AppendAccept(b []byte, r *AcceptRecord) []byte {
	var w [AcceptSize]byte
	binary.LittleEndian.PutUint64(w[0:], r.ConnID)
	binary.LittleEndian.PutUint32(w[8:], r.RxSize)
	w[12] = byte(r.FlowCtrl)
	return append(b, w[:]...)
}

// recordFault names the first check a CM record failed; the zero value
// means it passed. It lets the bare and the wrapping parsers share one set
// of checks without allocating.
type recordFault struct {
	field     string
	got, want uint64
}

func (f recordFault) errno() error {
	if f.field == "" {
		return nil
	}
	return fi.EIO
}

func (f recordFault) wrap(record string) error {
	switch f.field {
	case "":
		return nil
	case "length":
		return errors.Wrapf(fi.EIO, "rxm: %s record: %d bytes, want %d", record, f.got, f.want)
	case "flow_ctrl":
		return errors.Wrapf(fi.EIO, "rxm: %s record: unknown flow_ctrl %d", record, f.got)
	case "endianness":
		if f.got == EndianBig {
			return errors.WithHint(
				errors.Wrapf(fi.EIO, "rxm: %s record: peer is big-endian (endianness %d, want %d)", record, f.got, f.want),
				"rxm connects only peers of the same byte order; this side is little-endian")
		}
	case "eager_limit":
		return errors.WithHint(
			errors.Wrapf(fi.EIO, "rxm: %s record: eager_limit %d, want %d", record, f.got, f.want),
			"both sides must use the same FI_OFI_RXM_BUFFER_SIZE")
	}
	return errors.Wrapf(fi.EIO, "rxm: %s record: %s %d, want %d", record, f.field, f.got, f.want)
}

func connectFault(b []byte, eagerLimit uint32, r *ConnectRecord) recordFault {
	if len(b) != ConnectSize {
		return recordFault{"length", uint64(len(b)), ConnectSize}
	}
	for _, c := range [...]struct {
		field     string
		got, want byte
	}{
		{"version", b[0], CMVersion},
		{"endianness", b[1], EndianLittle},
		{"ctrl_version", b[2], CtrlVersion},
		{"op_version", b[3], CMOpVersion},
	} {
		if c.got != c.want {
			return recordFault{c.field, uint64(c.got), uint64(c.want)}
		}
	}
	if b[6] > byte(FlowCtrlOff) {
		return recordFault{"flow_ctrl", uint64(b[6]), uint64(FlowCtrlOff)}
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != eagerLimit {
		return recordFault{"eager_limit", uint64(v), uint64(eagerLimit)}
	}
	*r = ConnectRecord{
		Port:       binary.LittleEndian.Uint16(b[4:]),
		FlowCtrl:   FlowCtrl(b[6]),
		EagerLimit: eagerLimit,
		RxSize:     binary.LittleEndian.Uint32(b[12:]),
		ConnID:     binary.LittleEndian.Uint64(b[16:]),
	}
	return recordFault{}
}

func acceptFault(b []byte, r *AcceptRecord) recordFault {
	if len(b) != AcceptSize {
		return recordFault{"length", uint64(len(b)), AcceptSize}
	}
	if b[12] > byte(FlowCtrlOff) {
		return recordFault{"flow_ctrl", uint64(b[12]), uint64(FlowCtrlOff)}
	}
	*r = AcceptRecord{
		ConnID:   binary.LittleEndian.Uint64(b[0:]),
		RxSize:   binary.LittleEndian.Uint32(b[8:]),
		FlowCtrl: FlowCtrl(b[12]),
	}
	return recordFault{}
}

// ParseConnect decodes the connect record b (the private data of a
// connect request) into r, checking what the C acceptor checks (§3.2): b is
// exactly 24 bytes, version 1, endianness 2 (a big-endian peer is refused),
// ctrl_version 4, op_version 3, eager_limit equal to eagerLimit (ours,
// normally EagerLimit); and flow_ctrl 0..2. It returns nil or bare
// fi.EIO, the acceptor's cue to reject with RejectRefused; r is set only
// on success. It never allocates. CheckConnect says why.
func ParseConnect(b []byte, eagerLimit uint32, r *ConnectRecord) error {
	return connectFault(b, eagerLimit, r).errno()
}

// CheckConnect is ParseConnect for control paths: the error wraps
// fi.EIO and names the field that failed ("rxm: connect record:
// ..."), with a hint for a big-endian peer or an eager-limit mismatch.
func CheckConnect(b []byte, eagerLimit uint32, r *ConnectRecord) error {
	return connectFault(b, eagerLimit, r).wrap("connect")
}

// ParseAccept decodes the accept record b (the private data of an
// accept) into r: b is exactly 16 bytes and flow_ctrl 0..2. It returns nil
// or bare fi.EIO; r is set only on success. It never allocates.
func ParseAccept(b []byte, r *AcceptRecord) error {
	return acceptFault(b, r).errno()
}

// CheckAccept is ParseAccept for control paths: the error wraps
// fi.EIO and names the field that failed ("rxm: accept record: ...").
func CheckAccept(b []byte, r *AcceptRecord) error {
	return acceptFault(b, r).wrap("accept")
}

// RejectReason is the reason byte of a reject record (the reject member
// of C's union rxm_cm_data; enum rxm_cm_reject_reason).
type RejectReason uint8

// The reject reasons (§3.2). A connector that gets RejectConnected
// keeps its peer entry and uses the peer's own connection; any other reason
// ends the attempt.
const (
	RejectUnspec    RejectReason = 0 // no reason given
	RejectRefused   RejectReason = 1 // record failed verification, or no resources
	RejectConnected RejectReason = 2 // already connected: the simultaneous-connect loser
)

// String returns a short description for error messages.
func (r RejectReason) String() string {
	switch r {
	case RejectUnspec:
		return "unspecified"
	case RejectRefused:
		return "connection refused"
	case RejectConnected:
		return "already connected"
	}
	return "unknown reason"
}

// AppendReject appends the 2-byte reject record with reason to b.
func AppendReject(b []byte, reason RejectReason) []byte {
	return append(b, CMVersion, byte(reason))
}

// ParseReject returns the reason of the reject record b (the private
// data of a reject). Like C, it never fails: fewer than 2 bytes or a
// version other than 1 read as RejectRefused; bytes after the second
// are ignored; a reason byte outside 0..2 is returned as it is.
func ParseReject(b []byte) RejectReason {
	if len(b) < RejectSize || b[0] != CMVersion {
		return RejectRefused
	}
	return RejectReason(b[1])
}

// Type is the type byte of a packet's control header (ofi_ctrl_hdr.type;
// C's ofi_ctrl_* values).
type Type uint8

// The packet types (§3.3).
const (
	TypeEager         Type = 0 // a whole message, size bytes of payload
	TypeSeg           Type = 1 // a SAR segment, seg_size bytes of payload
	TypeRndvReq       Type = 2 // rendezvous request, a descriptor follows
	TypeRndvReadDone  Type = 3 // receiver read all: the sender may complete
	TypeAtomic        Type = 4 // atomic request
	TypeAtomicResp    Type = 5 // atomic response
	TypeCredit        Type = 6 // flow-control credits (never over tcp)
	TypeRndvWriteData Type = 7 // receiver's buffers for a write rendezvous, a descriptor follows
	TypeRndvWriteDone Type = 8 // sender wrote all: the receiver may complete

	TypeLast = TypeRndvWriteDone
)

// Op is the op byte of a packet's operation header (ofi_op_hdr.op).
type Op uint8

// The ops of message-carrying packets (types 0, 1, 2).
const (
	OpMsg    Op = 0 // untagged message (fi_send...)
	OpTagged Op = 1 // tagged message (fi_tsend...)
)

// FlagCQData is the only op-header flag: data holds remote CQ data
// (FI_REMOTE_CQ_DATA's value).
const FlagCQData uint32 = 0x00020000

// The SAR segment kinds in bits 0-1 of ctrl_data (§3.6).
const (
	SegFirst  = 1
	SegMiddle = 2
	SegLast   = 3
	SegMask   = 3
)

// Header is one decoded packet header (C's struct rxm_pkt: an
// ofi_ctrl_hdr and an ofi_op_hdr), or one to encode: every field of
// the 64 bytes but the two version bytes (PutHeader writes 4 and 2). Keep
// one per direction and reuse it. Senders fill what the type uses, and
// conn_id with ConnIndex of the peer's record; other fields stay 0.
type Header struct {
	Type     Type
	SegSize  uint16
	SegNo    uint32
	ConnID   uint64
	MsgID    uint64
	CtrlData uint64
	RxIndex  uint8
	Op       Op
	OpData   uint8
	Flags    uint32
	Size     uint64
	Data     uint64
	Tag      uint64
}

// HasCQData reports whether Data carries remote CQ data.
func (h *Header) HasCQData() bool { return h.Flags&FlagCQData != 0 }

// PutHeader encodes h into b[:64] and returns 64; b shorter than 64
// panics. It never allocates.
func PutHeader(b []byte, h *Header) int {
	_ = b[HeaderSize-1]
	b[0] = CtrlVersion
	b[1] = byte(h.Type)
	binary.LittleEndian.PutUint16(b[2:], h.SegSize)
	binary.LittleEndian.PutUint32(b[4:], h.SegNo)
	binary.LittleEndian.PutUint64(b[8:], h.ConnID)
	binary.LittleEndian.PutUint64(b[16:], h.MsgID)
	binary.LittleEndian.PutUint64(b[24:], h.CtrlData)
	b[32] = OpVersion
	b[33] = h.RxIndex
	b[34] = byte(h.Op)
	b[35] = h.OpData
	binary.LittleEndian.PutUint32(b[36:], h.Flags)
	binary.LittleEndian.PutUint64(b[40:], h.Size)
	binary.LittleEndian.PutUint64(b[48:], h.Data)
	binary.LittleEndian.PutUint64(b[56:], h.Tag)
	return HeaderSize
}

// ParseHeader decodes the packet header at the start of b into h. b
// holds at least the 64 header bytes (a tcp message of fewer is a protocol
// violation, §3.4); rest is the number of bytes the tcp message carries
// after them. It checks what a receiver relies on and returns bare fi.EIO,
// the cue to drop the connection, for
//
//   - fewer than 64 bytes, control version other than 4, type above 8;
//   - on the message types 0, 1, 2: op other than 0 or 1, flags other than
//     0 or FlagCQData;
//   - eager: size != rest; SAR: seg_size != rest, seg_size > size, or a
//     segment kind (ctrl_data bits 0-1) of 0; rendezvous request and write
//     data: rest != 104 (the descriptor, ParseRndv); read done, write
//     done and credit: rest != 0.
//
// It does not check conn_id (the caller knows which peer sent the message),
// the operation header version, nor the fields C leaves stale: msg_id of
// eager messages, the operation header of types 3 to 8, SAR fields of other
// types, rx_index, op_data, and data and tag when unused. Atomic packets
// (types 4, 5) are checked no further; their body is not decoded here. h
// holds garbage unless the error is nil. It never allocates.
func ParseHeader(b []byte, rest uint64, h *Header) error {
	if len(b) < HeaderSize || b[0] != CtrlVersion || b[1] > byte(TypeLast) {
		return fi.EIO
	}
	*h = Header{
		Type:     Type(b[1]),
		SegSize:  binary.LittleEndian.Uint16(b[2:]),
		SegNo:    binary.LittleEndian.Uint32(b[4:]),
		ConnID:   binary.LittleEndian.Uint64(b[8:]),
		MsgID:    binary.LittleEndian.Uint64(b[16:]),
		CtrlData: binary.LittleEndian.Uint64(b[24:]),
		RxIndex:  b[33],
		Op:       Op(b[34]),
		OpData:   b[35],
		Flags:    binary.LittleEndian.Uint32(b[36:]),
		Size:     binary.LittleEndian.Uint64(b[40:]),
		Data:     binary.LittleEndian.Uint64(b[48:]),
		Tag:      binary.LittleEndian.Uint64(b[56:]),
	}
	switch h.Type {
	case TypeEager, TypeSeg, TypeRndvReq:
		if h.Op > OpTagged || h.Flags&^FlagCQData != 0 {
			return fi.EIO
		}
	}
	var ok bool
	switch h.Type {
	case TypeEager:
		ok = h.Size == rest
	case TypeSeg:
		ok = uint64(h.SegSize) == rest && uint64(h.SegSize) <= h.Size && h.CtrlData&SegMask != 0
	case TypeRndvReq, TypeRndvWriteData:
		ok = rest == RndvDescSize
	case TypeRndvReadDone, TypeRndvWriteDone, TypeCredit:
		ok = rest == 0
	case TypeAtomic, TypeAtomicResp:
		ok = true
	}
	if !ok {
		return fi.EIO
	}
	return nil
}

// RMAIOV is one RMA iov of a rendezvous descriptor (struct
// ofi_rma_iov): a remote buffer's address, length and MR key.
type RMAIOV struct {
	Addr, Len, Key uint64
}

// RndvDesc is a decoded rendezvous descriptor (§3.5): the sender's
// registered buffers (type 2) or the receiver's (type 7).
type RndvDesc struct {
	IOV   [RndvIOVLimit]RMAIOV
	Count uint8 // valid entries of IOV, 1..4
}

// IOVs returns the valid iovs; it aliases d.
func (d *RndvDesc) IOVs() []RMAIOV { return d.IOV[:d.Count] }

// Len returns the sum of the valid iovs' lengths. After ParseRndv it
// does not overflow.
func (d *RndvDesc) Len() uint64 {
	var n uint64
	for _, v := range d.IOVs() {
		n += v.Len
	}
	return n
}

// PutRndv encodes d into b[:104] and returns 104: the count valid iovs,
// zeros for the unused entries and the padding. b shorter than 104, or a
// count above 4, panics. It never allocates.
func PutRndv(b []byte, d *RndvDesc) int {
	_ = b[RndvDescSize-1]
	clear(b[:RndvDescSize])
	for i, v := range d.IOVs() {
		off := i * RMAIOVSize
		binary.LittleEndian.PutUint64(b[off:], v.Addr)
		binary.LittleEndian.PutUint64(b[off+8:], v.Len)
		binary.LittleEndian.PutUint64(b[off+16:], v.Key)
	}
	b[RndvIOVLimit*RMAIOVSize] = d.Count
	return RndvDescSize
}

// ParseRndv decodes the descriptor b, exactly the 104 bytes after a type
// 2 or 7 header, into d. It returns bare fi.EIO for another length, a count
// outside 1..4, iov lengths whose sum overflows, or a sum other than size.
// Pass the request header's size for a rendezvous request (type 2), and
// RndvAnyLength for write data (type 7), whose descriptor may describe
// less than the message (a short receive buffer) and whose header's size is
// stale. Entries past count and the padding are ignored. d holds garbage
// unless the error is nil. It never allocates.
func ParseRndv(b []byte, size uint64, d *RndvDesc) error {
	if len(b) != RndvDescSize {
		return fi.EIO
	}
	d.Count = b[RndvIOVLimit*RMAIOVSize]
	if d.Count == 0 || d.Count > RndvIOVLimit {
		return fi.EIO
	}
	var sum, carry uint64
	for i := range d.IOV {
		if i >= int(d.Count) {
			d.IOV[i] = RMAIOV{}
			continue
		}
		off := i * RMAIOVSize
		v := RMAIOV{
			Addr: binary.LittleEndian.Uint64(b[off:]),
			Len:  binary.LittleEndian.Uint64(b[off+8:]),
			Key:  binary.LittleEndian.Uint64(b[off+16:]),
		}
		d.IOV[i] = v
		if sum, carry = bits.Add64(sum, v.Len, 0); carry != 0 {
			return fi.EIO
		}
	}
	if size != RndvAnyLength && sum != size {
		return fi.EIO
	}
	return nil
}
