package rxmwire

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// The rxm CM records captured from C fi_pingpong -p tcp -e rdm (docs/wire-tcp.md, §3.2).
const (
	rxmConnectCapture = "01 02 04 03 9b 8c 02 00 00 40 00 00 00 10 00 00 00 00 00 00 84 61 00 00"
	rxmAcceptCapture  = "00 00 00 00 40 61 00 00 00 10 00 00 02 00 00 00"
	rxmRejectCapture  = "01 01"
)

var (
	rxmConnectWant = ConnectRecord{Port: 35995, FlowCtrl: FlowCtrlOff, EagerLimit: EagerLimit, RxSize: RxSize, ConnID: MakeConnID(0x6184, 0)}
	rxmAcceptWant  = AcceptRecord{ConnID: MakeConnID(0x6140, 0), RxSize: RxSize, FlowCtrl: FlowCtrlOff}
)

// unhex decodes a hex dump: byte pairs separated by spaces or '|'.
func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	var digits []byte
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == ' ' || r == '\n' || r == '\t' }) {
		digits = append(digits, f...)
	}
	b, err := hex.DecodeString(string(digits))
	require.NoError(tb, err)
	return b
}

// zeros returns a hex dump of n zero bytes.
func zeros(n int) string { return strings.Repeat("00 ", n) }

func TestRxmCMCaptures(t *testing.T) {
	t.Run("connect", func(t *testing.T) {
		wire := unhex(t, rxmConnectCapture)
		var r ConnectRecord
		require.NoError(t, ParseConnect(wire, EagerLimit, &r))
		require.Equal(t, rxmConnectWant, r)
		require.Equal(t, uint64(0), ConnIndex(r.ConnID))
		require.Equal(t, uint32(0x6184), ConnPID(r.ConnID))
		require.NoError(t, CheckConnect(wire, EagerLimit, &r))
		require.Equal(t, wire, AppendConnect(nil, &rxmConnectWant), "byte-for-byte re-encoding")
		require.Equal(t, append([]byte("x"), wire...), AppendConnect([]byte("x"), &rxmConnectWant))
	})
	t.Run("accept", func(t *testing.T) {
		wire := unhex(t, rxmAcceptCapture)
		var r AcceptRecord
		require.NoError(t, ParseAccept(wire, &r))
		require.Equal(t, rxmAcceptWant, r)
		require.Equal(t, uint32(0x6140), ConnPID(r.ConnID))
		require.NoError(t, CheckAccept(wire, &r))
		require.Equal(t, wire, AppendAccept(nil, &rxmAcceptWant), "byte-for-byte re-encoding")
	})
	t.Run("reject", func(t *testing.T) {
		wire := unhex(t, rxmRejectCapture)
		require.Equal(t, RejectRefused, ParseReject(wire))
		require.Equal(t, wire, AppendReject(nil, RejectRefused))
	})
}

func TestRxmConnID(t *testing.T) {
	id := MakeConnID(0xdeadbeef, 0x01020304)
	require.Equal(t, uint64(0xdeadbeef01020304), id)
	require.Equal(t, uint64(0x01020304), ConnIndex(id))
	require.Equal(t, uint32(0xdeadbeef), ConnPID(id))
}

