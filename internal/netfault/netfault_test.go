// Package netfault holds the network-fault tests: tcp traffic (FI_EP_MSG
// and FI_EP_RDM, Go against Go and Go against C libfabric's fi_pingpong)
// between two network namespaces joined by a veth pair while the kernel
// misbehaves: random packet loss (nftables numgen), a slow queueing link
// (a tbf qdisc) and a cut (a drop-all rule). Data must arrive intact, or
// the operation must end in an error entry within the tcp provider's
// liveness bound; nothing may hang.
//
// The tests need root, ip(8) and tc(8) from iproute2, and nft(8) from
// nftables; without them they skip, except under GOFABRIC_STRICT. Each
// test function sets up one pair of namespaces for all its cases.
package netfault

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// goPingpong is the Go fi_pingpong, built once by TestMain; buildErr says
// why it could not be.
var goPingpong, buildErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gofabric-netfault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	goPingpong = filepath.Join(dir, "fi_pingpong")
	if gobin, err := exec.LookPath("go"); err != nil {
		buildErr = fmt.Errorf("the go command is not on PATH: %v", err)
	} else if out, err := exec.Command(gobin, "build", "-o", goPingpong, "github.com/gofabric/gofabric/cmd/fi_pingpong").CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("go build ./cmd/fi_pingpong: %v: %s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// world is two network namespaces, a and b, joined by a veth pair, each
// end with an IPv4 address of one /24.
type world struct {
	ns   [2]string // namespace names
	dev  [2]string // veth ends, dev[i] in ns[i]
	addr [2]string // their addresses
	ip   string    // path of ip(8)
}

// newWorld makes the namespaces and the link, or skips (fails under
// GOFABRIC_STRICT) when the host cannot. They are deleted at cleanup.
func newWorld(t *testing.T) *world {
	t.Helper()
	reftest.Root(t, "create network namespaces")
	w := &world{ip: reftest.Tool(t, "ip", "iproute2")}
	reftest.Tool(t, "tc", "iproute2")
	reftest.Tool(t, "nft", "nftables")
	id := rand.Uint32()
	for i, side := range []string{"a", "b"} {
		w.ns[i] = fmt.Sprintf("gofabric-nf-%d-%x-%s", os.Getpid(), id, side)
		w.dev[i] = fmt.Sprintf("gfnf%x%s", id&0xfffff, side) // at most 15 bytes
	}
	net := fmt.Sprintf("10.%d.%d", 200+rand.IntN(50), rand.IntN(256))
	w.addr = [2]string{net + ".1", net + ".2"}
	for i := range w.ns {
		if out, err := exec.Command(w.ip, "netns", "add", w.ns[i]).CombinedOutput(); err != nil {
			reftest.Missing(t, "ip netns add: %v: %s", err, out)
		}
		ns := w.ns[i]
		t.Cleanup(func() { _ = exec.Command(w.ip, "netns", "del", ns).Run() })
	}
	w.run(t, "", "link", "add", w.dev[0], "type", "veth", "peer", "name", w.dev[1])
	for i := range w.ns {
		w.run(t, "", "link", "set", w.dev[i], "netns", w.ns[i])
		w.run(t, w.ns[i], "addr", "add", w.addr[i]+"/24", "dev", w.dev[i])
		w.run(t, w.ns[i], "link", "set", "lo", "up")
		w.run(t, w.ns[i], "link", "set", w.dev[i], "up")
	}
	return w
}

// run runs ip(8) with args, inside namespace ns unless it is empty.
func (w *world) run(t testing.TB, ns string, args ...string) {
	t.Helper()
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := exec.Command(w.ip, args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// exec runs name with args inside namespace i.
func (w *world) exec(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, w.ip, append([]string{"netns", "exec", w.ns[i], name}, args...)...)
}

// nft replaces both namespaces' gofabric table with one input chain
// holding rule (empty: accept everything).
func (w *world) nft(t testing.TB, rule string) {
	t.Helper()
	script := "table inet gofabric\ndelete table inet gofabric\n" +
		"table inet gofabric {\n chain input {\n  type filter hook input priority 0; policy accept;\n  " + rule + "\n }\n}\n"
	for i := range w.ns {
		cmd := w.exec(context.Background(), i, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "nft in %s: %s", w.ns[i], out)
	}
}

// lossy drops pct percent of the packets each namespace receives, at
// random.
func (w *world) lossy(t testing.TB, pct int) {
	w.nft(t, fmt.Sprintf("numgen random mod 100 < %d drop", pct))
}

// cut drops every packet either namespace receives.
func (w *world) cut(t testing.TB) { w.nft(t, "drop") }

// slow makes both ends of the link a token bucket of rate with a queue
// of up to latency.
func (w *world) slow(t testing.TB, rate, latency string) {
	t.Helper()
	for i := range w.ns {
		out, err := w.exec(context.Background(), i, "tc", "qdisc", "replace", "dev", w.dev[i], "root",
			"tbf", "rate", rate, "burst", "32kbit", "latency", latency).CombinedOutput()
		require.NoError(t, err, "tc qdisc replace in %s: %s", w.ns[i], out)
	}
}

// fast removes the token buckets.
func (w *world) fast(t testing.TB) {
	t.Helper()
	for i := range w.ns {
		_ = w.exec(context.Background(), i, "tc", "qdisc", "del", "dev", w.dev[i], "root").Run()
	}
}

// proc is a process started in a namespace; its output is kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// start starts bin with args in namespace i, with the tcp provider on the
// namespace's veth end and extra environment env, bounded by ctx.
func (w *world) start(t testing.TB, ctx context.Context, i int, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: w.exec(ctx, i, bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "FI_TCP_IFACE="+w.dev[i]), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.WaitDelay = time.Second
	require.NoError(t, p.cmd.Start(), "start %s", name)
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for p to exit and returns its error.
func (p *proc) wait() error {
	<-p.done
	return p.err
}

// listening waits until some socket in namespace i listens on TCP port.
func (w *world) listening(t testing.TB, ctx context.Context, i int, port int) {
	t.Helper()
	hex := fmt.Sprintf(":%04X", port)
	for {
		out, _ := w.exec(ctx, i, "cat", "/proc/net/tcp", "/proc/net/tcp6").Output()
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 3 && strings.HasSuffix(f[1], hex) && f[3] == "0A" {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("nothing listens on port %d in %s: %v", port, w.ns[i], ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tool is one fi_pingpong implementation.
type tool struct{ name, path string }

// tools returns the Go fi_pingpong and, where installed, the C one.
func tools(t *testing.T) (goTool, cTool tool) {
	t.Helper()
	require.NoError(t, buildErr)
	return tool{"go", goPingpong}, tool{"c", reftest.Tool(t, "fi_pingpong", "libfabric-bin")}
}

// pingpong runs server (in namespace a) and client (in b) with args,
// waits for both and requires both to succeed; every size's table line
// must be there. The control port is fixed: the namespaces are private.
func (w *world) pingpong(t *testing.T, server, client tool, bound time.Duration, sizes []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	const port = 47592
	for _, size := range sizes {
		a := append([]string{"-S", size}, args...)
		srv := w.start(t, ctx, 0, server.name+" server", server.path, nil, append(a, "-B", strconv.Itoa(port))...)
		w.listening(t, ctx, 0, port)
		cli := w.start(t, ctx, 1, client.name+" client", client.path, nil, append(a, "-P", strconv.Itoa(port), w.addr[0])...)
		cerr, serr := cli.wait(), srv.wait()
		require.NoError(t, ctx.Err(), "size %s: the pair did not finish within %v\nclient:\n%s\nserver:\n%s", size, bound, cli.out.String(), srv.out.String())
		require.NoError(t, cerr, "size %s: %s client failed:\n%s\nserver:\n%s", size, client.name, cli.out.String(), srv.out.String())
		require.NoError(t, serr, "size %s: %s server failed:\n%s", size, server.name, srv.out.String())
		m := tableLine.FindStringSubmatch(cli.out.String())
		require.NotNil(t, m, "size %s: the client printed no result line:\n%s", size, cli.out.String())
		require.Equal(t, m[2], m[3], "size %s: messages sent and acknowledged:\n%s", size, cli.out.String())
	}
}

// tableLine matches fi_pingpong's result line: size, #sent, =#ack.
var tableLine = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+=(\d+)\s`)

// pairs are the server/client combinations of the tests: Go with Go, and
// Go with C in both roles.
func pairs(t *testing.T) [][2]tool {
	goTool, cTool := tools(t)
	return [][2]tool{{goTool, goTool}, {goTool, cTool}, {cTool, goTool}}
}

// TestLoss runs fi_pingpong with data checks (-c) over a link that drops
// 5% of the packets in each direction at random: TCP retransmits, and
// every message of every size arrives intact, for FI_EP_MSG and
// FI_EP_RDM (tcp;ofi_rxm), Go and C in every pairing.
func TestLoss(t *testing.T) {
	w := newWorld(t)
	w.lossy(t, 5)
	for _, ept := range []string{"msg", "rdm"} {
		for _, p := range pairs(t) {
			t.Run(fmt.Sprintf("%s/%s-%s", ept, p[0].name, p[1].name), func(t *testing.T) {
				w.pingpong(t, p[0], p[1], 2*time.Minute, []string{"64", "65536", "1048576"}, "-p", "tcp", "-e", ept, "-I", "10", "-c")
			})
		}
	}
}

// TestSlowLink runs fi_pingpong with data checks over a link limited to
// 50 Mbit/s that queues up to 50 ms: messages larger than the queue wait
// for room, and every one arrives intact.
func TestSlowLink(t *testing.T) {
	w := newWorld(t)
	w.slow(t, "50mbit", "50ms")
	defer w.fast(t)
	for _, ept := range []string{"msg", "rdm"} {
		for _, p := range pairs(t) {
			t.Run(fmt.Sprintf("%s/%s-%s", ept, p[0].name, p[1].name), func(t *testing.T) {
				w.pingpong(t, p[0], p[1], 2*time.Minute, []string{"64", "1048576"}, "-p", "tcp", "-e", ept, "-I", "5", "-c")
			})
		}
	}
}
