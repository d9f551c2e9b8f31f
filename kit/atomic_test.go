package kit_test

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// The validity matrix, restated from libfabric 1.17's open-coded tables
// (prov/util/src/util_atomic.c) for the test.
var (
	atomicInts  = []ep.Datatype{ep.Int8, ep.Uint8, ep.Int16, ep.Uint16, ep.Int32, ep.Uint32, ep.Int64, ep.Uint64}
	atomicReals = slices.Concat(atomicInts, []ep.Datatype{ep.Float, ep.Double, ep.LongDouble})
	atomicAll   = slices.Concat(atomicReals, []ep.Datatype{ep.FloatComplex, ep.DoubleComplex, ep.LongDoubleComplex})

	atomicMatrix = map[ep.AtomicOp][]ep.Datatype{
		ep.OpMin: atomicReals, ep.OpMax: atomicReals,
		ep.OpSum: atomicAll, ep.OpProd: atomicAll,
		ep.OpLOr: atomicAll, ep.OpLAnd: atomicAll, ep.OpLXor: atomicAll,
		ep.OpBOr: atomicInts, ep.OpBAnd: atomicInts, ep.OpBXor: atomicInts,
		ep.OpAtomicRead: atomicAll, ep.OpAtomicWrite: atomicAll,
		ep.OpCSwap: atomicAll, ep.OpCSwapNE: atomicAll,
		ep.OpCSwapLE: atomicReals, ep.OpCSwapLT: atomicReals,
		ep.OpCSwapGE: atomicReals, ep.OpCSwapGT: atomicReals,
		ep.OpMSwap: atomicInts,
	}
)

const atomicOpCount = int(ep.OpMSwap) + 1

func isCompareOp(op ep.AtomicOp) bool { return op >= ep.OpCSwap }

func TestAtomicSize(t *testing.T) {
	want := map[ep.Datatype]int{
		ep.Int8: 1, ep.Uint8: 1, ep.Int16: 2, ep.Uint16: 2, ep.Int32: 4, ep.Uint32: 4,
		ep.Int64: 8, ep.Uint64: 8, ep.Float: 4, ep.Double: 8, ep.FloatComplex: 8,
		ep.DoubleComplex: 16, ep.LongDouble: 16, ep.LongDoubleComplex: 32,
		ep.Int128: 16, ep.Uint128: 16, // sized as C's, supported by no operation
	}
	for dt, n := range want {
		got, err := kit.AtomicSize(dt)
		require.NoError(t, err)
		require.Equal(t, n, got, "datatype %d", dt)
	}
	for _, dt := range []ep.Datatype{-1, ep.Uint128 + 1, 100} {
		_, err := kit.AtomicSize(dt)
		require.ErrorIs(t, err, fi.EINVAL)
	}
}

func TestAtomicSupportedMatrix(t *testing.T) {
	n := 0
	for op := ep.AtomicOp(-1); op <= ep.OpMSwap+1; op++ {
		for dt := ep.Datatype(-1); dt <= ep.Uint128+1; dt++ {
			want := slices.Contains(atomicMatrix[op], dt)
			require.Equal(t, want, kit.AtomicSupported(op, dt), "op %d datatype %d", op, dt)
			if want {
				n++
			}
		}
	}
	// FI_MIN, FI_MAX and the four ordered compares on the 11 reals, nine
	// operations on all 14 types, four on the 8 integers.
	require.Equal(t, 6*11+9*14+4*8, n)
	// Spot checks of the facts the matrix rests on.
	require.True(t, kit.AtomicSupported(ep.OpLXor, ep.DoubleComplex))
	require.False(t, kit.AtomicSupported(ep.OpBXor, ep.Double))
	require.False(t, kit.AtomicSupported(ep.OpMin, ep.FloatComplex))
	require.True(t, kit.AtomicSupported(ep.OpCSwapGT, ep.LongDouble))
	require.False(t, kit.AtomicSupported(ep.OpMSwap, ep.Float))
}

func TestAtomicUnsupportedPairs(t *testing.T) {
	for op := ep.AtomicOp(0); int(op) < atomicOpCount; op++ {
		for _, dt := range atomicAll {
			if slices.Contains(atomicMatrix[op], dt) {
				continue
			}
			size, err := kit.AtomicSize(dt)
			require.NoError(t, err)
			dst, src, old := atomicFilled(size, 1), atomicFilled(size, 2), make([]byte, size)
			var cmp []byte
			if isCompareOp(op) {
				cmp = atomicFilled(size, 3)
			}
			err = kit.ApplyAtomic(op, dt, dst, src, cmp, old)
			require.ErrorIs(t, err, fi.EOPNOTSUPP, "op %d datatype %d", op, dt)
			require.Equal(t, atomicFilled(size, 1), dst, "dst changed")
		}
	}
	err := kit.ApplyAtomic(ep.OpSum, ep.Int128, nil, nil, nil, nil)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	err = kit.ApplyAtomic(ep.OpMSwap+1, ep.Int8, nil, nil, nil, nil)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	err = kit.ApplyAtomic(-1, ep.Int8, nil, nil, nil, nil)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)
	require.ErrorContains(t, kit.ApplyAtomic(ep.OpBOr, ep.Double, make([]byte, 8), make([]byte, 8), nil, nil),
		"FI_BOR on FI_DOUBLE")
}

func atomicFilled(n int, b byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = b
	}
	return p
}

