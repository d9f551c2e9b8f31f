//go:build linux

package tcp

import (
	"bytes"
	"encoding/hex"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// unhex decodes a hex dump: byte pairs separated by spaces or '|'.
func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s))
	require.NoError(tb, err)
	return b
}

func zeros(n int) string { return strings.Repeat("00 ", n) }

// cmCase is a CM message captured from the C provider (docs/wire-tcp.md, §2.3, §3.2).
type cmCase struct {
	name string
	wire string
	want cmHeader
}

var cmCases = []cmCase{
	{"pingpong request", "03 00 00 00" + zeros(20) + "01 00 00 00 00 00 00 00", cmHeader{typ: cmConnReq, data: []byte{}}},
	{"pingpong accept", "03 01 00 00" + zeros(20) + "01 00 00 00 00 00 00 00", cmHeader{typ: cmConnResp, data: []byte{}}},
	{"request with data", "03 00 00 06" + zeros(20) + "01 00 00 00 00 00 00 00 | 48 45 4c 4c 4f 32", cmHeader{typ: cmConnReq, data: []byte("HELLO2")}},
	{"accept with data", "03 01 00 0a" + zeros(20) + "01 00 00 00 00 00 00 00 | 41 43 43 45 50 54 44 41 54 41", cmHeader{typ: cmConnResp, data: []byte("ACCEPTDATA")}},
	{"request later rejected", "03 00 00 05" + zeros(20) + "01 00 00 00 00 00 00 00 | 48 45 4c 4c 4f", cmHeader{typ: cmConnReq, data: []byte("HELLO")}},
	{"reject with data", "03 06 00 05" + zeros(20) + "00 00 00 00 00 00 00 00 | 4e 4f 50 45 21", cmHeader{typ: cmReject, data: []byte("NOPE!")}},
	{"rxm connect record", "03 00 00 18" + zeros(20) + "01 00 00 00 00 00 00 00 | 01 02 04 03 9b 8c 02 00 00 40 00 00 00 10 00 00 00 00 00 00 84 61 00 00",
		cmHeader{typ: cmConnReq, data: []byte{1, 2, 4, 3, 0x9b, 0x8c, 2, 0, 0, 0x40, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x84, 0x61, 0, 0}}},
	{"rxm accept record", "03 01 00 10" + zeros(20) + "01 00 00 00 00 00 00 00 | 00 00 00 00 40 61 00 00 00 10 00 00 02 00 00 00",
		cmHeader{typ: cmConnResp, data: []byte{0, 0, 0, 0, 0x40, 0x61, 0, 0, 0, 0x10, 0, 0, 2, 0, 0, 0}}},
	{"rxm reject record", "03 06 00 02" + zeros(28) + "01 01", cmHeader{typ: cmReject, data: []byte{1, 1}}},
	// gofabric's reject codes (§2.9), which C sends as 0 and ignores.
	{"reject, backlog full", "03 06 00 00" + zeros(20) + "01 00 00 00 00 00 00 00", cmHeader{typ: cmReject, reject: rejectBacklogFull, data: []byte{}}},
	{"reject, listener closing, with data", "03 06 00 01" + zeros(20) + "02 00 00 00 00 00 00 00 | 78", cmHeader{typ: cmReject, reject: rejectClosing, data: []byte("x")}},
	// Not captured (no big-endian host, §6): the probe of a big-endian sender.
	{"big-endian request", "03 00 00 01" + zeros(20) + "00 00 00 00 00 00 00 01 | 7a", cmHeader{typ: cmConnReq, bigEndian: true, data: []byte("z")}},
}

