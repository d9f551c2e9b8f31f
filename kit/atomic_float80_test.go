package kit

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/require"
)

// LongDoubleBytes encodes v as C's long double on x86-64 (16 bytes, the
// x87 extended value in the low 10, zero padding), for the tests. It is
// written from the formats' definitions, apart from the engine.
func LongDoubleBytes(v float64) []byte {
	u := math.Float64bits(v)
	exp, frac := int(u>>52&0x7ff), u&(1<<52-1)
	var se uint16
	var m uint64
	switch {
	case exp == 0x7ff: // infinity (frac 0) or NaN: the payload moves up
		se, m = 0x7fff, 1<<63|frac<<11
	case exp == 0 && frac == 0:
	case exp == 0: // a double denormal is an extended normal
		lz := bits.LeadingZeros64(frac)
		se, m = uint16(-1074-lz+16383+63), frac<<lz
	default:
		se, m = uint16(exp-1023+16383), 1<<63|frac<<11
	}
	se |= uint16(u>>63) << 15
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, m)
	binary.LittleEndian.PutUint16(b[8:], se)
	return b
}

var f80TestValues = []float64{
	1, -1, 0.5, 1.0 / 3, -2.75, 1e300, -1e-300, math.MaxFloat64,
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64 * 12345, 0x1p-1022, 0x1.fffffffffffffp-1023,
	123456789012345678,
}

func TestAtomicF80DecodeEncodeExact(t *testing.T) {
	for _, v := range f80TestValues {
		x := loadF80(LongDoubleBytes(v))
		require.Equal(t, f80IsFinite, x.class(), "%g", v)
		require.Zero(t, x.big().Cmp(big.NewFloat(v)), "decode %g: %v", v, x.big())
		require.Equal(t, x, f80Round(big.NewFloat(v)), "encode %g", v)
	}
	require.Equal(t, f80IsZero, loadF80(LongDoubleBytes(math.Copysign(0, -1))).class())
	require.Equal(t, f80IsInf, loadF80(LongDoubleBytes(math.Inf(-1))).class())
	require.Equal(t, f80IsNaN, loadF80(LongDoubleBytes(math.NaN())).class())
	require.Equal(t, f80IsInvalid, f80{m: 1 << 62, se: 0x3fff}.class()) // unnormal
	require.Equal(t, f80IsInvalid, f80{m: 0, se: 0x7fff}.class())       // pseudo-infinity
	require.Equal(t, f80IsFinite, f80{m: 1 << 63, se: 0}.class())       // pseudo-denormal

	// 1 + 2^-63 needs all 64 bits of the significand.
	one := new(big.Float).SetPrec(200).SetInt64(1)
	z := new(big.Float).SetMantExp(big.NewFloat(1), -63) // precision 53
	z.SetPrec(200).Add(z, one)
	require.Equal(t, f80{m: 1<<63 | 1, se: 0x3fff}, f80Round(z))
	require.Zero(t, f80{m: 1<<63 | 1, se: 0x3fff}.big().Cmp(z))
	// A third is rounded to nearest at 64 bits: 0xaaaa...ab.
	third := new(big.Float).SetPrec(300).Quo(big.NewFloat(1), big.NewFloat(3))
	require.Equal(t, f80{m: 0xaaaaaaaaaaaaaaab, se: 0x3ffd}, f80Round(third))
}
