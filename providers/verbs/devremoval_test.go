//go:build verbs && cgo

package verbs

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// TestDeviceRemoval removes the RDMA device under a listening passive
// endpoint (rdma link delete): rdma_cm's DEVICE_REMOVAL reaches it as an
// fi.ENODEV error entry from the passive endpoint, eq.ReasonTransport,
// as in C, and the endpoint then closes. The device stays gone (Soft-RoCE
// finishes removing it only when the process closes its device
// contexts), so the test runs only when GOFABRIC_VERBS_DEVICE_REMOVAL
// names the device, alone in its own VM (scripts/test.sh).
func TestDeviceRemoval(t *testing.T) {
	dev := os.Getenv("GOFABRIC_VERBS_DEVICE_REMOVAL")
	if dev == "" {
		t.Skip("removes the RDMA device: set GOFABRIC_VERBS_DEVICE_REMOVAL=rxe0 and run it alone in the Soft-RoCE VM (scripts/test.sh does)")
	}
	l := openListener(t, msgHints(false))
	cmd := exec.Command("rdma", "link", "delete", dev)
	require.NoError(t, cmd.Start())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := l.eq.SRead(ctx)
	require.ErrorIs(t, err, fi.EAVAIL, "an error entry")
	e, err := l.eq.ReadErr()
	require.NoError(t, err)
	t.Logf("device removal: %v", e)
	require.Equal(t, fi.ENODEV, e.Err)
	require.Equal(t, eq.ReasonTransport, e.Reason)
	require.Same(t, l.pep, e.Fid)
	require.NoError(t, l.pep.Close())
	require.NoError(t, l.eq.Close())
	require.NoError(t, l.fab.Close())
}
