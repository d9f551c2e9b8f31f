package fi

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// gofabric's sockaddrs carry Linux's address families on every OS; on
// Linux they must be the kernel's.
func TestSockaddrFamiliesAreLinux(t *testing.T) {
	require.Equal(t, unix.AF_INET, afInet)
	require.Equal(t, unix.AF_INET6, afInet6)
	require.Equal(t, unix.SizeofSockaddrInet4, sockaddrInLen)
	require.Equal(t, unix.SizeofSockaddrInet6, sockaddrIn6Len)
}