func TestRxmConnectRejects(t *testing.T) {
	set := func(at int, v ...byte) []byte {
		b := unhex(t, rxmConnectCapture)
		copy(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		wire []byte
		msg  string // in the wrapped error
	}{
		{"empty", nil, "0 bytes, want 24"},
		{"short", unhex(t, rxmConnectCapture)[:23], "23 bytes, want 24"},
		{"long", append(unhex(t, rxmConnectCapture), 0), "25 bytes, want 24"},
		{"accept record", unhex(t, rxmAcceptCapture), "16 bytes, want 24"},
		{"version 0", set(0, 0), "version 0, want 1"},
		{"version 2", set(0, 2), "version 2, want 1"},
		{"big-endian", set(1, EndianBig), "peer is big-endian (endianness 1, want 2)"},
		{"endianness 0", set(1, 0), "endianness 0, want 2"},
		{"endianness 3", set(1, 3), "endianness 3, want 2"},
		{"ctrl_version 3", set(2, 3), "ctrl_version 3, want 4"},
		{"op_version 2", set(3, 2), "op_version 2, want 3"},
		{"flow_ctrl 3", set(6, 3), "unknown flow_ctrl 3"},
		{"flow_ctrl 255", set(6, 255), "unknown flow_ctrl 255"},
		{"eager_limit 8192", set(8, 0x00, 0x20), "eager_limit 8192, want 16384"},
		{"eager_limit 16385", set(8, 0x01), "eager_limit 16385, want 16384"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ConnectRecord{Port: 1}
			err := ParseConnect(c.wire, EagerLimit, &r)
			require.Equal(t, fi.EIO, err, "a bare errno: got %v", err)
			require.Equal(t, ConnectRecord{Port: 1}, r, "left alone on failure")
			err = CheckConnect(c.wire, EagerLimit, &r)
			require.ErrorIs(t, err, fi.EIO)
			require.Equal(t, fi.EIO, fi.Code(err))
			require.EqualError(t, err, "rxm: connect record: "+c.msg+": "+fi.EIO.Error())
		})
	}
	t.Run("hints", func(t *testing.T) {
		var r ConnectRecord
		require.Contains(t, errors.FlattenHints(CheckConnect(set(1, EndianBig), EagerLimit, &r)), "little-endian")
		require.Contains(t, errors.FlattenHints(CheckConnect(set(9, 0x20), EagerLimit, &r)), "FI_OFI_RXM_BUFFER_SIZE")
	})
	// What the C acceptor does not check passes: every flow_ctrl value,
	// the padding, any port, rx_size and conn_id; and another eager limit
	// when both sides use it.
	ok := []struct {
		name  string
		wire  []byte
		eager uint32
	}{
		{"flow_ctrl 0", set(6, 0), EagerLimit},
		{"flow_ctrl 1", set(6, 1), EagerLimit},
		{"padding", set(7, 0xff), EagerLimit},
		{"port 0, rx_size 0, conn_id max", set(4, 0, 0, 2, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), EagerLimit},
		{"eager_limit 8192 on both sides", set(8, 0x00, 0x20), 8192},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			var r ConnectRecord
			require.NoError(t, ParseConnect(c.wire, c.eager, &r))
			require.NoError(t, CheckConnect(c.wire, c.eager, &r))
			require.Equal(t, c.eager, r.EagerLimit)
			require.Equal(t, c.wire[6], byte(r.FlowCtrl))
		})
	}
}

func TestRxmAcceptRejects(t *testing.T) {
	set := func(at int, v ...byte) []byte {
		b := unhex(t, rxmAcceptCapture)
		copy(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		wire []byte
		msg  string
	}{
		{"empty", nil, "0 bytes, want 16"},
		{"short", unhex(t, rxmAcceptCapture)[:15], "15 bytes, want 16"},
		{"long", append(unhex(t, rxmAcceptCapture), 0), "17 bytes, want 16"},
		{"connect record", unhex(t, rxmConnectCapture), "24 bytes, want 16"},
		{"flow_ctrl 3", set(12, 3), "unknown flow_ctrl 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r AcceptRecord
			err := ParseAccept(c.wire, &r)
			require.Equal(t, fi.EIO, err, "a bare errno: got %v", err)
			err = CheckAccept(c.wire, &r)
			require.ErrorIs(t, err, fi.EIO)
			require.EqualError(t, err, "rxm: accept record: "+c.msg+": "+fi.EIO.Error())
		})
	}
	for _, flow := range []FlowCtrl{FlowCtrlLocal, FlowCtrlOn} {
		var r AcceptRecord
		require.NoError(t, ParseAccept(set(12, byte(flow), 0xaa, 0xbb, 0xcc), &r), "flow_ctrl %d, padding ignored", flow)
		require.Equal(t, flow, r.FlowCtrl)
	}
}

