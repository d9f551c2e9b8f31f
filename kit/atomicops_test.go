package kit_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// atomicRecorder is an AtomicPoster that keeps the last operation and
// returns err.
type atomicRecorder struct {
	op  kit.AtomicOp
	n   int
	err error
}

func (r *atomicRecorder) PostAtomic(op kit.AtomicOp) error { r.op, r.n = op, r.n+1; return r.err }

const (
	atomTxDef  = fi.FlagCompletion | fi.FlagDeliveryComplete
	atomInjF   = fi.FlagDeliveryComplete | fi.FlagInject
	atomMax    = 256 // MaxSize: 64 FI_INT32 per base or fetch call, 32 per compare call
	atomInject = 64
)

// newAtomicAdapter returns an endpoint's atomic adapter over a recorder,
// and the Atomics and Ops behind it.
func newAtomicAdapter() (kit.AtomicOps, *atomicRecorder, *kit.Atomics) {
	r := &atomicRecorder{}
	info := &fi.Info{TxAttr: &fi.TxAttr{OpFlags: atomTxDef, InjectSize: atomInject}}
	ops := kit.NewOps(nil, "test", info)
	at := kit.NewAtomics(ops, r, info, atomMax)
	return kit.AtomicOps{Atomics: at}, r, at
}

// The operation families of fi_atomic(3), restated for the tests.
var (
	atomBaseOps = []ep.AtomicOp{ep.OpMin, ep.OpMax, ep.OpSum, ep.OpProd, ep.OpLOr, ep.OpLAnd, ep.OpBOr,
		ep.OpBAnd, ep.OpLXor, ep.OpBXor, ep.OpAtomicWrite}
	atomFetchOps   = append(slices.Clone(atomBaseOps), ep.OpAtomicRead)
	atomCompareOps = []ep.AtomicOp{ep.OpCSwap, ep.OpCSwapNE, ep.OpCSwapLE, ep.OpCSwapLT, ep.OpCSwapGE,
		ep.OpCSwapGT, ep.OpMSwap}
)