func TestCMCaptures(t *testing.T) {
	for _, c := range cmCases {
		t.Run(c.name, func(t *testing.T) {
			wire := unhex(t, c.wire)
			h, err := parseCMHeader(wire)
			require.NoError(t, err)
			require.Equal(t, c.want, h)
			require.Equal(t, len(wire), h.len())

			// Bytes after the message belong to the data stream.
			h, err = parseCMHeader(append(wire[:len(wire):len(wire)], 3, 0, 0, 0))
			require.NoError(t, err)
			require.Equal(t, c.want.data, h.data)

			out, err := appendCM(nil, &c.want)
			require.NoError(t, err)
			require.Equal(t, wire, out, "byte-for-byte re-encoding")

			var buf [cmMaxMsgSize]byte
			r := bytes.NewReader(append(wire[:len(wire):len(wire)], 0xee))
			h, err = readCM(r, &buf)
			require.NoError(t, err)
			require.Equal(t, c.want, h)
			require.Equal(t, 1, r.Len(), "readCM reads the message and not a byte more")
		})
	}
}

func TestCMParseRejects(t *testing.T) {
	req := "03 00 00 02" + zeros(20) + "01 00 00 00 00 00 00 00 | 61 62"
	set := func(at int, v ...byte) []byte {
		b := unhex(t, req)
		copy(b[at:], v)
		return b
	}
	long := append(set(2, 0x01, 0x01), make([]byte, 257)...) // seg_size 257, all of it received
	cases := []struct {
		name string
		wire []byte
	}{
		{"empty", nil},
		{"short header", unhex(t, req)[:31]},
		{"version 2", set(0, 2)},
		{"version 4", set(0, 4)},
		{"type 2", set(1, 2)},
		{"type 5", set(1, 5)},
		{"type 255", set(1, 255)},
		{"private data above 256", long},
		{"private data truncated", unhex(t, req)[:33]},
		{"header only, data announced", unhex(t, req)[:32]},
		{"seg_no set", set(7, 1)},
		{"conn_id set", set(8, 0x80)},
		{"msg_id set", set(23, 1)},
		{"conn_data 0 in a request", set(24, 0)},
		{"conn_data 2", set(24, 2)},
		{"conn_data 1 and 1<<56", set(31, 1)},
		{"conn_data 0x100", set(24, 0, 1)},
		{"reject code 3", func() []byte { b := set(1, byte(cmReject)); b[24] = 3; return b }()},
		{"reject code 1 big-endian", func() []byte { b := set(1, byte(cmReject)); b[24], b[31] = 0, 1; return b }()},
		{"reject code 0x100", func() []byte { b := set(1, byte(cmReject)); b[24], b[25] = 0, 1; return b }()},
		{"conn_data 0 in an accept", func() []byte { b := set(1, byte(cmConnResp)); b[24] = 0; return b }()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseCMHeader(c.wire)
			require.ErrorIs(t, err, fi.EIO)
			require.Equal(t, fi.EIO, fi.Code(err))
			require.Contains(t, err.Error(), "tcp: cm: ")
		})
	}
	// The limits themselves pass.
	b := append(set(2, 0x01, 0x00), make([]byte, 256)...)
	h, err := parseCMHeader(b)
	require.NoError(t, err)
	require.Len(t, h.data, cmMaxDataSize)
}

func TestReadCM(t *testing.T) {
	var buf [cmMaxMsgSize]byte
	wire := unhex(t, cmCases[3].wire) // accept with 10 bytes of data
	t.Run("one byte at a time", func(t *testing.T) {
		h, err := readCM(iotest.OneByteReader(bytes.NewReader(wire)), &buf)
		require.NoError(t, err)
		require.Equal(t, cmCases[3].want, h)
	})
	t.Run("closed in the header", func(t *testing.T) {
		_, err := readCM(bytes.NewReader(wire[:20]), &buf)
		require.ErrorIs(t, err, fi.ECONNRESET)
		require.Contains(t, err.Error(), "after 20 of 32 bytes")
	})
	t.Run("closed in the data", func(t *testing.T) {
		_, err := readCM(bytes.NewReader(wire[:35]), &buf)
		require.ErrorIs(t, err, fi.ECONNRESET)
		require.Contains(t, err.Error(), "after 35 of 42 bytes")
	})
	t.Run("closed before anything", func(t *testing.T) {
		_, err := readCM(bytes.NewReader(nil), &buf)
		require.ErrorIs(t, err, fi.ECONNRESET)
	})
	t.Run("read error kept", func(t *testing.T) {
		_, err := readCM(iotest.ErrReader(fi.ETIMEDOUT), &buf)
		require.ErrorIs(t, err, fi.ETIMEDOUT)
	})
	t.Run("bad header: data not read", func(t *testing.T) {
		bad := bytes.Clone(wire)
		bad[0] = 2
		r := bytes.NewReader(bad)
		_, err := readCM(r, &buf)
		require.ErrorIs(t, err, fi.EIO)
		require.Equal(t, len(bad)-cmHeaderSize, r.Len())
	})
	t.Run("oversized data not read", func(t *testing.T) {
		bad := bytes.Clone(wire)
		bad[2] = 0x01 // seg_size 0x10a
		r := bytes.NewReader(append(bad, make([]byte, 0x100)...))
		_, err := readCM(r, &buf)
		require.ErrorIs(t, err, fi.EIO)
		require.Equal(t, 0x10a, r.Len())
	})
}