func TestRxmReject(t *testing.T) {
	cases := []struct {
		name string
		wire []byte
		want RejectReason
	}{
		{"captured", unhex(t, rxmRejectCapture), RejectRefused},
		{"unspecified", []byte{1, 0}, RejectUnspec},
		{"already connected", []byte{1, 2}, RejectConnected},
		{"unknown reason kept", []byte{1, 7}, 7},
		{"trailing bytes ignored", []byte{1, 2, 9}, RejectConnected},
		{"no data", nil, RejectRefused},
		{"one byte", []byte{1}, RejectRefused},
		{"version 0", []byte{0, 2}, RejectRefused},
		{"version 2", []byte{2, 2}, RejectRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, ParseReject(c.wire))
		})
	}
	for _, r := range []RejectReason{RejectUnspec, RejectRefused, RejectConnected, 200} {
		require.Equal(t, r, ParseReject(AppendReject(nil, r)))
	}
	require.Equal(t, "unspecified", RejectUnspec.String())
	require.Equal(t, "connection refused", RejectRefused.String())
	require.Equal(t, "already connected", RejectConnected.String())
	require.Equal(t, "unknown reason", RejectReason(3).String())
}

// rxmCase is an rxm packet captured from C (docs/wire-tcp.md, §3.5-§3.7), or
// built from that page's description where it gives no bytes: the 64-byte header, what
// follows it in the tcp message, and the rendezvous descriptor when there
// is one.
type rxmCase struct {
	name     string
	wire     string // the header, 64 bytes
	rest     uint64 // bytes of the tcp message after the header
	want     Header
	desc     string // the descriptor of types 2 and 7
	wantDesc RndvDesc
}

const rxmOpHdr0 = "02 00 00 00 00 00 00 00"

