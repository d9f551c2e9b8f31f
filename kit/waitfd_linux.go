//go:build linux

package kit

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// The FI_WAIT_FD descriptor on Linux is an eventfd(2), as in C's
// libfabric: non-blocking, close-on-exec, readable while its count is
// not zero.

func newEventFD() (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return -1, errors.Wrapf(fi.Code(err), "wait fd: eventfd: %v", err)
	}
	return fd, nil
}

// eventOne is the 8-byte count signalEventFD adds: not zero in either
// byte order.
var eventOne = [8]byte{1}

// signalEventFD makes fd readable. Its count cannot overflow: it is added
// to at most once between drains.
func signalEventFD(fd int) { _, _ = unix.Write(fd, eventOne[:]) }

// drainEventFD makes fd unreadable again, reading its count into b (a
// buffer of the queue's, so that the read allocates nothing even where
// the race detector's instrumentation would move a local one to the
// heap).
func drainEventFD(fd int, b *[8]byte) { _, _ = unix.Read(fd, b[:]) }

func closeEventFD(fd int) { _ = unix.Close(fd) }
