package pingpong

import (
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// TestPatternCapture compares with the payloads captured from the C tool
// (docs/wire-tcp.md, §1.8).
func TestPatternCapture(t *testing.T) {
	var p Pattern
	b := make([]byte, 64)
	p.Fill(b)
	require.Equal(t, alphabet+"01", string(b))
	p.Fill(b)
	require.Equal(t, "789a", string(b[:4]))
	require.Equal(t, alphabet[7:]+alphabet[:9], string(b))

	// -S all: sizes 0 then 1; the size-1 pings are the third and fourth
	// messages (k = 2, 3).
	var q Pattern
	q.Fill(nil)
	q.Fill(nil)
	one := make([]byte, 1)
	q.Fill(one)
	require.Equal(t, "e", string(one))
	q.Fill(one)
	require.Equal(t, "l", string(one))
}

func TestPatternWraps(t *testing.T) {
	var p Pattern
	b := make([]byte, 200)
	for k := range 100 {
		p.Fill(b)
		for i, c := range b {
			require.Equal(t, alphabet[(7*k+i)%62], c, "k=%d i=%d", k, i)
		}
	}
}

func TestPatternVerify(t *testing.T) {
	var sender, receiver Pattern
	for _, size := range []int{0, 1, 64, 1000} {
		b := make([]byte, size)
		sender.Fill(b)
		require.NoError(t, receiver.Verify(b))
	}
	b := make([]byte, 64)
	sender.Fill(b)
	b[10] ^= 1
	err := receiver.Verify(b)
	var ce *CheckError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, &CheckError{Iteration: 5, Size: 64, Byte: 10}, ce)
	require.EqualError(t, err, "Error at iteration=5 size=64 byte=10")
	require.ErrorIs(t, err, fi.EIO)

	// The counters are independent: a receiver that skipped a message
	// sees the next one as wrong from byte 0.
	var r2 Pattern
	sender = Pattern{}
	sender.Fill(b)
	sender.Fill(b)
	require.ErrorAs(t, r2.Verify(b), &ce)
	require.Equal(t, &CheckError{Iteration: 1, Size: 64, Byte: 0}, ce)
}

// TestPatternVerifyFindsEveryByte corrupts one byte at a time, in the
// first period and in each doubled stretch after it, in sizes around the
// period, and checks that Verify names that byte, as a byte-by-byte check
// would; Fill's doubling copies must write what the definition says.
func TestPatternVerifyFindsEveryByte(t *testing.T) {
	for _, size := range []int{1, 61, 62, 63, 123, 124, 125, 1000, 4096, 65536 + 7} {
		for k := range 3 { // three start offsets of the alphabet
			var sender Pattern
			sender.fills = uint64(k)
			b := make([]byte, size)
			sender.Fill(b)
			for i, c := range b {
				require.Equal(t, alphabet[(7*k+i)%62], c, "size %d k=%d i=%d", size, k, i)
			}
			for _, at := range []int{0, size / 3, size / 2, size - 1, 61, 62, 124, 247, 248, 4000} {
				if at >= size {
					continue
				}
				b[at] ^= 0x20
				receiver := Pattern{checks: uint64(k)}
				var ce *CheckError
				require.ErrorAs(t, receiver.Verify(b), &ce, "size %d, byte %d", size, at)
				require.Equal(t, at, ce.Byte, "size %d", size)
				b[at] ^= 0x20
				receiver = Pattern{checks: uint64(k)}
				require.NoError(t, receiver.Verify(b), "size %d", size)
			}
		}
	}
}
