package rxmwire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// The fetch-add example of docs/wire-tcp.md, §3.11.6: the rxm header and
// body of the request and of the response, as the document lays them out.
const (
	atomicReqHdr = "04 04 00 00 00 00 00 00 | 01 00 00 00 00 00 00 00 | 03 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 |" +
		"02 00 07 00 00 00 00 00 | 68 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 | 07 02 01 00 00 00 00 00"
	atomicReqBody = "00 10 00 00 00 00 00 00 | 01 00 00 00 00 00 00 00 | 34 12 00 00 00 00 00 00 |" +
		"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 |" +
		"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 |" +
		"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 |" +
		"01 00 00 00 00 00 00 00"
	atomicRespHdr = "04 05 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 | 03 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 |" +
		"02 00 07 00 00 00 00 00 | 10 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 | 07 02 00 00 00 00 00 00"
	atomicRespBody = "00 00 00 00 | 00 00 00 08 | 29 00 00 00 00 00 00 00"
	// atomicLimit is the operand limit of the default eager size (§3.11.7).
	atomicLimit = EagerLimit - AtomicReqFixed
)

// TestRxmAtomicExample: the request and response of §3.11.6 parse to the
// fetch-add they describe, and encoding that fetch-add gives their bytes.
func TestRxmAtomicExample(t *testing.T) {
	hb, body := unhex(t, atomicReqHdr), unhex(t, atomicReqBody)
	var h Header
	require.NoError(t, ParseHeader(hb, uint64(len(body)), &h))
	require.Equal(t, TypeAtomic, h.Type)
	var r AtomicReq
	require.NoError(t, ParseAtomicReq(&h, body, atomicLimit, &r))
	require.Equal(t, OpFetchAtomic, r.Op)
	require.Equal(t, ep.Uint64, r.Datatype)
	require.Equal(t, ep.OpSum, r.AtomicOp)
	require.Equal(t, []AtomicIOC{{Addr: 0x1000, Count: 1, Key: 0x1234}}, r.IOCs())
	require.Equal(t, 1, r.Elems)
	require.Equal(t, 8, r.Bytes)
	require.Equal(t, unhex(t, "01 00 00 00 00 00 00 00"), r.Operand)
	require.Nil(t, r.Compare)

	var out [HeaderSize + AtomicReqFixed + 8]byte
	PutHeader(out[:], &Header{Type: TypeAtomic, ConnID: 1, MsgID: 3, Op: OpFetchAtomic, Size: 104,
		Tag: AtomicTag(ep.Uint64, ep.OpSum, 1)})
	k := HeaderSize + PutAtomicIOCs(out[HeaderSize:], r.IOCs())
	binary.LittleEndian.PutUint64(out[k:], 1)
	require.Equal(t, append(hb, body...), out[:])

	hb, body = unhex(t, atomicRespHdr), unhex(t, atomicRespBody)
	require.NoError(t, ParseHeader(hb, uint64(len(body)), &h))
	status, result, err := ParseAtomicResp(&h, body)
	require.NoError(t, err)
	require.Zero(t, status)
	require.Equal(t, unhex(t, "29 00 00 00 00 00 00 00"), result)
	dt, op, n := h.AtomicFields()
	require.Equal(t, ep.Uint64, dt)
	require.Equal(t, ep.OpSum, op)
	require.Zero(t, n)

	var rout [HeaderSize + AtomicRespFixed + 8]byte
	PutHeader(rout[:], &Header{Type: TypeAtomicResp, MsgID: 3, Op: OpFetchAtomic, Size: 16, Tag: AtomicTag(ep.Uint64, ep.OpSum, 0)})
	PutAtomicResp(rout[HeaderSize:], 0, 8)
	binary.LittleEndian.PutUint64(rout[HeaderSize+AtomicRespFixed:], 41)
	require.Equal(t, append(hb, body...), rout[:])

	// The refusal variant: -13 and no result, 8 bytes of body.
	PutAtomicResp(rout[HeaderSize:], -int32(fi.EACCES), 0)
	require.Equal(t, unhex(t, "ff ff ff f3 00 00 00 00"), rout[HeaderSize:HeaderSize+8])
}

