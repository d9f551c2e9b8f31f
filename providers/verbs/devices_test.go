//go:build verbs && cgo

package verbs

import (
	"errors"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The devices of the host, as libibverbs reports them: inside the
// Soft-RoCE VM that is rxe0 with one active Ethernet port.
func TestListDevices(t *testing.T) {
	devs, err := listDevices()
	if errors.Is(err, fi.ENODEV) || (err == nil && len(devs) == 0) {
		t.Skipf("this host has no RDMA device (%v); run the tests in the Soft-RoCE VM (README)", err)
	}
	require.NoError(t, err)
	for _, d := range devs {
		require.NotEmpty(t, d.name)
		require.NotEmpty(t, d.ports, "%s has no port", d.name)
		require.Positive(t, d.maxQPWR)
		require.Positive(t, d.maxSGE)
		for _, p := range d.ports {
			require.Contains(t, []string{"InfiniBand", "Ethernet"}, p.linkLayer)
			require.GreaterOrEqual(t, p.mtu, 256)
		}
		t.Logf("%s: %+v", d.name, d.ports)
	}
	require.Contains(t, offerReason(), devs[0].name)
}
