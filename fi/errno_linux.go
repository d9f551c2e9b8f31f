//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package fi

import "syscall"

// On Linux (except MIPS, whose errno numbers differ) fi_errno.h's codes
// below 256 are the kernel's errno values, so an Errno and a syscall.Errno
// of the same meaning have the same number, named or not.

// isHostErrno reports whether t is the host errno of e: the same value,
// for codes below 256.
func isHostErrno(e Errno, t syscall.Errno) bool {
	return e >= 0 && e < 256 && uintptr(t) == uintptr(e)
}

// fromHostErrno returns the code of host errno se: its own value.
func fromHostErrno(se syscall.Errno) (Errno, bool) {
	return Errno(se), true
}