func TestAtomicBadArguments(t *testing.T) {
	b := func(n int) []byte { return make([]byte, n) }
	for _, tc := range []struct {
		name               string
		op                 ep.AtomicOp
		dt                 ep.Datatype
		dst, src, cmp, old []byte
		code               fi.Errno
		contains           []string
	}{
		{"partial element", ep.OpSum, ep.Int32, b(7), b(7), nil, nil, fi.EINVAL, []string{"FI_SUM", "FI_INT32", "7", "4-byte"}},
		{"partial long double", ep.OpSum, ep.LongDouble, b(10), b(10), nil, nil, fi.EINVAL, []string{"FI_LONG_DOUBLE", "10"}},
		{"short src", ep.OpSum, ep.Double, b(16), b(8), nil, nil, fi.EINVAL, []string{"FI_DOUBLE", "8", "16"}},
		{"nil src", ep.OpAtomicWrite, ep.Uint8, b(2), nil, nil, nil, fi.EINVAL, []string{"FI_ATOMIC_WRITE", "0", "2"}},
		{"no cmp", ep.OpCSwap, ep.Uint64, b(8), b(8), nil, b(8), fi.EINVAL, []string{"FI_CSWAP", "FI_UINT64", "compare"}},
		{"short cmp", ep.OpMSwap, ep.Int16, b(4), b(4), b(2), nil, fi.EINVAL, []string{"FI_MSWAP", "FI_INT16", "2", "4"}},
		{"cmp not wanted", ep.OpMax, ep.Int16, b(4), b(4), b(4), nil, fi.EINVAL, []string{"FI_MAX", "compare"}},
		{"short old", ep.OpSum, ep.Float, b(8), b(8), nil, b(4), fi.EINVAL, []string{"FI_FLOAT", "4", "8"}},
		{"read without old", ep.OpAtomicRead, ep.Int8, b(1), nil, nil, nil, fi.EOPNOTSUPP, []string{"FI_ATOMIC_READ"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := slices.Clone(tc.dst)
			for i := range dst {
				dst[i] = byte(i + 1)
			}
			before := slices.Clone(dst)
			err := kit.ApplyAtomic(tc.op, tc.dt, dst, tc.src, tc.cmp, tc.old)
			require.ErrorIs(t, err, tc.code)
			for _, s := range tc.contains {
				require.ErrorContains(t, err, s)
			}
			require.Equal(t, before, dst)
		})
	}
	// Empty buffers are zero elements: nothing to do.
	require.NoError(t, kit.ApplyAtomic(ep.OpSum, ep.Int64, nil, nil, nil, nil))
}

// atomicGrid applies op to every combination of vals as target, operand and
// compare value, in unaligned buffers with a fetch buffer, and checks old
// and the new target against want (same compares elements).
func atomicGrid[T any](t *testing.T, dt ep.Datatype, op ep.AtomicOp, vals []T,
	put func([]byte, T), get func([]byte) T,
	want func(op ep.AtomicOp, d, s, c T) T, same func(a, b T) bool,
) {
	t.Helper()
	size, err := kit.AtomicSize(dt)
	require.NoError(t, err)
	type combo struct{ d, s, c T }
	var combos []combo
	for _, d := range vals {
		for _, s := range vals {
			if !isCompareOp(op) {
				combos = append(combos, combo{d, s, vals[0]})
				continue
			}
			for _, c := range vals {
				combos = append(combos, combo{d, s, c})
			}
		}
	}
	n := len(combos) * size
	// One byte in, so that no element is aligned.
	dst, src, cmp, old := make([]byte, n+1)[1:], make([]byte, n+1)[1:], make([]byte, n+1)[1:], make([]byte, n+1)[1:]
	for i, cb := range combos {
		put(dst[i*size:], cb.d)
		put(src[i*size:], cb.s)
		put(cmp[i*size:], cb.c)
	}
	if !isCompareOp(op) {
		cmp = nil
	}
	before := slices.Clone(dst)
	require.NoError(t, kit.ApplyAtomic(op, dt, dst, src, cmp, old), "op %d datatype %d", op, dt)
	require.Equal(t, before, old, "old must hold the previous target")
	for i, cb := range combos {
		w := want(op, cb.d, cb.s, cb.c)
		got := get(dst[i*size:])
		require.True(t, same(w, got), "op %d datatype %d: d=%v s=%v c=%v: want %v, got %v",
			op, dt, cb.d, cb.s, cb.c, w, got)
	}
}

// Integers.

type atomicTestInt interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

func putInt[T atomicTestInt](b []byte, v T) {
	u := uint64(v)
	switch size := binary.Size(v); size {
	case 1:
		b[0] = byte(u)
	case 2:
		binary.NativeEndian.PutUint16(b, uint16(u))
	case 4:
		binary.NativeEndian.PutUint32(b, uint32(u))
	default:
		binary.NativeEndian.PutUint64(b, u)
	}
}

func getInt[T atomicTestInt](b []byte) T {
	var v T
	switch binary.Size(v) {
	case 1:
		return T(b[0])
	case 2:
		return T(binary.NativeEndian.Uint16(b))
	case 4:
		return T(binary.NativeEndian.Uint32(b))
	}
	return T(binary.NativeEndian.Uint64(b))
}

// wantInt is the expected new target, computed on 64-bit words and
// truncated, with the order of the signed or unsigned type.
func wantInt[T atomicTestInt](op ep.AtomicOp, d, s, c T) T {
	var zero T
	signed := zero-1 < zero
	less := func(a, b T) bool {
		if signed {
			return int64(a) < int64(b)
		}
		return uint64(a) < uint64(b)
	}
	truth := func(b bool) T {
		if b {
			return 1
		}
		return 0
	}
	ud, us, uc := uint64(d), uint64(s), uint64(c)
	switch op {
	case ep.OpMin:
		if less(s, d) {
			return s
		}
	case ep.OpMax:
		if less(d, s) {
			return s
		}
	case ep.OpSum:
		return T(ud + us)
	case ep.OpProd:
		return T(ud * us)
	case ep.OpLOr:
		return truth(ud != 0 || us != 0)
	case ep.OpLAnd:
		return truth(ud != 0 && us != 0)
	case ep.OpLXor:
		return truth((ud != 0 && us == 0) || (ud == 0 && us != 0))
	case ep.OpBOr:
		return T(ud | us)
	case ep.OpBAnd:
		return T(ud & us)
	case ep.OpBXor:
		return T(ud ^ us)
	case ep.OpAtomicWrite:
		return s
	case ep.OpCSwap:
		if ud == uc {
			return s
		}
	case ep.OpCSwapNE:
		if ud != uc {
			return s
		}
	case ep.OpCSwapLE:
		if !less(d, c) {
			return s
		}
	case ep.OpCSwapLT:
		if less(c, d) {
			return s
		}
	case ep.OpCSwapGE:
		if !less(c, d) {
			return s
		}
	case ep.OpCSwapGT:
		if less(d, c) {
			return s
		}
	case ep.OpMSwap:
		return T(us&uc | ud&^uc)
	}
	return d
}

