//go:build !unix

package ft

import (
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// pollReadable: -c fd needs poll(2), which this system lacks.
func pollReadable(int, time.Duration) (bool, error) {
	return false, errors.Wrap(fi.ENOSYS, "-c fd: no poll(2) on this system")
}