var rxmCases = []rxmCase{
	{name: "eager 64 ping", rest: 64,
		wire: "04 00 00 00 00 00 00 00" + " 00 00 00 00 00 00 00 00" + " 00 00 00 00 00 00 00 00" + " 00 00 00 00 00 00 00 00" +
			rxmOpHdr0 + " 40 00 00 00 00 00 00 00" + " 00 00 00 00 00 00 00 00" + " 00 00 00 00 00 00 00 00",
		want: Header{Size: 64}},
	{name: "eager fin", rest: 4,
		wire: "04 00" + zeros(30) + rxmOpHdr0 + "04" + zeros(23),
		want: Header{Size: 4}},
	{name: "rendezvous request", rest: RndvDescSize,
		wire:     "04 02" + zeros(30) + rxmOpHdr0 + "00 60 00 00 00 00 00 00" + zeros(16),
		want:     Header{Type: TypeRndvReq, Size: 0x6000},
		desc:     "00 00 00 00 00 00 00 00 | 00 60 00 00 00 00 00 00 | 00 00 00 80 00 00 00 00" + zeros(72) + "01" + zeros(7),
		wantDesc: RndvDesc{Count: 1, IOV: [4]RMAIOV{{0, 0x6000, 0x80000000}}}},
	{name: "read done with stale size", rest: 0,
		wire: "04 03" + zeros(30) + rxmOpHdr0 + "00 40 00 00 00 00 00 00" + zeros(16),
		want: Header{Type: TypeRndvReadDone, Size: 0x4000}},
	{name: "senddata", rest: 32,
		wire: "04 00" + zeros(30) + "02 00 00 00 00 00 02 00 | 20 00 00 00 00 00 00 00 | d1 00 00 00 00 00 00 00" + zeros(8),
		want: Header{Flags: FlagCQData, Size: 32, Data: 0xd1}},
	{name: "SAR first segment", rest: 16384,
		wire: "04 01 00 40 00 00 00 00" + zeros(16) + "01 00 00 00 00 00 00 00" + rxmOpHdr0 + "40 9c 00 00 00 00 00 00" + zeros(16),
		want: Header{Type: TypeSeg, SegSize: 16384, CtrlData: SegFirst, Size: 40000}},
	{name: "SAR last segment", rest: 7232,
		wire: "04 01 40 1c 02 00 00 00" + zeros(16) + "03 00 00 00 00 00 00 00" + rxmOpHdr0 + "40 9c 00 00 00 00 00 00" + zeros(16),
		want: Header{Type: TypeSeg, SegSize: 7232, SegNo: 2, CtrlData: SegLast, Size: 40000}},
	// Built from docs/wire-tcp.md, §3.5 and §3.7: no bytes captured.
	{name: "pong rendezvous request, msg_id 2, next key", rest: RndvDescSize,
		wire:     "04 02" + zeros(14) + "02" + zeros(15) + rxmOpHdr0 + "00 60 00 00 00 00 00 00" + zeros(16),
		want:     Header{Type: TypeRndvReq, MsgID: 2, Size: 0x6000},
		desc:     zeros(8) + "00 60 00 00 00 00 00 00 | 01 00 00 80 00 00 00 00" + zeros(72) + "01" + zeros(7),
		wantDesc: RndvDesc{Count: 1, IOV: [4]RMAIOV{{0, 0x6000, 0x80000001}}}},
	{name: "read done echoing msg_id 2", rest: 0,
		wire: "04 03" + zeros(14) + "02" + zeros(15) + rxmOpHdr0 + "00 60 00 00 00 00 00 00" + zeros(16),
		want: Header{Type: TypeRndvReadDone, MsgID: 2, Size: 0x6000}},
	{name: "tagged rendezvous request with data, two iovs", rest: RndvDescSize,
		wire: "04 02 00 00 00 00 00 00 | 05 00 00 00 00 00 00 00 | 03" + zeros(15) +
			"02 00 01 00 00 00 02 00 | 00 80 00 00 00 00 00 00 | d2 00 00 00 00 00 00 00 | d2 04 00 00 00 00 00 00",
		want: Header{Type: TypeRndvReq, ConnID: 5, MsgID: 3, Op: OpTagged, Flags: FlagCQData, Size: 0x8000, Data: 0xd2, Tag: 0x4d2},
		desc: "00 00 00 00 00 00 00 00 | 00 60 00 00 00 00 00 00 | 02 00 00 80 00 00 00 00" +
			"00 00 00 00 00 00 00 00 | 00 20 00 00 00 00 00 00 | 03 00 00 80 00 00 00 00" + zeros(48) + "02" + zeros(7),
		wantDesc: RndvDesc{Count: 2, IOV: [4]RMAIOV{{0, 0x6000, 0x80000002}, {0, 0x2000, 0x80000003}}}},
	{name: "write data, descriptor shorter than the stale size", rest: RndvDescSize,
		wire:     "04 07" + zeros(14) + "02" + zeros(15) + rxmOpHdr0 + "00 40 00 00 00 00 00 00" + zeros(16),
		want:     Header{Type: TypeRndvWriteData, MsgID: 2, Size: 0x4000},
		desc:     "00 10 00 00 00 00 00 00 | 00 50 00 00 00 00 00 00 | 04 00 00 80 00 00 00 00" + zeros(72) + "01" + zeros(7),
		wantDesc: RndvDesc{Count: 1, IOV: [4]RMAIOV{{0x1000, 0x5000, 0x80000004}}}},
	{name: "write done", rest: 0,
		wire: "04 08" + zeros(14) + "02" + zeros(15) + rxmOpHdr0 + "00 60 00 00 00 00 00 00" + zeros(16),
		want: Header{Type: TypeRndvWriteDone, MsgID: 2, Size: 0x6000}},
	{name: "tagged eager", rest: 8,
		wire: "04 00 00 00 00 00 00 00 | 01" + zeros(23) + "02 00 01 00 00 00 00 00 | 08" + zeros(15) + "07 00 00 00 00 00 00 00",
		want: Header{ConnID: 1, Op: OpTagged, Size: 8, Tag: 7}},
}

