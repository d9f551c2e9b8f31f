package pingpong

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSizes(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
		2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 196608, 262144,
		393216, 524288, 786432, 1048576, 1572864, 2097152, 3145728, 4194304, 6291456}
	require.Len(t, all, 46)
	tests := []struct {
		name   string
		o      Options
		maxMsg int
		want   []int
	}{
		{"default", Options{}, math.MaxInt, []int{64, 256, 1024, 4096, 65536, 1048576}},
		{"default no max", Options{}, 0, []int{64, 256, 1024, 4096, 65536, 1048576}},
		{"default udp max", Options{}, 1472, []int{64, 256, 1024}},
		{"default below first", Options{}, 32, nil},
		{"all", Options{SizeAll: true}, math.MaxInt, all},
		{"all no max", Options{SizeAll: true}, 0, all},
		{"all udp max", Options{SizeAll: true}, 1472, all[:21]},
		{"all at a size", Options{SizeAll: true}, 1536, all[:22]},
		{"all max 0 bytes", Options{SizeAll: true}, 0, all},
		{"one", Options{Size: 100, SizeSet: true}, math.MaxInt, []int{100}},
		{"one zero", Options{Size: 0, SizeSet: true}, 1472, []int{0}},
		{"one over 6m", Options{Size: 6291457, SizeSet: true}, math.MaxInt, []int{6291457}},
		{"one over max", Options{Size: 1473, SizeSet: true}, 1472, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Sizes(&tt.o, tt.maxMsg))
		})
	}
}

func TestRxSize(t *testing.T) {
	tests := []struct {
		name   string
		o      Options
		maxMsg int
		want   int
	}{
		{"default", Options{}, math.MaxInt, 6291456},
		{"no max", Options{}, 0, 6291456},
		{"provider max", Options{SizeAll: true}, 1472, 1472},
		{"small max", Options{}, 10, 64},
		{"one size", Options{Size: 1000, SizeSet: true}, math.MaxInt, 1000},
		{"one small size", Options{Size: 1, SizeSet: true}, math.MaxInt, 64},
		{"one large size", Options{Size: 8 << 20, SizeSet: true}, math.MaxInt, 8 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, RxSize(&tt.o, tt.maxMsg))
		})
	}
}
