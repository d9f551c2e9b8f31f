//go:build linux

package tcp_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// Atomic packets from a raw rxm peer (docs/wire-tcp.md, §3.11) against an
// RDM endpoint with FI_ATOMIC. A well-formed request is answered, with -13
// when a registration refuses it and -95 for a pair the endpoint does not
// offer, and the connection stays; a malformed request or an unsolicited
// response costs the peer its connection. Either way no byte of the
// regions (nor of the memory around them) changes unless the request was
// granted.

// hrAtomicReq is an atomic request (type 4): op, datatype, operation, one
// segment {addr, count, key} per iocs entry, then the operand and compare
// bytes as given.
func hrAtomicReq(connID, msgID uint64, op byte, dt ep.Datatype, aop ep.AtomicOp, iocs [][3]uint64, rest ...[]byte) []byte {
	body := make([]byte, 96)
	for i, s := range iocs {
		binary.LittleEndian.PutUint64(body[i*24:], s[0])
		binary.LittleEndian.PutUint64(body[i*24+8:], s[1])
		binary.LittleEndian.PutUint64(body[i*24+16:], s[2])
	}
	body = append(body, bytes.Join(rest, nil)...)
	tag := uint64(dt) | uint64(aop)<<8 | uint64(len(iocs))<<16
	return hrMsg(hrPkt{ver: 4, typ: 4, connID: connID, msgID: msgID, op: op, size: uint64(len(body)), tag: tag}.bytes(), body)
}

// hrAtomicResp is what the endpoint must answer to a request of op, dt and
// aop with msgID: the tcp message with the response (type 5, conn_id 0,
// our index in its records) carrying status and the result.
func hrAtomicResp(msgID uint64, op byte, dt ep.Datatype, aop ep.AtomicOp, status int32, result []byte) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(status))
	body = binary.BigEndian.AppendUint32(body, uint32(len(result)))
	body = append(body, result...)
	return hrMsg(hrPkt{ver: 4, typ: 5, msgID: msgID, op: op, size: uint64(len(body)),
		tag: uint64(dt) | uint64(aop)<<8}.bytes(), body)
}

// hrAtomicVictim is an RDM endpoint with FI_ATOMIC and two regions: rw (key
// 0x2002, remote read and write) and ro (key 0x2001, remote read only),
// each the middle 64 bytes of a 128-byte array; rw starts with the uint64
// 41.
type hrAtomicVictim struct {
	*hrRDM
	ro, rw []byte
}

const hrROKey, hrRWKey = 0x2001, 0x2002

func openHostileAtomic(t *testing.T) *hrAtomicVictim {
	t.Helper()
	v := &hrAtomicVictim{hrRDM: openHostileRDMWith(t, fi.CapAtomic),
		ro: bytes.Repeat([]byte{'r'}, 128), rw: bytes.Repeat([]byte{'w'}, 128)}
	require.NotZero(t, v.e.Info().Caps&fi.CapAtomic)
	require.Zero(t, v.dom.Info().DomainAttr.MRMode&fi.MRModeVirtAddr, "remote addresses are offsets here")
	binary.LittleEndian.PutUint64(v.rw[32:], 41)
	v.register(t, v.ro[32:96], fi.AccessRemoteRead, hrROKey)
	v.register(t, v.rw[32:96], fi.AccessRemoteRead|fi.AccessRemoteWrite, hrRWKey)
	return v
}

