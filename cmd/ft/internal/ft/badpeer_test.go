package ft

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// A peer that misbehaves must get a clear error and a non-zero status
// from the Go program, within its timeout, never a hang or a panic. The
// fakes here are plain TCP sockets speaking the out-of-band protocol
// badly: the peer is faked, the Go program under test is the real one.

// requireCleanFailure checks that p failed with status want, saying
// what in its stderr, without a Go panic.
func requireCleanFailure(t *testing.T, p *peer, status int, want string, others ...*peer) {
	t.Helper()
	got := p.status(t, peerLimit, others...)
	require.Equal(t, status, got, "%s", reports(append([]*peer{p}, others...)...))
	require.Contains(t, p.errOut.String(), want)
	require.NotContains(t, p.errOut.String(), "panic")
	require.NotContains(t, p.errOut.String(), "goroutine ")
}

// sockaddrBlock is a 256-byte address block holding ap as a sockaddr.
func sockaddrBlock(t *testing.T, ap netip.AddrPort) []byte {
	t.Helper()
	_, sa, err := fi.SockaddrFromAddrPort(ap)
	require.NoError(t, err)
	b := make([]byte, maxCtrlMsg)
	copy(b, sa)
	return b
}

// TestBadOOBClient runs the Go server (rdm_pingpong over tcp, addresses
// out of band) against a fake client that connects to the out-of-band
// port and then misbehaves.
func TestBadOOBClient(t *testing.T) {
	tests := []struct {
		name string
		// sync: -b instead of -E (the sync goes over the socket too).
		sync bool
		// fake is what the client does on the connected socket; it
		// returns when it is done with it (the socket is closed then).
		fake   func(t *testing.T, c net.Conn, srv *peer)
		status int
		stderr string
	}{
		{
			name: "closes inside the address block",
			fake: func(t *testing.T, c net.Conn, _ *peer) {
				_, err := c.Write(make([]byte, 100))
				require.NoError(t, err)
			},
			status: int(fi.ENOTCONN),
			stderr: "the peer closed the socket after 100 of 256 bytes",
		},
		{
			name: "sends a short address block and goes silent",
			fake: func(t *testing.T, c net.Conn, srv *peer) {
				_, err := c.Write(make([]byte, 16))
				require.NoError(t, err)
				<-srv.done // silent, the socket open, until the server gives up
			},
			status: int(fi.ETIMEDOUT),
			stderr: "the peer sent 16 of 256 bytes, then nothing for 2s",
		},
		{
			name: "sends an address of the wrong length",
			fake: func(t *testing.T, c net.Conn, _ *peer) {
				// A 28-byte sockaddr_in6 where the endpoint's format is the
				// 16-byte FI_SOCKADDR_IN.
				_, err := c.Write(sockaddrBlock(t, netip.MustParseAddrPort("[::1]:4000")))
				require.NoError(t, err)
			},
			status: int(fi.EINVAL),
			stderr: "is not an FI_SOCKADDR_IN address",
		},
		{
			name: "sends no address",
			fake: func(t *testing.T, c net.Conn, _ *peer) {
				_, err := c.Write(make([]byte, maxCtrlMsg))
				require.NoError(t, err)
			},
			status: int(fi.EINVAL),
			stderr: "is not an FI_SOCKADDR_IN address",
		},
		{
			name: "closes before the sync",
			sync: true,
			fake: func(t *testing.T, c net.Conn, _ *peer) {
				// A well-formed address nobody listens on: the server
				// inserts it and then waits for the sync byte.
				_, err := c.Write(sockaddrBlock(t, netip.MustParseAddrPort("127.0.0.1:1")))
				require.NoError(t, err)
			},
			status: int(fi.ENOTCONN),
			stderr: "ft_sync: ft_sock_recv: the peer closed the socket after 0 of 1 bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			oob := freePort(t)
			flag := "-E=" + oob
			if tt.sync {
				flag = "-b=" + oob
			}
			srv := startPeer(t, "go", "server", "rdm_pingpong", "-p", "tcp", "-s", "127.0.0.1", "-B", freePort(t),
				flag, "-I", "5", "-S", "64", "--timeout", "2")
			waitListening(t, srv, oob)
			c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", oob))
			require.NoError(t, err)
			// The server sends its address first; reading it lets the
			// fake's close be a plain FIN, not a reset for unread data.
			_, err = io.ReadFull(c, make([]byte, maxCtrlMsg))
			require.NoError(t, err, "the server's address block\n%s", srv.report())
			tt.fake(t, c, srv)
			require.NoError(t, c.Close())
			requireCleanFailure(t, srv, tt.status, tt.stderr)
		})
	}
}

