package fi

import (
	"context"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Errno is a libfabric error number (fi_errno.h), always positive. Values
// below 256 are the host's errno values; 256 and above are libfabric's own.
// An Errno may hold any errno, not only the named ones, exactly as
// fi_strerror(3) accepts any value.
//
// Data-path calls return bare Errno values (never wrapped) so that a failing
// call does not allocate; control-path calls wrap an Errno with context.
// Use [Code] to find the Errno in any error chain.
type Errno int

// The fi_errno.h codes. The POSIX-range values come from the platform's
// errno numbers, like FI_E* in C.
const (
	SUCCESS       Errno = 0
	EPERM               = Errno(unix.EPERM)
	ENOENT              = Errno(unix.ENOENT)
	EINTR               = Errno(unix.EINTR)
	EIO                 = Errno(unix.EIO)
	E2BIG               = Errno(unix.E2BIG)
	EBADF               = Errno(unix.EBADF)
	EAGAIN              = Errno(unix.EAGAIN)
	ENOMEM              = Errno(unix.ENOMEM)
	EACCES              = Errno(unix.EACCES)
	EFAULT              = Errno(unix.EFAULT)
	EBUSY               = Errno(unix.EBUSY)
	ENODEV              = Errno(unix.ENODEV)
	EINVAL              = Errno(unix.EINVAL)
	EMFILE              = Errno(unix.EMFILE)
	ENOSPC              = Errno(unix.ENOSPC)
	ENOSYS              = Errno(unix.ENOSYS)
	EWOULDBLOCK         = Errno(unix.EWOULDBLOCK)
	ENOMSG              = Errno(unix.ENOMSG)
	ENODATA             = Errno(unix.ENODATA)
	EOVERFLOW           = Errno(unix.EOVERFLOW)
	EMSGSIZE            = Errno(unix.EMSGSIZE)
	ENOPROTOOPT         = Errno(unix.ENOPROTOOPT)
	EOPNOTSUPP          = Errno(unix.EOPNOTSUPP)
	EADDRINUSE          = Errno(unix.EADDRINUSE)
	EADDRNOTAVAIL       = Errno(unix.EADDRNOTAVAIL)
	ENETDOWN            = Errno(unix.ENETDOWN)
	ENETUNREACH         = Errno(unix.ENETUNREACH)
	ECONNABORTED        = Errno(unix.ECONNABORTED)
	ECONNRESET          = Errno(unix.ECONNRESET)
	ENOBUFS             = Errno(unix.ENOBUFS)
	EISCONN             = Errno(unix.EISCONN)
	ENOTCONN            = Errno(unix.ENOTCONN)
	ESHUTDOWN           = Errno(unix.ESHUTDOWN)
	ETIMEDOUT           = Errno(unix.ETIMEDOUT)
	ECONNREFUSED        = Errno(unix.ECONNREFUSED)
	EHOSTDOWN           = Errno(unix.EHOSTDOWN)
	EHOSTUNREACH        = Errno(unix.EHOSTUNREACH)
	EALREADY            = Errno(unix.EALREADY)
	EINPROGRESS         = Errno(unix.EINPROGRESS)
	EREMOTEIO           = Errno(unix.EREMOTEIO)
	ECANCELED           = Errno(unix.ECANCELED)
	EKEYREJECTED        = Errno(unix.EKEYREJECTED)

	// libfabric's own codes, FI_ERRNO_OFFSET (256) and up.
	EOTHER        Errno = 256 // FI_EOTHER: unspecified error
	ETOOSMALL     Errno = 257 // FI_ETOOSMALL: provided buffer is too small
	EOPBADSTATE   Errno = 258 // FI_EOPBADSTATE: operation not permitted in current state
	EAVAIL        Errno = 259 // FI_EAVAIL: error available
	EBADFLAGS     Errno = 260 // FI_EBADFLAGS: flags not supported
	ENOEQ         Errno = 261 // FI_ENOEQ: missing or unavailable event queue
	EDOMAIN       Errno = 262 // FI_EDOMAIN: invalid resource domain
	ENOCQ         Errno = 263 // FI_ENOCQ: missing or unavailable completion queue
	ECRC          Errno = 264 // FI_ECRC: CRC error
	ETRUNC        Errno = 265 // FI_ETRUNC: truncation error
	ENOKEY        Errno = 266 // FI_ENOKEY: required key not available
	ENOAV         Errno = 267 // FI_ENOAV: missing or unavailable address vector
	EOVERRUN      Errno = 268 // FI_EOVERRUN: queue has been overrun
	ENORX         Errno = 269 // FI_ENORX: receiver not ready, no receive buffers available
	ENOMR         Errno = 270 // FI_ENOMR: memory registration limit exceeded (newer libfabric)
	EFIREWALLADDR Errno = 271 // FI_EFIREWALLADDR: host unreachable due to firewall (newer libfabric)
)

// Error returns the text fi_strerror(3) gives for e, without allocating for
// any value in 0..271.
func (e Errno) Error() string { return strerror(e) }

// Is reports whether e matches target: the equal syscall.Errno, and
// ECANCELED ↔ context.Canceled, ETIMEDOUT ↔ context.DeadlineExceeded,
// EBADF ↔ net.ErrClosed.
func (e Errno) Is(target error) bool {
	switch t := target.(type) {
	case syscall.Errno:
		return e < 256 && int(t) == int(e)
	}
	switch {
	case e == ECANCELED && target == context.Canceled:
		return true
	case e == ETIMEDOUT && target == context.DeadlineExceeded:
		return true
	case e == EBADF && target == net.ErrClosed:
		return true
	}
	return false
}

// Code returns the first Errno found in err's chain. It falls back to a
// syscall.Errno in the chain, then to the context errors (ECANCELED,
// ETIMEDOUT) and net.ErrClosed (EBADF), and finally to EOTHER. Code(nil) is
// SUCCESS.
func Code(err error) Errno {
	if err == nil {
		return SUCCESS
	}
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return Errno(se)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ECANCELED
	case errors.Is(err, context.DeadlineExceeded):
		return ETIMEDOUT
	case errors.Is(err, net.ErrClosed):
		return EBADF
	}
	return EOTHER
}
