//go:build !linux

package kit

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Off Linux there is no FI_WAIT_FD descriptor: opening a queue with
// fi.WaitFD fails with fi.ENOSYS (gofabric's transports run on Linux
// only).

func newEventFD() (int, error) {
	return -1, errors.WithHint(errors.Wrap(fi.ENOSYS, "wait fd: FI_WAIT_FD needs Linux (eventfd)"),
		"use fi.WaitUnspec and the blocking calls (SRead, Wait)")
}

func signalEventFD(int) {}

func drainEventFD(int, *[8]byte) {}

func closeEventFD(int) {}
