package kit

import (
	"encoding/binary"
	"math/big"
	"math/bits"

	"github.com/gofabric/gofabric/ep"
)

// Long double in software. C's long double on x86-64 is the x87 extended
// format, which Go lacks: 10 little-endian bytes, a 64-bit significand
// with an explicit integer bit (bit 63) in the low 8, then a 15-bit
// exponent biased by 16383 and the sign. The value of a finite number is
// m × 2^(e-16383-63), with e taken as 1 when it is 0 (denormals, and the
// pseudo-denormals that x87 reads but never writes). Sums and products
// go through math/big exactly and are then rounded once, to nearest even,
// to 64 significant bits within the format's exponent range, as the x87
// unit does at its default extended precision; they allocate. Loads,
// stores and comparisons do not.

const (
	f80Bias     = 16383
	f80ExpMask  = 0x7fff
	f80SignBit  = 0x8000
	f80IntBit   = 1 << 63
	f80QuietBit = 1 << 62
	// f80MinExp is the exponent of the smallest normal's leading bit.
	f80MinExp = 1 - f80Bias
	// f80Tiny is the exponent of the smallest denormal, 2^-16445.
	f80Tiny = f80MinExp - 63
	// f80Size and f80ComplexSize are the C sizes (AtomicSize).
	f80Size        = 16
	f80ComplexSize = 32
)

// f80 is an x87 extended value as stored: significand and sign+exponent.
type f80 struct {
	m  uint64
	se uint16
}

var (
	// f80Indefinite is the x87 default NaN ("real indefinite"), the result
	// of an invalid operation.
	f80Indefinite = f80{m: f80IntBit | f80QuietBit, se: f80SignBit | f80ExpMask}
	f80One        = f80{m: f80IntBit, se: f80Bias}
	f80Zero       = f80{}
	f80PosInf     = f80{m: f80IntBit, se: f80ExpMask}
)

// loadF80 reads the value bytes of a long double.
func loadF80(b []byte) f80 {
	return f80{m: binary.LittleEndian.Uint64(b), se: binary.LittleEndian.Uint16(b[8:])}
}

// put writes the 10 value bytes, leaving the padding that follows them.
func (x f80) put(b []byte) {
	binary.LittleEndian.PutUint64(b, x.m)
	binary.LittleEndian.PutUint16(b[8:], x.se)
}

func (x f80) exp() int   { return int(x.se & f80ExpMask) }
func (x f80) sign() bool { return x.se&f80SignBit != 0 }

// f80Class is what an encoding stands for.
type f80Class uint8

const (
	f80IsZero f80Class = iota
	f80IsFinite
	f80IsInf
	f80IsNaN
	// f80IsInvalid are encodings x87 rejects as operands (unnormals,
	// pseudo-infinities, pseudo-NaNs: integer bit clear with a nonzero
	// exponent): an invalid operation, unordered in comparisons.
	f80IsInvalid
)

func (x f80) class() f80Class {
	e, j := x.exp(), x.m&f80IntBit != 0
	switch {
	case e == f80ExpMask && !j:
		return f80IsInvalid
	case e == f80ExpMask && x.m<<1 == 0:
		return f80IsInf
	case e == f80ExpMask:
		return f80IsNaN
	case e == 0 && x.m == 0:
		return f80IsZero
	case e == 0:
		return f80IsFinite // denormal or pseudo-denormal
	case !j:
		return f80IsInvalid // unnormal
	}
	return f80IsFinite
}

// unordered reports whether x compares unordered with everything.
func (x f80) unordered() bool { c := x.class(); return c == f80IsNaN || c == f80IsInvalid }

// truth is C's truth value of x (x != 0): NaN is true.
func (x f80) truth() bool { return x.class() != f80IsZero }

// magnitude returns |x| as a normalized significand and the exponent of
// its lowest bit, for finite nonzero x.
func (x f80) magnitude() (m uint64, e int) {
	ex := max(x.exp(), 1)
	lz := bits.LeadingZeros64(x.m)
	return x.m << lz, ex - f80Bias - 63 - lz
}

