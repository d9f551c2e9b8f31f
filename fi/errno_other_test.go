//go:build !linux || mips || mipsle || mips64 || mips64le

package fi

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Off Linux's generic ABI, codes and host errnos match by name
// (hostErrnos): each pair must hold both ways, and one host errno must
// not stand for two codes.
func TestHostErrnos(t *testing.T) {
	require.NotEmpty(t, hostErrnos)
	seen := make(map[syscall.Errno]Errno)
	for _, h := range hostErrnos {
		require.Less(t, int(h.code), 256, "%v: libfabric's own codes have no host errno", h.code.Name())
		require.True(t, errors.Is(h.code, h.host), "errors.Is(%v, %v)", h.code.Name(), h.host)
		require.Equal(t, h.code, Code(h.host), "Code(%v)", h.host)
		if prev, ok := seen[h.host]; ok {
			require.Equal(t, prev, h.code, "host errno %v stands for two codes", h.host)
		}
		seen[h.host] = h.code
	}
}

func TestUnnamedHostErrno(t *testing.T) {
	// A host errno without a code of the same meaning is no code's.
	unnamed := syscall.Errno(1 << 20)
	require.Equal(t, EOTHER, Code(unnamed))
	for _, h := range hostErrnos {
		require.False(t, errors.Is(h.code, unnamed), h.code.Name())
	}
}
