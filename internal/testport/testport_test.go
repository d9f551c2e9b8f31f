package testport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The ports given out are distinct, below the ephemeral range, and
// usable by a listener; one held by someone else is skipped.
func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	held, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(first+next)))
	require.NoError(t, err)
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port

	seen := map[int]bool{}
	for range 100 {
		p, err := Free()
		require.NoError(t, err)
		require.GreaterOrEqual(t, p, first)
		require.Less(t, p, first+count)
		require.NotEqual(t, heldPort, p, "a port held by a listener was given out")
		require.False(t, seen[p], "port %d given out twice", p)
		seen[p] = true
	}
	l, err := net.Listen("tcp4", "127.0.0.1:"+String(t))
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