func TestAppendCM(t *testing.T) {
	t.Run("unknown type", func(t *testing.T) {
		_, err := appendCM(nil, &cmHeader{typ: 2})
		require.ErrorIs(t, err, fi.EINVAL)
	})
	t.Run("private data above 256", func(t *testing.T) {
		_, err := appendCM(nil, &cmHeader{typ: cmConnReq, data: make([]byte, 257)})
		require.ErrorIs(t, err, fi.EINVAL)
	})
	t.Run("appends", func(t *testing.T) {
		out, err := appendCM([]byte("x"), &cmHeader{typ: cmConnResp})
		require.NoError(t, err)
		require.Equal(t, append([]byte("x"), unhex(t, cmCases[1].wire)...), out)
	})
	t.Run("reject never carries the probe", func(t *testing.T) {
		out, err := appendCM(nil, &cmHeader{typ: cmReject, bigEndian: true})
		require.NoError(t, err)
		require.Equal(t, make([]byte, 8), out[24:32])
		out, err = appendCM(nil, &cmHeader{typ: cmReject, bigEndian: true, reject: rejectBacklogFull})
		require.NoError(t, err)
		require.Equal(t, []byte{1, 0, 0, 0, 0, 0, 0, 0}, out[24:32], "the reject code, little-endian")
	})
	t.Run("unknown reject code", func(t *testing.T) {
		_, err := appendCM(nil, &cmHeader{typ: cmReject, reject: 3})
		require.ErrorIs(t, err, fi.EINVAL)
	})
	t.Run("no allocation into a buffer", func(t *testing.T) {
		var buf [cmMaxMsgSize]byte
		h := cmHeader{typ: cmConnReq, data: make([]byte, cmMaxDataSize)}
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := appendCM(buf[:0], &h); err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs)
	})
}

// dataCase is a data header captured from the C provider (docs/wire-tcp.md, §2.5, §2.8,
// §3.5, §3.7, §4): the header bytes exactly, its decoding, and the payload
// length the message announces.
type dataCase struct {
	name    string
	wire    string
	want    dataHeader
	payload uint64
}