// f80Compare compares x and y as C does; ok is false when they are
// unordered.
func f80Compare(x, y f80) (r int, ok bool) {
	if x.unordered() || y.unordered() {
		return 0, false
	}
	sx, sy := x.signum(), y.signum()
	if sx != sy {
		if sx < sy {
			return -1, true
		}
		return 1, true
	}
	if sx == 0 {
		return 0, true
	}
	r = f80CompareMagnitude(x, y)
	if sx < 0 {
		r = -r
	}
	return r, true
}

// signum is -1, 0 or 1 for ordered x.
func (x f80) signum() int {
	switch {
	case x.class() == f80IsZero:
		return 0
	case x.sign():
		return -1
	}
	return 1
}

// f80CompareMagnitude compares |x| and |y| for nonzero, ordered x, y.
func f80CompareMagnitude(x, y f80) int {
	xi, yi := x.class() == f80IsInf, y.class() == f80IsInf
	switch {
	case xi && yi:
		return 0
	case xi:
		return 1
	case yi:
		return -1
	}
	mx, ex := x.magnitude()
	my, ey := y.magnitude()
	switch {
	case ex != ey:
		// Both significands are normalized, so the larger exponent wins.
		if ex < ey {
			return -1
		}
		return 1
	case mx < my:
		return -1
	case mx > my:
		return 1
	}
	return 0
}

// f80PropagateNaN is x87's result for an operation with a NaN operand:
// that NaN made quiet; of two, the quiet one, or, both being quiet or
// both signalling, the one with the larger significand (x first on a
// tie).
func f80PropagateNaN(x, y f80) f80 {
	xn, yn := x.class() == f80IsNaN, y.class() == f80IsNaN
	r := x
	switch {
	case !xn:
		r = y
	case !yn:
	case (x.m&f80QuietBit != 0) != (y.m&f80QuietBit != 0):
		if y.m&f80QuietBit != 0 {
			r = y
		}
	case y.m > x.m:
		r = y
	}
	r.m |= f80QuietBit
	return r
}

// f80Add returns x + y.
func f80Add(x, y f80) f80 {
	cx, cy := x.class(), y.class()
	switch {
	case cx == f80IsInvalid || cy == f80IsInvalid:
		return f80Indefinite
	case cx == f80IsNaN || cy == f80IsNaN:
		return f80PropagateNaN(x, y)
	case cx == f80IsInf && cy == f80IsInf:
		if x.sign() != y.sign() {
			return f80Indefinite
		}
		return x
	case cx == f80IsInf:
		return x
	case cy == f80IsInf:
		return y
	case cx == f80IsZero && cy == f80IsZero:
		if x.sign() && y.sign() {
			return f80{se: f80SignBit}
		}
		return f80Zero
	}
	bx, by := x.big(), y.big()
	// Exact: the two significands span the gap between their lowest bits
	// plus 64 bits, and one more for a carry.
	_, lx := x.magnitude()
	_, ly := y.magnitude()
	if cx == f80IsZero {
		lx = ly
	}
	if cy == f80IsZero {
		ly = lx
	}
	gap := lx - ly
	if gap < 0 {
		gap = -gap
	}
	sum := new(big.Float).SetPrec(uint(gap)+66).Add(bx, by)
	if sum.Sign() == 0 {
		return f80Zero // x + -x is +0 when rounding to nearest
	}
	return f80Round(sum)
}

// f80Sub returns x - y; a NaN y keeps its sign, as x87's fsub leaves it.
func f80Sub(x, y f80) f80 {
	if y.class() != f80IsNaN {
		y.se ^= f80SignBit
	}
	return f80Add(x, y)
}