// TestBadOOBServer runs the Go client (rdm_pingpong over tcp, addresses
// out of band) against a fake server on the out-of-band port.
func TestBadOOBServer(t *testing.T) {
	tests := []struct {
		name   string
		fake   func(t *testing.T, c net.Conn)
		status []int // any of these: the kernel decides which comes first
		stderr string
	}{
		{
			name: "closes at once",
			fake: func(*testing.T, net.Conn) {},
			// The client's block may go out before the close is seen
			// (then the read ends: ENOTCONN) or meet the reset.
			status: []int{int(fi.ENOTCONN), int(fi.ECONNRESET), 32 /* EPIPE */},
			stderr: "out of band",
		},
		{
			name: "sends a block that is no address",
			fake: func(t *testing.T, c net.Conn) {
				b := make([]byte, maxCtrlMsg)
				binary.NativeEndian.PutUint16(b, 0xffff)
				_, err := c.Write(b)
				require.NoError(t, err)
				_, _ = io.ReadFull(c, make([]byte, maxCtrlMsg))
			},
			status: []int{int(fi.EINVAL)},
			stderr: "the peer's address out of band: the peer's address",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			require.NoError(t, err)
			defer l.Close()
			oob := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			cli := startPeer(t, "go", "client", "rdm_pingpong", "-p", "tcp", "-s", "127.0.0.1", "-P", freePort(t),
				"-E="+oob, "-I", "5", "-S", "64", "--timeout", "2", "127.0.0.1")
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}()
			var c net.Conn
			select {
			case c = <-accepted:
			case <-time.After(time.Minute):
				t.Fatalf("the Go client did not connect\n%s", cli.report())
			}
			require.NotNil(t, c, "accept failed\n%s", cli.report())
			tt.fake(t, c)
			require.NoError(t, c.Close())
			got := cli.status(t, peerLimit)
			require.Contains(t, tt.status, got, "%s", cli.report())
			require.Contains(t, cli.errOut.String(), tt.stderr)
			require.NotContains(t, cli.errOut.String(), "panic")
		})
	}
}

// TestUnexpectedSizes runs the Go server against a C client that sends
// other sizes than the server expects: larger than its receive buffer
// (the provider truncates: FI_ETRUNC, status 1 as C's for codes above
// 255), and larger than the test size but within the buffer (ft's length
// check: EMSGSIZE).
func TestUnexpectedSizes(t *testing.T) {
	tests := []struct {
		name, prog, size string
		status           int
		stderr           string
	}{
		{"128 where 64 is due", "rdm_pingpong", "128", int(fi.EMSGSIZE), "received a 128-byte message where the test expects 64 bytes"},
		{"1k into a 256-byte buffer", "rdm_pingpong", "1024", 1, "cq_readerr 265 (Truncation error)"},
		{"tagged 128 where 64 is due", "rdm_tagged_pingpong", "128", int(fi.EMSGSIZE), "received a 128-byte message where the test expects 64 bytes"},
		{"msg 100k into a 256-byte buffer", "msg_pingpong", "100000", 1, "Truncation error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			port := freePort(t)
			srv := startPeer(t, "go", "server", tt.prog, "-p", "tcp", "-s", "127.0.0.1", "-B", port, "-I", "5", "-S", "64")
			waitListening(t, srv, port)
			cli := startPeer(t, "c", "client", tt.prog, "-p", "tcp", "-s", "127.0.0.1", "-P", port, "-I", "5", "-S", tt.size, "127.0.0.1")
			requireCleanFailure(t, srv, tt.status, tt.stderr, cli)
		})
	}
}

// TestPeerDiesMidRun kills the C client of a long run once it has
// connected out of band; the Go server must fail within its timeout,
// wherever the client's death finds it (the address exchange, a sync, a
// transfer).
func TestPeerDiesMidRun(t *testing.T) {
	for _, prog := range []string{"rdm_pingpong", "msg_pingpong"} {
		t.Run(prog, func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			port, oob := freePort(t), freePort(t)
			args := []string{"-p", "tcp", "-s", "127.0.0.1", "-E=" + oob, "-I", "1000000", "-S", "64", "--timeout", "3"}
			srv := startPeer(t, "go", "server", prog, append(args, "-B", port)...)
			waitListening(t, srv, oob)
			cli := startPeer(t, "c", "client", prog, append(args, "-P", port, "127.0.0.1")...)
			deadline := time.Now().Add(time.Minute)
			for !established(t, oob) {
				require.False(t, cli.exited(), "%s", reports(cli, srv))
				require.True(t, time.Now().Before(deadline), "the C client never connected\n%s", reports(cli, srv))
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond) // into its fabric setup or first transfers
			cli.kill()
			got := srv.status(t, peerLimit)
			require.NotZero(t, got, "%s", srv.report())
			require.NotContains(t, srv.errOut.String(), "panic")
		})
	}
}

// established reports whether a TCP connection to or from local port
// is established.
func established(t *testing.T, port string) bool {
	t.Helper()
	return socketInState(t, port, "01")
}
