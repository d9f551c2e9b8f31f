package main

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup starts cmd in a process group of its own and makes its
// cancellation kill the whole group: the test binary under test2json and
// the peer processes it starts.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
}

// waitGroup waits for cmd (started with ownGroup) to exit, kills what is
// left of its process group (a peer process that outlived the test
// binary) while the unreaped process still holds the group's number, so
// that the signal cannot reach a group that reused it, then reaps it.
func waitGroup(cmd *exec.Cmd) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	return cmd.Wait()
}
