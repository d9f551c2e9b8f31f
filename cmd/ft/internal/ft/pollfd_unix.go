//go:build unix

package ft

import (
	"time"

	"golang.org/x/sys/unix"
)

// pollReadable polls fd for input for up to d (-c fd's poll(2)); an
// interrupted poll counts as not ready.
func pollReadable(fd int, d time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(d.Milliseconds())+1)
	if err == unix.EINTR {
		return false, nil
	}
	return n > 0, err
}