func intGrid[T atomicTestInt](t *testing.T, dt ep.Datatype, vals []T) {
	for op := ep.AtomicOp(0); int(op) < atomicOpCount; op++ {
		atomicGrid(t, dt, op, vals, putInt[T], getInt[T], wantInt[T], func(a, b T) bool { return a == b })
	}
}

func TestAtomicIntegers(t *testing.T) {
	intGrid(t, ep.Int8, []int8{math.MinInt8, -3, -1, 0, 1, 2, 0x35, math.MaxInt8})
	intGrid(t, ep.Uint8, []uint8{0, 1, 2, 0x5a, 0x80, math.MaxUint8 - 1, math.MaxUint8})
	intGrid(t, ep.Int16, []int16{math.MinInt16, -300, -1, 0, 1, 0x1234, math.MaxInt16})
	intGrid(t, ep.Uint16, []uint16{0, 1, 3, 0x8001, 0xff00, math.MaxUint16})
	intGrid(t, ep.Int32, []int32{math.MinInt32, -70000, -1, 0, 1, 0x12345678, math.MaxInt32})
	intGrid(t, ep.Uint32, []uint32{0, 1, 0xdeadbeef, 0x80000000, math.MaxUint32})
	intGrid(t, ep.Int64, []int64{math.MinInt64, -1 << 40, -1, 0, 1, 7, 0x0123456789abcdef, math.MaxInt64})
	intGrid(t, ep.Uint64, []uint64{0, 1, 2, 1 << 63, 0xfedcba9876543210, math.MaxUint64 - 1, math.MaxUint64})
}

// Spot checks with the results written out, in case the grid's
// expectations share a mistake with the engine.
func TestAtomicIntegerExamples(t *testing.T) {
	for _, tc := range []struct {
		op            ep.AtomicOp
		d, s, c, want int8
	}{
		{ep.OpSum, math.MaxInt8, 1, 0, math.MinInt8},
		{ep.OpProd, -128, -1, 0, -128},
		{ep.OpMin, -5, 3, 0, -5},
		{ep.OpMax, -5, 3, 0, 3},
		{ep.OpLOr, 0, -7, 0, 1},
		{ep.OpLAnd, 4, 0, 0, 0},
		{ep.OpLXor, 4, 9, 0, 0},
		{ep.OpLXor, 0, 9, 0, 1},
		{ep.OpBXor, 0x0f, 0x3c, 0, 0x33},
		{ep.OpCSwapLT, 10, 99, 9, 99},  // 9 < 10
		{ep.OpCSwapLT, 10, 99, 11, 10}, // not 11 < 10
		{ep.OpCSwapGT, 10, 99, 11, 99},
		{ep.OpCSwapGE, -1, 99, -1, 99},
		{ep.OpCSwapLE, -1, 99, 0, -1},        // not 0 <= -1
		{ep.OpMSwap, 0x55, 0x0f, 0x3c, 0x4d}, // (0f&3c)|(55&^3c) = 0c|41
	} {
		dst, src := []byte{byte(tc.d)}, []byte{byte(tc.s)}
		var cmp []byte
		if isCompareOp(tc.op) {
			cmp = []byte{byte(tc.c)}
		}
		require.NoError(t, kit.ApplyAtomic(tc.op, ep.Int8, dst, src, cmp, nil))
		require.Equal(t, tc.want, int8(dst[0]), "op %d d=%d s=%d c=%d", tc.op, tc.d, tc.s, tc.c)
	}
	// uint64: MaxUint64 + 1 wraps; unsigned order.
	dst, src := make([]byte, 8), make([]byte, 8)
	binary.NativeEndian.PutUint64(dst, math.MaxUint64)
	binary.NativeEndian.PutUint64(src, 1)
	require.NoError(t, kit.ApplyAtomic(ep.OpSum, ep.Uint64, dst, src, nil, nil))
	require.Equal(t, uint64(0), binary.NativeEndian.Uint64(dst))
	binary.NativeEndian.PutUint64(dst, 1<<63)
	require.NoError(t, kit.ApplyAtomic(ep.OpMin, ep.Uint64, dst, src, nil, nil))
	require.Equal(t, uint64(1), binary.NativeEndian.Uint64(dst))
}

// Reals.

type atomicTestFloat interface{ ~float32 | ~float64 }

func putFloat[F atomicTestFloat](b []byte, v F) {
	if binary.Size(v) == 4 {
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(v)))
		return
	}
	binary.NativeEndian.PutUint64(b, math.Float64bits(float64(v)))
}

func getFloat[F atomicTestFloat](b []byte) F {
	var v F
	if binary.Size(v) == 4 {
		return F(math.Float32frombits(binary.NativeEndian.Uint32(b)))
	}
	return F(math.Float64frombits(binary.NativeEndian.Uint64(b)))
}

// sameFloat: both NaN, or the same bits (so -0 differs from +0).
func sameFloat[F atomicTestFloat](a, b F) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	if binary.Size(a) == 4 {
		return math.Float32bits(float32(a)) == math.Float32bits(float32(b))
	}
	return math.Float64bits(float64(a)) == math.Float64bits(float64(b))
}

