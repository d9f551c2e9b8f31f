package fabtests

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"

	"github.com/gofabric/gofabric/ep"
)

// This file is the atomic group's own model of fi_atomic(3): the element
// sizes, the values the group puts in the target and the operands, and
// what each operation makes of them, in plain Go arithmetic per datatype.
// It is written apart from kit.ApplyAtomic, the engine that providers
// built on the kit run at the target, so that the group does not check
// that engine against itself.

// atomicOps are the operations of libfabric 1.17 (enum fi_op), in order.
var atomicOps = []ep.AtomicOp{
	ep.OpMin, ep.OpMax, ep.OpSum, ep.OpProd, ep.OpLOr, ep.OpLAnd, ep.OpBOr, ep.OpBAnd, ep.OpLXor, ep.OpBXor,
	ep.OpAtomicRead, ep.OpAtomicWrite, ep.OpCSwap, ep.OpCSwapNE, ep.OpCSwapLE, ep.OpCSwapLT, ep.OpCSwapGE,
	ep.OpCSwapGT, ep.OpMSwap,
}

// atomicTypes are the datatypes of libfabric 1.17 (enum fi_datatype), in
// order.
var atomicTypes = []ep.Datatype{
	ep.Int8, ep.Uint8, ep.Int16, ep.Uint16, ep.Int32, ep.Uint32, ep.Int64, ep.Uint64, ep.Float, ep.Double,
	ep.FloatComplex, ep.DoubleComplex, ep.LongDouble, ep.LongDoubleComplex,
}

var atomicOpNames = map[ep.AtomicOp]string{
	ep.OpMin: "FI_MIN", ep.OpMax: "FI_MAX", ep.OpSum: "FI_SUM", ep.OpProd: "FI_PROD", ep.OpLOr: "FI_LOR",
	ep.OpLAnd: "FI_LAND", ep.OpBOr: "FI_BOR", ep.OpBAnd: "FI_BAND", ep.OpLXor: "FI_LXOR", ep.OpBXor: "FI_BXOR",
	ep.OpAtomicRead: "FI_ATOMIC_READ", ep.OpAtomicWrite: "FI_ATOMIC_WRITE", ep.OpCSwap: "FI_CSWAP",
	ep.OpCSwapNE: "FI_CSWAP_NE", ep.OpCSwapLE: "FI_CSWAP_LE", ep.OpCSwapLT: "FI_CSWAP_LT",
	ep.OpCSwapGE: "FI_CSWAP_GE", ep.OpCSwapGT: "FI_CSWAP_GT", ep.OpMSwap: "FI_MSWAP",
}

var atomicTypeNames = map[ep.Datatype]string{
	ep.Int8: "FI_INT8", ep.Uint8: "FI_UINT8", ep.Int16: "FI_INT16", ep.Uint16: "FI_UINT16",
	ep.Int32: "FI_INT32", ep.Uint32: "FI_UINT32", ep.Int64: "FI_INT64", ep.Uint64: "FI_UINT64",
	ep.Float: "FI_FLOAT", ep.Double: "FI_DOUBLE", ep.FloatComplex: "FI_FLOAT_COMPLEX",
	ep.DoubleComplex: "FI_DOUBLE_COMPLEX", ep.LongDouble: "FI_LONG_DOUBLE",
	ep.LongDoubleComplex: "FI_LONG_DOUBLE_COMPLEX",
}

func opName(op ep.AtomicOp) string {
	if n, ok := atomicOpNames[op]; ok {
		return n
	}
	return "op " + strconv.Itoa(int(op))
}

func typeName(dt ep.Datatype) string {
	if n, ok := atomicTypeNames[dt]; ok {
		return n
	}
	return "datatype " + strconv.Itoa(int(dt))
}

// atomicElemSize is the size of one element of dt as C lays it out on
// x86-64 Linux (ofi_datatype_size): a long double takes 16 bytes, of
// which the low 10 hold the x87 extended value.
func atomicElemSize(dt ep.Datatype) int {
	switch dt {
	case ep.Int8, ep.Uint8:
		return 1
	case ep.Int16, ep.Uint16:
		return 2
	case ep.Int32, ep.Uint32, ep.Float:
		return 4
	case ep.Int64, ep.Uint64, ep.Double, ep.FloatComplex:
		return 8
	case ep.DoubleComplex, ep.LongDouble:
		return 16
	case ep.LongDoubleComplex:
		return 32
	}
	return 0
}