// f80Mul returns x × y.
func f80Mul(x, y f80) f80 {
	cx, cy := x.class(), y.class()
	sign := uint16(0)
	if x.sign() != y.sign() {
		sign = f80SignBit
	}
	switch {
	case cx == f80IsInvalid || cy == f80IsInvalid:
		return f80Indefinite
	case cx == f80IsNaN || cy == f80IsNaN:
		return f80PropagateNaN(x, y)
	case cx == f80IsInf && cy == f80IsZero, cx == f80IsZero && cy == f80IsInf:
		return f80Indefinite
	case cx == f80IsInf || cy == f80IsInf:
		return f80{m: f80IntBit, se: sign | f80ExpMask}
	case cx == f80IsZero || cy == f80IsZero:
		return f80{se: sign}
	}
	// 64 × 64 bits are exact in 128.
	return f80Round(new(big.Float).SetPrec(128).Mul(x.big(), y.big()))
}

// big returns finite x exactly.
func (x f80) big() *big.Float {
	f := new(big.Float).SetUint64(x.m) // precision 64
	f.SetMantExp(f, max(x.exp(), 1)-f80Bias-63)
	if x.sign() {
		f.Neg(f)
	}
	return f
}

// f80Round rounds the exact, finite, nonzero z to the nearest long double
// (ties to even): 64 significant bits for normal results, the fixed
// 2^-16445 grid for denormal ones, infinity past the largest finite
// value.
func f80Round(z *big.Float) f80 {
	var sign uint16
	if z.Signbit() {
		sign = f80SignBit
	}
	a := new(big.Float).Abs(z)
	lead := a.MantExp(nil) - 1 // a is in [2^lead, 2^(lead+1))
	prec := 64
	if lead < f80MinExp {
		prec = lead - f80Tiny + 1 // the bits from 2^lead down to 2^-16445
	}
	if prec <= 0 {
		// Below the smallest denormal: it is the nearest when a is over
		// half of it; at exactly half the tie goes to the even zero.
		half := new(big.Float).SetMantExp(big.NewFloat(1), f80Tiny-1)
		if prec == 0 && a.Cmp(half) > 0 {
			return f80{m: 1, se: sign}
		}
		return f80{se: sign}
	}
	r := new(big.Float).SetPrec(uint(prec)).Set(a) // rounds to nearest even
	lead = r.MantExp(nil) - 1
	switch {
	case lead > f80Bias:
		return f80{m: f80IntBit, se: sign | f80ExpMask} // overflow
	case lead >= f80MinExp:
		m, _ := new(big.Float).SetMantExp(r, 63-lead).Uint64()
		return f80{m: m, se: sign | uint16(lead+f80Bias)}
	}
	m, _ := new(big.Float).SetMantExp(r, -f80Tiny).Uint64()
	return f80{m: m, se: sign}
}

// f80Truth is C's conversion of a truth value to long double.
func f80Truth(b bool) f80 {
	if b {
		return f80One
	}
	return f80Zero
}

// f80If is atomicTake when x and y are ordered and test holds for their
// comparison (-1, 0 or 1).
func f80If(x, y f80, test func(r int) bool) atomicAction {
	r, ok := f80Compare(x, y)
	return atomicIf(ok && test(r))
}

// atomicF80 computes op on one long double element.
func atomicF80(op ep.AtomicOp, d, s, c f80) (f80, atomicAction) {
	switch op {
	case ep.OpMin:
		return s, f80If(s, d, func(r int) bool { return r < 0 })
	case ep.OpMax:
		return s, f80If(s, d, func(r int) bool { return r > 0 })
	case ep.OpSum:
		return f80Add(d, s), atomicStore
	case ep.OpProd:
		return f80Mul(d, s), atomicStore
	case ep.OpLOr:
		return f80Truth(d.truth() || s.truth()), atomicStore
	case ep.OpLAnd:
		return f80Truth(d.truth() && s.truth()), atomicStore
	case ep.OpLXor:
		return f80Truth(d.truth() != s.truth()), atomicStore
	case ep.OpAtomicWrite:
		return s, atomicTake
	case ep.OpCSwap:
		return s, f80If(c, d, func(r int) bool { return r == 0 })
	case ep.OpCSwapNE:
		r, ok := f80Compare(c, d)
		return s, atomicIf(!ok || r != 0)
	case ep.OpCSwapLE:
		return s, f80If(c, d, func(r int) bool { return r <= 0 })
	case ep.OpCSwapLT:
		return s, f80If(c, d, func(r int) bool { return r < 0 })
	case ep.OpCSwapGE:
		return s, f80If(c, d, func(r int) bool { return r >= 0 })
	case ep.OpCSwapGT:
		return s, f80If(c, d, func(r int) bool { return r > 0 })
	}
	return d, atomicKeep // FI_ATOMIC_READ
}

