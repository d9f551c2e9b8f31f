package ft

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// sizeParam is one entry of the size table (struct test_size_param): a
// size and whether it is one of the default sizes.
type sizeParam struct {
	size int
	// def marks the sizes run without -S (FT_DEFAULT_SIZE): 64, 256, 1k,
	// 4k, 64k and 1m.
	def bool
}

// defaultSizes returns def_test_sizes: 1, then each power of two 2..4m
// followed by itself plus half, then 8m.
func defaultSizes() []sizeParam {
	s := []sizeParam{{size: 1}}
	for i := 1; i <= 22; i++ {
		p := 1 << i
		def := p == 64 || p == 256 || p == 1<<10 || p == 1<<12 || p == 1<<16 || p == 1<<20
		s = append(s, sizeParam{size: p, def: def}, sizeParam{size: p + p/2})
	}
	return append(s, sizeParam{size: 1 << 23})
}

// parseRange reads -S r:start,inc,end (ft_parse_opts_range): the sizes
// start, start+inc, ... up to end. C stops filling the table at index
// end, leaving zeros after it when start is 0 and inc 1; ft fills it.
func parseRange(arg string) ([]sizeParam, error) {
	parts := strings.Split(arg[2:], ",")
	bad := errors.Wrapf(fi.EINVAL, "-S %s: a range is r:start,inc,end with start <= end and inc > 0", arg)
	if len(parts) != 3 {
		return nil, bad
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return nil, bad
		}
		v[i] = n
	}
	start, inc, end := v[0], v[1], v[2]
	if end < start || inc <= 0 {
		return nil, bad
	}
	var s []sizeParam
	for n := start; n <= end; n += inc {
		s = append(s, sizeParam{size: n})
	}
	return s, nil
}

// maxSize is FT_BENCHMARK_MAX_MSG_SIZE: the table's last size.
func (o *Options) maxSize() int { return o.Sizes[len(o.Sizes)-1].size }

// useSize reports whether size i of the table runs (ft_use_size): it fits
// the provider's max_msg_size and -S all, a range, or its default mark
// selects it.
func (s *Session) useSize(i int) bool {
	p := s.opts.Sizes[i]
	return p.size <= s.maxMsgSize() && (s.opts.AllSizes || p.def)
}

// sizeToCount returns the iterations for a size when -I is not given
// (size_to_count): 10000 below 64k, 1000 below 1m, 100 from 1m, twice as
// many in bandwidth tests.
func (o *Options) sizeToCount(size int) int {
	n := 10000
	switch {
	case size >= 1<<20:
		n = 100
	case size >= 1<<16:
		n = 1000
	}
	if o.Has(OptBW) {
		n *= 2
	}
	return n
}

// initTest sets the iteration count for the current size (init_test).
func (s *Session) initTest() {
	if !s.opts.Has(OptIter) {
		s.opts.Iterations = s.opts.sizeToCount(s.opts.TransferSize)
	}
}

// eachSize runs test for every selected size, or once for -S N, with
// TransferSize and Iterations set: the loop of every benchmark's run().
func (s *Session) eachSize(test func() error) error {
	if s.opts.Has(OptSize) {
		s.initTest()
		return test()
	}
	for i := range s.opts.Sizes {
		if !s.useSize(i) {
			continue
		}
		s.opts.TransferSize = s.opts.Sizes[i].size
		s.initTest()
		if err := test(); err != nil {
			return err
		}
	}
	return nil
}

// sizeStr formats a byte count as size_str does: "64", "1.5k", "1m",
// with one decimal below 10 units when it is not zero.
func sizeStr(size int64) string {
	var base int64
	var mag string
	switch {
	case size >= 1<<30:
		base, mag = 1<<30, "g"
	case size >= 1<<20:
		base, mag = 1<<20, "m"
	case size >= 1<<10:
		base, mag = 1<<10, "k"
	default:
		base, mag = 1, ""
	}
	var fraction int64
	if size/base < 10 {
		fraction = (size % base) * 10 / base
	}
	if fraction != 0 {
		return fmt.Sprintf("%d.%d%s", size/base, fraction, mag)
	}
	return fmt.Sprintf("%d%s", size/base, mag)
}

// cntStr formats a count as cnt_str does: "10k", "1m", "100".
func cntStr(cnt int64) string {
	switch {
	case cnt >= 1000000000:
		return fmt.Sprintf("%db", cnt/1000000000)
	case cnt >= 1000000:
		return fmt.Sprintf("%dm", cnt/1000000)
	case cnt >= 1000:
		return fmt.Sprintf("%dk", cnt/1000)
	}
	return strconv.FormatInt(cnt, 10)
}
