package pingpong

import (
	"bytes"
	"testing"

	_ "github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
)

// TestInteropTCPMsg runs the Go tool over gofabric's tcp provider
// (NewFabricTransport, -p tcp -e msg) against the C fi_pingpong over C's
// tcp provider, as client and as server. With -c each side verifies every
// payload the other built; both print rows for the same sizes.
func TestInteropTCPMsg(t *testing.T) {
	t.Setenv("FI_TCP_IFACE", "lo")
	tests := []struct {
		name  string
		args  []string
		sizes int
	}{
		{"default sizes", []string{"-I", "3", "-c"}, 6},
		{"1 MiB", []string{"-I", "10", "-S", "1048576", "-c"}, 1},
		{"all sizes", []string{"-I", "2", "-S", "all", "-c"}, 46},
		{"no iterations", []string{"-I", "0", "-S", "64"}, 0},
	}
	for _, tt := range tests {
		for _, goClient := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/go client", false: "/go server"}[goClient]
			t.Run(name, func(t *testing.T) {
				cargs := append([]string{"-p", "tcp", "-e", "msg"}, tt.args...)
				o, err := ParseOptions(cargs, &bytes.Buffer{})
				require.NoError(t, err)
				runInterop(t, o, cargs, goClient, NewFabricTransport, tt.sizes)
			})
		}
	}
}