// atomicModel is the group's model of one datatype: a few rows of
// values, each a target element d, an operand s and a compare operand c,
// chosen so that the operations have different outcomes from one row to
// the next (min and max that take and that keep, compares that are less,
// equal and greater, logical operations on zero and non-zero values,
// negative values of signed types, sums and products that wrap around or
// overflow), and each operation computed on one element.
type atomicModel interface {
	// size is the element's size in bytes.
	size() int
	// rows is the number of value rows.
	rows() int
	// put encodes row r's target, operand and compare values into d, s
	// and c, each one element long.
	put(r int, d, s, c []byte)
	// apply computes op on the element d with operand s (absent for
	// FI_ATOMIC_READ) and compare operand c (compare operations only)
	// into out, the element's value afterwards, as fi_atomic(3) defines
	// it; false when it defines no such operation on the datatype.
	apply(op ep.AtomicOp, d, s, c, out []byte) bool
	// ignore sets to 1 the bytes of an element that hold no part of its
	// value (the padding of a long double), which no check compares.
	ignore(b []byte)
	// format prints an element for failure messages.
	format(b []byte) string
}

// atomicModelOf returns the model of dt, or nil and the reason the group
// cannot check it here.
func atomicModelOf(dt ep.Datatype) (atomicModel, string) {
	switch dt {
	case ep.Int8:
		return intModel[int8]{1}, ""
	case ep.Uint8:
		return intModel[uint8]{1}, ""
	case ep.Int16:
		return intModel[int16]{2}, ""
	case ep.Uint16:
		return intModel[uint16]{2}, ""
	case ep.Int32:
		return intModel[int32]{4}, ""
	case ep.Uint32:
		return intModel[uint32]{4}, ""
	case ep.Int64:
		return intModel[int64]{8}, ""
	case ep.Uint64:
		return intModel[uint64]{8}, ""
	case ep.Float:
		return floatModel[float32]{4, 3e38}, ""
	case ep.Double:
		return floatModel[float64]{8, 1e308}, ""
	case ep.FloatComplex:
		return complexModel{single: true}, ""
	case ep.DoubleComplex:
		return complexModel{}, ""
	case ep.LongDouble, ep.LongDoubleComplex:
		if runtime.GOARCH != "amd64" {
			return nil, "long double is modelled as x87 extended precision in 16 bytes, as on x86-64, not " + runtime.GOARCH
		}
		return f80Model{complex: dt == ep.LongDoubleComplex}, ""
	}
	return nil, "unknown datatype"
}

// atomicInteger are the integer element types.
type atomicInteger interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

// truth is C's conversion of a truth value to an arithmetic type.
func truth[T atomicInteger | ~float32 | ~float64](b bool) T {
	if b {
		return 1
	}
	return 0
}

// intModel models the integer type T of sz bytes, stored in host order.
type intModel[T atomicInteger] struct{ sz int }

func (m intModel[T]) size() int { return m.sz }
func (m intModel[T]) rows() int { return 8 }

func (m intModel[T]) load(b []byte) T {
	switch m.sz {
	case 1:
		return T(b[0])
	case 2:
		return T(binary.NativeEndian.Uint16(b))
	case 4:
		return T(binary.NativeEndian.Uint32(b))
	}
	return T(binary.NativeEndian.Uint64(b))
}

func (m intModel[T]) store(b []byte, v T) {
	switch m.sz {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(b, uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b, uint32(v))
	default:
		binary.NativeEndian.PutUint64(b, uint64(v))
	}
}

// row returns row r: d, s and c.
func (m intModel[T]) row(r int) [3]T {
	var zero T
	neg := func(v T) T { return zero - v }
	high := T(1) << (8*m.sz - 1) // the sign bit: the minimum of a signed type
	signed := zero-1 < zero
	maxv := ^zero
	if signed {
		maxv = ^high
	}
	switch r {
	case 0:
		return [3]T{5, 3, 7} // min takes, compare greater
	case 1:
		return [3]T{9, 12, 9} // max takes, compare equal
	case 2:
		return [3]T{0, 6, 2} // zero target, non-zero operand
	case 3:
		return [3]T{6, 0, 1} // non-zero target, zero operand, compare less
	case 4:
		return [3]T{0, 0, 0}
	case 5:
		return [3]T{maxv - 2, 7, maxv - 2} // sum and product wrap around
	case 6:
		if signed {
			return [3]T{neg(3), neg(8), neg(5)} // negatives: min takes, compare less
		}
		return [3]T{high | 1, 15, maxv} // the high bit set; compare greater
	}
	if signed {
		return [3]T{high + 1, neg(2), high} // sum wraps below the minimum
	}
	return [3]T{3, maxv, 0} // sum wraps to 2
}

