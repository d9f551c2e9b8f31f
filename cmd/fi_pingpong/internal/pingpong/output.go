package pingpong

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Header is the result table's header line, printed once before the
// first row (util/pingpong.c's "%-8s%-8s%-9s%-8s%8s %10s%13s%13s\n").
const Header = "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n"

// SizeStr formats a byte count as fi_pingpong does: with the largest of
// the suffixes g, m, k (powers of 1024) it reaches, one truncated decimal
// below 10 of a unit when that decimal is not 0: 64, 1.5k, 12k, 1.5m.
func SizeStr(v uint64) string {
	base, suffix := uint64(1), ""
	switch {
	case v >= 1<<30:
		base, suffix = 1<<30, "g"
	case v >= 1<<20:
		base, suffix = 1<<20, "m"
	case v >= 1<<10:
		base, suffix = 1<<10, "k"
	}
	q := v / base
	var frac uint64
	if q < 10 {
		frac = v % base * 10 / base
	}
	s := strconv.FormatUint(q, 10)
	if frac != 0 {
		s += "." + strconv.FormatUint(frac, 10)
	}
	return s + suffix
}

// CntStr formats a count with the largest of the suffixes b, m, k (powers
// of 1000) it reaches, truncated: 999, 1k, 1m, 2b.
func CntStr(c uint64) string {
	switch {
	case c >= 1e9:
		return strconv.FormatUint(c/1e9, 10) + "b"
	case c >= 1e6:
		return strconv.FormatUint(c/1e6, 10) + "m"
	case c >= 1e3:
		return strconv.FormatUint(c/1e3, 10) + "k"
	}
	return strconv.FormatUint(c, 10)
}

// Row formats one table row as the C tool prints it: size, the requested
// iterations it, acked (the count both sides agreed on), the total bytes
// moved both ways, the time in seconds, MB/s (bytes per µs), the one-way
// latency in µs (computed in float32 as C does) and millions of transfers
// per second. elapsed is truncated to whole microseconds, C's
// gettimeofday resolution. it must not be 0 (no row is printed then).
func Row(size, it, acked int, elapsed time.Duration) string {
	us := elapsed.Microseconds()
	var ack string
	switch {
	case it == acked:
		ack = fmt.Sprintf("=%-8s", CntStr(uint64(acked)))
	case it < acked:
		ack = fmt.Sprintf("-%-8s", CntStr(uint64(acked-it)))
	default:
		ack = fmt.Sprintf("+%-8s", CntStr(uint64(it-acked)))
	}
	total := uint64(it) * uint64(size) * 2
	return fmt.Sprintf("%-8s%-8s%s%-8s", SizeStr(uint64(size)), CntStr(uint64(it)), ack, SizeStr(total)) +
		rowNumbers(total, it, us)
}

// rowNumbers formats the numeric columns of a row: C's
// "%8.2fs%10.2f%11.2f%11.2f\n" of time, MB/s, usec/xfer, Mxfers/sec.
func rowNumbers(total uint64, it int, us int64) string {
	usec := float32(float32(us)/float32(it)) / 2
	return cfloat(8, float64(us)/1e6) + "s" +
		cfloat(10, float64(total)/float64(us)) +
		cfloat(11, float64(usec)) +
		cfloat(11, 1/float64(usec)) + "\n"
}

// cfloat formats v as glibc's "%<width>.2f": Go's digits, but the NaN of
// 0/0 is "-nan" and infinities are "inf" / "-inf".
func cfloat(width int, v float64) string {
	switch {
	case math.IsNaN(v):
		return fmt.Sprintf("%*s", width, "-nan")
	case math.IsInf(v, 1):
		return fmt.Sprintf("%*s", width, "inf")
	case math.IsInf(v, -1):
		return fmt.Sprintf("%*s", width, "-inf")
	}
	return fmt.Sprintf("%*.2f", width, v)
}

// table prints rows, with the header before the first.
type table struct {
	w       io.Writer
	started bool
}

// row prints one row; with it == 0 it prints nothing, as C.
func (t *table) row(size, it, acked int, elapsed time.Duration) {
	if it == 0 {
		return
	}
	if !t.started {
		io.WriteString(t.w, Header)
		t.started = true
	}
	io.WriteString(t.w, Row(size, it, acked, elapsed))
}
