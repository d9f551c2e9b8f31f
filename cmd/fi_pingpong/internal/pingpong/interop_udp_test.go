package pingpong

import (
	"bytes"
	"testing"

	_ "github.com/gofabric/gofabric/providers/udp"
	"github.com/stretchr/testify/require"
)

// TestInteropUDPDgram runs the Go tool over gofabric's udp provider
// (NewFabricTransport, -p udp -e dgram) against the C fi_pingpong over C's
// udp provider, as client and as server, with TestInteropDgram's cases.
// The datagrams carry the payload as is on both sides; with -c each side
// verifies every payload the other built, and both print rows for the
// same sizes.
func TestInteropUDPDgram(t *testing.T) {
	t.Setenv("FI_UDP_IFACE", "lo")
	tests := []struct {
		name  string
		args  []string
		sizes int
	}{
		{"one size", []string{"-I", "5", "-S", "64", "-c"}, 1},
		{"default sizes", []string{"-I", "3", "-c"}, 3},
		{"all sizes", []string{"-I", "2", "-S", "all", "-c"}, 21},
		{"no iterations", []string{"-I", "0", "-S", "64"}, 0},
	}
	for _, tt := range tests {
		for _, goClient := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/go client", false: "/go server"}[goClient]
			t.Run(name, func(t *testing.T) {
				cargs := append([]string{"-p", "udp", "-e", "dgram"}, tt.args...)
				o, err := ParseOptions(cargs, &bytes.Buffer{})
				require.NoError(t, err)
				runInterop(t, o, cargs, goClient, NewFabricTransport, tt.sizes)
			})
		}
	}
}