func (m intModel[T]) put(r int, d, s, c []byte) {
	v := m.row(r)
	m.store(d, v[0])
	m.store(s, v[1])
	m.store(c, v[2])
}

func (m intModel[T]) apply(op ep.AtomicOp, db, sb, cb, out []byte) bool {
	d := m.load(db)
	var s, c T
	if len(sb) > 0 {
		s = m.load(sb)
	}
	if len(cb) > 0 {
		c = m.load(cb)
	}
	v := d
	switch op {
	case ep.OpMin:
		if s < d {
			v = s
		}
	case ep.OpMax:
		if s > d {
			v = s
		}
	case ep.OpSum:
		v = d + s
	case ep.OpProd:
		v = d * s
	case ep.OpLOr:
		v = truth[T](d != 0 || s != 0)
	case ep.OpLAnd:
		v = truth[T](d != 0 && s != 0)
	case ep.OpBOr:
		v = d | s
	case ep.OpBAnd:
		v = d & s
	case ep.OpLXor:
		v = truth[T](d != 0 && s == 0 || d == 0 && s != 0)
	case ep.OpBXor:
		v = d ^ s
	case ep.OpAtomicRead:
	case ep.OpAtomicWrite:
		v = s
	case ep.OpCSwap:
		if c == d {
			v = s
		}
	case ep.OpCSwapNE:
		if c != d {
			v = s
		}
	case ep.OpCSwapLE:
		if c <= d {
			v = s
		}
	case ep.OpCSwapLT:
		if c < d {
			v = s
		}
	case ep.OpCSwapGE:
		if c >= d {
			v = s
		}
	case ep.OpCSwapGT:
		if c > d {
			v = s
		}
	case ep.OpMSwap:
		v = s&c | d&^c
	default:
		return false
	}
	m.store(out, v)
	return true
}

func (m intModel[T]) ignore([]byte) {}

func (m intModel[T]) format(b []byte) string { return fmt.Sprint(m.load(b)) }

// realOp computes the operations fi_atomic(3) defines on real numbers
// (float, double, and long double here as float64), C's comparisons
// included: -0 equals +0, and min and max keep the target unless the
// operand is strictly less or greater.
func realOp[F ~float32 | ~float64](op ep.AtomicOp, d, s, c F) (F, bool) {
	v := d
	switch op {
	case ep.OpMin:
		if s < d {
			v = s
		}
	case ep.OpMax:
		if s > d {
			v = s
		}
	case ep.OpSum:
		v = d + s
	case ep.OpProd:
		v = d * s
	case ep.OpLOr:
		v = truth[F](d != 0 || s != 0)
	case ep.OpLAnd:
		v = truth[F](d != 0 && s != 0)
	case ep.OpLXor:
		v = truth[F](d != 0 && s == 0 || d == 0 && s != 0)
	case ep.OpAtomicRead:
	case ep.OpAtomicWrite:
		v = s
	case ep.OpCSwap:
		if c == d {
			v = s
		}
	case ep.OpCSwapNE:
		if c != d {
			v = s
		}
	case ep.OpCSwapLE:
		if c <= d {
			v = s
		}
	case ep.OpCSwapLT:
		if c < d {
			v = s
		}
	case ep.OpCSwapGE:
		if c >= d {
			v = s
		}
	case ep.OpCSwapGT:
		if c > d {
			v = s
		}
	default:
		return 0, false
	}
	return v, true
}

// negZero is -0.
var negZero = math.Copysign(0, -1)

// realRows are the rows of the real types: big is a value whose double
// overflows (sum and product go to +Inf), or 0 for long double, whose
// range holds it.
func realRows(r int, big float64) [3]float64 {
	switch r {
	case 0:
		return [3]float64{5, 3, 7}
	case 1:
		return [3]float64{9, 12, 9}
	case 2:
		return [3]float64{0, 6, 2}
	case 3:
		return [3]float64{6, 0, 1}
	case 4:
		return [3]float64{0, 0, 0}
	case 5:
		if big != 0 {
			return [3]float64{big, big, big} // sum and product overflow to +Inf
		}
		return [3]float64{1024, 0.25, 2048}
	case 6:
		return [3]float64{-3.5, -8.25, -5} // exact sum -11.75 and product 28.875
	}
	return [3]float64{negZero, 0.5, 0} // -0: equal to +0, false, kept by min
}

