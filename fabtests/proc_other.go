//go:build !unix

package fabtests

import (
	"errors"
	"runtime"
)

// twoProcUnavailable says why there are no peer processes here: the link
// to the child is two pipes it inherits as descriptors 3 and 4
// (exec.Cmd.ExtraFiles), which only Unix systems pass on.
const twoProcUnavailable = "the peer process inherits its pipes as descriptors 3 and 4 (exec.Cmd.ExtraFiles), which " +
	runtime.GOOS + " does not support"

// setNonblock is never reached without a peer process.
func setNonblock(int) error { return errors.ErrUnsupported }
