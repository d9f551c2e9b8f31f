package pingpong

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	_ "github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
)

// runBounded runs the Go side and waits for it at most limit. When it takes
// longer, it kills the C peer, which ends the Go side's busy-polling waits
// (the connection goes down), and fails the test.
func runBounded(t *testing.T, limit time.Duration, c *cProcess, run func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
	}
	_ = c.cmd.Process.Kill()
	select {
	case err := <-done:
		t.Fatalf("the Go side did not finish in %v (C peer killed; then it returned %v)", limit, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the Go side did not finish in %v, nor after the C peer was killed", limit)
	}
	return nil
}

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
				var out, errb bytes.Buffer
				var c *cProcess
				if goClient {
					port := freePort(t)
					c = startC(t, append(cargs, "-B", strconv.Itoa(int(port)))...)
					o.Server, o.SrcPort = "127.0.0.1", 0
					ctrl := dialC(t, port)
					err = runBounded(t, 2*time.Minute, c, func() error {
						return RunCtrl(context.Background(), o, ctrl, NewFabricTransport(), &out, &errb)
					})
				} else {
					ctrl, lerr := ListenCtrl(context.Background(), 0, false, func(a net.Addr) {
						c = startC(t, append(cargs, "-P", strconv.Itoa(a.(*net.TCPAddr).Port), "127.0.0.1")...)
					})
					require.NoError(t, lerr)
					err = runBounded(t, 2*time.Minute, c, func() error {
						return RunCtrl(context.Background(), o, ctrl, NewFabricTransport(), &out, &errb)
					})
				}
				require.NoError(t, err, "Go stderr: %s", errb.String())
				require.Equal(t, 0, c.wait(t), "C stdout: %s\nC stderr: %s", c.stdout.String(), c.stderr.String())
				goRows, cRows := rows(t, out.String()), rows(t, c.stdout.String())
				require.Len(t, goRows, tt.sizes)
				require.Len(t, cRows, tt.sizes)
				for i := range goRows {
					// bytes, #sent, #ack and total agree; the timings differ.
					require.Equal(t, cRows[i][:4], goRows[i][:4])
					require.Equal(t, "="+goRows[i][1], goRows[i][2])
				}
			})
		}
	}
}
