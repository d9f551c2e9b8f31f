package kit

import (
	"encoding/binary"
	"math"
	"strconv"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// The software atomic engine: what libfabric's prov/util atomics
// (ofi_atomic_write_handler, ofi_atomic_readwrite_handler and
// ofi_atomic_swap_handler, which ofi_rxm and shm run on the target) do to
// the target memory, for providers that carry fi_atomic(3) operations in
// messages and apply them where the memory is.

// atomicOpNames are the C names of the operations, for messages.
var atomicOpNames = [...]string{
	ep.OpMin:         "FI_MIN",
	ep.OpMax:         "FI_MAX",
	ep.OpSum:         "FI_SUM",
	ep.OpProd:        "FI_PROD",
	ep.OpLOr:         "FI_LOR",
	ep.OpLAnd:        "FI_LAND",
	ep.OpBOr:         "FI_BOR",
	ep.OpBAnd:        "FI_BAND",
	ep.OpLXor:        "FI_LXOR",
	ep.OpBXor:        "FI_BXOR",
	ep.OpAtomicRead:  "FI_ATOMIC_READ",
	ep.OpAtomicWrite: "FI_ATOMIC_WRITE",
	ep.OpCSwap:       "FI_CSWAP",
	ep.OpCSwapNE:     "FI_CSWAP_NE",
	ep.OpCSwapLE:     "FI_CSWAP_LE",
	ep.OpCSwapLT:     "FI_CSWAP_LT",
	ep.OpCSwapGE:     "FI_CSWAP_GE",
	ep.OpCSwapGT:     "FI_CSWAP_GT",
	ep.OpMSwap:       "FI_MSWAP",
}

// atomicTypeNames are the C names of the datatypes, for messages.
var atomicTypeNames = [...]string{
	ep.Int8:              "FI_INT8",
	ep.Uint8:             "FI_UINT8",
	ep.Int16:             "FI_INT16",
	ep.Uint16:            "FI_UINT16",
	ep.Int32:             "FI_INT32",
	ep.Uint32:            "FI_UINT32",
	ep.Int64:             "FI_INT64",
	ep.Uint64:            "FI_UINT64",
	ep.Float:             "FI_FLOAT",
	ep.Double:            "FI_DOUBLE",
	ep.FloatComplex:      "FI_FLOAT_COMPLEX",
	ep.DoubleComplex:     "FI_DOUBLE_COMPLEX",
	ep.LongDouble:        "FI_LONG_DOUBLE",
	ep.LongDoubleComplex: "FI_LONG_DOUBLE_COMPLEX",
	ep.Int128:            "FI_INT128",
	ep.Uint128:           "FI_UINT128",
}

// atomicSizes are the element sizes, as ofi_datatype_size gives them on
// x86-64 Linux.
var atomicSizes = [...]int{
	ep.Int8:              1,
	ep.Uint8:             1,
	ep.Int16:             2,
	ep.Uint16:            2,
	ep.Int32:             4,
	ep.Uint32:            4,
	ep.Int64:             8,
	ep.Uint64:            8,
	ep.Float:             4,
	ep.Double:            8,
	ep.FloatComplex:      8,
	ep.DoubleComplex:     16,
	ep.LongDouble:        16,
	ep.LongDoubleComplex: 32,
	ep.Int128:            16,
	ep.Uint128:           16,
}

func atomicOpName(op ep.AtomicOp) string {
	if op >= 0 && int(op) < len(atomicOpNames) {
		return atomicOpNames[op]
	}
	return "unknown op " + strconv.Itoa(int(op))
}

func atomicTypeName(dt ep.Datatype) string {
	if dt >= 0 && int(dt) < len(atomicTypeNames) {
		return atomicTypeNames[dt]
	}
	return "unknown datatype " + strconv.Itoa(int(dt))
}

// atomicAligns are the datatypes' alignments: their C types' alignof on
// x86-64 (a complex number aligns as its parts, a long double on 16).
var atomicAligns = [...]uintptr{
	ep.Int8: 1, ep.Uint8: 1, ep.Int16: 2, ep.Uint16: 2, ep.Int32: 4, ep.Uint32: 4,
	ep.Int64: 8, ep.Uint64: 8, ep.Float: 4, ep.Double: 8, ep.FloatComplex: 4,
	ep.DoubleComplex: 8, ep.LongDouble: 16, ep.LongDoubleComplex: 16, ep.Int128: 16, ep.Uint128: 16,
}

// AtomicAligned reports whether target memory mem starts where an
// element of dt may: at a multiple of its C type's alignment. A software
// target refuses an operation on misaligned memory with fi.EINVAL and
// applies nothing (libfabric's targets do not check, and their compiler
// atomics on such memory are undefined behaviour; ApplyAtomic itself
// needs no alignment). Empty memory and unknown datatypes count as
// aligned.
func AtomicAligned(mem []byte, dt ep.Datatype) bool {
	if len(mem) == 0 || dt < 0 || int(dt) >= len(atomicAligns) {
		return true
	}
	return bufAddr(mem)%uint64(atomicAligns[dt]) == 0
}

// AtomicSize returns the size in bytes of one element of dt, as
// ofi_datatype_size (prov/util) gives it on x86-64 Linux: a long double
// takes 16 bytes, of which the low 10 hold an x87 80-bit extended value,
// and a long double complex 32. An unknown datatype gives fi.EINVAL.
func AtomicSize(dt ep.Datatype) (int, error) {
	if dt < 0 || int(dt) >= len(atomicSizes) {
		return 0, errors.Wrapf(fi.EINVAL, "ep: atomic: %s", atomicTypeName(dt))
	}
	return atomicSizes[dt], nil
}

// Datatype sets of the validity matrix.
const (
	// atomicInts are the integer types.
	atomicInts uint32 = 1<<ep.Int8 | 1<<ep.Uint8 | 1<<ep.Int16 | 1<<ep.Uint16 |
		1<<ep.Int32 | 1<<ep.Uint32 | 1<<ep.Int64 | 1<<ep.Uint64
	// atomicReals are the integer and real floating types: those with an
	// order.
	atomicReals = atomicInts | 1<<ep.Float | 1<<ep.Double | 1<<ep.LongDouble
	// atomicAll adds the complex types.
	atomicAll = atomicReals | 1<<ep.FloatComplex | 1<<ep.DoubleComplex | 1<<ep.LongDoubleComplex
)

// atomicValid is, for each operation, the set of datatypes it supports.
var atomicValid = [...]uint32{
	ep.OpMin:         atomicReals,
	ep.OpMax:         atomicReals,
	ep.OpSum:         atomicAll,
	ep.OpProd:        atomicAll,
	ep.OpLOr:         atomicAll,
	ep.OpLAnd:        atomicAll,
	ep.OpBOr:         atomicInts,
	ep.OpBAnd:        atomicInts,
	ep.OpLXor:        atomicAll,
	ep.OpBXor:        atomicInts,
	ep.OpAtomicRead:  atomicAll,
	ep.OpAtomicWrite: atomicAll,
	ep.OpCSwap:       atomicAll,
	ep.OpCSwapNE:     atomicAll,
	ep.OpCSwapLE:     atomicReals,
	ep.OpCSwapLT:     atomicReals,
	ep.OpCSwapGE:     atomicReals,
	ep.OpCSwapGT:     atomicReals,
	ep.OpMSwap:       atomicInts,
}

// AtomicSupported reports whether the software atomics support op on dt:
// the dispatch tables of libfabric 1.17's prov/util atomics
// (prov/util/src/util_atomic.c, which ofi_atomic_valid consults), in the
// open-coded form that covers every datatype up to long double complex:
//
//   - FI_BOR, FI_BAND, FI_BXOR and FI_MSWAP: the integer types;
//   - FI_MIN, FI_MAX and FI_CSWAP_LE, _LT, _GE, _GT: the integer and real
//     types (float, double, long double), not the complex ones;
//   - FI_SUM, FI_PROD, FI_LOR, FI_LAND, FI_LXOR, FI_ATOMIC_READ,
//     FI_ATOMIC_WRITE, FI_CSWAP and FI_CSWAP_NE: every type, the logical
//     operations included (C's truth value of a real or complex number).
//
// libfabric built with compiler atomics (HAVE_BUILTIN_MM_ATOMICS, the
// usual GCC build) narrows this to what its hardware compare-and-swap can
// cover, dropping double complex, long double and long double complex;
// this engine, which the provider serializes, keeps them. FI_ATOMIC_READ
// exists only as a fetch (fi_fetch_atomic): [ApplyAtomic] wants old for
// it. Unknown operations and datatypes are unsupported.
func AtomicSupported(op ep.AtomicOp, dt ep.Datatype) bool {
	if op < 0 || int(op) >= len(atomicValid) || dt < 0 || int(dt) >= len(atomicSizes) {
		return false
	}
	return atomicValid[op]&(1<<dt) != 0
}

// atomicIsCompare reports whether op takes a compare operand
// (fi_compare_atomic's operations).
func atomicIsCompare(op ep.AtomicOp) bool { return op >= ep.OpCSwap && op <= ep.OpMSwap }

// ApplyAtomic applies op to the elements of dt in dst, the target memory,
// as libfabric's ofi_atomic_write_handler, ofi_atomic_readwrite_handler
// and ofi_atomic_swap_handler (prov/util) do for fi_atomic,
// fi_fetch_atomic and fi_compare_atomic (fi_atomic(3)). Elements are in
// host byte order, as C stores them, and need not be aligned; the count
// is len(dst) / AtomicSize(dt).
//
// src holds the operand (buf in fi_atomic(3)), as many bytes as dst;
// FI_ATOMIC_READ ignores it. cmp holds the compare operand of the compare
// operations (FI_CSWAP to FI_MSWAP; the mask for FI_MSWAP), as many bytes
// as dst, and must be nil (or empty) for the others. When old is not nil
// (the fetch and compare forms) each element's previous contents are
// copied into it before the element changes; it has as many bytes as dst
// and must not overlap dst (it may be src: every element's operands are
// read before its old value is written).
//
// For each element d of dst, s of src and c of cmp:
//
//   - FI_MIN, FI_MAX: d becomes s where s < d, s > d;
//   - FI_SUM, FI_PROD: d + s, d * s (integers wrap around; complex
//     products as C's, with Annex G's recovery of infinities);
//   - FI_LOR, FI_LAND, FI_LXOR: 1 or 0 as C computes d || s, d && s and
//     (d && !s) || (!d && s);
//   - FI_BOR, FI_BAND, FI_BXOR: d | s, d & s, d ^ s;
//   - FI_ATOMIC_READ: d unchanged (old gets it); FI_ATOMIC_WRITE: s;
//   - FI_CSWAP, _NE, _LE, _LT, _GE, _GT: d becomes s where c == d, c != d,
//     c <= d, c < d, c >= d, c > d (the compare value on the left, as in
//     fi_atomic(3));
//   - FI_MSWAP: (s & c) | (d &^ c), c being the mask.
//
// Floating comparisons are C's: a NaN compares unequal and unordered, and
// -0 equals +0; complex numbers are equal when both parts are. Long double
// (x87 extended precision, see AtomicSize) is done in software, rounding
// to nearest even at 64 bits of significand with x87's exponent range,
// denormals, infinities and NaN propagation; a stored long double writes
// the 10 value bytes and leaves the 6 padding bytes as they were. Long
// double and long double complex FI_SUM and FI_PROD go through math/big
// and allocate; nothing else ApplyAtomic does allocates.
//
// An unsupported pair ([AtomicSupported]), or FI_ATOMIC_READ without old,
// gives fi.EOPNOTSUPP; lengths that are not a multiple of the element
// size or differ, a missing cmp for a compare operation or one given to
// another operation give fi.EINVAL. Nothing is changed on an error.
func ApplyAtomic(op ep.AtomicOp, dt ep.Datatype, dst, src, cmp, old []byte) error {
	if err := checkAtomic(op, dt, dst, src, cmp, old); err != nil {
		return err
	}
	switch dt {
	case ep.Int8:
		applyAtomicInts[int8](op, dst, src, cmp, old, 1)
	case ep.Uint8:
		applyAtomicInts[uint8](op, dst, src, cmp, old, 1)
	case ep.Int16:
		applyAtomicInts[int16](op, dst, src, cmp, old, 2)
	case ep.Uint16:
		applyAtomicInts[uint16](op, dst, src, cmp, old, 2)
	case ep.Int32:
		applyAtomicInts[int32](op, dst, src, cmp, old, 4)
	case ep.Uint32:
		applyAtomicInts[uint32](op, dst, src, cmp, old, 4)
	case ep.Int64:
		applyAtomicInts[int64](op, dst, src, cmp, old, 8)
	case ep.Uint64:
		applyAtomicInts[uint64](op, dst, src, cmp, old, 8)
	case ep.Float:
		applyAtomicFloats[float32](op, dst, src, cmp, old, 4)
	case ep.Double:
		applyAtomicFloats[float64](op, dst, src, cmp, old, 8)
	case ep.FloatComplex:
		applyAtomicComplex[float32](op, dst, src, cmp, old, 4)
	case ep.DoubleComplex:
		applyAtomicComplex[float64](op, dst, src, cmp, old, 8)
	case ep.LongDouble:
		applyAtomicF80(op, dst, src, cmp, old)
	case ep.LongDoubleComplex:
		applyAtomicF80Complex(op, dst, src, cmp, old)
	}
	return nil
}

// atomicMu serializes ApplyAtomicExclusive.
var atomicMu sync.Mutex

// ApplyAtomicExclusive is ApplyAtomic under one lock for the whole
// process: what a provider's software target uses, so that the
// operations it applies for any endpoint, domain or provider of the
// process are atomic with respect to each other on the same memory, as
// libfabric's are element by element. They are not atomic with respect
// to the application's own stores, RMA writes, or a device's atomics on
// the same memory, as in C.
func ApplyAtomicExclusive(op ep.AtomicOp, dt ep.Datatype, dst, src, cmp, old []byte) error {
	atomicMu.Lock()
	defer atomicMu.Unlock()
	return ApplyAtomic(op, dt, dst, src, cmp, old)
}

// checkAtomic vets ApplyAtomic's arguments.
func checkAtomic(op ep.AtomicOp, dt ep.Datatype, dst, src, cmp, old []byte) error {
	if !AtomicSupported(op, dt) {
		return errors.Wrapf(fi.EOPNOTSUPP, "ep: atomic: %s on %s not supported",
			atomicOpName(op), atomicTypeName(dt))
	}
	size := atomicSizes[dt]
	if len(dst)%size != 0 {
		return errors.Wrapf(fi.EINVAL, "ep: atomic: %s on %s: %d target bytes are not a whole number of %d-byte elements",
			atomicOpName(op), atomicTypeName(dt), len(dst), size)
	}
	if op == ep.OpAtomicRead {
		if old == nil {
			return errors.Wrapf(fi.EOPNOTSUPP, "ep: atomic: %s on %s: a read needs a result buffer (fi_fetch_atomic)",
				atomicOpName(op), atomicTypeName(dt))
		}
	} else if len(src) != len(dst) {
		return errors.Wrapf(fi.EINVAL, "ep: atomic: %s on %s: %d operand bytes for %d target bytes",
			atomicOpName(op), atomicTypeName(dt), len(src), len(dst))
	}
	if atomicIsCompare(op) {
		if cmp == nil {
			return errors.Wrapf(fi.EINVAL, "ep: atomic: %s on %s: no compare operand",
				atomicOpName(op), atomicTypeName(dt))
		}
		if len(cmp) != len(dst) {
			return errors.Wrapf(fi.EINVAL, "ep: atomic: %s on %s: %d compare bytes for %d target bytes",
				atomicOpName(op), atomicTypeName(dt), len(cmp), len(dst))
		}
	} else if len(cmp) != 0 {
		return errors.Wrapf(fi.EINVAL, "ep: atomic: %s on %s: %d compare bytes for an operation that takes none",
			atomicOpName(op), atomicTypeName(dt), len(cmp))
	}
	if old != nil && len(old) != len(dst) {
		return errors.Wrapf(fi.EINVAL, "ep: atomic: %s on %s: %d result bytes for %d target bytes",
			atomicOpName(op), atomicTypeName(dt), len(old), len(dst))
	}
	return nil
}

// atomicAction is what an operation does to one target element.
type atomicAction uint8

const (
	atomicKeep  atomicAction = iota // leave it
	atomicTake                      // store the operand
	atomicStore                     // store the computed value
)

// loadAtomicUint reads a size-byte unsigned integer in host order.
func loadAtomicUint(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.NativeEndian.Uint16(b))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b))
	default:
		return binary.NativeEndian.Uint64(b)
	}
}