// floatModel models the IEEE type F of sz bytes.
type floatModel[F ~float32 | ~float64] struct {
	sz  int
	big float64
}

func (m floatModel[F]) size() int { return m.sz }
func (m floatModel[F]) rows() int { return 8 }

func (m floatModel[F]) load(b []byte) F {
	if m.sz == 4 {
		return F(math.Float32frombits(binary.NativeEndian.Uint32(b)))
	}
	return F(math.Float64frombits(binary.NativeEndian.Uint64(b)))
}

func (m floatModel[F]) store(b []byte, v F) {
	if m.sz == 4 {
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(v)))
		return
	}
	binary.NativeEndian.PutUint64(b, math.Float64bits(float64(v)))
}

func (m floatModel[F]) put(r int, d, s, c []byte) {
	v := realRows(r, m.big)
	m.store(d, F(v[0]))
	m.store(s, F(v[1]))
	m.store(c, F(v[2]))
}

func (m floatModel[F]) apply(op ep.AtomicOp, db, sb, cb, out []byte) bool {
	var s, c F
	if len(sb) > 0 {
		s = m.load(sb)
	}
	if len(cb) > 0 {
		c = m.load(cb)
	}
	v, ok := realOp(op, m.load(db), s, c)
	if ok {
		m.store(out, v)
	}
	return ok
}

func (m floatModel[F]) ignore([]byte) {}

func (m floatModel[F]) format(b []byte) string { return fmt.Sprint(m.load(b)) }

// complexRows are the rows of the complex types: every sum and product
// is exact, so that float and double complex agree with the arithmetic
// done here in either precision.
func complexRows(r int) [3]complex128 {
	switch r {
	case 0:
		return [3]complex128{1 + 2i, 3 - 1i, 1 + 2i} // compare equal; product 5+5i
	case 1:
		return [3]complex128{0, 5i, 1i} // zero target, non-zero operand
	case 2:
		return [3]complex128{2, 0, 2 + 1i} // real parts equal, imaginary not
	case 3:
		return [3]complex128{0, 0, 0}
	case 4:
		return [3]complex128{-1.5 + 4i, 2 + 0.5i, -1.5 + 4i} // product -5+7.25i
	case 5:
		return [3]complex128{3i, -2, 1 + 3i}
	case 6:
		return [3]complex128{complex(negZero, 0), 0.5, 0} // -0 equals +0
	}
	return [3]complex128{4 - 4i, 0.5 + 0.5i, 4 + 4i} // product 4+0i
}

// complexOp computes the operations fi_atomic(3) defines on complex
// numbers; mul is the product in the type's precision.
func complexOp(op ep.AtomicOp, d, s, c complex128, sum, mul func(a, b complex128) complex128) (complex128, bool) {
	v := d
	switch op {
	case ep.OpSum:
		v = sum(d, s)
	case ep.OpProd:
		v = mul(d, s)
	case ep.OpLOr:
		v = complex(truth[float64](d != 0 || s != 0), 0)
	case ep.OpLAnd:
		v = complex(truth[float64](d != 0 && s != 0), 0)
	case ep.OpLXor:
		v = complex(truth[float64](d != 0 && s == 0 || d == 0 && s != 0), 0)
	case ep.OpAtomicRead:
	case ep.OpAtomicWrite:
		v = s
	case ep.OpCSwap:
		if c == d {
			v = s
		}
	case ep.OpCSwapNE:
		if c != d {
			v = s
		}
	default:
		return 0, false
	}
	return v, true
}

// complexModel models float complex (single) or double complex: the real
// part, then the imaginary part.
type complexModel struct{ single bool }

func (m complexModel) part() int {
	if m.single {
		return 4
	}
	return 8
}

func (m complexModel) size() int { return 2 * m.part() }
func (m complexModel) rows() int { return 8 }

func (m complexModel) load(b []byte) complex128 {
	if m.single {
		return complex(float64(math.Float32frombits(binary.NativeEndian.Uint32(b))),
			float64(math.Float32frombits(binary.NativeEndian.Uint32(b[4:]))))
	}
	return complex(math.Float64frombits(binary.NativeEndian.Uint64(b)), math.Float64frombits(binary.NativeEndian.Uint64(b[8:])))
}

func (m complexModel) store(b []byte, v complex128) {
	if m.single {
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(real(v))))
		binary.NativeEndian.PutUint32(b[4:], math.Float32bits(float32(imag(v))))
		return
	}
	binary.NativeEndian.PutUint64(b, math.Float64bits(real(v)))
	binary.NativeEndian.PutUint64(b[8:], math.Float64bits(imag(v)))
}