var dataCases = []dataCase{
	{"pingpong ping 64", "03 00 00 00 00 00 10 00 50 00 00 00 00 00 00 00",
		dataHeader{size: 80}, 64},
	{"pingpong fin delivery complete", "03 00 04 00 00 00 10 00 14 00 00 00 00 00 00 00",
		dataHeader{flags: flagDeliveryComplete, size: 20}, 4},
	{"ack", "03 00 00 00 02 00 10 00 10 00 00 00 00 00 00 00",
		dataHeader{opData: opDataAck, size: 16}, 0},
	{"senddata", "03 00 01 00 00 00 18 00 28 00 00 00 00 00 00 00 | 88 77 66 55 44 33 22 11",
		dataHeader{flags: flagCQData, size: 40, cqData: 0x1122334455667788}, 16},
	{"sendmsg delivery complete with data", "03 00 05 00 00 00 18 00 20 00 00 00 00 00 00 00 | 99 00 00 00 00 00 00 00",
		dataHeader{flags: flagCQData | flagDeliveryComplete, size: 32, cqData: 0x99}, 8},
	{"write", "03 04 00 00 00 01 28 00 48 00 00 00 00 00 00 00 | 00 02 00 00 00 00 00 00 | 20 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00",
		dataHeader{op: opWrite, rmaIOVCnt: 1, size: 72, rmaIOV: [4]rmaIOV{{0x200, 0x20, 0x1234}}}, 32},
	{"writedata", "03 04 01 00 00 01 30 00 38 00 00 00 00 00 00 00 | dd cc bb aa 00 00 00 00 | 20 02 00 00 00 00 00 00 | 08 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00",
		dataHeader{op: opWrite, flags: flagCQData, rmaIOVCnt: 1, size: 56, cqData: 0xaabbccdd, rmaIOV: [4]rmaIOV{{0x220, 8, 0x1234}}}, 8},
	{"writemsg two iovs delivery complete", "03 04 04 00 00 02 40 00 48 00 00 00 00 00 00 00 | 28 02 00 00 00 00 00 00 | 04 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00 | 2c 02 00 00 00 00 00 00 | 04 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00",
		dataHeader{op: opWrite, flags: flagDeliveryComplete, rmaIOVCnt: 2, size: 72, rmaIOV: [4]rmaIOV{{0x228, 4, 0x1234}, {0x22c, 4, 0x1234}}}, 8},
	{"read request", "03 02 00 00 00 01 28 00 28 00 00 00 00 00 00 00 | 00 02 00 00 00 00 00 00 | 18 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00",
		dataHeader{op: opReadReq, rmaIOVCnt: 1, size: 40, rmaIOV: [4]rmaIOV{{0x200, 0x18, 0x1234}}}, 0},
	{"read response", "03 03 00 00 00 01 10 00 28 00 00 00 00 00 00 00",
		dataHeader{op: opReadRsp, rmaIOVCnt: 1, size: 40}, 24},
	{"tagged via shared receive context, stale rma_iov_cnt", "03 01 00 00 00 01 18 00 20 00 00 00 00 00 00 00 | ef cd ab 00 00 00 00 00",
		dataHeader{op: opTagged, rmaIOVCnt: 1, size: 32, tag: 0xabcdef}, 8},
	{"rxm eager 64", "03 00 00 00 00 00 10 00 90 00 00 00 00 00 00 00",
		dataHeader{size: 144}, 128},
	{"rxm fin", "03 00 00 00 00 00 10 00 54 00 00 00 00 00 00 00",
		dataHeader{size: 84}, 68},
	{"rxm raw tagged", "03 00 80 00 00 00 18 00 58 00 00 00 00 00 00 00 | d2 04 00 00 00 00 00 00",
		dataHeader{flags: flagTagged, size: 88, tag: 1234}, 64},
	{"rxm tagged with data", "03 00 81 00 00 00 20 00 40 00 00 00 00 00 00 00 | d2 00 00 00 00 00 00 00 | 07 00 00 00 00 00 00 00",
		dataHeader{flags: flagTagged | flagCQData, size: 64, cqData: 0xd2, tag: 7}, 32},
	{"rxm senddata", "03 00 00 00 00 00 10 00 70 00 00 00 00 00 00 00",
		dataHeader{size: 112}, 96},
	{"rxm rendezvous request", "03 00 00 00 00 00 10 00 b8 00 00 00 00 00 00 00",
		dataHeader{size: 184}, 168},
	{"rxm read request", "03 02 00 00 00 01 28 00 28 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 | 00 60 00 00 00 00 00 00 | 00 00 00 80 00 00 00 00",
		dataHeader{op: opReadReq, rmaIOVCnt: 1, size: 40, rmaIOV: [4]rmaIOV{{0, 0x6000, 0x80000000}}}, 0},
	{"rxm read response", "03 03 00 00 00 01 10 00 10 60 00 00 00 00 00 00",
		dataHeader{op: opReadRsp, rmaIOVCnt: 1, size: 0x6010}, 0x6000},
	{"rxm read done, stale rma_iov_cnt", "03 00 00 00 00 01 10 00 50 00 00 00 00 00 00 00",
		dataHeader{rmaIOVCnt: 1, size: 80}, 64},
	{"net rdm tagged", "03 01 00 00 00 00 18 00 58 00 00 00 00 00 00 00 | d2 04 00 00 00 00 00 00",
		dataHeader{op: opTagged, size: 88, tag: 1234}, 64},
}