// storeAtomicUint writes the low size bytes of v in host order.
func storeAtomicUint(b []byte, size int, v uint64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(b, uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b, uint32(v))
	default:
		binary.NativeEndian.PutUint64(b, v)
	}
}

// atomicInteger are the integer element types.
type atomicInteger interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

// atomicTruth is C's conversion of a truth value to an arithmetic type.
func atomicTruth[T atomicInteger | atomicFloat](b bool) T {
	if b {
		return 1
	}
	return 0
}

// atomicInt computes op on one integer element.
func atomicInt[T atomicInteger](op ep.AtomicOp, d, s, c T) (T, atomicAction) {
	switch op {
	case ep.OpMin:
		return s, atomicIf(s < d)
	case ep.OpMax:
		return s, atomicIf(s > d)
	case ep.OpSum:
		return d + s, atomicStore
	case ep.OpProd:
		return d * s, atomicStore
	case ep.OpLOr:
		return atomicTruth[T](d != 0 || s != 0), atomicStore
	case ep.OpLAnd:
		return atomicTruth[T](d != 0 && s != 0), atomicStore
	case ep.OpBOr:
		return d | s, atomicStore
	case ep.OpBAnd:
		return d & s, atomicStore
	case ep.OpLXor:
		return atomicTruth[T]((d != 0) != (s != 0)), atomicStore
	case ep.OpBXor:
		return d ^ s, atomicStore
	case ep.OpAtomicWrite:
		return s, atomicTake
	case ep.OpCSwap:
		return s, atomicIf(c == d)
	case ep.OpCSwapNE:
		return s, atomicIf(c != d)
	case ep.OpCSwapLE:
		return s, atomicIf(c <= d)
	case ep.OpCSwapLT:
		return s, atomicIf(c < d)
	case ep.OpCSwapGE:
		return s, atomicIf(c >= d)
	case ep.OpCSwapGT:
		return s, atomicIf(c > d)
	case ep.OpMSwap:
		return s&c | d&^c, atomicStore
	}
	return d, atomicKeep // FI_ATOMIC_READ
}

