//go:build (!linux || mips || mipsle || mips64 || mips64le) && !wasip1

package fi

import "syscall"

// Names every host of errno_other.go has except WASI's.
func init() {
	hostErrnos = append(hostErrnos,
		hostErrno{EAGAIN, syscall.EWOULDBLOCK},
		hostErrno{ESHUTDOWN, syscall.ESHUTDOWN},
		hostErrno{EHOSTDOWN, syscall.EHOSTDOWN},
	)
}