func TestDataCaptures(t *testing.T) {
	var c dataCodec
	for _, tc := range dataCases {
		t.Run(tc.name, func(t *testing.T) {
			wire := unhex(t, tc.wire)
			var h dataHeader
			n, err := c.parseDataHeader(append(wire[:len(wire):len(wire)], 0x30, 0x31), &h)
			require.NoError(t, err)
			require.Equal(t, len(wire), n)
			require.Equal(t, tc.want, h)
			require.Equal(t, tc.payload, h.payloadLen())
			require.Equal(t, n, h.headerLen())

			var out [maxDataHeaderSize]byte
			require.Equal(t, len(wire), c.putDataHeader(out[:], &tc.want))
			require.Equal(t, wire, out[:n], "byte-for-byte re-encoding")
			require.Equal(t, append([]byte("x"), wire...), c.appendDataHeader([]byte("x"), &tc.want))

			// A sender building the same message from scratch.
			send := tc.want
			send.size = 0
			send.setPayloadLen(tc.payload)
			require.Equal(t, tc.want.size, send.size)
		})
	}
}

func TestDataHeaderHelpers(t *testing.T) {
	byName := func(name string) dataHeader {
		for _, c := range dataCases {
			if c.name == name {
				return c.want
			}
		}
		t.Fatalf("no case %q", name)
		return dataHeader{}
	}
	require.Equal(t, byName("ack"), ackHeader())
	ack := ackHeader()
	require.True(t, ack.isAck())
	require.False(t, ack.needsAck())

	// The C target's responses, as captured.
	for req, rsp := range map[string]string{"read request": "read response", "rxm read request": "rxm read response"} {
		r := byName(req)
		require.Equal(t, byName(rsp), readRspHeader(&r), req)
	}

	fin := byName("pingpong fin delivery complete")
	require.True(t, fin.needsAck())
	require.False(t, fin.isAck())
	ping := byName("pingpong ping 64")
	require.False(t, ping.needsAck())
	require.False(t, ping.hasTag())
	w := byName("writemsg two iovs delivery complete")
	require.True(t, w.needsAck())
	require.Equal(t, uint64(8), w.rmaLen())
	require.Len(t, w.rmaIOVs(), 2)
	for _, name := range []string{"rxm raw tagged", "net rdm tagged", "rxm tagged with data"} {
		h := byName(name)
		require.True(t, h.hasTag(), name)
	}
	commit := dataHeader{op: opWrite, flags: flagCommitComplete}
	require.True(t, commit.needsAck())
	stale := byName("rxm read done, stale rma_iov_cnt")
	require.Empty(t, stale.rmaIOVs(), "a stale rma_iov_cnt names no iovs")
	require.Zero(t, stale.rmaLen())
}

// TestDataBigEndian checks the byte order a big-endian peer's probe selects
// (§2.3): flags, size and the u64 extensions swapped, single bytes not.
func TestDataBigEndian(t *testing.T) {
	be := dataCodec{bigEndian: true}
	cases := []struct {
		name string
		wire string
		want string // the little-endian capture of the same header
	}{
		{"writedata", "03 04 00 01 00 01 30 00 | 00 00 00 00 00 00 00 38 | 00 00 00 00 aa bb cc dd | 00 00 00 00 00 00 02 20 | 00 00 00 00 00 00 00 08 | 00 00 00 00 00 00 12 34",
			"writedata"},
		{"rxm tagged with data", "03 00 00 81 00 00 20 00 | 00 00 00 00 00 00 00 40 | 00 00 00 00 00 00 00 d2 | 00 00 00 00 00 00 00 07",
			"rxm tagged with data"},
		{"ack", "03 00 00 00 02 00 10 00 | 00 00 00 00 00 00 00 10", "ack"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want dataHeader
			for _, d := range dataCases {
				if d.name == c.want {
					want = d.want
				}
			}
			wire := unhex(t, c.wire)
			var h dataHeader
			n, err := be.parseDataHeader(wire, &h)
			require.NoError(t, err)
			require.Equal(t, len(wire), n)
			require.Equal(t, want, h)
			var out [maxDataHeaderSize]byte
			require.Equal(t, wire, out[:be.putDataHeader(out[:], &want)])
		})
	}
}