// TestHostileRDMAtomicAnswered: well-formed requests are answered and the
// connection stays: granted ones are applied (a fetch-add returns the old
// value), refused ones (an unknown key, a range past the region or
// overflowing it, a read-only region written, a segment refused after a
// good one) answer -13 and change nothing, pairs the endpoint does not
// offer (a compare operation in a base request, FI_ATOMIC_READ in a base
// request, FI_BOR on float, double complex, FI_INT128) answer -95 and
// change nothing, and so do misaligned segments, with -22. A request with no segment is answered 0, as C answers it.
func TestHostileRDMAtomicAnswered(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	v := openHostileAtomic(t)
	defer v.close()
	r := hrConnect(t, v.hrRDM)
	defer r.c.Close()
	one := binary.LittleEndian.AppendUint64(nil, 1)
	ro, rw := append([]byte(nil), v.ro...), append([]byte(nil), v.rw...)

	// Granted: fetch-add of 1 on rw[0].
	r.send(t, hrAtomicReq(r.connID, 7, 7, ep.Uint64, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}}, one))
	want := hrAtomicResp(7, 7, ep.Uint64, ep.OpSum, 0, binary.LittleEndian.AppendUint64(nil, 41))
	require.Equal(t, want, r.recv(t, v.hrRDM, len(want)))
	binary.LittleEndian.PutUint64(rw[32:], 42)
	require.Equal(t, rw, v.rw)

	for i, c := range []struct {
		name   string
		op     byte
		dt     ep.Datatype
		aop    ep.AtomicOp
		iocs   [][3]uint64
		rest   [][]byte
		status int32
	}{
		{"unknown key", 7, ep.Uint64, ep.OpSum, [][3]uint64{{0, 1, 0xdead}}, [][]byte{one}, -13},
		{"past the end", 6, ep.Uint64, ep.OpSum, [][3]uint64{{60, 1, hrRWKey}}, [][]byte{one}, -13},
		{"address overflow", 6, ep.Uint8, ep.OpSum, [][3]uint64{{^uint64(0), 2, hrRWKey}}, [][]byte{{1, 1}}, -13},
		{"read-only written", 6, ep.Uint64, ep.OpAtomicWrite, [][3]uint64{{0, 1, hrROKey}}, [][]byte{one}, -13},
		{"read-only fetch-add", 7, ep.Uint64, ep.OpSum, [][3]uint64{{0, 1, hrROKey}}, [][]byte{one}, -13},
		{"second segment refused", 6, ep.Uint64, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}, {0, 1, 0xdead}}, [][]byte{one, one}, -13},
		{"compare op in a base request", 6, ep.Uint64, ep.OpCSwap, [][3]uint64{{0, 1, hrRWKey}}, [][]byte{one}, -95},
		{"read in a base request", 6, ep.Uint64, ep.OpAtomicRead, [][3]uint64{{0, 1, hrRWKey}}, nil, -95},
		{"sum in a compare request", 8, ep.Uint64, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}}, [][]byte{one, one}, -95},
		{"bor on float", 6, ep.Float, ep.OpBOr, [][3]uint64{{0, 1, hrRWKey}}, [][]byte{{1, 0, 0, 0}}, -95},
		{"double complex", 7, ep.DoubleComplex, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}}, [][]byte{make([]byte, 16)}, -95},
		{"int128", 7, ep.Int128, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}}, [][]byte{make([]byte, 16)}, -95},
		{"misaligned uint64", 7, ep.Uint64, ep.OpSum, [][3]uint64{{1, 1, hrRWKey}}, [][]byte{one}, -22},
		{"misaligned second segment", 6, ep.Int32, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}, {6, 1, hrRWKey}},
			[][]byte{{1, 0, 0, 0}, {1, 0, 0, 0}}, -22},
		{"no segment", 6, ep.Uint64, ep.OpSum, nil, nil, 0},
	} {
		msgID := uint64(100 + i)
		r.send(t, hrAtomicReq(r.connID, msgID, c.op, c.dt, c.aop, c.iocs, c.rest...))
		want := hrAtomicResp(msgID, c.op, c.dt, c.aop, c.status, nil)
		require.Equal(t, want, r.recv(t, v.hrRDM, len(want)), c.name)
		require.Equal(t, ro, v.ro, c.name)
		require.Equal(t, rw, v.rw, c.name)
	}
	hrRequireOpen(t, r.c)
	hrNoComp(t, v.cq)
}

