//go:build linux

package fabtests

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pollResult is what poll(2) reported for one descriptor.
type pollResult struct {
	in   bool  // POLLIN: readable
	nval bool  // POLLNVAL: the descriptor was closed
	err  error // poll itself failed
}

// pollFD polls fd for input for up to ms milliseconds (0: just look, -1:
// no limit), the way an application waits on an FI_WAIT_FD descriptor.
func pollFD(fd, ms int) pollResult {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, ms)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return pollResult{err: err}
		case n == 0:
			return pollResult{}
		}
		return pollResult{in: fds[0].Revents&unix.POLLIN != 0, nval: fds[0].Revents&unix.POLLNVAL != 0}
	}
}

// pollSupported says whether pollFD works here.
const pollSupported = true