// atomicReq builds a request's header and body: kind op, datatype dt,
// operation aop, the segments' counts (at 0x1000 * i, key i), and operand
// and compare bytes as the kind and operation imply.
func atomicReq(op Op, dt ep.Datatype, aop ep.AtomicOp, size int, counts ...uint64) (*Header, []byte) {
	iocs := make([]AtomicIOC, len(counts))
	n := 0
	for i, c := range counts {
		iocs[i] = AtomicIOC{Addr: 0x1000 * uint64(i), Count: c, Key: uint64(i)}
		n += int(c) * size
	}
	body := make([]byte, AtomicReqFixed, AtomicReqFixed+2*n)
	PutAtomicIOCs(body, iocs)
	if aop != ep.OpAtomicRead {
		body = append(body, bytes.Repeat([]byte{0xa5}, n)...)
	}
	if op == OpCompareAtomic {
		body = append(body, bytes.Repeat([]byte{0x5a}, n)...)
	}
	return &Header{Type: TypeAtomic, Op: op, Size: uint64(len(body)), Tag: AtomicTag(dt, aop, len(counts))}, body
}

// TestRxmAtomicReqRejects: each structural fault of §3.11.8 is bare
// fi.EIO; the pairs that are answered rather than dropped (a kind and
// operation that disagree, a datatype nobody offers) parse.
func TestRxmAtomicReqRejects(t *testing.T) {
	var r AtomicReq
	ok := func(h *Header, body []byte) { t.Helper(); require.NoError(t, ParseAtomicReq(h, body, atomicLimit, &r)) }
	bad := func(name string, h *Header, body []byte) {
		t.Helper()
		require.Equal(t, fi.EIO, ParseAtomicReq(h, body, atomicLimit, &r), name)
	}
	h, b := atomicReq(OpCompareAtomic, ep.Int32, ep.OpCSwap, 4, 2, 3)
	ok(h, b)
	require.Equal(t, 5, r.Elems)
	require.Len(t, r.Operand, 20)
	require.Len(t, r.Compare, 20)
	require.Equal(t, byte(0x5a), r.Compare[0])
	h, b = atomicReq(OpFetchAtomic, ep.Uint16, ep.OpAtomicRead, 2, 100)
	ok(h, b)
	require.Nil(t, r.Operand)
	require.Equal(t, 200, r.Bytes)
	h, b = atomicReq(OpAtomic, ep.Int8, ep.OpSum, 1)
	ok(h, b) // no segment: C applies nothing and answers 0
	h, b = atomicReq(OpAtomic, ep.Int8, ep.OpCSwap, 1, 1)
	ok(h, b) // op 6 with a compare operation: answered -95
	h, b = atomicReq(OpAtomic, ep.Uint128, ep.OpSum, 16, 1)
	ok(h, b) // a datatype rxm refuses: answered -95

	h, b = atomicReq(OpAtomic, ep.Int8, ep.OpSum, 1, 1)
	for name, mut := range map[string]func(h *Header) []byte{
		"op 5":          func(h *Header) []byte { h.Op = 5; return b },
		"op 9":          func(h *Header) []byte { h.Op = 9; return b },
		"flags":         func(h *Header) []byte { h.Flags = FlagCQData; return b },
		"datatype 16":   func(h *Header) []byte { h.Tag = AtomicTag(16, ep.OpSum, 1); return b },
		"operation 19":  func(h *Header) []byte { h.Tag = AtomicTag(ep.Int8, 19, 1); return b },
		"5 segments":    func(h *Header) []byte { h.Tag = AtomicTag(ep.Int8, ep.OpSum, 5); return b },
		"tag high byte": func(h *Header) []byte { h.Tag |= 1 << 24; return b },
		"size":          func(h *Header) []byte { h.Size++; return b },
		"short body":    func(h *Header) []byte { h.Size--; return b[:len(b)-1] },
		"long body":     func(h *Header) []byte { h.Size++; return append(bytes.Clone(b), 0) },
		"no segments":   func(h *Header) []byte { h.Size = 50; return b[:50] },
	} {
		hh := *h
		bad(name, &hh, mut(&hh))
	}
	h, b = atomicReq(OpAtomic, ep.Uint64, ep.OpSum, 8, atomicLimit/8+1)
	bad("over the limit", h, b)
	h, b = atomicReq(OpCompareAtomic, ep.Uint64, ep.OpCSwap, 8, atomicLimit/16+1)
	bad("compare over the limit", h, b)
	h, b = atomicReq(OpCompareAtomic, ep.Uint64, ep.OpCSwap, 8, atomicLimit/16)
	ok(h, b)
	h, b = atomicReq(OpFetchAtomic, ep.Uint64, ep.OpAtomicRead, 8, atomicLimit/8+1)
	bad("read result over the limit", h, b)
	h, b = atomicReq(OpAtomic, ep.Uint64, ep.OpSum, 8, 1)
	binary.LittleEndian.PutUint64(b[8:], 1<<62)
	bad("count overflows bytes", h, b)
	h, b = atomicReq(OpAtomic, ep.Uint64, ep.OpSum, 8, 1, 1)
	binary.LittleEndian.PutUint64(b[8:], ^uint64(0))
	bad("counts overflow", h, b)
}

