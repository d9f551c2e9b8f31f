package pingpong

import (
	"bytes"
	"context"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/internal/testport"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// cPingpong returns the path of the C fi_pingpong, skipping the test when
// it is not installed (failing under GOFABRIC_STRICT: .ci/run installs it).
func cPingpong(t testing.TB) string {
	t.Helper()
	return reftest.Tool(t, "fi_pingpong", "libfabric-bin")
}

// freePort returns a port for a peer process to listen on (internal/testport:
// free now, and outside the range the kernel picks source ports from).
func freePort(t testing.TB) uint16 {
	t.Helper()
	p, err := testport.Free()
	require.NoError(t, err)
	return uint16(p)
}

// cProcess starts the C tool; Cleanup kills it if it is still running.
type cProcess struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when the process has exited
	err            error         // Wait's result, set before done closes
}

func startC(t testing.TB, args ...string) *cProcess {
	t.Helper()
	p := &cProcess{cmd: exec.Command(cPingpong(t), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// The C providers bind to the first interface otherwise (the -d hint
	// does not reach them): keep all fabric traffic on loopback.
	p.cmd.Env = append(os.Environ(), "FI_TCP_IFACE=lo", "FI_UDP_IFACE=lo")
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the C tool to exit and returns its status.
func (p *cProcess) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(t, p.err)
		return 0
	case <-time.After(30 * time.Second):
		t.Fatalf("C fi_pingpong did not exit; stderr: %s", p.stderr.String())
		return -1
	}
}

// dialC connects the Go control channel to a C server that may not be
// listening yet.
func dialC(t testing.TB, port uint16) *Ctrl {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := DialCtrl(context.Background(), "127.0.0.1", port, 0, false)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		require.ErrorIs(t, err, fi.ECONNREFUSED)
		require.True(t, time.Now().Before(deadline), "C server never listened")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInteropCServerMsgName: a C server (-p tcp -e msg) sends its
// passive endpoint's name first; the Go client parses it. The C server
// then waits for a fabric connection request, which needs a Go tcp
// provider with endpoints, so the test stops there.
func TestInteropCServerMsgName(t *testing.T) {
	port := freePort(t)
	startC(t, "-p", "tcp", "-e", "msg", "-I", "1", "-S", "64", "-B", strconv.Itoa(int(port)))
	c := dialC(t, port)
	format, name, err := c.RecvName()
	require.NoError(t, err)
	require.Equal(t, fi.FormatSockaddrIn, format)
	require.Len(t, name, 16)
	ap, f, err := fi.AddrPortFromSockaddr(name)
	require.NoError(t, err)
	require.Equal(t, fi.FormatSockaddrIn, f)
	require.Equal(t, netip.MustParseAddr("127.0.0.1"), ap.Addr(), "FI_TCP_IFACE=lo")
	require.NotZero(t, ap.Port())
}

// udpTransport is a test Transport that talks to the C tool's udp
// provider (-p udp -e dgram), whose datagrams carry only the application's
// bytes: a plain UDP socket on 127.0.0.1 is a peer to it. The name
// exchange is RunCtrl's DGRAM one.
type udpTransport struct {
	conn   *net.UDPConn
	peer   netip.AddrPort
	tx, rx []byte
	// corruptAt, when not 0, flips the first byte of that send (from 1).
	corruptAt, sent int
	// timeout bounds each receive; 10 s when 0.
	timeout time.Duration
}

// udpMaxMsg is the C udp provider's max_msg_size.
const udpMaxMsg = 1472

func (u *udpTransport) Setup(_ context.Context, c *Config) error {
	var peerName []byte
	var err error
	if c.Options.IsClient() {
		if _, peerName, err = c.Ctrl.RecvName(); err != nil {
			return err
		}
	}
	if u.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		return err
	}
	_, own, err := fi.SockaddrFromAddrPort(u.conn.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		return err
	}
	if err := c.Ctrl.SendName(fi.FormatSockaddrIn, own); err != nil {
		return err
	}
	if !c.Options.IsClient() {
		if _, peerName, err = c.Ctrl.RecvName(); err != nil {
			return err
		}
	}
	if u.peer, _, err = fi.AddrPortFromSockaddr(peerName); err != nil {
		return err
	}
	n := RxSize(c.Options, udpMaxMsg)
	u.tx, u.rx = make([]byte, n), make([]byte, n)
	return nil
}

func (u *udpTransport) MaxMsgSize() int          { return udpMaxMsg }
func (u *udpTransport) Buffers() (tx, rx []byte) { return u.tx, u.rx }

func (u *udpTransport) Send(n int) error {
	if u.sent++; u.sent == u.corruptAt {
		u.tx[0] ^= 1
	}
	_, err := u.conn.WriteToUDPAddrPort(u.tx[:n], u.peer)
	return err
}

func (u *udpTransport) Recv(check func(n int) error) (int, error) {
	if u.timeout == 0 {
		u.timeout = 10 * time.Second
	}
	if err := u.conn.SetReadDeadline(time.Now().Add(u.timeout)); err != nil {
		return 0, err
	}
	n, _, err := u.conn.ReadFromUDPAddrPort(u.rx)
	if err == nil && check != nil {
		err = check(n)
	}
	return n, err
}

func (u *udpTransport) Finalize() error {
	copy(u.tx, finMsg)
	if err := u.Send(len(finMsg)); err != nil {
		return err
	}
	n, err := u.Recv(nil)
	if err != nil {
		return err
	}
	if !bytes.Equal(u.rx[:n], finMsg) {
		return errors.Wrapf(errProto, "udp: got %q, want fin", u.rx[:n])
	}
	return nil
}

func (u *udpTransport) Close() error {
	if u.conn == nil {
		return nil
	}
	return u.conn.Close()
}

// TestInteropDgram runs the Go flow (control channel, sizes, -c pattern,
// output) against the C tool over its udp provider, as client and as
// server. With -c each side verifies every payload the other built, and
// both print rows for the same sizes.
func TestInteropDgram(t *testing.T) {
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
				o, err := ParseOptions(append([]string{"-e", "dgram"}, tt.args...), &bytes.Buffer{})
				require.NoError(t, err)
				runInterop(t, o, cargs, goClient, func() Transport { return &udpTransport{} }, tt.sizes)
			})
		}
	}
}