// atomicIf is atomicTake when the condition holds.
func atomicIf(b bool) atomicAction {
	if b {
		return atomicTake
	}
	return atomicKeep
}

// applyAtomicInts runs op over integer elements of size bytes.
func applyAtomicInts[T atomicInteger](op ep.AtomicOp, dst, src, cmp, old []byte, size int) {
	for off := 0; off < len(dst); off += size {
		d := T(loadAtomicUint(dst[off:], size))
		var s, c T
		if op != ep.OpAtomicRead {
			s = T(loadAtomicUint(src[off:], size))
		}
		if cmp != nil {
			c = T(loadAtomicUint(cmp[off:], size))
		}
		if old != nil {
			storeAtomicUint(old[off:], size, uint64(d))
		}
		if v, act := atomicInt(op, d, s, c); act != atomicKeep {
			storeAtomicUint(dst[off:], size, uint64(v))
		}
	}
}

// atomicFloat are the IEEE floating element types.
type atomicFloat interface{ ~float32 | ~float64 }

// loadAtomicFloat reads a float of size bytes in host order, bit for bit.
func loadAtomicFloat[F atomicFloat](b []byte, size int) F {
	if size == 4 {
		return F(math.Float32frombits(binary.NativeEndian.Uint32(b)))
	}
	return F(math.Float64frombits(binary.NativeEndian.Uint64(b)))
}