// TestAtomicOpsMapping checks what every wide call hands the provider:
// the kind, the buffers in the right fields, the count, the remote and
// message fields, and the flags each call form gets.
func TestAtomicOpsMapping(t *testing.T) {
	a, r, _ := newAtomicAdapter()
	buf, cmp, res := make([]byte, 8), make([]byte, 8), make([]byte, 8) // 2 FI_INT32
	iov := []ep.IOC{{Buf: buf[:4], Count: 1}, {Buf: buf[4:], Count: 1}}
	cmpv := []ep.IOC{{Buf: cmp, Count: 2}}
	resv := []ep.IOC{{Buf: res[:0], Count: 0}, {Buf: res, Count: 2}}
	descs, cdescs, rdescs := []any{"d0", "d1"}, []any{"c0"}, []any{"r0", "r1"}
	const dest, raddr, key, data = fi.Addr(7), 0x1000, 42, 0xdada
	rmaIOV := []ep.RMAIOC{{Addr: raddr, Count: 1, Key: key}, {Addr: 2 * raddr, Count: 1, Key: key + 1}}
	msgF := fi.FlagInject | fi.FlagRemoteCQData | fi.FlagFence
	msg := func(op ep.AtomicOp) *ep.AtomicMessage {
		return &ep.AtomicMessage{IOV: iov, Desc: descs, Addr: dest, RMAIOV: rmaIOV, Datatype: ep.Int32, Op: op,
			Context: "c", Data: data}
	}
	i32 := ep.Int32

	for i, c := range []struct {
		name string
		call func() error
		want kit.AtomicOp
	}{
		{"Atomic", func() error { return a.Atomic(buf, 2, "d", dest, raddr, key, i32, ep.OpSum, "c") },
			kit.AtomicOp{Kind: kit.AtomicBase, Op: ep.OpSum, Datatype: i32, Count: 2, Buf: buf, Desc: "d",
				Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"AtomicV", func() error { return a.AtomicV(iov, descs, dest, raddr, key, i32, ep.OpBXor, "c") },
			kit.AtomicOp{Kind: kit.AtomicBase, Op: ep.OpBXor, Datatype: i32, Count: 2, IOV: iov, Descs: descs,
				Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"AtomicMsg", func() error { return a.AtomicMsg(msg(ep.OpAtomicWrite), msgF) },
			kit.AtomicOp{Kind: kit.AtomicBase, Op: ep.OpAtomicWrite, Datatype: i32, Count: 2, IOV: iov, Descs: descs,
				Addr: dest, RAddr: raddr, Key: key, RMAIOV: rmaIOV, Context: "c", Data: data, Flags: msgF}},
		{"InjectAtomic", func() error { return a.InjectAtomic(buf, 2, dest, raddr, key, i32, ep.OpBOr) },
			kit.AtomicOp{Kind: kit.AtomicBase, Inject: true, Op: ep.OpBOr, Datatype: i32, Count: 2, Buf: buf,
				Addr: dest, RAddr: raddr, Key: key, Flags: atomInjF}},
		{"FetchAtomic", func() error {
			return a.FetchAtomic(buf, 2, "d", res, "rd", dest, raddr, key, i32, ep.OpMax, "c")
		}, kit.AtomicOp{Kind: kit.AtomicFetch, Op: ep.OpMax, Datatype: i32, Count: 2, Buf: buf, Desc: "d",
			Result: res, ResultDesc: "rd", Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"FetchAtomic read, nil operand", func() error {
			return a.FetchAtomic(nil, 2, nil, res, "rd", dest, raddr, key, i32, ep.OpAtomicRead, "c")
		}, kit.AtomicOp{Kind: kit.AtomicFetch, Op: ep.OpAtomicRead, Datatype: i32, Count: 2,
			Result: res, ResultDesc: "rd", Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"FetchAtomicV", func() error {
			return a.FetchAtomicV(iov, descs, resv, rdescs, dest, raddr, key, i32, ep.OpProd, "c")
		}, kit.AtomicOp{Kind: kit.AtomicFetch, Op: ep.OpProd, Datatype: i32, Count: 2, IOV: iov, Descs: descs,
			ResultIOV: resv, ResultDescs: rdescs, Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"FetchAtomicMsg", func() error { return a.FetchAtomicMsg(msg(ep.OpAtomicRead), resv, rdescs, msgF) },
			kit.AtomicOp{Kind: kit.AtomicFetch, Op: ep.OpAtomicRead, Datatype: i32, Count: 2, IOV: iov, Descs: descs,
				ResultIOV: resv, ResultDescs: rdescs, Addr: dest, RAddr: raddr, Key: key, RMAIOV: rmaIOV,
				Context: "c", Data: data, Flags: msgF}},
		{"CompareAtomic", func() error {
			return a.CompareAtomic(buf, 2, "d", cmp, "cd", res, "rd", dest, raddr, key, i32, ep.OpCSwap, "c")
		}, kit.AtomicOp{Kind: kit.AtomicCompare, Op: ep.OpCSwap, Datatype: i32, Count: 2, Buf: buf, Desc: "d",
			Compare: cmp, CompareDesc: "cd", Result: res, ResultDesc: "rd",
			Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"CompareAtomicV", func() error {
			return a.CompareAtomicV(iov, descs, cmpv, cdescs, resv, rdescs, dest, raddr, key, i32, ep.OpMSwap, "c")
		}, kit.AtomicOp{Kind: kit.AtomicCompare, Op: ep.OpMSwap, Datatype: i32, Count: 2, IOV: iov, Descs: descs,
			CompareIOV: cmpv, CompareDescs: cdescs, ResultIOV: resv, ResultDescs: rdescs,
			Addr: dest, RAddr: raddr, Key: key, Context: "c", Flags: atomTxDef}},
		{"CompareAtomicMsg", func() error {
			return a.CompareAtomicMsg(msg(ep.OpCSwapGE), cmpv, cdescs, resv, rdescs, msgF)
		}, kit.AtomicOp{Kind: kit.AtomicCompare, Op: ep.OpCSwapGE, Datatype: i32, Count: 2, IOV: iov, Descs: descs,
			CompareIOV: cmpv, CompareDescs: cdescs, ResultIOV: resv, ResultDescs: rdescs,
			Addr: dest, RAddr: raddr, Key: key, RMAIOV: rmaIOV, Context: "c", Data: data, Flags: msgF}},
	} {
		require.NoError(t, c.call(), c.name)
		require.Equal(t, i+1, r.n, c.name)
		require.Equal(t, c.want, r.op, c.name)
		require.Equal(t, c.want.IOV != nil, r.op.Vector(), c.name)
		require.Equal(t, 8, r.op.Bytes(), c.name)
	}

	// A vector call with a nil vector has no elements.
	require.ErrorIs(t, a.AtomicV(nil, nil, dest, raddr, key, i32, ep.OpSum, nil), fi.EINVAL)

	// The default flags are the Ops' own: fi_control(FI_SETOPSFLAG) on
	// the endpoint's Ops reaches the atomic calls too.
	a.Ops.TxFlags = fi.FlagTransmitComplete
	require.NoError(t, a.Atomic(buf, 2, nil, dest, raddr, key, i32, ep.OpSum, nil))
	require.Equal(t, fi.FlagTransmitComplete, r.op.Flags)
	require.NoError(t, a.InjectAtomic(buf, 2, dest, raddr, key, i32, ep.OpSum))
	require.Equal(t, fi.FlagTransmitComplete|fi.FlagInject, r.op.Flags)
	a.Ops.TxFlags = fi.FlagCompletion
	require.NoError(t, a.InjectAtomic(buf, 2, dest, raddr, key, i32, ep.OpSum))
	require.Equal(t, fi.FlagInject, r.op.Flags, "fi_inject_atomic never asks for a completion")
}

// TestAtomicOpsEAGAIN: the provider's bare fi.EAGAIN comes back as it is,
// from every call.
func TestAtomicOpsEAGAIN(t *testing.T) {
	a, r, _ := newAtomicAdapter()
	r.err = fi.EAGAIN
	buf := make([]byte, 8)
	iov := []ep.IOC{{Buf: buf, Count: 1}}
	rma := []ep.RMAIOC{{Count: 1}}
	m := &ep.AtomicMessage{IOV: iov, RMAIOV: rma, Datatype: ep.Uint64, Op: ep.OpSum}
	c := &ep.AtomicMessage{IOV: iov, RMAIOV: rma, Datatype: ep.Uint64, Op: ep.OpCSwap}
	for i, err := range []error{
		a.Atomic(buf, 1, nil, 0, 0, 0, ep.Uint64, ep.OpSum, nil),
		a.AtomicV(iov, nil, 0, 0, 0, ep.Uint64, ep.OpSum, nil),
		a.AtomicMsg(m, 0),
		a.InjectAtomic(buf, 1, 0, 0, 0, ep.Uint64, ep.OpSum),
		a.FetchAtomic(buf, 1, nil, buf, nil, 0, 0, 0, ep.Uint64, ep.OpSum, nil),
		a.FetchAtomicV(iov, nil, iov, nil, 0, 0, 0, ep.Uint64, ep.OpSum, nil),
		a.FetchAtomicMsg(m, iov, nil, 0),
		a.CompareAtomic(buf, 1, nil, buf, nil, buf, nil, 0, 0, 0, ep.Uint64, ep.OpCSwap, nil),
		a.CompareAtomicV(iov, nil, iov, nil, iov, nil, 0, 0, 0, ep.Uint64, ep.OpCSwap, nil),
		a.CompareAtomicMsg(c, iov, nil, iov, nil, 0),
	} {
		require.Equal(t, error(fi.EAGAIN), err, "call %d", i)
	}
	require.Equal(t, 10, r.n)
}

// TestAtomicOpsErrors checks the adapter's vetting: each bad call gets
// its fi errno, with the provider, the call and the reason in the
// message, and never reaches the provider.
func TestAtomicOpsErrors(t *testing.T) {
	a, r, _ := newAtomicAdapter()
	b8 := make([]byte, 8)
	big := make([]byte, 4*65)
	i32 := ep.Int32
	one := []ep.IOC{{Buf: b8[:4], Count: 1}}
	two := []ep.IOC{{Buf: b8, Count: 2}}
	rma2 := []ep.RMAIOC{{Count: 2}}
	msg := func(op ep.AtomicOp, iov []ep.IOC, rma []ep.RMAIOC) *ep.AtomicMessage {
		return &ep.AtomicMessage{IOV: iov, RMAIOV: rma, Datatype: i32, Op: op}
	}

	for _, c := range []struct {
		name string
		err  error
		want error
		text string
	}{
		// The families: compare operations only in the compare calls.
		{"compare op in atomic", a.Atomic(b8, 2, nil, 0, 0, 0, i32, ep.OpCSwap, nil),
			fi.EINVAL, "test: atomic: FI_CSWAP is a compare operation"},
		{"compare op in atomicv", a.AtomicV(two, nil, 0, 0, 0, i32, ep.OpMSwap, nil),
			fi.EINVAL, "test: atomicv: FI_MSWAP is a compare operation"},
		{"compare op in atomicmsg", a.AtomicMsg(msg(ep.OpCSwapGT, two, rma2), 0),
			fi.EINVAL, "test: atomicmsg: FI_CSWAP_GT is a compare operation"},
		{"compare op in inject_atomic", a.InjectAtomic(b8, 2, 0, 0, 0, i32, ep.OpCSwap),
			fi.EINVAL, "test: inject_atomic: FI_CSWAP is a compare operation"},
		{"compare op in fetch_atomic", a.FetchAtomic(b8, 2, nil, b8, nil, 0, 0, 0, i32, ep.OpCSwapNE, nil),
			fi.EINVAL, "test: fetch_atomic: FI_CSWAP_NE is a compare operation"},
		{"compare op in fetch_atomicmsg", a.FetchAtomicMsg(msg(ep.OpCSwapLE, two, rma2), two, nil, 0),
			fi.EINVAL, "test: fetch_atomicmsg: FI_CSWAP_LE is a compare operation"},
		{"sum in compare_atomic", a.CompareAtomic(b8, 2, nil, b8, nil, b8, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: compare_atomic: FI_SUM is not a compare operation"},
		{"read in compare_atomicv", a.CompareAtomicV(two, nil, two, nil, two, nil, 0, 0, 0, i32, ep.OpAtomicRead, nil),
			fi.EINVAL, "test: compare_atomicv: FI_ATOMIC_READ is not a compare operation"},
		{"write in compare_atomicmsg", a.CompareAtomicMsg(msg(ep.OpAtomicWrite, two, rma2), two, nil, two, nil, 0),
			fi.EINVAL, "test: compare_atomicmsg: FI_ATOMIC_WRITE is not a compare operation"},

		// Unsupported: a read outside the fetch calls (no fetch inject),
		// pairs outside the matrix, unknown values.
		{"read in atomic", a.Atomic(b8, 2, nil, 0, 0, 0, i32, ep.OpAtomicRead, nil),
			fi.EOPNOTSUPP, "test: atomic: FI_ATOMIC_READ on FI_INT32 not supported: FI_ATOMIC_READ is a fetch operation"},
		{"read in inject_atomic", a.InjectAtomic(b8, 2, 0, 0, 0, i32, ep.OpAtomicRead),
			fi.EOPNOTSUPP, "test: inject_atomic: FI_ATOMIC_READ on FI_INT32 not supported"},
		{"bor on float", a.Atomic(b8, 2, nil, 0, 0, 0, ep.Float, ep.OpBOr, nil),
			fi.EOPNOTSUPP, "test: atomic: FI_BOR on FI_FLOAT not supported"},
		{"min on complex", a.FetchAtomic(b8, 1, nil, b8, nil, 0, 0, 0, ep.FloatComplex, ep.OpMin, nil),
			fi.EOPNOTSUPP, "test: fetch_atomic: FI_MIN on FI_FLOAT_COMPLEX not supported"},
		{"mswap on double", a.CompareAtomic(b8, 1, nil, b8, nil, b8, nil, 0, 0, 0, ep.Double, ep.OpMSwap, nil),
			fi.EOPNOTSUPP, "test: compare_atomic: FI_MSWAP on FI_DOUBLE not supported"},
		{"unknown op", a.Atomic(b8, 2, nil, 0, 0, 0, i32, 99, nil),
			fi.EOPNOTSUPP, "test: atomic: unknown op 99 on FI_INT32 not supported"},
		{"negative op", a.CompareAtomic(b8, 2, nil, b8, nil, b8, nil, 0, 0, 0, i32, -1, nil),
			fi.EOPNOTSUPP, "test: compare_atomic: unknown op -1 on FI_INT32 not supported"},
		{"unknown datatype", a.Atomic(b8, 2, nil, 0, 0, 0, 42, ep.OpSum, nil),
			fi.EOPNOTSUPP, "test: atomic: FI_SUM on unknown datatype 42 not supported"},

		// Counts: at least 1, at most the valid count (64 FI_INT32 here,
		// 32 for a compare call).
		{"count 0", a.Atomic(nil, 0, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: atomic: count 0 of FI_INT32, at least 1"},
		{"count -1", a.FetchAtomic(nil, -1, nil, nil, nil, 0, 0, 0, i32, ep.OpAtomicRead, nil),
			fi.EINVAL, "test: fetch_atomic: count -1 of FI_INT32"},
		{"count 65", a.Atomic(big, 65, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EMSGSIZE, "test: atomic: 65 elements of FI_INT32, at most 64"},
		{"compare count 33", a.CompareAtomic(big[:132], 33, nil, big[:132], nil, big[:132], nil, 0, 0, 0, i32, ep.OpCSwap, nil),
			fi.EMSGSIZE, "test: compare_atomic: 33 elements of FI_INT32, at most 32"},
		{"empty vector", a.AtomicV([]ep.IOC{}, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: atomicv: count 0 of FI_INT32"},
		{"empty entries", a.AtomicV([]ep.IOC{{}, {}}, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: atomicv: count 0 of FI_INT32"},
		{"vector over", a.AtomicV([]ep.IOC{{Buf: big[:128], Count: 32}, {Buf: big[:132], Count: 33}}, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EMSGSIZE, "test: atomicv: more than 64 elements of FI_INT32, at most 64"},
		{"vector count overflow", a.AtomicV([]ep.IOC{{Buf: b8[:4], Count: 1}, {Count: math.MaxInt}}, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EMSGSIZE, "test: atomicv: more than 64 elements"},
		{"vector negative", a.FetchAtomicV([]ep.IOC{{Buf: b8[:4], Count: 1}, {Count: -1}}, nil, two, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: fetch_atomicv: operand vector [1]: count -1 is negative"},

		// Lengths: every buffer holds its elements.
		{"short operand", a.Atomic(b8[:7], 2, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: atomic: operand of 7 bytes for 2 FI_INT32 elements of 4 bytes"},
		{"long operand", a.InjectAtomic(b8, 1, 0, 0, 0, i32, ep.OpSum),
			fi.EINVAL, "test: inject_atomic: operand of 8 bytes for 1 FI_INT32 elements"},
		{"nil operand", a.FetchAtomic(nil, 2, nil, b8, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: fetch_atomic: operand of 0 bytes for 2 FI_INT32 elements"},
		{"short result", a.FetchAtomic(b8, 2, nil, b8[:4], nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: fetch_atomic: result of 4 bytes for 2 FI_INT32 elements"},
		{"nil result of a read", a.FetchAtomic(nil, 2, nil, nil, nil, 0, 0, 0, i32, ep.OpAtomicRead, nil),
			fi.EINVAL, "test: fetch_atomic: result of 0 bytes"},
		{"short compare", a.CompareAtomic(b8, 2, nil, b8[:5], nil, b8, nil, 0, 0, 0, i32, ep.OpCSwap, nil),
			fi.EINVAL, "test: compare_atomic: compare of 5 bytes for 2 FI_INT32 elements"},
		{"short result of compare", a.CompareAtomic(b8, 2, nil, b8, nil, nil, nil, 0, 0, 0, i32, ep.OpCSwap, nil),
			fi.EINVAL, "test: compare_atomic: result of 0 bytes"},
		{"vector entry length", a.AtomicV([]ep.IOC{{Buf: b8[:4], Count: 1}, {Buf: b8[:3], Count: 1}}, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: atomicv: operand vector [1]: 3 bytes for 1 FI_INT32 elements of 4 bytes"},
		{"read vector ignores operand", a.FetchAtomicV([]ep.IOC{{Count: 2}}, nil, one, nil, 0, 0, 0, i32, ep.OpAtomicRead, nil),
			fi.EINVAL, "test: fetch_atomicv: result vector holds 1 elements, the operand 2"},
		{"result vector short", a.FetchAtomicV(two, nil, one, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: fetch_atomicv: result vector holds 1 elements, the operand 2"},
		{"result vector nil", a.FetchAtomicV(two, nil, nil, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: fetch_atomicv: result vector holds 0 elements, the operand 2"},
		{"result vector long", a.FetchAtomicV(one, nil, two, nil, 0, 0, 0, i32, ep.OpSum, nil),
			fi.EINVAL, "test: fetch_atomicv: result vector holds more than 1 elements, the operand 1"},
		{"result vector entry", a.FetchAtomicMsg(msg(ep.OpSum, two, rma2), []ep.IOC{{Buf: b8, Count: 1}, {Buf: b8[:4], Count: 1}}, nil, 0),
			fi.EINVAL, "test: fetch_atomicmsg: result vector [0]: 8 bytes for 1 FI_INT32 elements"},
		{"compare vector short", a.CompareAtomicV(two, nil, one, nil, two, nil, 0, 0, 0, i32, ep.OpCSwap, nil),
			fi.EINVAL, "test: compare_atomicv: compare vector holds 1 elements, the operand 2"},
		{"compare vector negative", a.CompareAtomicMsg(msg(ep.OpCSwap, two, rma2), []ep.IOC{{Count: -2}}, nil, two, nil, 0),
			fi.EINVAL, "test: compare_atomicmsg: compare vector [0]: count -2 is negative"},

		// A message's remote vector holds as many elements as its operand.
		{"remote vector short", a.AtomicMsg(msg(ep.OpSum, two, []ep.RMAIOC{{Count: 1}}), 0),
			fi.EINVAL, "test: atomicmsg: remote vector holds 1 elements, the operand 2"},
		{"remote vector long", a.FetchAtomicMsg(msg(ep.OpSum, one, rma2), one, nil, 0),
			fi.EINVAL, "test: fetch_atomicmsg: remote vector holds more than 1 elements, the operand 1"},
		{"remote vector nil", a.AtomicMsg(msg(ep.OpSum, two, nil), 0),
			fi.EINVAL, "test: atomicmsg: remote vector holds 0 elements, the operand 2"},
		{"remote vector negative", a.CompareAtomicMsg(msg(ep.OpCSwap, two, []ep.RMAIOC{{Count: 3}, {Count: -1}}), two, nil, two, nil, 0),
			fi.EINVAL, "test: compare_atomicmsg: remote vector holds more than 2 elements"},
		{"remote vector negative first", a.AtomicMsg(msg(ep.OpSum, two, []ep.RMAIOC{{Count: -1}, {Count: 3}}), 0),
			fi.EINVAL, "test: atomicmsg: remote vector [0]: count -1 is negative"},

		// Inject: at most the inject size (64), operand and compare.
		{"inject too big", a.InjectAtomic(big[:68], 17, 0, 0, 0, i32, ep.OpSum),
			fi.EINVAL, "test: inject_atomic: inject of 68 bytes, the inject size is 64"},
		{"FI_INJECT too big", a.AtomicMsg(msg(ep.OpSum, []ep.IOC{{Buf: big[:68], Count: 17}}, []ep.RMAIOC{{Count: 17}}), fi.FlagInject),
			fi.EINVAL, "test: atomicmsg: inject of 68 bytes, the inject size is 64"},
		{"FI_INJECT compare too big", a.CompareAtomicMsg(msg(ep.OpCSwap, []ep.IOC{{Buf: big[:36], Count: 9}}, []ep.RMAIOC{{Count: 9}}),
			[]ep.IOC{{Buf: big[:36], Count: 9}}, nil, []ep.IOC{{Buf: big[:36], Count: 9}}, nil, fi.FlagInject),
			fi.EINVAL, "test: compare_atomicmsg: inject of 72 bytes, the inject size is 64"},

		// Nil messages.
		{"nil atomicmsg", a.AtomicMsg(nil, 0), fi.EINVAL, "test: atomicmsg: nil message"},
		{"nil fetch_atomicmsg", a.FetchAtomicMsg(nil, two, nil, 0), fi.EINVAL, "test: fetch_atomicmsg: nil message"},
		{"nil compare_atomicmsg", a.CompareAtomicMsg(nil, two, nil, two, nil, 0), fi.EINVAL, "test: compare_atomicmsg: nil message"},
	} {
		require.ErrorIs(t, c.err, c.want, c.name)
		require.ErrorContains(t, c.err, c.text, c.name)
	}
	require.Zero(t, r.n, "no bad call reached the provider")

	// The limits' edges pass: 64 elements, 32 compared, 64 bytes injected,
	// and a read's ignored operand under FI_INJECT.
	require.NoError(t, a.Atomic(big[:256], 64, nil, 0, 0, 0, i32, ep.OpSum, nil))
	require.NoError(t, a.CompareAtomic(big[:128], 32, nil, big[:128], nil, big[:128], nil, 0, 0, 0, i32, ep.OpCSwap, nil))
	require.NoError(t, a.InjectAtomic(big[:64], 16, 0, 0, 0, i32, ep.OpSum))
	require.NoError(t, a.FetchAtomicMsg(msg(ep.OpAtomicRead, []ep.IOC{{Count: 20}}, []ep.RMAIOC{{Count: 20}}),
		[]ep.IOC{{Buf: big[:80], Count: 20}}, nil, fi.FlagInject))
	require.Equal(t, 4, r.n)
}

// TestAtomicOpsExclude: a provider that narrows the datatypes, as
// libfabric's compiler-atomics build does, refuses them in the data
// calls and the valid calls alike.
func TestAtomicOpsExclude(t *testing.T) {
	a, r, at := newAtomicAdapter()
	at.Exclude = kit.BuiltinAtomicsExclude
	require.Equal(t, kit.AtomicTypesOf(ep.DoubleComplex, ep.LongDouble, ep.LongDoubleComplex), kit.BuiltinAtomicsExclude)
	b := make([]byte, 32)
	for _, dt := range []ep.Datatype{ep.DoubleComplex, ep.LongDouble, ep.LongDoubleComplex} {
		size, err := kit.AtomicSize(dt)
		require.NoError(t, err)
		err = a.Atomic(b[:size], 1, nil, 0, 0, 0, dt, ep.OpSum, nil)
		require.ErrorIs(t, err, fi.EOPNOTSUPP)
		require.ErrorContains(t, err, "test: atomic: FI_SUM on "+dtName(dt)+" not supported: the endpoint offers no "+dtName(dt)+" atomics")
		_, err = a.FetchAtomicValid(dt, ep.OpAtomicRead)
		require.ErrorIs(t, err, fi.EOPNOTSUPP)
		require.ErrorContains(t, err, "test: fetch_atomicvalid: FI_ATOMIC_READ on "+dtName(dt))
		_, err = a.CompareAtomicValid(dt, ep.OpCSwap)
		require.ErrorIs(t, err, fi.EOPNOTSUPP)
	}
	require.Zero(t, r.n)
	for _, dt := range []ep.Datatype{ep.Int8, ep.Uint64, ep.Float, ep.Double, ep.FloatComplex} {
		n, err := a.AtomicValid(dt, ep.OpSum)
		require.NoError(t, err, dtName(dt))
		size, _ := kit.AtomicSize(dt)
		require.Equal(t, atomMax/size, n, dtName(dt))
	}
	require.NoError(t, a.Atomic(b[:8], 1, nil, 0, 0, 0, ep.FloatComplex, ep.OpSum, nil))

	require.True(t, kit.AtomicTypesOf(ep.Int8, 99, -1).Has(ep.Int8))
	require.False(t, kit.AtomicTypesOf(ep.Int8, 99, -1).Has(ep.Uint8))
	require.False(t, kit.AtomicTypes(math.MaxUint32).Has(-1))
	require.False(t, kit.AtomicTypes(math.MaxUint32).Has(32))
}

// TestAtomicOpsNarrow: MaxCount caps the count whatever the element's
// size, and Refuse takes (family, datatype, operation) pairs out of the
// matrix with its reason, in the valid calls and the data calls alike,
// as a provider with a few device operations (verbs) needs them.
func TestAtomicOpsNarrow(t *testing.T) {
	a, r, at := newAtomicAdapter()
	at.MaxSize, at.MaxCount = 16, 1
	const why = "the device offers FI_SUM only"
	at.Refuse = func(kind kit.AtomicKind, dt ep.Datatype, op ep.AtomicOp) string {
		if kind == kit.AtomicFetch && op != ep.OpSum {
			return why
		}
		return ""
	}
	for _, c := range []struct {
		valid func(ep.Datatype, ep.AtomicOp) (int, error)
		dt    ep.Datatype
		op    ep.AtomicOp
	}{
		{a.AtomicValid, ep.Int64, ep.OpMin},
		{a.AtomicValid, ep.Int8, ep.OpSum},
		{a.FetchAtomicValid, ep.Uint64, ep.OpSum},
		{a.CompareAtomicValid, ep.Int64, ep.OpCSwap},
		{a.CompareAtomicValid, ep.Uint16, ep.OpMSwap},
	} {
		n, err := c.valid(c.dt, c.op)
		require.NoError(t, err, "%v %v", c.dt, c.op)
		require.Equal(t, 1, n, "MaxCount bounds %v %v", c.dt, c.op)
	}
	n, err := a.FetchAtomicValid(ep.Int64, ep.OpAtomicRead)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	require.ErrorContains(t, err, "test: fetch_atomicvalid: FI_ATOMIC_READ on FI_INT64 not supported: "+why)
	require.Zero(t, n)
	_, err = a.FetchAtomicValid(ep.Int64, ep.OpCSwap)
	require.ErrorContains(t, err, "FI_CSWAP is a compare operation", "the family's reason comes first")

	b := make([]byte, 16)
	err = a.FetchAtomic(b[:8], 1, nil, b[8:], nil, 0, 0, 0, ep.Int64, ep.OpMax, nil)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	require.ErrorContains(t, err, "test: fetch_atomic: FI_MAX on FI_INT64 not supported: "+why)
	require.ErrorIs(t, a.FetchAtomic(b, 2, nil, b, nil, 0, 0, 0, ep.Int64, ep.OpSum, nil), fi.EMSGSIZE)
	require.Zero(t, r.n)
	require.NoError(t, a.FetchAtomic(b[:8], 1, nil, b[8:], nil, 0, 0, 0, ep.Int64, ep.OpSum, nil))
	require.NoError(t, a.Atomic(b[:8], 1, nil, 0, 0, 0, ep.Int64, ep.OpMax, nil), "other families are untouched")
	require.Equal(t, 2, r.n)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = a.FetchAtomic(b[:8], 1, nil, b[8:], nil, 0, 0, 0, ep.Int64, ep.OpSum, nil)
	}), "Refuse on the data path")
}

func dtName(dt ep.Datatype) string {
	return [...]string{"FI_INT8", "FI_UINT8", "FI_INT16", "FI_UINT16", "FI_INT32", "FI_UINT32", "FI_INT64",
		"FI_UINT64", "FI_FLOAT", "FI_DOUBLE", "FI_FLOAT_COMPLEX", "FI_DOUBLE_COMPLEX", "FI_LONG_DOUBLE",
		"FI_LONG_DOUBLE_COMPLEX"}[dt]
}

// TestAtomicOpsValid checks the valid calls' answers, and that the data
// calls take exactly what they allow: count elements pass, count + 1
// give fi.EMSGSIZE, and an unsupported pair fi.EOPNOTSUPP (fi.EINVAL
// where the operation belongs to another family).
func TestAtomicOpsValid(t *testing.T) {
	a, r, at := newAtomicAdapter()

	for _, c := range []struct {
		valid func(ep.Datatype, ep.AtomicOp) (int, error)
		dt    ep.Datatype
		op    ep.AtomicOp
		n     int
		text  string
	}{
		{a.AtomicValid, ep.Int32, ep.OpSum, 64, ""},
		{a.AtomicValid, ep.Int8, ep.OpBXor, 256, ""},
		{a.AtomicValid, ep.Double, ep.OpMin, 32, ""},
		{a.AtomicValid, ep.LongDoubleComplex, ep.OpProd, 8, ""},
		{a.FetchAtomicValid, ep.Uint16, ep.OpAtomicRead, 128, ""},
		{a.FetchAtomicValid, ep.LongDouble, ep.OpAtomicWrite, 16, ""},
		{a.CompareAtomicValid, ep.Int64, ep.OpCSwap, 16, ""},
		{a.CompareAtomicValid, ep.LongDoubleComplex, ep.OpCSwapNE, 4, ""},
		{a.CompareAtomicValid, ep.Uint8, ep.OpMSwap, 128, ""},
		{a.AtomicValid, ep.Int32, ep.OpCSwap, 0, "test: atomicvalid: FI_CSWAP on FI_INT32 not supported: FI_CSWAP is a compare operation"},
		{a.AtomicValid, ep.Int32, ep.OpAtomicRead, 0, "test: atomicvalid: FI_ATOMIC_READ on FI_INT32 not supported: FI_ATOMIC_READ is a fetch operation"},
		{a.FetchAtomicValid, ep.Int32, ep.OpMSwap, 0, "test: fetch_atomicvalid: FI_MSWAP on FI_INT32 not supported: FI_MSWAP is a compare operation"},
		{a.CompareAtomicValid, ep.Int32, ep.OpSum, 0, "test: compare_atomicvalid: FI_SUM on FI_INT32 not supported: FI_SUM is not a compare operation"},
		{a.AtomicValid, ep.Float, ep.OpBAnd, 0, "test: atomicvalid: FI_BAND on FI_FLOAT not supported"},
		{a.CompareAtomicValid, ep.FloatComplex, ep.OpCSwapLT, 0, "test: compare_atomicvalid: FI_CSWAP_LT on FI_FLOAT_COMPLEX not supported"},
		{a.AtomicValid, ep.Int128, ep.OpSum, 0, "test: atomicvalid: FI_SUM on FI_INT128 not supported"},
		{a.AtomicValid, 16, ep.OpSum, 0, "test: atomicvalid: FI_SUM on unknown datatype 16 not supported"},
		{a.FetchAtomicValid, ep.Int32, 19, 0, "test: fetch_atomicvalid: unknown op 19 on FI_INT32 not supported"},
	} {
		n, err := c.valid(c.dt, c.op)
		if c.text == "" {
			require.NoError(t, err)
			require.Equal(t, c.n, n, "%v %v", c.dt, c.op)
			continue
		}
		require.ErrorIs(t, err, fi.EOPNOTSUPP, c.text)
		require.ErrorContains(t, err, c.text)
		require.Zero(t, n, c.text)
	}

	// Every kind, operation and datatype: the valid count follows the
	// families, the software matrix (AtomicSupported) and MaxSize, and
	// the data calls agree with it.
	kinds := []struct {
		kind  kit.AtomicKind
		ops   []ep.AtomicOp
		valid func(ep.Datatype, ep.AtomicOp) (int, error)
	}{
		{kit.AtomicBase, atomBaseOps, a.AtomicValid},
		{kit.AtomicFetch, atomFetchOps, a.FetchAtomicValid},
		{kit.AtomicCompare, atomCompareOps, a.CompareAtomicValid},
	}
	buf := make([]byte, 2*atomMax+32)
	posted := 0
	for _, k := range kinds {
		for op := ep.OpMin; op <= ep.OpMSwap; op++ {
			for dt := ep.Int8; dt <= ep.LongDoubleComplex; dt++ {
				size, err := kit.AtomicSize(dt)
				require.NoError(t, err)
				want := 0
				if slices.Contains(k.ops, op) && kit.AtomicSupported(op, dt) {
					want = atomMax / size
					if k.kind == kit.AtomicCompare {
						want /= 2
					}
				}
				n, err := k.valid(dt, op)
				direct, derr := at.Valid(k.kind, dt, op)
				require.Equal(t, n, direct, "Atomics.Valid %v %v %v", k.kind, op, dt)
				require.Equal(t, err == nil, derr == nil)
				call := func(count int) error {
					b := buf[:count*size]
					switch k.kind {
					case kit.AtomicBase:
						return a.Atomic(b, count, nil, 0, 0, 0, dt, op, nil)
					case kit.AtomicFetch:
						return a.FetchAtomic(b, count, nil, b, nil, 0, 0, 0, dt, op, nil)
					}
					return a.CompareAtomic(b, count, nil, b, nil, b, nil, 0, 0, 0, dt, op, nil)
				}
				if want == 0 {
					require.ErrorIs(t, err, fi.EOPNOTSUPP, "%v %v %v", k.kind, op, dt)
					require.Zero(t, n)
					wantErr := fi.EOPNOTSUPP
					if (k.kind == kit.AtomicCompare) != slices.Contains(atomCompareOps, op) {
						wantErr = fi.EINVAL
					}
					require.ErrorIs(t, call(1), wantErr, "%v %v %v", k.kind, op, dt)
					continue
				}
				require.NoError(t, err, "%v %v %v", k.kind, op, dt)
				require.Equal(t, want, n, "%v %v %v", k.kind, op, dt)
				require.NoError(t, call(n), "%v %v %v", k.kind, op, dt)
				posted++
				require.Equal(t, n, r.op.Count)
				require.ErrorIs(t, call(n+1), fi.EMSGSIZE, "%v %v %v", k.kind, op, dt)
			}
		}
	}
	require.Equal(t, posted, r.n)
	// libfabric's matrix, counted by hand: the base operations take 130
	// (operation, datatype) pairs (FI_MIN, FI_MAX 11 each; FI_SUM, FI_PROD,
	// FI_LOR, FI_LAND, FI_LXOR, FI_ATOMIC_WRITE 14; FI_BOR, FI_BAND, FI_BXOR
	// 8), the fetch ones those and FI_ATOMIC_READ's 14, the compare ones 80
	// (FI_CSWAP, FI_CSWAP_NE 14; the four orderings 11; FI_MSWAP 8).
	require.Equal(t, 130+144+80, posted)

	// MaxSize bounds the element: none at all, or too small for some.
	at.MaxSize = 24
	n, err := a.AtomicValid(ep.Int64, ep.OpSum)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = a.CompareAtomicValid(ep.Int64, ep.OpCSwap)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = a.AtomicValid(ep.LongDoubleComplex, ep.OpSum)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	require.ErrorContains(t, err, "test: atomicvalid: FI_SUM on FI_LONG_DOUBLE_COMPLEX not supported: an element takes 32 operand bytes, the limit is 24")
	_, err = a.CompareAtomicValid(ep.LongDouble, ep.OpCSwap)
	require.ErrorContains(t, err, "test: compare_atomicvalid: FI_CSWAP on FI_LONG_DOUBLE not supported: an element takes 32 operand bytes, the limit is 24")
	err = a.CompareAtomic(buf[:16], 1, nil, buf[:16], nil, buf[:16], nil, 0, 0, 0, ep.LongDouble, ep.OpCSwap, nil)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	at.MaxSize = 0
	_, err = a.FetchAtomicValid(ep.Int8, ep.OpAtomicRead)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	require.ErrorIs(t, a.Atomic(buf[:1], 1, nil, 0, 0, 0, ep.Int8, ep.OpSum, nil), fi.EOPNOTSUPP)

	require.Equal(t, "atomic", kit.AtomicBase.String())
	require.Equal(t, "fetch_atomic", kit.AtomicFetch.String())
	require.Equal(t, "compare_atomic", kit.AtomicCompare.String())
	require.Equal(t, "atomic?", kit.AtomicKind(3).String())
}

// TestAtomicOpsAllocs: the adapter adds no allocation to any call, the
// message forms included (with messages and vectors reused, as ep asks).
func TestAtomicOpsAllocs(t *testing.T) {
	a, r, _ := newAtomicAdapter()
	buf, cmp, res := make([]byte, 64), make([]byte, 64), make([]byte, 64) // 8 FI_UINT64
	iov := []ep.IOC{{Buf: buf[:32], Count: 4}, {Buf: buf[32:], Count: 4}}
	cmpv := []ep.IOC{{Buf: cmp, Count: 8}}
	resv := []ep.IOC{{Buf: res, Count: 8}}
	descs := []any{"d0", "d1"}
	rma := []ep.RMAIOC{{Addr: 0x1000, Count: 8, Key: 1}}
	msg := &ep.AtomicMessage{IOV: iov, Desc: descs, Addr: 1, RMAIOV: rma, Datatype: ep.Uint64, Op: ep.OpSum}
	cmsg := &ep.AtomicMessage{IOV: iov, Desc: descs, Addr: 1, RMAIOV: rma, Datatype: ep.Uint64, Op: ep.OpCSwap}
	ctx := new(int)
	u64 := ep.Uint64
	for name, f := range map[string]func() error{
		"Atomic":       func() error { return a.Atomic(buf, 8, nil, 1, 0, 9, u64, ep.OpSum, ctx) },
		"AtomicV":      func() error { return a.AtomicV(iov, descs, 1, 0, 9, u64, ep.OpSum, ctx) },
		"AtomicMsg":    func() error { return a.AtomicMsg(msg, fi.FlagCompletion) },
		"InjectAtomic": func() error { return a.InjectAtomic(buf, 8, 1, 0, 9, u64, ep.OpBXor) },
		"FetchAtomic":  func() error { return a.FetchAtomic(buf, 8, nil, res, nil, 1, 0, 9, u64, ep.OpSum, ctx) },
		"FetchAtomicV": func() error {
			return a.FetchAtomicV(iov, descs, resv, nil, 1, 0, 9, u64, ep.OpAtomicRead, ctx)
		},
		"FetchAtomicMsg": func() error { return a.FetchAtomicMsg(msg, resv, nil, fi.FlagInject) },
		"CompareAtomic": func() error {
			return a.CompareAtomic(buf, 8, nil, cmp, nil, res, nil, 1, 0, 9, u64, ep.OpCSwap, ctx)
		},
		"CompareAtomicV": func() error {
			return a.CompareAtomicV(iov, descs, cmpv, nil, resv, nil, 1, 0, 9, u64, ep.OpMSwap, ctx)
		},
		"CompareAtomicMsg": func() error { return a.CompareAtomicMsg(cmsg, cmpv, nil, resv, nil, 0) },
		"AtomicValid": func() error {
			_, err := a.AtomicValid(u64, ep.OpSum)
			return err
		},
	} {
		require.NoError(t, f(), name)
		n := r.n
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = f() }), name)
		if name != "AtomicValid" {
			require.Greater(t, r.n, n, name)
		}
	}
}

// BenchmarkAtomicOpsFetch is the adapter's cost per fetch call, vetting
// included, over a poster that only records.
func BenchmarkAtomicOpsFetch(b *testing.B) {
	a, _, _ := newAtomicAdapter()
	buf, res := make([]byte, 8), make([]byte, 8)
	ctx := new(int)
	b.ReportAllocs()
	for b.Loop() {
		_ = a.FetchAtomic(buf, 1, nil, res, nil, 1, 0, 9, ep.Uint64, ep.OpSum, ctx)
	}
}