// TestRxmAtomicRespRejects: a response must say its body's length twice
// and carry no positive status.
func TestRxmAtomicRespRejects(t *testing.T) {
	body := unhex(t, atomicRespBody)
	h := &Header{Type: TypeAtomicResp, Op: OpFetchAtomic, Size: uint64(len(body))}
	_, _, err := ParseAtomicResp(h, body)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		op   Op
		size uint64
		body []byte
	}{
		"op":           {5, 16, body},
		"size":         {7, 15, body},
		"short":        {7, 4, body[:4]},
		"result_len":   {7, 12, body[:12]},
		"positive":     {7, 8, unhex(t, "00 00 00 01 00 00 00 00")},
		"result large": {7, 8, unhex(t, "00 00 00 00 ff ff ff ff")},
	} {
		_, _, err := ParseAtomicResp(&Header{Type: TypeAtomicResp, Op: c.op, Size: c.size}, c.body)
		require.Equal(t, fi.EIO, err, name)
	}
	status, result, err := ParseAtomicResp(&Header{Op: OpAtomic, Size: 8}, unhex(t, "ff ff ff a1 00 00 00 00"))
	require.NoError(t, err)
	require.Equal(t, -int32(fi.EOPNOTSUPP), status)
	require.Empty(t, result)
}

// TestRxmAtomicAllocs: the atomic codec allocates nothing.
func TestRxmAtomicAllocs(t *testing.T) {
	h, b := atomicReq(OpCompareAtomic, ep.Int64, ep.OpCSwap, 8, 2, 1)
	rb := unhex(t, atomicRespBody)
	rh := &Header{Type: TypeAtomicResp, Op: OpFetchAtomic, Size: uint64(len(rb))}
	var r AtomicReq
	out := make([]byte, AtomicReqFixed)
	n := testing.AllocsPerRun(100, func() {
		if ParseAtomicReq(h, b, atomicLimit, &r) != nil {
			panic("request")
		}
		if _, _, err := ParseAtomicResp(rh, rb); err != nil {
			panic(err)
		}
		PutAtomicIOCs(out, r.IOCs())
		PutAtomicResp(out, -13, 0)
	})
	require.Zero(t, n)
}

// FuzzRxmAtomic checks ParseAtomicReq and ParseAtomicResp on hostile
// bodies behind a fuzzed header: they never panic and fail only with
// bare fi.EIO; an accepted request's operand, compare and counts agree
// with its size, and its segments re-encode to its first 96 bytes with
// the unused ones zeroed; an accepted response's result is its body after
// 8 bytes. Seeds: the §3.11.6 example and built requests.
func FuzzRxmAtomic(f *testing.F) {
	f.Add(uint8(OpFetchAtomic), uint64(0x010207), unhex(f, atomicReqBody))
	for _, c := range []struct {
		op    Op
		dt    ep.Datatype
		aop   ep.AtomicOp
		size  int
		count []uint64
	}{
		{OpCompareAtomic, ep.Int32, ep.OpCSwap, 4, []uint64{2, 3}},
		{OpFetchAtomic, ep.Uint8, ep.OpAtomicRead, 1, []uint64{7}},
		{OpAtomic, ep.Double, ep.OpSum, 8, []uint64{1, 1, 1, 1}},
	} {
		h, b := atomicReq(c.op, c.dt, c.aop, c.size, c.count...)
		f.Add(uint8(h.Op), h.Tag, b)
	}
	f.Fuzz(func(t *testing.T, op uint8, tag uint64, body []byte) {
		h := &Header{Type: TypeAtomic, Op: Op(op), Size: uint64(len(body)), Tag: tag}
		var r AtomicReq
		if err := ParseAtomicReq(h, body, atomicLimit, &r); err != nil {
			require.Equal(t, fi.EIO, err)
		} else {
			want := AtomicReqFixed + len(r.Operand) + len(r.Compare)
			require.Equal(t, len(body), want)
			if r.Operand != nil {
				require.Equal(t, r.Bytes, len(r.Operand))
			}
			if r.Compare != nil {
				require.Equal(t, r.Bytes, len(r.Compare))
			}
			var out [AtomicReqFixed]byte
			PutAtomicIOCs(out[:], r.IOCs())
			wantIOC := make([]byte, AtomicReqFixed)
			copy(wantIOC, body[:r.NIOC*AtomicIOCSize])
			require.Equal(t, wantIOC, out[:])
		}
		h.Type = TypeAtomicResp
		status, result, err := ParseAtomicResp(h, body)
		if err != nil {
			require.Equal(t, fi.EIO, err)
			return
		}
		require.LessOrEqual(t, status, int32(0))
		require.Equal(t, body[AtomicRespFixed:], result)
	})
}
