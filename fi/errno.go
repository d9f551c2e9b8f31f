package fi

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"
)

// Errno is a libfabric error number (fi_errno.h), always positive. Values
// below 256 are Linux's errno numbers on every OS (see the constants); 256
// and above are libfabric's own. An Errno may hold any errno, not only the
// named ones, exactly as fi_strerror(3) accepts any value.
//
// Data-path calls return bare Errno values (never wrapped) so that a failing
// call does not allocate; control-path calls wrap an Errno with context.
// Use [Code] to find the Errno in any error chain.
type Errno int

// The fi_errno.h codes. Below 256 they are libfabric's values as C
// libfabric has them on Linux, where FI_E* are the kernel's errno numbers
// (x86-64, arm64 and the other generic ABIs). They are constants, the same
// on every OS: an Errno is a libfabric code, not the host's errno, so
// EAGAIN is 11 on macOS and Windows too. [Errno.Is] and [Code] translate
// to and from the host's syscall.Errno by meaning.
const (
	SUCCESS       Errno = 0
	EPERM         Errno = 1
	ENOENT        Errno = 2
	EINTR         Errno = 4
	EIO           Errno = 5
	E2BIG         Errno = 7
	EBADF         Errno = 9
	EAGAIN        Errno = 11
	ENOMEM        Errno = 12
	EACCES        Errno = 13
	EFAULT        Errno = 14
	EBUSY         Errno = 16
	ENODEV        Errno = 19
	EINVAL        Errno = 22
	EMFILE        Errno = 24
	ENOSPC        Errno = 28
	ENOSYS        Errno = 38
	EWOULDBLOCK         = EAGAIN
	ENOMSG        Errno = 42
	ENODATA       Errno = 61
	EOVERFLOW     Errno = 75
	EMSGSIZE      Errno = 90
	ENOPROTOOPT   Errno = 92
	EOPNOTSUPP    Errno = 95
	EADDRINUSE    Errno = 98
	EADDRNOTAVAIL Errno = 99
	ENETDOWN      Errno = 100
	ENETUNREACH   Errno = 101
	ECONNABORTED  Errno = 103
	ECONNRESET    Errno = 104
	ENOBUFS       Errno = 105
	EISCONN       Errno = 106
	ENOTCONN      Errno = 107
	ESHUTDOWN     Errno = 108
	ETIMEDOUT     Errno = 110
	ECONNREFUSED  Errno = 111
	EHOSTDOWN     Errno = 112
	EHOSTUNREACH  Errno = 113
	EALREADY      Errno = 114
	EINPROGRESS   Errno = 115
	EREMOTEIO     Errno = 121
	ECANCELED     Errno = 125
	EKEYREJECTED  Errno = 129

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

// Error returns the text fi_strerror(3) gives for e on Linux, the same on
// every OS: glibc's strerror text below 256 ("Resource temporarily
// unavailable"), libfabric's own text from 256 ("Error available"), and
// FI_EOTHER's "Unspecified error" for codes past libfabric's last. Like
// fi_strerror it uses e's absolute value. It does not allocate.
func (e Errno) Error() string { return strerror(e) }

// Name returns the fi_errno.h macro name of e, such as "FI_EAGAIN", for
// logs and test failures; libfabric has no such call. EWOULDBLOCK equals
// EAGAIN, as on Linux, and is named "FI_EAGAIN". A code without a name in
// package fi gives "FI_ERRNO(n)", for example "FI_ERRNO(300)" or
// "FI_ERRNO(3)" for ESRCH; only those allocate.
func (e Errno) Name() string {
	if e >= 0 && int(e) < len(errnoNames) && errnoNames[e] != "" {
		return errnoNames[e]
	}
	return "FI_ERRNO(" + strconv.Itoa(int(e)) + ")"
}

// errnoNames maps each named code to its fi_errno.h name. The keys are the
// constants themselves, so a second name for one value (EWOULDBLOCK) cannot
// be listed by mistake: the compiler rejects duplicate keys.
var errnoNames = [...]string{
	SUCCESS:       "FI_SUCCESS",
	EPERM:         "FI_EPERM",
	ENOENT:        "FI_ENOENT",
	EINTR:         "FI_EINTR",
	EIO:           "FI_EIO",
	E2BIG:         "FI_E2BIG",
	EBADF:         "FI_EBADF",
	EAGAIN:        "FI_EAGAIN",
	ENOMEM:        "FI_ENOMEM",
	EACCES:        "FI_EACCES",
	EFAULT:        "FI_EFAULT",
	EBUSY:         "FI_EBUSY",
	ENODEV:        "FI_ENODEV",
	EINVAL:        "FI_EINVAL",
	EMFILE:        "FI_EMFILE",
	ENOSPC:        "FI_ENOSPC",
	ENOSYS:        "FI_ENOSYS",
	ENOMSG:        "FI_ENOMSG",
	ENODATA:       "FI_ENODATA",
	EOVERFLOW:     "FI_EOVERFLOW",
	EMSGSIZE:      "FI_EMSGSIZE",
	ENOPROTOOPT:   "FI_ENOPROTOOPT",
	EOPNOTSUPP:    "FI_EOPNOTSUPP",
	EADDRINUSE:    "FI_EADDRINUSE",
	EADDRNOTAVAIL: "FI_EADDRNOTAVAIL",
	ENETDOWN:      "FI_ENETDOWN",
	ENETUNREACH:   "FI_ENETUNREACH",
	ECONNABORTED:  "FI_ECONNABORTED",
	ECONNRESET:    "FI_ECONNRESET",
	ENOBUFS:       "FI_ENOBUFS",
	EISCONN:       "FI_EISCONN",
	ENOTCONN:      "FI_ENOTCONN",
	ESHUTDOWN:     "FI_ESHUTDOWN",
	ETIMEDOUT:     "FI_ETIMEDOUT",
	ECONNREFUSED:  "FI_ECONNREFUSED",
	EHOSTDOWN:     "FI_EHOSTDOWN",
	EHOSTUNREACH:  "FI_EHOSTUNREACH",
	EALREADY:      "FI_EALREADY",
	EINPROGRESS:   "FI_EINPROGRESS",
	EREMOTEIO:     "FI_EREMOTEIO",
	ECANCELED:     "FI_ECANCELED",
	EKEYREJECTED:  "FI_EKEYREJECTED",
	EOTHER:        "FI_EOTHER",
	ETOOSMALL:     "FI_ETOOSMALL",
	EOPBADSTATE:   "FI_EOPBADSTATE",
	EAVAIL:        "FI_EAVAIL",
	EBADFLAGS:     "FI_EBADFLAGS",
	ENOEQ:         "FI_ENOEQ",
	EDOMAIN:       "FI_EDOMAIN",
	ENOCQ:         "FI_ENOCQ",
	ECRC:          "FI_ECRC",
	ETRUNC:        "FI_ETRUNC",
	ENOKEY:        "FI_ENOKEY",
	ENOAV:         "FI_ENOAV",
	EOVERRUN:      "FI_EOVERRUN",
	ENORX:         "FI_ENORX",
	ENOMR:         "FI_ENOMR",
	EFIREWALLADDR: "FI_EFIREWALLADDR",
}

// Is reports whether e matches target, for errors.Is: the host's
// syscall.Errno of the same meaning (on Linux the one of the same value,
// codes below 256 only; elsewhere the syscall.Errno of the same name, for
// the codes the host has, and on Windows also the Winsock code, such as
// WSAECONNRESET for ECONNRESET), and ECANCELED ↔ context.Canceled,
// ETIMEDOUT ↔ context.DeadlineExceeded, EBADF ↔ net.ErrClosed.
func (e Errno) Is(target error) bool {
	if t, ok := target.(syscall.Errno); ok {
		return isHostErrno(e, t)
	}
	switch target {
	case context.Canceled:
		return e == ECANCELED
	case context.DeadlineExceeded:
		return e == ETIMEDOUT
	case net.ErrClosed:
		return e == EBADF
	}
	return false
}

// Code returns the libfabric code of err, as a C caller would read it from
// a negative return value: the first Errno in err's chain (through any
// Unwrap, such as cockroachdb/errors wrappers and *eq.EQError); else the
// code of the first syscall.Errno (on Linux its own value; elsewhere the
// code of the same meaning, if package fi names one); else ECANCELED for
// context.Canceled, ETIMEDOUT for context.DeadlineExceeded or
// os.ErrDeadlineExceeded (a passed I/O deadline), EBADF for net.ErrClosed;
// else EOTHER. Code(nil) is SUCCESS. A bare Errno is returned as is,
// without allocating.
func Code(err error) Errno {
	if err == nil {
		return SUCCESS
	}
	if e, ok := err.(Errno); ok {
		return e
	}
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		if e, ok := fromHostErrno(se); ok {
			return e
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ECANCELED
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ETIMEDOUT
	case errors.Is(err, net.ErrClosed):
		return EBADF
	}
	return EOTHER
}
