//go:build darwin || netbsd || solaris || aix || js || windows || (linux && (mips || mipsle || mips64 || mips64le))

package fi

import "syscall"

// ENODATA, which the other BSDs and WASI lack.
func init() {
	hostErrnos = append(hostErrnos, hostErrno{ENODATA, syscall.ENODATA})
}
