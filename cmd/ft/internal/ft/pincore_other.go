//go:build !linux

package ft

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// pinCore is --pin-core, which needs Linux's sched_setaffinity.
func pinCore(list string) error {
	return errors.Wrapf(fi.ENOSYS, "--pin-core %s: CPU affinity is set on Linux only", list)
}
