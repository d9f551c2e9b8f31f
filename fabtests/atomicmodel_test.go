package fabtests

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPutF80 checks the atomic group's long double encoding against x87
// extended values worked out by hand (little endian: the 64-bit
// significand with its integer bit, then sign and biased exponent), and
// that decoding gives the value back.
func TestPutF80(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string // the 10 value bytes
	}{
		{1, "0000000000000080ff3f"},
		{-2, "000000000000008000c0"},
		{0.5, "0000000000000080fe3f"},
		{3, "00000000000000c00040"},
		{-11.75, "00000000000000bc02c0"},
		{0, "00000000000000000000"},
		{math.Copysign(0, -1), "00000000000000000080"},
		{math.SmallestNonzeroFloat64, "0000000000000080cd3b"}, // 2^-1074: normal as an extended value
	} {
		b := make([]byte, 16)
		for i := range b {
			b[i] = 0xee
		}
		putF80(b, tc.v)
		require.Equal(t, tc.want, hex.EncodeToString(b[:10]), "putF80(%v)", tc.v)
		require.Equal(t, make([]byte, 6), b[10:], "putF80(%v): padding", tc.v)
		got := getF80(b)
		require.Equal(t, math.Float64bits(tc.v), math.Float64bits(got), "getF80(putF80(%v)) = %v", tc.v, got)
	}
}