func TestRxmHeaderCaptures(t *testing.T) {
	for _, c := range rxmCases {
		t.Run(c.name, func(t *testing.T) {
			wire := unhex(t, c.wire)
			require.Len(t, wire, HeaderSize)
			var h Header
			// The receiver may hand over more than the header.
			require.NoError(t, ParseHeader(append(wire[:HeaderSize:HeaderSize], 0x30, 0x31), c.rest, &h))
			require.Equal(t, c.want, h)
			require.Equal(t, c.want.Flags != 0, h.HasCQData())

			var out [HeaderSize + 1]byte
			out[HeaderSize] = 0xee
			require.Equal(t, HeaderSize, PutHeader(out[:], &c.want))
			require.Equal(t, wire, out[:HeaderSize], "byte-for-byte re-encoding")
			require.Equal(t, byte(0xee), out[HeaderSize], "writes 64 bytes, no more")

			if c.desc == "" {
				return
			}
			desc := unhex(t, c.desc)
			require.Len(t, desc, RndvDescSize)
			size := h.Size
			if h.Type == TypeRndvWriteData {
				size = RndvAnyLength
			}
			var d RndvDesc
			require.NoError(t, ParseRndv(desc, size, &d))
			require.Equal(t, c.wantDesc, d)
			if h.Type == TypeRndvReq {
				require.Equal(t, h.Size, d.Len())
			}
			var dout [RndvDescSize]byte
			require.Equal(t, RndvDescSize, PutRndv(dout[:], &c.wantDesc))
			require.Equal(t, desc, dout[:], "byte-for-byte re-encoding")
		})
	}
}