// runInterop runs the Go side with options o and a transport from newT
// against the C tool started with cargs, the Go side as client or server,
// and checks that both printed the same sizes rows.
func runInterop(t *testing.T, o *Options, cargs []string, goClient bool, newT func() Transport, sizes int) {
	t.Helper()
	var out, errb bytes.Buffer
	var c *cProcess
	var err error
	if goClient {
		port := freePort(t)
		c = startC(t, append(cargs, "-B", strconv.Itoa(int(port)))...)
		o.Server, o.SrcPort = "127.0.0.1", 0
		ctrl := dialC(t, port)
		err = runBounded(t, 2*time.Minute, c, func() error {
			return RunCtrl(context.Background(), o, ctrl, newT(), &out, &errb)
		})
	} else {
		ctrl, lerr := ListenCtrl(context.Background(), 0, false, func(a net.Addr) {
			c = startC(t, append(cargs, "-P", strconv.Itoa(a.(*net.TCPAddr).Port), "127.0.0.1")...)
		})
		require.NoError(t, lerr)
		err = runBounded(t, 2*time.Minute, c, func() error {
			return RunCtrl(context.Background(), o, ctrl, newT(), &out, &errb)
		})
	}
	require.NoError(t, err, "Go stderr: %s", errb.String())
	require.Equal(t, 0, c.wait(t), "C stdout: %s\nC stderr: %s", c.stdout.String(), c.stderr.String())
	goRows, cRows := rows(t, out.String()), rows(t, c.stdout.String())
	require.Len(t, goRows, sizes)
	require.Len(t, cRows, sizes)
	for i := range goRows {
		// bytes, #sent, #ack and total agree; the timings differ.
		require.Equal(t, cRows[i][:4], goRows[i][:4])
		require.Equal(t, "="+goRows[i][1], goRows[i][2])
	}
}

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

// TestInteropDgramCheckFails sends the C server a wrong second ping: the C
// tool's own check must catch it, which shows the passing runs above really
// verified the Go payloads.
func TestInteropDgramCheckFails(t *testing.T) {
	args := []string{"-I", "3", "-S", "64", "-c"}
	port := freePort(t)
	c := startC(t, append([]string{"-p", "udp", "-e", "dgram", "-B", strconv.Itoa(int(port))}, args...)...)
	o, err := ParseOptions(append([]string{"-e", "dgram", "127.0.0.1"}, args...), &bytes.Buffer{})
	require.NoError(t, err)
	var out bytes.Buffer
	err = RunCtrl(context.Background(), o, dialC(t, port), &udpTransport{corruptAt: 2, timeout: 2 * time.Second}, &out, &out)
	require.Error(t, err, "the C server stops answering")
	require.Equal(t, 255, c.wait(t))
	require.Equal(t, "Error at iteration=2 size=64 byte=0\n", c.stdout.String())
}