// TestHostileRDMAtomicDropped: malformed atomic packets (§3.11.8) cost the
// peer its connection, are never answered and change nothing: bad ops,
// flags, datatypes and operations, more than four segments, bodies longer
// or shorter than the counts say, counts whose bytes overflow or pass the
// limit, and responses to requests the endpoint never sent.
func TestHostileRDMAtomicDropped(t *testing.T) {
	cleanEnv(t)
	one := binary.LittleEndian.AppendUint64(nil, 1)
	seg := [][3]uint64{{0, 1, hrRWKey}}
	big := make([]byte, 16384)
	cases := []hrCase{
		{"op 5", func(id uint64) []byte { return hrAtomicReq(id, 1, 5, ep.Uint64, ep.OpSum, seg, one) }},
		{"op 9", func(id uint64) []byte { return hrAtomicReq(id, 1, 9, ep.Uint64, ep.OpSum, seg, one) }},
		{"datatype 16", func(id uint64) []byte { return hrAtomicReq(id, 1, 6, 16, ep.OpSum, seg, one) }},
		{"operation 19", func(id uint64) []byte { return hrAtomicReq(id, 1, 6, ep.Uint64, 19, seg, one) }},
		{"5 segments", func(id uint64) []byte {
			b := hrAtomicReq(id, 1, 6, ep.Uint64, ep.OpSum, [][3]uint64{{0, 1, hrRWKey}, {8, 1, hrRWKey}}, one, one)
			b[16+58] = 5
			return b
		}},
		{"flags", func(id uint64) []byte {
			b := hrAtomicReq(id, 1, 6, ep.Uint64, ep.OpSum, seg, one)
			b[16+38] = 2 // FI_REMOTE_CQ_DATA's bit
			return b
		}},
		{"operand short", func(id uint64) []byte { return hrAtomicReq(id, 1, 6, ep.Uint64, ep.OpSum, seg, one[:7]) }},
		{"operand long", func(id uint64) []byte { return hrAtomicReq(id, 1, 6, ep.Uint64, ep.OpSum, seg, one, one) }},
		{"compare missing", func(id uint64) []byte { return hrAtomicReq(id, 1, 8, ep.Uint64, ep.OpCSwap, seg, one) }},
		{"read with operand", func(id uint64) []byte { return hrAtomicReq(id, 1, 7, ep.Uint64, ep.OpAtomicRead, seg, one) }},
		{"count overflows", func(id uint64) []byte {
			return hrAtomicReq(id, 1, 7, ep.Uint64, ep.OpAtomicRead, [][3]uint64{{0, 1 << 61, hrRWKey}})
		}},
		{"read result over the limit", func(id uint64) []byte {
			return hrAtomicReq(id, 1, 7, ep.Uint64, ep.OpAtomicRead, [][3]uint64{{0, 2037, hrRWKey}})
		}},
		{"body over the eager limit", func(id uint64) []byte {
			return hrAtomicReq(id, 1, 6, ep.Uint8, ep.OpSum, [][3]uint64{{0, 16384, hrRWKey}}, big)
		}},
		{"size lies", func(id uint64) []byte {
			b := hrAtomicReq(id, 1, 6, ep.Uint64, ep.OpSum, seg, one)
			b[16+40]++
			return b
		}},
		{"unsolicited response", func(id uint64) []byte {
			b := hrAtomicResp(1, 7, ep.Uint64, ep.OpSum, 0, one)
			binary.LittleEndian.PutUint64(b[16+8:], id)
			return b
		}},
		{"unsolicited error response", func(id uint64) []byte {
			b := hrAtomicResp(1, 6, ep.Uint64, ep.OpSum, -13, nil)
			binary.LittleEndian.PutUint64(b[16+8:], id)
			return b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			v := openHostileAtomic(t)
			defer v.close()
			ro, rw := append([]byte(nil), v.ro...), append([]byte(nil), v.rw...)
			s := hrPostSurvivor(t, v.hrRDM)
			r := hrConnect(t, v.hrRDM)
			defer r.c.Close()
			r.send(t, tc.wire(r.connID))
			require.Empty(t, hrRequireDropped(t, v.hrRDM, r.c), "the endpoint answered a malformed atomic packet")
			hrNoComp(t, v.cq)
			hrRequireServes(t, v.hrRDM, s)
			require.Equal(t, ro, v.ro, "read-only memory changed")
			require.Equal(t, rw, v.rw, "memory changed by a malformed request")
		})
	}
}