// storeAtomicFloat writes a float of size bytes in host order, bit for bit.
func storeAtomicFloat[F atomicFloat](b []byte, size int, v F) {
	if size == 4 {
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(v)))
		return
	}
	binary.NativeEndian.PutUint64(b, math.Float64bits(float64(v)))
}

// atomicReal computes op on one real floating element.
func atomicReal[F atomicFloat](op ep.AtomicOp, d, s, c F) (F, atomicAction) {
	switch op {
	case ep.OpMin:
		return s, atomicIf(s < d)
	case ep.OpMax:
		return s, atomicIf(s > d)
	case ep.OpSum:
		return d + s, atomicStore
	case ep.OpProd:
		return d * s, atomicStore
	case ep.OpLOr:
		return atomicTruth[F](d != 0 || s != 0), atomicStore
	case ep.OpLAnd:
		return atomicTruth[F](d != 0 && s != 0), atomicStore
	case ep.OpLXor:
		return atomicTruth[F]((d != 0) != (s != 0)), atomicStore
	case ep.OpAtomicWrite:
		return s, atomicTake
	case ep.OpCSwap:
		return s, atomicIf(c == d)
	case ep.OpCSwapNE:
		return s, atomicIf(c != d)
	case ep.OpCSwapLE:
		return s, atomicIf(c <= d)
	case ep.OpCSwapLT:
		return s, atomicIf(c < d)
	case ep.OpCSwapGE:
		return s, atomicIf(c >= d)
	case ep.OpCSwapGT:
		return s, atomicIf(c > d)
	}
	return d, atomicKeep // FI_ATOMIC_READ
}

