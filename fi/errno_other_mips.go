//go:build linux && (mips || mipsle || mips64 || mips64le)

package fi

import "syscall"

// The Linux-only names, for Linux on MIPS, whose errno numbers differ from
// the generic ABI's that fi_errno.h's values follow here.
func init() {
	hostErrnos = append(hostErrnos,
		hostErrno{EREMOTEIO, syscall.EREMOTEIO},
		hostErrno{EKEYREJECTED, syscall.EKEYREJECTED},
	)
}
