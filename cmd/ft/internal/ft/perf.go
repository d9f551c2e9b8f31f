package ft

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// start begins a timed loop (ft_start): it sets OptActive, which makes
// tx and rx fill and check payloads under -v.
func (s *Session) start() {
	s.opts.Flags |= OptActive
	s.startTime = time.Now()
}

// stop ends a timed loop (ft_stop).
func (s *Session) stop() {
	s.endTime = time.Now()
	s.opts.Flags &^= OptActive
}

// elapsedMicros is get_elapsed(start, end, MICRO): whole microseconds.
func (s *Session) elapsedMicros() int64 { return s.endTime.Sub(s.startTime).Microseconds() }

// showPerf prints one result row of the last timed loop, for iters
// iterations of xfersPerIter transfers of size bytes: show_perf_mr's YAML
// line under -m, else show_perf's table row (and its header before the
// first row). name, when not empty, heads the row as the first column.
func (s *Session) showPerf(name string, size, iters, xfersPerIter int) {
	elapsed := s.elapsedMicros()
	total := int64(iters) * int64(size) * int64(xfersPerIter)
	// C computes the per-transfer time in single precision.
	usecPerXfer := float32(elapsed) / float32(iters) / float32(xfersPerIter)
	w := s.stdout
	if s.opts.MachineReadable {
		if !s.headerShown {
			fmt.Fprintf(w, "---\n%s :\n", strings.Join(s.opts.Argv, " "))
			s.headerShown = true
		}
		fmt.Fprintf(w, "- { xfer_size: %d, iterations: %d, total: %d, time: %s, MB/sec: %s, usec/xfer: %s, Mxfers/sec: %s }\n",
			size, iters, total, cfloat(float64(elapsed)/1e6, 0, 6), cfloat(float64(total)/float64(elapsed), 0, 6),
			cfloat(float64(usecPerXfer), 0, 6), cfloat(1/float64(usecPerXfer), 0, 6))
		return
	}
	if !s.headerShown {
		if name != "" {
			fmt.Fprintf(w, "%-50s", "name")
		}
		fmt.Fprintf(w, "%-8s%-8s%-8s%8s %10s%13s%13s\n", "bytes", "iters", "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec")
		s.headerShown = true
	}
	if name != "" {
		fmt.Fprintf(w, "%-50s", name)
	}
	fmt.Fprintf(w, "%-8s%-8s%-8s%ss%s%s%s\n", sizeStr(int64(size)), cntStr(int64(iters)), sizeStr(total),
		cfloat(float64(elapsed)/1e6, 8, 2), cfloat(float64(total)/float64(elapsed), 10, 2),
		cfloat(float64(usecPerXfer), 11, 2), cfloat(1/float64(usecPerXfer), 11, 2))
}

// cfloat formats v as C's printf("%*.*f", width, prec, v): Go's %f for
// finite values, and C's "inf", "-inf", "nan" and "-nan" otherwise (a
// zero elapsed time divides by zero).
func cfloat(v float64, width, prec int) string {
	var s string
	switch {
	case math.IsInf(v, 1):
		s = "inf"
	case math.IsInf(v, -1):
		s = "-inf"
	case math.IsNaN(v):
		s = "-nan" // glibc prints 0.0/0.0 (sign bit set on x86) this way
	default:
		return fmt.Sprintf("%*.*f", width, prec, v)
	}
	return fmt.Sprintf("%*s", width, s)
}
