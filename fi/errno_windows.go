package fi

import "syscall"

// Winsock reports socket errors with its own codes (WSAECONNRESET, not the
// ECONNRESET that package syscall invents for Windows); those package
// syscall names map to the same codes.
func init() {
	hostErrnos = append(hostErrnos,
		hostErrno{EACCES, syscall.WSAEACCES},
		hostErrno{ENOPROTOOPT, syscall.WSAENOPROTOOPT},
		hostErrno{ECONNABORTED, syscall.WSAECONNABORTED},
		hostErrno{ECONNRESET, syscall.WSAECONNRESET},
	)
}