func (m complexModel) put(r int, d, s, c []byte) {
	v := complexRows(r)
	m.store(d, v[0])
	m.store(s, v[1])
	m.store(c, v[2])
}

func (m complexModel) apply(op ep.AtomicOp, db, sb, cb, out []byte) bool {
	var s, c complex128
	if len(sb) > 0 {
		s = m.load(sb)
	}
	if len(cb) > 0 {
		c = m.load(cb)
	}
	sum := func(a, b complex128) complex128 { return a + b }
	mul := func(a, b complex128) complex128 { return a * b }
	if m.single {
		sum = func(a, b complex128) complex128 { return complex128(complex64(a) + complex64(b)) }
		mul = func(a, b complex128) complex128 { return complex128(complex64(a) * complex64(b)) }
	}
	v, ok := complexOp(op, m.load(db), s, c, sum, mul)
	if ok {
		m.store(out, v)
	}
	return ok
}

func (m complexModel) ignore([]byte) {}

func (m complexModel) format(b []byte) string { return fmt.Sprint(m.load(b)) }

// f80Model models long double (or long double complex) as x87 extended
// precision in 16 bytes (32), as C lays it out on x86-64: the group's
// values and the results of its operations on them are exact in double
// precision, so it computes in float64 and encodes the results as 80-bit
// values; the 6 padding bytes of each part are not compared.
type f80Model struct{ complex bool }

func (m f80Model) size() int {
	if m.complex {
		return 32
	}
	return 16
}

func (m f80Model) rows() int { return 8 }

// putF80 encodes v, a finite float64, as an x87 extended value in b[:10]
// (little endian: 64-bit significand with its explicit integer bit, then
// sign and 15-bit exponent) and clears the padding b[10:16].
func putF80(b []byte, v float64) {
	clear(b[:16])
	u := math.Float64bits(v)
	sign := uint16(u>>63) << 15
	exp := int(u>>52) & 0x7ff
	frac := u & (1<<52 - 1)
	var mant uint64
	var e int
	switch {
	case exp == 0 && frac == 0:
	case exp == 0: // subnormal double: normal as extended
		n := bits.LeadingZeros64(frac)
		mant = frac << n
		e = -1074 + 63 - n + 16383
	default:
		mant = 1<<63 | frac<<11
		e = exp - 1023 + 16383
	}
	binary.LittleEndian.PutUint64(b, mant)
	binary.LittleEndian.PutUint16(b[8:], sign|uint16(e))
}

// getF80 decodes an x87 extended value with at most 53 significant bits.
func getF80(b []byte) float64 {
	mant := binary.LittleEndian.Uint64(b)
	se := binary.LittleEndian.Uint16(b[8:])
	v := math.Ldexp(float64(mant), int(se&0x7fff)-16383-63)
	if se&0x8000 != 0 {
		v = math.Copysign(v, -1)
	}
	return v
}

func (m f80Model) put(r int, d, s, c []byte) {
	if m.complex {
		v := complexRows(r)
		for i, b := range [][]byte{d, s, c} {
			putF80(b, real(v[i]))
			putF80(b[16:], imag(v[i]))
		}
		return
	}
	v := realRows(r, 0)
	putF80(d, v[0])
	putF80(s, v[1])
	putF80(c, v[2])
}

func (m f80Model) load(b []byte) complex128 {
	if m.complex {
		return complex(getF80(b), getF80(b[16:]))
	}
	return complex(getF80(b), 0)
}

func (m f80Model) apply(op ep.AtomicOp, db, sb, cb, out []byte) bool {
	var s, c complex128
	if len(sb) > 0 {
		s = m.load(sb)
	}
	if len(cb) > 0 {
		c = m.load(cb)
	}
	d := m.load(db)
	if m.complex {
		v, ok := complexOp(op, d, s, c, func(a, b complex128) complex128 { return a + b },
			func(a, b complex128) complex128 { return a * b })
		if ok {
			putF80(out, real(v))
			putF80(out[16:], imag(v))
		}
		return ok
	}
	v, ok := realOp(op, real(d), real(s), real(c))
	if ok {
		putF80(out, v)
	}
	return ok
}

func (m f80Model) ignore(b []byte) {
	for p := 0; p+16 <= len(b); p += 16 {
		for i := 10; i < 16; i++ {
			b[p+i] = 1
		}
	}
}

func (m f80Model) format(b []byte) string {
	if m.complex {
		return fmt.Sprint(m.load(b))
	}
	return fmt.Sprint(getF80(b))
}