func wantFloat[F atomicTestFloat](op ep.AtomicOp, d, s, c F) F {
	truth := func(b bool) F {
		if b {
			return 1
		}
		return 0
	}
	switch op {
	case ep.OpMin:
		if d > s {
			return s
		}
	case ep.OpMax:
		if d < s {
			return s
		}
	case ep.OpSum:
		return d + s
	case ep.OpProd:
		return d * s
	case ep.OpLOr:
		return truth(!(d == 0) || !(s == 0))
	case ep.OpLAnd:
		return truth(!(d == 0) && !(s == 0))
	case ep.OpLXor:
		return truth((d != 0 && s == 0) || (d == 0 && s != 0))
	case ep.OpAtomicWrite:
		return s
	case ep.OpCSwap:
		if c == d {
			return s
		}
	case ep.OpCSwapNE:
		if !(c == d) {
			return s
		}
	case ep.OpCSwapLE:
		if c <= d {
			return s
		}
	case ep.OpCSwapLT:
		if c < d {
			return s
		}
	case ep.OpCSwapGE:
		if c >= d {
			return s
		}
	case ep.OpCSwapGT:
		if c > d {
			return s
		}
	}
	return d
}

func TestAtomicFloats(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	f32 := []float32{float32(nan), float32(-inf), -1.5, float32(math.Copysign(0, -1)), 0, 1, 2.5,
		math.MaxFloat32, math.SmallestNonzeroFloat32, float32(inf)}
	f64 := []float64{nan, -inf, -1.5, math.Copysign(0, -1), 0, 1, 2.5, 1e300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, inf}
	for _, op := range slices.Sorted(maps.Keys(atomicMatrix)) {
		if slices.Contains(atomicMatrix[op], ep.Float) {
			atomicGrid(t, ep.Float, op, f32, putFloat[float32], getFloat[float32], wantFloat[float32], sameFloat[float32])
		}
		if slices.Contains(atomicMatrix[op], ep.Double) {
			atomicGrid(t, ep.Double, op, f64, putFloat[float64], getFloat[float64], wantFloat[float64], sameFloat[float64])
		}
	}
}

func TestAtomicFloatExamples(t *testing.T) {
	put := func(v ...float64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.NativeEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b
	}
	get := func(b []byte, i int) float64 { return math.Float64frombits(binary.NativeEndian.Uint64(b[8*i:])) }
	nan := math.NaN()

	// FI_MIN keeps the target when either is NaN; -0 and +0 are equal.
	dst := put(nan, 1, math.Copysign(0, -1))
	require.NoError(t, kit.ApplyAtomic(ep.OpMin, ep.Double, dst, put(1, nan, 0), nil, nil))
	require.True(t, math.IsNaN(get(dst, 0)))
	require.Equal(t, 1.0, get(dst, 1))
	require.True(t, math.Signbit(get(dst, 2)))

	// A NaN compare value swaps only for FI_CSWAP_NE.
	for op, swaps := range map[ep.AtomicOp]bool{ep.OpCSwap: false, ep.OpCSwapNE: true,
		ep.OpCSwapLE: false, ep.OpCSwapGE: false, ep.OpCSwapLT: false, ep.OpCSwapGT: false} {
		dst := put(nan)
		require.NoError(t, kit.ApplyAtomic(op, ep.Double, dst, put(7), put(nan), nil))
		require.Equal(t, swaps, get(dst, 0) == 7, "op %d", op)
	}
	// FI_CSWAP: +0 == -0.
	dst = put(0)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwap, ep.Double, dst, put(5), put(math.Copysign(0, -1)), nil))
	require.Equal(t, 5.0, get(dst, 0))
	// FI_CSWAP_LE swaps where compare <= target: 2 <= 3.
	dst = put(3, 3)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwapLE, ep.Double, dst, put(9, 9), put(2, 4), nil))
	require.Equal(t, []float64{9, 3}, []float64{get(dst, 0), get(dst, 1)})
	// Logical: NaN is true.
	dst = put(nan, 0)
	require.NoError(t, kit.ApplyAtomic(ep.OpLAnd, ep.Double, dst, put(2, 5), nil, nil))
	require.Equal(t, []float64{1, 0}, []float64{get(dst, 0), get(dst, 1)})
	// Overflow and ±Inf.
	dst = put(math.MaxFloat64, math.Inf(1))
	require.NoError(t, kit.ApplyAtomic(ep.OpSum, ep.Double, dst, put(math.MaxFloat64, math.Inf(-1)), nil, nil))
	require.True(t, math.IsInf(get(dst, 0), 1))
	require.True(t, math.IsNaN(get(dst, 1)))
	// Write stores the operand's bits, a signalling NaN payload included.
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, 0x7f800001)
	dst = make([]byte, 4)
	require.NoError(t, kit.ApplyAtomic(ep.OpAtomicWrite, ep.Float, dst, b, nil, nil))
	require.Equal(t, b, dst)
}

// Complex.

func putComplex[F atomicTestFloat](b []byte, v [2]F) {
	n := binary.Size(v[0])
	putFloat(b, v[0])
	putFloat(b[n:], v[1])
}

func getComplex[F atomicTestFloat](b []byte) [2]F {
	var v [2]F
	n := binary.Size(v[0])
	return [2]F{getFloat[F](b), getFloat[F](b[n:])}
}

func sameComplex[F atomicTestFloat](a, b [2]F) bool {
	return sameFloat(a[0], b[0]) && sameFloat(a[1], b[1])
}