// applyAtomicFloats runs op over real floating elements of size bytes.
// Values travel as Go floats of their own width, which keeps every bit
// (NaN payloads included) of the operands they store.
func applyAtomicFloats[F atomicFloat](op ep.AtomicOp, dst, src, cmp, old []byte, size int) {
	for off := 0; off < len(dst); off += size {
		d := loadAtomicFloat[F](dst[off:], size)
		var s, c F
		if op != ep.OpAtomicRead {
			s = loadAtomicFloat[F](src[off:], size)
		}
		if cmp != nil {
			c = loadAtomicFloat[F](cmp[off:], size)
		}
		if old != nil {
			storeAtomicFloat(old[off:], size, d)
		}
		if v, act := atomicReal(op, d, s, c); act != atomicKeep {
			storeAtomicFloat(dst[off:], size, v)
		}
	}
}

// applyAtomicComplex runs op over complex elements whose parts are
// floats of part bytes (real part first, as C lays them out).
func applyAtomicComplex[F atomicFloat](op ep.AtomicOp, dst, src, cmp, old []byte, part int) {
	size := 2 * part
	for off := 0; off < len(dst); off += size {
		dr := loadAtomicFloat[F](dst[off:], part)
		di := loadAtomicFloat[F](dst[off+part:], part)
		var sr, si, cr, ci F
		if op != ep.OpAtomicRead {
			sr = loadAtomicFloat[F](src[off:], part)
			si = loadAtomicFloat[F](src[off+part:], part)
		}
		if cmp != nil {
			cr = loadAtomicFloat[F](cmp[off:], part)
			ci = loadAtomicFloat[F](cmp[off+part:], part)
		}
		if old != nil {
			storeAtomicFloat(old[off:], part, dr)
			storeAtomicFloat(old[off+part:], part, di)
		}
		var vr, vi F
		act := atomicStore
		switch op {
		case ep.OpSum:
			vr, vi = dr+sr, di+si
		case ep.OpProd:
			vr, vi = atomicComplexMul(dr, di, sr, si)
		case ep.OpLOr:
			vr = atomicTruth[F](dr != 0 || di != 0 || sr != 0 || si != 0)
		case ep.OpLAnd:
			vr = atomicTruth[F]((dr != 0 || di != 0) && (sr != 0 || si != 0))
		case ep.OpLXor:
			vr = atomicTruth[F]((dr != 0 || di != 0) != (sr != 0 || si != 0))
		case ep.OpAtomicWrite:
			vr, vi, act = sr, si, atomicTake
		case ep.OpCSwap:
			vr, vi, act = sr, si, atomicIf(cr == dr && ci == di)
		case ep.OpCSwapNE:
			vr, vi, act = sr, si, atomicIf(cr != dr || ci != di)
		default: // FI_ATOMIC_READ
			act = atomicKeep
		}
		if act != atomicKeep {
			storeAtomicFloat(dst[off:], part, vr)
			storeAtomicFloat(dst[off+part:], part, vi)
		}
	}
}