// TestDataRoundTrip encodes every op, flag combination, op_data and
// rma_iov_cnt, and checks that parseDataHeader accepts exactly the valid
// ones, decoding them to the header that was encoded.
func TestDataRoundTrip(t *testing.T) {
	// Flags each op may carry (§2.4, §2.5).
	allowed := map[dataOp]dataFlags{
		opMsg:     knownFlags,
		opTagged:  knownFlags,
		opReadReq: 0,
		opReadRsp: 0,
		opWrite:   flagCQData | flagDeliveryComplete | flagCommitComplete,
	}
	for _, order := range []dataCodec{{}, {bigEndian: true}} {
		for op := opMsg; op <= opWrite; op++ {
			for flags := dataFlags(0); flags <= knownFlags; flags++ {
				if flags&^knownFlags != 0 {
					continue
				}
				for _, opData := range []uint8{0, opDataAck} {
					for cnt := uint8(0); cnt <= rmaIOVLimit; cnt++ {
						h := dataHeader{op: op, flags: flags, opData: opData, rmaIOVCnt: cnt, rsvd: cnt * 3, cqData: 0x0102030405060708, tag: 0xf0e0d0c0b0a09080}
						if flags&flagCQData == 0 {
							h.cqData = 0
						}
						if !h.hasTag() {
							h.tag = 0
						}
						for i := range h.rmaIOVs() {
							h.rmaIOV[i] = rmaIOV{addr: uint64(i) << 40, len: uint64(i + 1), key: 0xabc + uint64(i)}
						}
						var payload uint64
						switch op {
						case opWrite:
							payload = h.rmaLen()
						case opReadReq:
						default:
							if opData == 0 {
								payload = 77
							}
						}
						h.setPayloadLen(payload)
						valid := flags&^allowed[op] == 0 && (opData == 0 || op == opMsg && flags == 0)
						var buf [maxDataHeaderSize + 8]byte
						n := order.putDataHeader(buf[:], &h)
						require.Equal(t, h.headerLen(), n)
						var got dataHeader
						m, err := order.parseDataHeader(buf[:n], &got)
						if !valid {
							require.ErrorIs(t, err, fi.EIO, "%+v", h)
							continue
						}
						require.NoError(t, err, "%+v", h)
						require.Equal(t, n, m)
						require.Equal(t, h, got)
						require.Equal(t, payload, got.payloadLen())
					}
				}
			}
		}
	}
}