// wantComplex computes products as C's textbook formula, each product
// rounded to F; the grid's values never reach C's infinity recovery.
func wantComplex[F atomicTestFloat](op ep.AtomicOp, d, s, c [2]F) [2]F {
	truth := func(v [2]F) bool { return v[0] != 0 || v[1] != 0 }
	one := func(b bool) [2]F {
		if b {
			return [2]F{1, 0}
		}
		return [2]F{0, 0}
	}
	switch op {
	case ep.OpSum:
		return [2]F{d[0] + s[0], d[1] + s[1]}
	case ep.OpProd:
		ac, bd := F(d[0]*s[0]), F(d[1]*s[1])
		ad, bc := F(d[0]*s[1]), F(d[1]*s[0])
		return [2]F{ac - bd, ad + bc}
	case ep.OpLOr:
		return one(truth(d) || truth(s))
	case ep.OpLAnd:
		return one(truth(d) && truth(s))
	case ep.OpLXor:
		return one(truth(d) != truth(s))
	case ep.OpAtomicWrite:
		return s
	case ep.OpCSwap:
		if c[0] == d[0] && c[1] == d[1] {
			return s
		}
	case ep.OpCSwapNE:
		if !(c[0] == d[0] && c[1] == d[1]) {
			return s
		}
	}
	return d
}

func TestAtomicComplex(t *testing.T) {
	nan := math.NaN()
	negz := math.Copysign(0, -1)
	c64 := [][2]float32{{0, 0}, {float32(negz), 0}, {1.5, -2}, {float32(nan), 0}, {0, float32(nan)},
		{3, 4}, {-1e10, 1e-3}, {1.0 / 3, 0.1}}
	c128 := [][2]float64{{0, 0}, {negz, 0}, {1.5, -2}, {nan, 0}, {0, nan}, {3, 4},
		{-1e100, 1e-300}, {1.0 / 3, 0.1}}
	for _, op := range slices.Sorted(maps.Keys(atomicMatrix)) {
		if slices.Contains(atomicMatrix[op], ep.FloatComplex) {
			atomicGrid(t, ep.FloatComplex, op, c64, putComplex[float32], getComplex[float32], wantComplex[float32], sameComplex[float32])
		}
		if slices.Contains(atomicMatrix[op], ep.DoubleComplex) {
			atomicGrid(t, ep.DoubleComplex, op, c128, putComplex[float64], getComplex[float64], wantComplex[float64], sameComplex[float64])
		}
	}
}

func TestAtomicComplexExamples(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	prod := func(d, s [2]float64) [2]float64 {
		dst, src := make([]byte, 16), make([]byte, 16)
		putComplex(dst, d)
		putComplex(src, s)
		require.NoError(t, kit.ApplyAtomic(ep.OpProd, ep.DoubleComplex, dst, src, nil, nil))
		return getComplex[float64](dst)
	}
	require.Equal(t, [2]float64{-5, 10}, prod([2]float64{1, 2}, [2]float64{3, 4}))
	// Annex G: an infinite factor gives an infinite product, where the
	// textbook formula gives NaN + NaN i.
	require.Equal(t, [2]float64{inf, inf}, prod([2]float64{inf, inf}, [2]float64{1, 0}))
	require.Equal(t, [2]float64{inf, inf}, prod([2]float64{inf, nan}, [2]float64{1, 1}))
	// Overflowing partial products next to a NaN.
	dst, src := make([]byte, 8), make([]byte, 8)
	putComplex(dst, [2]float32{1e30, 1e30})
	putComplex(src, [2]float32{1e30, float32(nan)})
	require.NoError(t, kit.ApplyAtomic(ep.OpProd, ep.FloatComplex, dst, src, nil, nil))
	require.Equal(t, [2]float32{float32(inf), float32(inf)}, getComplex[float32](dst))
	// float complex products round each product to float, as C does, not
	// through double as Go's complex64 multiplication does: here the two
	// differ in the last bit of the imaginary part.
	x, y := math.Float32frombits(0x3f802801), math.Float32frombits(0x40403e2b)
	putComplex(dst, [2]float32{x, y})
	putComplex(src, [2]float32{y, x})
	require.NoError(t, kit.ApplyAtomic(ep.OpProd, ep.FloatComplex, dst, src, nil, nil))
	got := getComplex[float32](dst)
	require.Equal(t, uint32(0x41206752), math.Float32bits(got[1]))
	require.NotEqual(t, imag(complex(x, y)*complex(y, x)), got[1])
	require.Equal(t, float32(0), got[0])
	// Logical: a number with a NaN part is true.
	dst = make([]byte, 16)
	putComplex(dst, [2]float64{0, nan})
	require.NoError(t, kit.ApplyAtomic(ep.OpLAnd, ep.DoubleComplex, dst, make([]byte, 16), nil, nil))
	require.Equal(t, [2]float64{0, 0}, getComplex[float64](dst))
	putComplex(dst, [2]float64{0, nan})
	src = make([]byte, 16)
	putComplex(src, [2]float64{0, -2})
	require.NoError(t, kit.ApplyAtomic(ep.OpLAnd, ep.DoubleComplex, dst, src, nil, nil))
	require.Equal(t, [2]float64{1, 0}, getComplex[float64](dst))
}

func TestAtomicReadAndFetch(t *testing.T) {
	dst := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	old := make([]byte, 8)
	require.NoError(t, kit.ApplyAtomic(ep.OpAtomicRead, ep.Uint16, dst, nil, nil, old))
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, dst)
	require.Equal(t, dst, old)

	// Fetch-add with old being src: every element's operand is read
	// before its old value lands.
	buf := make([]byte, 8)
	binary.NativeEndian.PutUint32(buf, 10)
	binary.NativeEndian.PutUint32(buf[4:], 20)
	dst = make([]byte, 8)
	binary.NativeEndian.PutUint32(dst, 1)
	binary.NativeEndian.PutUint32(dst[4:], 2)
	require.NoError(t, kit.ApplyAtomic(ep.OpSum, ep.Int32, dst, buf, nil, buf))
	require.Equal(t, []uint32{11, 22}, []uint32{binary.NativeEndian.Uint32(dst), binary.NativeEndian.Uint32(dst[4:])})
	require.Equal(t, []uint32{1, 2}, []uint32{binary.NativeEndian.Uint32(buf), binary.NativeEndian.Uint32(buf[4:])})

	// Compare form: old gets the target whether or not it swapped.
	dst, src, cmp := make([]byte, 16), make([]byte, 16), make([]byte, 16)
	binary.NativeEndian.PutUint64(dst, 5)
	binary.NativeEndian.PutUint64(dst[8:], 6)
	binary.NativeEndian.PutUint64(src, 50)
	binary.NativeEndian.PutUint64(src[8:], 60)
	binary.NativeEndian.PutUint64(cmp, 5)
	binary.NativeEndian.PutUint64(cmp[8:], 5)
	old = make([]byte, 16)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwap, ep.Uint64, dst, src, cmp, old))
	require.Equal(t, []uint64{50, 6}, []uint64{binary.NativeEndian.Uint64(dst), binary.NativeEndian.Uint64(dst[8:])})
	require.Equal(t, []uint64{5, 6}, []uint64{binary.NativeEndian.Uint64(old), binary.NativeEndian.Uint64(old[8:])})
}

