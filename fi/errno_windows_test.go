package fi_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// Winsock reports socket errors with its own codes, which match the
// codes of the same meaning.
func TestErrnoIsWinsockErrno(t *testing.T) {
	require.ErrorIs(t, fi.ECONNRESET, syscall.WSAECONNRESET)
	require.Equal(t, fi.ECONNRESET, fi.Code(syscall.WSAECONNRESET))
	require.Equal(t, fi.ECONNABORTED, fi.Code(syscall.WSAECONNABORTED))
	require.Equal(t, fi.EAGAIN, fi.Code(syscall.EWOULDBLOCK))
}
