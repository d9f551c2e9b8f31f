//go:build !linux || mips || mipsle || mips64 || mips64le

package fi

import "syscall"

// Where the host's errno numbers are not Linux's, an Errno and a
// syscall.Errno match by name: hostErrnos pairs each named code with the
// host's errno of the same name, for the names the host's package syscall
// has. Several host errnos may stand for one code (EWOULDBLOCK and EAGAIN
// on Windows, where they differ; Winsock's codes); the first listed wins
// in fromHostErrno. The errno_other_*.go files add the names that only
// some hosts have.

// hostErrno pairs a libfabric code with a host errno of the same meaning.
type hostErrno struct {
	code Errno
	host syscall.Errno
}

// hostErrnos holds the pairs every such host has; init functions of the
// other files append the rest before any caller runs.
var hostErrnos = []hostErrno{
	{EPERM, syscall.EPERM},
	{ENOENT, syscall.ENOENT},
	{EINTR, syscall.EINTR},
	{EIO, syscall.EIO},
	{E2BIG, syscall.E2BIG},
	{EBADF, syscall.EBADF},
	{EAGAIN, syscall.EAGAIN},
	{ENOMEM, syscall.ENOMEM},
	{EACCES, syscall.EACCES},
	{EFAULT, syscall.EFAULT},
	{EBUSY, syscall.EBUSY},
	{ENODEV, syscall.ENODEV},
	{EINVAL, syscall.EINVAL},
	{EMFILE, syscall.EMFILE},
	{ENOSPC, syscall.ENOSPC},
	{ENOSYS, syscall.ENOSYS},
	{ENOMSG, syscall.ENOMSG},
	{EOVERFLOW, syscall.EOVERFLOW},
	{EMSGSIZE, syscall.EMSGSIZE},
	{ENOPROTOOPT, syscall.ENOPROTOOPT},
	{EOPNOTSUPP, syscall.EOPNOTSUPP},
	{EADDRINUSE, syscall.EADDRINUSE},
	{EADDRNOTAVAIL, syscall.EADDRNOTAVAIL},
	{ENETDOWN, syscall.ENETDOWN},
	{ENETUNREACH, syscall.ENETUNREACH},
	{ECONNABORTED, syscall.ECONNABORTED},
	{ECONNRESET, syscall.ECONNRESET},
	{ENOBUFS, syscall.ENOBUFS},
	{EISCONN, syscall.EISCONN},
	{ENOTCONN, syscall.ENOTCONN},
	{ETIMEDOUT, syscall.ETIMEDOUT},
	{ECONNREFUSED, syscall.ECONNREFUSED},
	{EHOSTUNREACH, syscall.EHOSTUNREACH},
	{EALREADY, syscall.EALREADY},
	{EINPROGRESS, syscall.EINPROGRESS},
	{ECANCELED, syscall.ECANCELED},
}

// isHostErrno reports whether t is a host errno of the same meaning as e.
func isHostErrno(e Errno, t syscall.Errno) bool {
	for _, h := range hostErrnos {
		if h.host == t && h.code == e {
			return true
		}
	}
	return false
}

// fromHostErrno returns the code of host errno se, if package fi names
// one of the same meaning.
func fromHostErrno(se syscall.Errno) (Errno, bool) {
	for _, h := range hostErrnos {
		if h.host == se {
			return h.code, true
		}
	}
	return 0, false
}
