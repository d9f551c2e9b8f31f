//go:build !linux

package fabtests

import "errors"

// pollResult is what poll(2) reported for one descriptor.
type pollResult struct {
	in   bool  // POLLIN: readable
	nval bool  // POLLNVAL: the descriptor was closed
	err  error // poll itself failed
}

// pollFD is not implemented off Linux, where gofabric's providers, and
// so FI_WAIT_FD descriptors, do not exist: testWaitFD skips.
func pollFD(int, int) pollResult {
	return pollResult{err: errors.New("fabtests: poll(2) on wait descriptors is tested on Linux only")}
}

// pollSupported says whether pollFD works here.
const pollSupported = false