func TestDataParseRejects(t *testing.T) {
	send := "03 00 00 00 00 00 10 00 50 00 00 00 00 00 00 00"
	write := "03 04 00 00 00 01 28 00 48 00 00 00 00 00 00 00 | 00 02 00 00 00 00 00 00 | 20 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00"
	read := "03 02 00 00 00 01 28 00 28 00 00 00 00 00 00 00 | 00 02 00 00 00 00 00 00 | 18 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00"
	set := func(s string, at int, v ...byte) []byte {
		b := unhex(t, s)
		copy(b[at:], v)
		return b
	}
	twoIOVs := func(len0, len1 uint64, size byte) []byte {
		h := dataHeader{op: opWrite, rmaIOVCnt: 2, rmaIOV: [4]rmaIOV{{len: len0}, {len: len1}}}
		var b [maxDataHeaderSize]byte
		n := (&dataCodec{}).putDataHeader(b[:], &h)
		b[8] = size
		return b[:n]
	}
	cases := []struct {
		name  string
		codec dataCodec
		wire  []byte
		err   fi.Errno
	}{
		{"version 2", dataCodec{}, set(send, 0, 2), fi.EIO},
		{"version 0", dataCodec{}, set(send, 0, 0), fi.EIO},
		{"op 5", dataCodec{}, set(send, 1, 5), fi.EIO},
		{"op 255", dataCodec{}, set(send, 1, 255), fi.EIO},
		{"transmit complete flag", dataCodec{}, set(send, 2, 0x02), fi.EIO},
		{"flag 0x10", dataCodec{}, set(send, 2, 0x10), fi.EIO},
		{"flag 0x100", dataCodec{}, set(send, 2, 0x00, 0x01), fi.EIO},
		{"flag 0x8000 big-endian", dataCodec{bigEndian: true}, set(send, 2, 0x80, 0x00), fi.EIO},
		{"tagged flag on a write", dataCodec{}, set(write, 2, 0x80), fi.EIO},
		{"cq data on a read request", dataCodec{}, set(read, 2, 0x01), fi.EIO},
		{"delivery complete on a read request", dataCodec{}, set(read, 2, 0x04), fi.EIO},
		{"commit complete on a read response", dataCodec{}, set(send, 1, byte(opReadRsp), 0x08), fi.EIO},
		{"op_data 1", dataCodec{}, set(send, 4, 1), fi.EIO},
		{"op_data 3", dataCodec{}, set(send, 4, 3), fi.EIO},
		{"ack on a tagged op", dataCodec{}, set("03 01 00 00 02 00 18 00 18 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00", 0), fi.EIO},
		{"ack with flags", dataCodec{}, set("03 00 04 00 02 00 10 00 10 00 00 00 00 00 00 00", 0), fi.EIO},
		{"ack with payload", dataCodec{}, set(send, 4, 2), fi.EIO},
		{"ack with cq data", dataCodec{}, set("03 00 01 00 02 00 18 00 18 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00", 0), fi.EIO},
		{"rma_iov_cnt 5 on a write", dataCodec{}, set(write, 5, 5, 16+5*24), fi.EIO},
		{"rma_iov_cnt 255 on a read request", dataCodec{}, set(read, 5, 255), fi.EIO},
		{"rma_iov_cnt disagrees with hdr_size", dataCodec{}, set(write, 5, 2), fi.EIO},
		{"hdr_size too small", dataCodec{}, set(send, 6, 15), fi.EIO},
		{"hdr_size 24 without extension", dataCodec{}, set(send, 6, 24), fi.EIO},
		{"hdr_size 121", dataCodec{}, set(send, 6, 121), fi.EIO},
		{"hdr_size 0", dataCodec{}, set(send, 6, 0), fi.EIO},
		{"cq data flag without room", dataCodec{}, set(send, 2, 0x01), fi.EIO},
		{"tagged op with hdr_size 16", dataCodec{}, set(send, 1, byte(opTagged)), fi.EIO},
		{"size below hdr_size", dataCodec{}, set(send, 8, 15), fi.EIO},
		{"size 0", dataCodec{}, set(send, 8, 0), fi.EIO},
		{"write size below hdr_size", dataCodec{}, set(write, 8, 39), fi.EIO},
		{"read request with payload", dataCodec{}, set(read, 8, 41), fi.EIO},
		{"write payload beyond its iovs", dataCodec{}, set(write, 8, 73), fi.EIO},
		{"write iov lengths overflow", dataCodec{}, twoIOVs(math.MaxUint64, 1, 64), fi.EIO},
		{"payload above the limit", dataCodec{maxPayload: 63}, unhex(t, send), fi.EMSGSIZE},
		{"payload above MaxInt by default", dataCodec{}, set(send, 8, 0x10, 0, 0, 0, 0, 0, 0, 0x80), fi.EMSGSIZE},
		{"size 2^64-1", dataCodec{}, set(send, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), fi.EMSGSIZE},
		{"read asks beyond the limit", dataCodec{maxPayload: 0x17}, unhex(t, read), fi.EMSGSIZE},
		{"write above the limit", dataCodec{maxPayload: 31}, unhex(t, write), fi.EMSGSIZE},
		{"big-endian reading of a little-endian header", dataCodec{bigEndian: true, maxPayload: 1 << 30}, unhex(t, send), fi.EMSGSIZE},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h dataHeader
			_, err := c.codec.parseDataHeader(c.wire, &h)
			require.Equal(t, c.err, err, "a bare errno: got %v", err)
		})
	}
	// The limits themselves pass.
	ok := []struct {
		name  string
		codec dataCodec
		wire  []byte
	}{
		{"payload at the limit", dataCodec{maxPayload: 64}, unhex(t, send)},
		{"payload at MaxInt by default", dataCodec{}, set(send, 8, 0x0f, 0, 0, 0, 0, 0, 0, 0x80)},
		{"read at the limit", dataCodec{maxPayload: 0x18}, unhex(t, read)},
		{"write short of its iovs", dataCodec{}, set(write, 8, 71)},
		{"write iov lengths at MaxUint64", dataCodec{}, twoIOVs(math.MaxUint64-1, 1, 64)},
		{"reserved byte and stale count ignored", dataCodec{}, set(send, 5, 4, 16, 0xaa)},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			var h dataHeader
			n, err := c.codec.parseDataHeader(c.wire, &h)
			require.NoError(t, err)
			require.Equal(t, len(c.wire), n)
		})
	}
}