func TestAtomicAllocs(t *testing.T) {
	dst, src := make([]byte, 64*8), make([]byte, 64*8)
	for i := range 64 {
		binary.NativeEndian.PutUint64(src[8*i:], math.Float64bits(float64(i)+0.5))
	}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = kit.ApplyAtomic(ep.OpSum, ep.Double, dst, src, nil, nil)
	}))
	require.Equal(t, 1.5*101, // AllocsPerRun calls once more to warm up
		math.Float64frombits(binary.NativeEndian.Uint64(dst[8:])))

	d, s, c, old := make([]byte, 8), make([]byte, 8), make([]byte, 8), make([]byte, 8)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = kit.ApplyAtomic(ep.OpCSwap, ep.Uint64, d, s, c, old)
	}))

	// Every supported pair, fetching, but long double arithmetic, which
	// goes through math/big.
	for op := ep.AtomicOp(0); int(op) < atomicOpCount; op++ {
		for _, dt := range atomicMatrix[op] {
			if (dt == ep.LongDouble || dt == ep.LongDoubleComplex) && (op == ep.OpSum || op == ep.OpProd) {
				continue
			}
			size, _ := kit.AtomicSize(dt)
			dst, src, old := atomicFilled(4*size, 0x11), atomicFilled(4*size, 0x23), make([]byte, 4*size)
			var cmp []byte
			if isCompareOp(op) {
				cmp = atomicFilled(4*size, 0x11)
			}
			require.Zero(t, testing.AllocsPerRun(20, func() {
				_ = kit.ApplyAtomic(op, dt, dst, src, cmp, old)
			}), "op %d datatype %d", op, dt)
		}
	}
}

// Long double.

// ld is a long double from its sign+exponent and significand fields.
func ldBits(se uint16, m uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, m)
	binary.LittleEndian.PutUint16(b[8:], se)
	return b
}

// fromLD decodes a long double whose value a float64 holds.
func fromLD(b []byte) float64 {
	m, se := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint16(b[8:])
	e := int(se & 0x7fff)
	var v float64
	switch {
	case e == 0x7fff && m<<1 == 0:
		v = math.Inf(1)
	case e == 0x7fff:
		v = math.NaN()
	default:
		v = math.Ldexp(float64(m), max(e, 1)-16383-63)
	}
	if se&0x8000 != 0 {
		v = math.Copysign(v, -1)
	}
	return v
}

func TestAtomicLongDoubleGrid(t *testing.T) {
	// Sums and products of these are exact in a double, so the double
	// result is the long double one.
	vals := []float64{math.NaN(), math.Inf(-1), -3.5, -1, math.Copysign(0, -1), 0, 0.125, 1, 1.5, 3, 1024, math.Inf(1)}
	put := func(b []byte, v float64) { copy(b, kit.LongDoubleBytes(v)) }
	for _, op := range slices.Sorted(maps.Keys(atomicMatrix)) {
		if slices.Contains(atomicMatrix[op], ep.LongDouble) {
			atomicGrid(t, ep.LongDouble, op, vals, put, fromLD, wantFloat[float64], sameFloat[float64])
		}
	}
	cvals := [][2]float64{{0, 0}, {math.Copysign(0, -1), 0}, {1.5, -2}, {math.NaN(), 0}, {3, 4}, {-0.25, 1024}}
	cput := func(b []byte, v [2]float64) {
		copy(b, kit.LongDoubleBytes(v[0]))
		copy(b[16:], kit.LongDoubleBytes(v[1]))
	}
	cget := func(b []byte) [2]float64 { return [2]float64{fromLD(b), fromLD(b[16:])} }
	for _, op := range slices.Sorted(maps.Keys(atomicMatrix)) {
		if slices.Contains(atomicMatrix[op], ep.LongDoubleComplex) {
			atomicGrid(t, ep.LongDoubleComplex, op, cvals, cput, cget, wantComplex[float64], sameComplex[float64])
		}
	}
}

func TestAtomicLongDoubleRoundTrip(t *testing.T) {
	// Through the engine's decoding and encoding: v×1 and v+0 are v.
	for _, v := range []float64{1, -1, 1.0 / 3, -2.75, 1e300, -1e-300, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, 0x1p-1022, 0x1.fffffffffffffp-1023, math.Inf(1), math.Inf(-1)} {
		dst := kit.LongDoubleBytes(v)
		require.NoError(t, kit.ApplyAtomic(ep.OpProd, ep.LongDouble, dst, kit.LongDoubleBytes(1), nil, nil))
		require.Equal(t, kit.LongDoubleBytes(v), dst, "%g × 1", v)
		require.NoError(t, kit.ApplyAtomic(ep.OpSum, ep.LongDouble, dst, kit.LongDoubleBytes(0), nil, nil))
		require.Equal(t, kit.LongDoubleBytes(v), dst, "%g + 0", v)
		require.Equal(t, v, fromLD(dst))
	}
}

