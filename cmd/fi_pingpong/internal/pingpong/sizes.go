package pingpong

// MaxRxSize caps the receive buffer when no single size is asked for
// (fi_pingpong's 6 MiB): the largest size -S all tests.
const MaxRxSize = 6291456

// minRxSize is the smallest receive buffer posted.
const minRxSize = 64

// DefaultSizes are the sizes tested without -S (the C usage text says
// "all", but the C tool tests these).
var DefaultSizes = []int{64, 256, 1024, 4096, 65536, 1048576}

// Sizes returns the message sizes a run tests, in order, for the options
// and the endpoint's maximum message size maxMsg (0 or less: no maximum):
//
//   - -S N: just N, or nothing when N exceeds maxMsg;
//   - no -S: DefaultSizes up to the first one above maxMsg;
//   - -S all: 0, 1, then 2^k and 3·2^(k-1) for k = 1, 2, ..., up to the
//     first one above min(MaxRxSize, maxMsg) (46 sizes when maxMsg is
//     large).
func Sizes(o *Options, maxMsg int) []int {
	limit := func(n int) bool { return maxMsg > 0 && n > maxMsg }
	switch {
	case o.SizeSet:
		if limit(o.Size) {
			return nil
		}
		return []int{o.Size}
	case o.SizeAll:
		var out []int
		for _, n := range []int{0, 1} {
			if limit(n) {
				return out
			}
			out = append(out, n)
		}
		for k := 1; ; k++ {
			for _, n := range []int{1 << k, 3 << (k - 1)} {
				if n > MaxRxSize || limit(n) {
					return out
				}
				out = append(out, n)
			}
		}
	}
	var out []int
	for _, n := range DefaultSizes {
		if limit(n) {
			break
		}
		out = append(out, n)
	}
	return out
}

// RxSize is the length every receive is posted with, and the size of the
// data buffers: max(64, N) for -S N, else max(64, min(MaxRxSize, maxMsg))
// (maxMsg 0 or less: no maximum). A peer must never send more.
func RxSize(o *Options, maxMsg int) int {
	n := MaxRxSize
	switch {
	case o.SizeSet:
		n = o.Size
	case maxMsg > 0 && maxMsg < n:
		n = maxMsg
	}
	return max(n, minRxSize)
}