// applyAtomicF80 runs op over long double elements.
func applyAtomicF80(op ep.AtomicOp, dst, src, cmp, old []byte) {
	for off := 0; off < len(dst); off += f80Size {
		d := loadF80(dst[off:])
		var s, c f80
		if op != ep.OpAtomicRead {
			s = loadF80(src[off:])
		}
		if cmp != nil {
			c = loadF80(cmp[off:])
		}
		if old != nil {
			copy(old[off:off+f80Size], dst[off:off+f80Size])
		}
		if v, act := atomicF80(op, d, s, c); act != atomicKeep {
			v.put(dst[off:])
		}
	}
}

// applyAtomicF80Complex runs op over long double complex elements: two
// long doubles, the real part first.
func applyAtomicF80Complex(op ep.AtomicOp, dst, src, cmp, old []byte) {
	for off := 0; off < len(dst); off += f80ComplexSize {
		dr, di := loadF80(dst[off:]), loadF80(dst[off+f80Size:])
		var sr, si, cr, ci f80
		if op != ep.OpAtomicRead {
			sr, si = loadF80(src[off:]), loadF80(src[off+f80Size:])
		}
		if cmp != nil {
			cr, ci = loadF80(cmp[off:]), loadF80(cmp[off+f80Size:])
		}
		if old != nil {
			copy(old[off:off+f80ComplexSize], dst[off:off+f80ComplexSize])
		}
		vr, vi := f80Zero, f80Zero
		act := atomicStore
		dt, st := dr.truth() || di.truth(), sr.truth() || si.truth()
		switch op {
		case ep.OpSum:
			vr, vi = f80Add(dr, sr), f80Add(di, si)
		case ep.OpProd:
			vr, vi = f80ComplexMul(dr, di, sr, si)
		case ep.OpLOr:
			vr = f80Truth(dt || st)
		case ep.OpLAnd:
			vr = f80Truth(dt && st)
		case ep.OpLXor:
			vr = f80Truth(dt != st)
		case ep.OpAtomicWrite:
			vr, vi, act = sr, si, atomicTake
		case ep.OpCSwap, ep.OpCSwapNE:
			rr, okr := f80Compare(cr, dr)
			ri, oki := f80Compare(ci, di)
			eq := okr && oki && rr == 0 && ri == 0
			vr, vi, act = sr, si, atomicIf(eq == (op == ep.OpCSwap))
		default: // FI_ATOMIC_READ
			act = atomicKeep
		}
		if act != atomicKeep {
			vr.put(dst[off:])
			vi.put(dst[off+f80Size:])
		}
	}
}

// f80ComplexMul is atomicComplexMul for long double parts.
func f80ComplexMul(a, b, c, d f80) (f80, f80) {
	ac, bd, ad, bc := f80Mul(a, c), f80Mul(b, d), f80Mul(a, d), f80Mul(b, c)
	x, y := f80Sub(ac, bd), f80Add(ad, bc)
	if !(x.unordered() && y.unordered()) {
		return x, y
	}
	isInf := func(v f80) bool { return v.class() == f80IsInf }
	withSign := func(v, like f80) f80 { v.se = v.se&^f80SignBit | like.se&f80SignBit; return v }
	box := func(v f80) f80 {
		if isInf(v) {
			return withSign(f80One, v)
		}
		return withSign(f80Zero, v)
	}
	zeroNaN := func(v f80) f80 {
		if v.unordered() {
			return withSign(f80Zero, v)
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
		x = f80Mul(f80PosInf, f80Sub(f80Mul(a, c), f80Mul(b, d)))
		y = f80Mul(f80PosInf, f80Add(f80Mul(a, d), f80Mul(b, c)))
	}
	return x, y
}