// ldOp applies op to single long doubles and returns the target.
func ldOp(t *testing.T, op ep.AtomicOp, d, s []byte) []byte {
	t.Helper()
	dst := slices.Clone(d)
	require.NoError(t, kit.ApplyAtomic(op, ep.LongDouble, dst, s, nil, nil))
	return dst
}

func TestAtomicLongDoubleArithmetic(t *testing.T) {
	const one, sign = 0x3fff, 0x8000
	const top = 1 << 63
	var (
		ld1       = ldBits(one, top)
		max       = ldBits(0x7ffe, math.MaxUint64)
		inf       = ldBits(0x7fff, top)
		minNormal = ldBits(1, top)
		tiny      = ldBits(0, 1) // 2^-16445
		half      = ldBits(one-1, top)
		indef     = ldBits(0xffff, 0xc000000000000000)
	)
	sum := func(d, s []byte) []byte { return ldOp(t, ep.OpSum, d, s) }
	prod := func(d, s []byte) []byte { return ldOp(t, ep.OpProd, d, s) }

	// 64-bit significand: 1 + 2^-63 is exact, and exactly 2^-63 above 1.
	onePlus := sum(ld1, ldBits(one-63, top))
	require.Equal(t, ldBits(one, top|1), onePlus)
	require.Equal(t, ldBits(one-63, top), sum(onePlus, ldBits(one|sign, top)))
	// Ties go to even; anything above a tie rounds up.
	require.Equal(t, ld1, sum(ld1, ldBits(one-64, top)))                                // 1 + 2^-64
	require.Equal(t, ldBits(one, top|2), sum(onePlus, ldBits(one-64, top)))             // (1+2^-63) + 2^-64
	require.Equal(t, ldBits(one, top|1), sum(ld1, ldBits(one-64, top|1)))               // 1 + 2^-64 + 2^-127
	require.Equal(t, ldBits(one, top|1), sum(ld1, ldBits(one-64, top|1<<62)))           // 1 + 1.5 × 2^-64
	require.Equal(t, ldBits(one-1, math.MaxUint64), sum(ld1, ldBits(one|sign-64, top))) // 1 - 2^-64 is exact
	require.Equal(t, ldBits(0x3ffd, 0xaaaaaaaaaaaaaaab), prod(ldBits(0x3ffd, 0xaaaaaaaaaaaaaaab), ld1))
	// (2^32+1)² = 2^64 + 2^33 + 1 rounds to 2^64 + 2^33.
	require.Equal(t, ldBits(one+64, top|1<<32), prod(ldBits(one+32, top|1<<31), ldBits(one+32, top|1<<31)))

	// Overflow gives infinity; half an ulp over the largest value too.
	require.Equal(t, inf, sum(max, max))
	require.Equal(t, ldBits(0xffff, top), sum(ldBits(0xfffe, math.MaxUint64), ldBits(0xfffe, math.MaxUint64)))
	require.Equal(t, inf, sum(max, ldBits(0x7ffe-64, top))) // + 2^16319, a tie, to even (up)
	require.Equal(t, max, sum(max, ldBits(0x7ffe-65, top))) // + 2^16318
	require.Equal(t, inf, prod(ldBits(0x7ffe, top), ldBits(one+1, top)))
	require.Equal(t, max, prod(max, ld1))

	// Underflow: denormals on the 2^-16445 grid, ties to even.
	require.Equal(t, ldBits(0, 1<<62), prod(minNormal, half))
	require.Equal(t, ldBits(0, 0), prod(tiny, half))
	require.Equal(t, ldBits(sign, 0), prod(ldBits(sign, 1), half))
	require.Equal(t, ldBits(0, 2), prod(ldBits(0, 3), half))             // 1.5 → 2
	require.Equal(t, ldBits(0, 2), prod(ldBits(0, 5), half))             // 2.5 → 2
	require.Equal(t, ldBits(0, 1), prod(tiny, ldBits(one-1, top|1<<62))) // 0.75 → 1
	require.Equal(t, minNormal, sum(ldBits(0, top-1), tiny))
	require.Equal(t, ldBits(0, 2), sum(tiny, tiny))
	require.Equal(t, ldBits(0, 0), sum(tiny, ldBits(sign, 1))) // x + -x is +0
	require.Equal(t, ldBits(sign, 0), sum(ldBits(sign, 0), ldBits(sign, 0)))

	// NaN: the NaN operand made quiet; Inf - Inf and 0 × Inf give the
	// default NaN.
	snan := ldBits(0x7fff, top|1)
	require.Equal(t, ldBits(0x7fff, top|1<<62|1), sum(snan, ld1))
	require.Equal(t, ldBits(0x7fff, top|1<<62|1), prod(ld1, snan))
	// Of a quiet and a signalling NaN the quiet one, of two quiet (or two
	// signalling) ones the larger significand.
	require.Equal(t, ldBits(0x7fff, top|1<<62|3), sum(ldBits(0x7fff, top|1<<62|3), ldBits(0xffff, top|7)))
	require.Equal(t, ldBits(0xffff, top|1<<62|7), prod(ldBits(0x7fff, top|1<<62|3), ldBits(0xffff, top|1<<62|7)))
	require.Equal(t, ldBits(0x7fff, top|1<<62|9), prod(ldBits(0x7fff, top|9), ldBits(0xffff, top|7)))
	require.Equal(t, indef, sum(inf, ldBits(0xffff, top)))
	require.Equal(t, indef, prod(ldBits(0, 0), inf))
	require.Equal(t, ldBits(0xffff, top), prod(inf, ldBits(one|sign, top)))
	// Encodings x87 rejects give the default NaN, and compare unordered.
	unnormal := ldBits(one, 1<<62)
	require.Equal(t, indef, sum(unnormal, ld1))
	require.Equal(t, indef, prod(ldBits(0x7fff, 0), ld1)) // pseudo-infinity
	dst := slices.Clone(unnormal)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwap, ep.LongDouble, dst, ld1, slices.Clone(unnormal), nil))
	require.Equal(t, unnormal, dst)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwapNE, ep.LongDouble, dst, ld1, slices.Clone(unnormal), nil))
	require.Equal(t, ld1, dst)
	// A pseudo-denormal equals the normal of the same value and is
	// written back canonical.
	dst = ldBits(1, top)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwap, ep.LongDouble, dst, ld1, ldBits(0, top), nil))
	require.Equal(t, ld1, dst)
	require.Equal(t, minNormal, sum(ldBits(0, top), ldBits(0, 0)))

	// Compares by value: 1+2^-63 > 1, -0 == +0.
	dst = slices.Clone(ld1)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwapGT, ep.LongDouble, dst, half, onePlus, nil))
	require.Equal(t, half, dst)
	dst = ldBits(0, 0)
	require.NoError(t, kit.ApplyAtomic(ep.OpCSwap, ep.LongDouble, dst, ld1, ldBits(sign, 0), nil))
	require.Equal(t, ld1, dst)
	dst = slices.Clone(ld1)
	require.NoError(t, kit.ApplyAtomic(ep.OpMax, ep.LongDouble, dst, onePlus, nil, nil))
	require.Equal(t, onePlus, dst)
	require.NoError(t, kit.ApplyAtomic(ep.OpMin, ep.LongDouble, dst, ldBits(0, 5), nil, nil))
	require.Equal(t, ldBits(0, 5), dst)
}