func TestDataParseShort(t *testing.T) {
	var c dataCodec
	var h dataHeader
	wire := unhex(t, dataCases[6].wire) // writedata, 48-byte header
	for i := range dataBaseHeaderSize {
		n, err := c.parseDataHeader(wire[:i], &h)
		require.Equal(t, fi.EAGAIN, err, "%d bytes", i)
		require.Equal(t, dataBaseHeaderSize, n, "%d bytes", i)
	}
	for i := dataBaseHeaderSize; i < len(wire); i++ {
		n, err := c.parseDataHeader(wire[:i], &h)
		require.Equal(t, fi.EAGAIN, err, "%d bytes", i)
		require.Equal(t, len(wire), n, "%d bytes", i)
	}
	// A bad base header fails before the extension is in.
	bad := bytes.Clone(wire[:dataBaseHeaderSize])
	bad[1] = 9
	_, err := c.parseDataHeader(bad, &h)
	require.Equal(t, fi.EIO, err)
}

func TestDataHeaderAllocs(t *testing.T) {
	c := dataCodec{maxPayload: 1 << 20}
	hdrs := make([][]byte, len(dataCases))
	for i, d := range dataCases {
		hdrs[i] = unhex(t, d.wire)
	}
	bad := unhex(t, dataCases[0].wire)
	bad[1] = 7
	var h dataHeader
	var buf [maxDataHeaderSize]byte
	staging := make([]byte, 0, len(dataCases)*maxDataHeaderSize)
	cases := map[string]func(){
		"parse": func() {
			for _, b := range hdrs {
				if _, err := c.parseDataHeader(b, &h); err != nil {
					panic(err)
				}
			}
		},
		"parse error": func() {
			if _, err := c.parseDataHeader(bad, &h); err != fi.EIO {
				panic(err)
			}
		},
		"parse short": func() {
			if _, err := c.parseDataHeader(bad[:3], &h); err != fi.EAGAIN {
				panic(err)
			}
		},
		"put": func() {
			for i := range dataCases {
				c.putDataHeader(buf[:], &dataCases[i].want)
			}
		},
		"append": func() {
			staging = staging[:0]
			for i := range dataCases {
				staging = c.appendDataHeader(staging, &dataCases[i].want)
			}
		},
	}
	for name, f := range cases {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}

func TestCMDataMatchesStream(t *testing.T) {
	// A connection's first bytes: the accept, then at once a data message
	// (the C acceptor may coalesce them into one segment, §2.2).
	stream := append(unhex(t, cmCases[3].wire), unhex(t, dataCases[0].wire)...)
	stream = append(stream, make([]byte, 64)...)
	var buf [cmMaxMsgSize]byte
	r := bytes.NewReader(stream)
	h, err := readCM(r, &buf)
	require.NoError(t, err)
	require.Equal(t, cmConnResp, h.typ)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	c := dataCodec{bigEndian: h.bigEndian}
	var d dataHeader
	n, err := c.parseDataHeader(rest, &d)
	require.NoError(t, err)
	require.Equal(t, uint64(len(rest)-n), d.payloadLen())
}
