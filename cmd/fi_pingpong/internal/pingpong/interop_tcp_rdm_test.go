package pingpong

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
)

// requireTCPRDM requires gofabric's tcp provider to offer FI_EP_RDM
// entries (tcp;ofi_rxm).
func requireTCPRDM(t *testing.T) {
	t.Helper()
	h := (*fi.Info)(nil).Clone()
	h.EPAttr.Type = fi.EPTypeRDM
	h.FabricAttr.ProvName = "tcp"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := fi.GetInfo(ctx, "", "", 0, h)
	require.NoError(t, err, "the tcp provider offers FI_EP_RDM entries")
}

// TestInteropTCPRDM runs the Go tool over gofabric's tcp provider
// (NewFabricTransport, -p tcp -e rdm, which libfabric serves as
// tcp;ofi_rxm) against the C fi_pingpong, as client and as server, with
// untagged and tagged messages. With -c each side verifies every payload
// the other built; both print rows for the same sizes. -S all crosses the
// rxm eager limit (16 KiB), so it covers rendezvous both ways.
func TestInteropTCPRDM(t *testing.T) {
	t.Setenv("FI_TCP_IFACE", "lo")
	requireTCPRDM(t)
	// No "-I 0" case here, unlike the MSG test: C fi_pingpong -e rdm -I 0
	// fails against itself (its finalize takes rxm's fi.EAGAIN while the
	// connection opens as fatal: "transmit(): ret=-11").
	tests := []struct {
		name  string
		args  []string
		sizes int
	}{
		{"default sizes", []string{"-I", "3", "-c"}, 6},
		{"1 MiB", []string{"-I", "10", "-S", "1048576", "-c"}, 1},
		{"all sizes", []string{"-I", "2", "-S", "all", "-c"}, 46},
		{"tagged default sizes", []string{"-m", "tagged", "-I", "3", "-c"}, 6},
		{"tagged all sizes", []string{"-m", "tagged", "-I", "2", "-S", "all", "-c"}, 46},
	}
	for _, tt := range tests {
		for _, goClient := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/go client", false: "/go server"}[goClient]
			t.Run(name, func(t *testing.T) {
				cargs := append([]string{"-p", "tcp", "-e", "rdm"}, tt.args...)
				o, err := ParseOptions(cargs, &bytes.Buffer{})
				require.NoError(t, err)
				runInterop(t, o, cargs, goClient, NewFabricTransport, tt.sizes)
			})
		}
	}
}