func TestAtomicLongDoublePadding(t *testing.T) {
	// The 6 bytes after the value are C's padding: left as they were.
	dst := kit.LongDoubleBytes(2)
	for i := 10; i < 16; i++ {
		dst[i] = 0xab
	}
	want := kit.LongDoubleBytes(5)
	copy(want[10:], dst[10:])
	require.NoError(t, kit.ApplyAtomic(ep.OpSum, ep.LongDouble, dst, kit.LongDoubleBytes(3), nil, nil))
	require.Equal(t, want, dst)
	src := kit.LongDoubleBytes(-1)
	src[15] = 0x77
	require.NoError(t, kit.ApplyAtomic(ep.OpAtomicWrite, ep.LongDouble, dst, src, nil, nil))
	require.Equal(t, -1.0, fromLD(dst))
	require.Equal(t, atomicFilled(6, 0xab), dst[10:])
	// old gets the whole element, padding included.
	old := make([]byte, 16)
	require.NoError(t, kit.ApplyAtomic(ep.OpAtomicRead, ep.LongDouble, dst, nil, nil, old))
	require.Equal(t, dst, old)
}

func TestAtomicLongDoubleComplex(t *testing.T) {
	ldc := func(re, im float64) []byte { return slices.Concat(kit.LongDoubleBytes(re), kit.LongDoubleBytes(im)) }
	get := func(b []byte) [2]float64 { return [2]float64{fromLD(b), fromLD(b[16:])} }
	apply := func(op ep.AtomicOp, d, s, c []byte) [2]float64 {
		t.Helper()
		require.NoError(t, kit.ApplyAtomic(op, ep.LongDoubleComplex, d, s, c, nil))
		return get(d)
	}
	inf, nan := math.Inf(1), math.NaN()
	require.Equal(t, [2]float64{4, -2}, apply(ep.OpSum, ldc(1, 2), ldc(3, -4), nil))
	require.Equal(t, [2]float64{-5, 10}, apply(ep.OpProd, ldc(1, 2), ldc(3, 4), nil))
	require.Equal(t, [2]float64{inf, inf}, apply(ep.OpProd, ldc(inf, inf), ldc(1, 0), nil))
	require.Equal(t, [2]float64{1, 0}, apply(ep.OpLOr, ldc(0, nan), ldc(0, 0), nil))
	require.Equal(t, [2]float64{0, 0}, apply(ep.OpLXor, ldc(0, 1), ldc(2, 0), nil))
	require.Equal(t, [2]float64{7, 8}, apply(ep.OpCSwap, ldc(1, 0), ldc(7, 8), ldc(1, math.Copysign(0, -1))))
	require.Equal(t, [2]float64{1, 2}, apply(ep.OpCSwapNE, ldc(1, 2), ldc(7, 8), ldc(1, 2)))
	// The real part's product keeps 64 bits: (1+2^-40)² = 1 + 2^-39 + 2^-80.
	x := 1 + 0x1p-40
	got := ldc(x, 0)
	require.NoError(t, kit.ApplyAtomic(ep.OpProd, ep.LongDoubleComplex, got, ldc(x, 0), nil, nil))
	require.Equal(t, ldBits(0x3fff, 1<<63|1<<24), got[:16]) // 2^-80 is below the last bit, 2^-63: dropped
	require.Equal(t, kit.LongDoubleBytes(0), got[16:])
}

func TestAtomicAligned(t *testing.T) {
	mem := make([]byte, 64+16)
	base := 16 - int(uintptr(unsafe.Pointer(&mem[0]))%16) // mem[base:] is 16-byte aligned
	for dt, align := range map[ep.Datatype]int{
		ep.Int8: 1, ep.Uint16: 2, ep.Int32: 4, ep.Uint64: 8, ep.Float: 4, ep.Double: 8,
		ep.FloatComplex: 4, ep.DoubleComplex: 8, ep.LongDouble: 16, ep.LongDoubleComplex: 16, ep.Int128: 16,
	} {
		for off := range 16 {
			require.Equal(t, off%align == 0, kit.AtomicAligned(mem[base+off:base+off+1], dt), "%v at +%d", dt, off)
		}
	}
	require.True(t, kit.AtomicAligned(nil, ep.Uint64), "no memory")
	require.True(t, kit.AtomicAligned(mem[base+1:], ep.Uint128+1), "unknown datatype")
}
