//go:build linux

package fabnet_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// TestDialDeadlineDroppedPeer: a connect to an address whose packets an
// nftables rule drops (inside a network namespace the test creates, at
// the far end of a veth pair) hears nothing at all, not even a reset:
// Dial ends at the context's deadline, with no goroutine or descriptor
// left behind. Needs root, ip(8) and nft(8); skipped without them
// (failed under GOFABRIC_STRICT).
func TestDialDeadlineDroppedPeer(t *testing.T) {
	reftest.Root(t, "create network namespaces")
	ipTool := reftest.Tool(t, "ip", "iproute2")
	nftTool := reftest.Tool(t, "nft", "nftables")
	run := func(stdin, tool string, args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, tool, args...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	id := rand.Uint32()
	ns := fmt.Sprintf("gofabric-fabnet-%d-%d", os.Getpid(), id)
	sub := 1 + id%250
	hostIP, nsIP := fmt.Sprintf("10.214.%d.1", sub), fmt.Sprintf("10.214.%d.2", sub)
	host, peer := fmt.Sprintf("gfn%dh", id%100000), fmt.Sprintf("gfn%dn", id%100000)
	if err := run("", ipTool, "netns", "add", ns); err != nil {
		reftest.Missing(t, "network namespace unavailable: %v", err)
	}
	t.Cleanup(func() {
		if err := run("", ipTool, "netns", "del", ns); err != nil {
			t.Errorf("delete the test's network namespace: %v", err)
		}
	})
	for _, args := range [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns},
		{"addr", "add", hostIP + "/30", "dev", host},
		{"link", "set", host, "up"},
		{"-n", ns, "addr", "add", nsIP + "/30", "dev", peer},
		{"-n", ns, "link", "set", peer, "up"},
	} {
		if err := run("", ipTool, args...); err != nil {
			reftest.Missing(t, "network namespace unavailable: %v", err)
		}
	}
	const rules = `table inet gofabric_drop {
	chain in { type filter hook input priority 0; policy drop; }
}
`
	require.NoError(t, run(rules, ipTool, "netns", "exec", ns, nftTool, "-f", "-"))
	dialDeadline(t, net.JoinHostPort(nsIP, "4711"))
}