func TestRxmHeaderRejects(t *testing.T) {
	eager := rxmCases[0].wire
	req := rxmCases[2].wire
	done := rxmCases[3].wire
	sar := rxmCases[5].wire
	set := func(s string, at int, v ...byte) []byte {
		b := unhex(t, s)
		copy(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		wire []byte
		rest uint64
	}{
		{"empty", nil, 0},
		{"63 bytes", unhex(t, eager)[:63], 64},
		{"ctrl version 3", set(eager, 0, 3), 64},
		{"ctrl version 5", set(eager, 0, 5), 64},
		{"type 9", set(done, 1, 9), 0},
		{"type 255", set(done, 1, 255), 0},
		{"eager op 2", set(eager, 34, 2), 64},
		{"eager op 6 (atomic)", set(eager, 34, 6), 64},
		{"eager flag 0x1", set(eager, 36, 1), 64},
		{"eager flag 0x00040000", set(eager, 38, 4), 64},
		{"eager flags CQ data and more", set(eager, 38, 3), 64},
		{"eager size above payload", eagerWithSize(t, 65), 64},
		{"eager size below payload", eagerWithSize(t, 63), 64},
		{"eager size 2^64-1", set(eager, 40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 64},
		{"rendezvous request op 2", set(req, 34, 2), RndvDescSize},
		{"rendezvous request flags", set(req, 37, 1), RndvDescSize},
		{"rendezvous request without descriptor", unhex(t, req), 0},
		{"rendezvous request with more than the descriptor", unhex(t, req), RndvDescSize + 1},
		{"write data without descriptor", set(req, 1, byte(TypeRndvWriteData)), 103},
		{"read done with payload", unhex(t, done), 1},
		{"write done with payload", set(done, 1, byte(TypeRndvWriteDone)), 0x4000},
		{"credit with payload", set(done, 1, byte(TypeCredit)), 8},
		{"SAR seg_size above payload", unhex(t, sar), 16383},
		{"SAR seg_size above size", set(sar, 40, 0xff, 0x3f, 0, 0), 16384},
		{"SAR segment kind 0", set(sar, 24, 0), 16384},
		{"SAR segment kind 0, offset set", set(sar, 24, 0, 0, 0, 0, 1), 16384},
		{"SAR op 3", set(sar, 34, 3), 16384},
		{"SAR flags", set(sar, 39, 0x80), 16384},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h Header
			err := ParseHeader(c.wire, c.rest, &h)
			require.Equal(t, fi.EIO, err, "a bare errno: got %v", err)
		})
	}
	// What C leaves stale or does not check passes.
	ok := []struct {
		name string
		wire []byte
		rest uint64
	}{
		{"eager msg_id stale", set(eager, 16, 0x11, 0x22), 64},
		{"eager SAR fields stale", set(eager, 2, 0x40, 0x00, 0x05), 64},
		{"eager ctrl_data stale", set(eager, 24, 3), 64},
		{"eager data and tag stale on op 0 without flag", set(eager, 48, 9, 0, 0, 0, 0, 0, 0, 0, 7), 64},
		{"op version 3", set(eager, 32, 3), 64},
		{"op version 0", set(eager, 32, 0), 64},
		{"rx_index and op_data", set(eager, 33, 5, 0, 6), 64},
		{"conn_id not checked", set(eager, 8, 0xff, 0xff, 0xff, 0xff, 0xff), 64},
		{"empty eager", eagerWithSize(t, 0), 0},
		{"read done stale op and flags", set(done, 34, 1, 0, 0xff, 0xff, 0xff, 0xff), 0},
		{"read done stale op 7", set(done, 34, 7), 0},
		{"write done stale op header", set(done, 1, byte(TypeRndvWriteDone)), 0},
		{"write data stale flags", set(req, 1, byte(TypeRndvWriteData), 0, 0), RndvDescSize},
		{"credit", set(done, 1, byte(TypeCredit)), 0},
		{"atomic", set(eager, 1, byte(TypeAtomic)), 100},
		{"atomic response", set(eager, 1, byte(TypeAtomicResp)), 8},
		{"SAR middle segment", set(sar, 24, SegMiddle), 16384},
		{"SAR segment of the whole size", set(sar, 40, 0x00, 0x40, 0, 0), 16384},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			var h Header
			require.NoError(t, ParseHeader(c.wire, c.rest, &h))
			var out [HeaderSize]byte
			PutHeader(out[:], &h)
			want := c.wire[:HeaderSize]
			want[32] = OpVersion
			require.Equal(t, want, out[:], "re-encodes with op version 2")
		})
	}
}

// eager2 returns the captured eager header with size n.
func eagerWithSize(tb testing.TB, n byte) []byte {
	tb.Helper()
	b := unhex(tb, rxmCases[0].wire)
	b[40] = n
	return b
}

