package ft

import (
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// pinCore restricts the process to the CPUs of list, "0,2-4" (--pin-core,
// ft_pin_core). C sets the calling thread's affinity before it starts
// others; a Go process already runs several threads, so every thread of
// the process is set, and the ones the runtime starts later inherit it.
func pinCore(list string) error {
	var set unix.CPUSet
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return errors.Wrapf(fi.EINVAL, "--pin-core %s: %q is not a CPU number", list, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return errors.Wrapf(fi.EINVAL, "--pin-core %s: %q is not a CPU range", list, part)
			}
		}
		for c := a; c <= b; c++ {
			if c >= len(set)*64 {
				return errors.Wrapf(fi.EINVAL, "--pin-core %s: CPU %d is out of range", list, c)
			}
			set.Set(c)
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return errors.Wrap(err, "--pin-core: listing the process's threads")
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return errors.Wrapf(err, "--pin-core: sched_setaffinity of thread %d", tid)
		}
	}
	return nil
}