// atomicComplexMul returns (a+bi)(c+di) as C computes it: each product
// rounded to the parts' precision (never fused into the sum), and, when
// both parts come out NaN, the recovery of infinite results of C11
// Annex G.5.1.
func atomicComplexMul[F atomicFloat](a, b, c, d F) (F, F) {
	ac, bd, ad, bc := F(a*c), F(b*d), F(a*d), F(b*c)
	x, y := F(ac-bd), F(ad+bc)
	if !(x != x && y != y) {
		return x, y
	}
	isInf := func(v F) bool { return math.IsInf(float64(v), 0) }
	isNaN := func(v F) bool { return v != v }
	box := func(v F) F { // ±1 for an infinity, ±0 otherwise
		if isInf(v) {
			return F(math.Copysign(1, float64(v)))
		}
		return F(math.Copysign(0, float64(v)))
	}
	zeroNaN := func(v F) F {
		if isNaN(v) {
			return F(math.Copysign(0, float64(v)))
		}
		return v
	}
	recalc := false
	if isInf(a) || isInf(b) {
		a, b = box(a), box(b)
		c, d = zeroNaN(c), zeroNaN(d)
		recalc = true
	}
	if isInf(c) || isInf(d) {
		c, d = box(c), box(d)
		a, b = zeroNaN(a), zeroNaN(b)
		recalc = true
	}
	if !recalc && (isInf(ac) || isInf(bd) || isInf(ad) || isInf(bc)) {
		a, b, c, d = zeroNaN(a), zeroNaN(b), zeroNaN(c), zeroNaN(d)
		recalc = true
	}
	if recalc {
		inf := F(math.Inf(1))
		x = inf * F(F(a*c)-F(b*d))
		y = inf * F(F(a*d)+F(b*c))
	}
	return x, y
}