func TestRxmRndvRejects(t *testing.T) {
	desc := rxmCases[9].desc // two iovs, 0x6000 + 0x2000
	set := func(at int, v ...byte) []byte {
		b := unhex(t, desc)
		copy(b[at:], v)
		return b
	}
	maxLen := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	cases := []struct {
		name string
		wire []byte
		size uint64
	}{
		{"empty", nil, 0x8000},
		{"103 bytes", unhex(t, desc)[:103], 0x8000},
		{"105 bytes", append(unhex(t, desc), 0), 0x8000},
		{"count 0", set(96, 0), 0x8000},
		{"count 5", set(96, 5), 0x8000},
		{"count 255", set(96, 255), 0x8000},
		{"sum below size", unhex(t, desc), 0x8001},
		{"sum above size", unhex(t, desc), 0x7fff},
		{"one iov of two", set(96, 1), 0x8000},
		{"lengths overflow", set(8, maxLen...), 0x1fff},
		{"lengths overflow, any length", set(8, maxLen...), RndvAnyLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d RndvDesc
			err := ParseRndv(c.wire, c.size, &d)
			require.Equal(t, fi.EIO, err, "a bare errno: got %v", err)
		})
	}
	ok := []struct {
		name string
		wire []byte
		size uint64
		want RndvDesc
	}{
		{"any length", unhex(t, desc), RndvAnyLength, rxmCases[9].wantDesc},
		{"stale entries and padding ignored", func() []byte {
			b := set(48, 0xaa)
			for i := 72; i < len(b); i++ {
				b[i] = 0xbb
			}
			b[96] = 2
			return b
		}(), 0x8000, rxmCases[9].wantDesc},
		{"four iovs", set(96, 4), 0x8000, func() RndvDesc {
			d := rxmCases[9].wantDesc
			d.Count = 4
			return d
		}()},
		{"lengths sum to MaxUint64", set(8, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), math.MaxUint64, RndvDesc{Count: 2, IOV: [4]RMAIOV{{0, math.MaxUint64 - 0x2000, 0x80000002}, {0, 0x2000, 0x80000003}}}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			var d RndvDesc
			require.NoError(t, ParseRndv(c.wire, c.size, &d))
			require.Equal(t, c.want, d)
			require.Len(t, d.IOVs(), int(d.Count))
		})
	}
	t.Run("put clears unused entries", func(t *testing.T) {
		b := bytes.Repeat([]byte{0xcc}, RndvDescSize)
		PutRndv(b, &rxmCases[9].wantDesc)
		require.Equal(t, unhex(t, desc), b)
	})
}

func TestRxmAllocs(t *testing.T) {
	hdrs := make([][]byte, len(rxmCases))
	descs := make([][]byte, len(rxmCases))
	for i, c := range rxmCases {
		hdrs[i] = unhex(t, c.wire)
		if c.desc != "" {
			descs[i] = unhex(t, c.desc)
		}
	}
	connect, accept := unhex(t, rxmConnectCapture), unhex(t, rxmAcceptCapture)
	badConnect := bytes.Clone(connect)
	badConnect[1] = EndianBig
	badHdr := bytes.Clone(hdrs[0])
	badHdr[1] = 42
	var (
		h    Header
		d    RndvDesc
		cr   ConnectRecord
		ar   AcceptRecord
		buf  [RndvDescSize]byte
		cbuf = make([]byte, 0, ConnectSize+AcceptSize+RejectSize)
	)
	cases := map[string]func(){
		"parse header": func() {
			for i, b := range hdrs {
				if err := ParseHeader(b, rxmCases[i].rest, &h); err != nil {
					panic(err)
				}
			}
		},
		"parse header error": func() {
			if err := ParseHeader(badHdr, 64, &h); err != fi.EIO {
				panic(err)
			}
		},
		"put header": func() {
			for i := range rxmCases {
				PutHeader(buf[:], &rxmCases[i].want)
			}
		},
		"parse descriptor": func() {
			for _, b := range descs {
				if b != nil {
					if err := ParseRndv(b, RndvAnyLength, &d); err != nil {
						panic(err)
					}
				}
			}
		},
		"parse descriptor error": func() {
			if err := ParseRndv(descs[2], 1, &d); err != fi.EIO {
				panic(err)
			}
		},
		"put descriptor": func() {
			for i := range rxmCases {
				PutRndv(buf[:], &rxmCases[i].wantDesc)
			}
		},
		"parse records": func() {
			if ParseConnect(connect, EagerLimit, &cr) != nil || ParseAccept(accept, &ar) != nil ||
				ParseReject(accept) != RejectRefused {
				panic("parse")
			}
		},
		"parse record error": func() {
			if ParseConnect(badConnect, EagerLimit, &cr) != fi.EIO || ParseAccept(connect, &ar) != fi.EIO {
				panic("parse")
			}
		},
		"append records": func() {
			cbuf = AppendConnect(cbuf[:0], &rxmConnectWant)
			cbuf = AppendAccept(cbuf, &rxmAcceptWant)
			cbuf = AppendReject(cbuf, RejectConnected)
		},
	}
	for name, f := range cases {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}
