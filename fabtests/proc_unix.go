//go:build unix

package fabtests

import "syscall"

// twoProcUnavailable is empty: on Unix a child process inherits the link's
// pipes (exec.Cmd.ExtraFiles) as descriptors 3 and 4.
const twoProcUnavailable = ""

// setNonblock makes descriptor fd non-blocking.
func setNonblock(fd int) error { return syscall.SetNonblock(fd, true) }
