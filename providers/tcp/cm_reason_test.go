//go:build linux

package tcp_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// Connection management an application can act on (issue 21): why a
// connection attempt failed (eq.ConnReason), the connect timeout and
// retries of an endpoint (ep.OptLevelCM), and its state (ep.State).

// sockaddr4 returns the sockaddr of ip:port.
func sockaddr4(t testing.TB, ap netip.AddrPort) []byte {
	t.Helper()
	_, b, err := fi.SockaddrFromAddrPort(ap)
	require.NoError(t, err)
	return b
}

// silentPeer returns the address of a listening socket that answers no
// SYN: its accept queue (listen(2) backlog 0: room for one) holds a
// connection nobody accepts, so the kernel drops every further SYN
// unanswered, as a peer behind a firewall that drops does. Cleanup closes
// both sockets.
func silentPeer(t testing.TB) []byte {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(fd, 0))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(sa.(*unix.SockaddrInet4).Port))
	filler, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = filler.Close() })
	// TCP_INFO of a listening socket: tcpi_unacked is its accept queue's
	// length, tcpi_sacked the queue's limit.
	require.Eventually(t, func() bool {
		ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err == nil && ti.Unacked >= 1 && ti.Unacked > ti.Sacked
	}, 5*time.Second, time.Millisecond, "the listener's accept queue never filled")
	return sockaddr4(t, ap)
}

// closedPort returns the address of a loopback port where nothing
// listens (one just closed).
func closedPort(t testing.TB) []byte {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	ap := l.Addr().(*net.TCPAddr).AddrPort()
	require.NoError(t, l.Close())
	return sockaddr4(t, ap)
}

// unroutedAddr returns an IPv4 address that this network namespace
// routes into a namespace the test creates (over a veth pair), where it
// has no route: the namespace, which forwards, answers a SYN to it with
// an ICMP network unreachable. src is this side's address on the link.
// Skipped where namespaces cannot be made (failed under GOFABRIC_STRICT).
func unroutedAddr(t *testing.T) (dst netip.Addr, src string) {
	t.Helper()
	l := newNetLink(t)
	sysctl := reftest.Tool(t, "sysctl", "procps")
	if err := l.run("", "netns", "exec", l.ns, sysctl, "-qw", "net.ipv4.ip_forward=1"); err != nil {
		reftest.Missing(t, "cannot turn on forwarding in the test's network namespace: %v", err)
	}
	third := strings.Split(l.nsIP, ".")[2]
	dst = netip.MustParseAddr(fmt.Sprintf("10.217.%s.9", third))
	if err := l.run("", "route", "add", dst.String()+"/32", "via", l.nsIP); err != nil {
		reftest.Missing(t, "cannot route into the test's network namespace: %v", err)
	}
	t.Cleanup(func() { _ = l.run("", "route", "del", dst.String()+"/32", "via", l.nsIP) })
	return dst, l.hostIP
}

// garbagePeer returns the address of a listener that reads a connection
// request and answers with a CM header of version 9; cleanup stops it.
func garbagePeer(t testing.TB) []byte { return answeringPeer(t, false) }

// resetPeer returns the address of a listener that reads a connection
// request and resets the connection (SO_LINGER 0, close).
func resetPeer(t testing.TB) []byte { return answeringPeer(t, true) }

// answeringPeer is garbagePeer, or resetPeer with reset.
func answeringPeer(t testing.TB, reset bool) []byte {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var req [32]byte
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(req[:]); err != nil {
			return
		}
		if reset {
			_ = c.(*net.TCPConn).SetLinger(0)
			return
		}
		bad := make([]byte, 32)
		bad[0], bad[1], bad[24] = 9, 1, 1
		_, _ = c.Write(bad)
		var b [1]byte
		_, _ = c.Read(b[:]) // until the requester closes
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return sockaddr4(t, l.Addr().(*net.TCPAddr).AddrPort())
}

// client is a connecting endpoint with its own fabric and event queue,
// closed at cleanup.
type client struct{ side }

func newClient(t testing.TB, info *fi.Info) *client {
	t.Helper()
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	c := &client{}
	openSide(t, &c.side, f, q, info)
	t.Cleanup(func() {
		c.close(t)
		require.NoError(t, q.Close())
		require.NoError(t, f.Close())
	})
	return c
}

// failed waits up to wait for the client's error event.
func (c *client) failed(t testing.TB, wait time.Duration) *eq.EQError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ev, err := c.eq.SRead(ctx)
	require.ErrorIs(t, err, fi.EAVAIL, "an event instead of an error: %v", ev)
	e, err := c.eq.ReadErr()
	require.NoError(t, err)
	require.Same(t, c.ep, e.Fid)
	return e
}

// server is a listening passive endpoint with its own fabric and event
// queue, closed at cleanup unless the test closed it.
type server struct {
	fabric fi.Fabric
	eq     eq.EventQueue
	pep    ep.PassiveEndpoint
	name   []byte
	closed bool
}

func newServer(t testing.TB) *server {
	t.Helper()
	s := &server{}
	s.fabric, s.eq, s.pep, s.name = listen(t)
	t.Cleanup(func() {
		if !s.closed {
			require.NoError(t, s.pep.Close())
		}
		require.NoError(t, s.eq.Close())
		require.NoError(t, s.fabric.Close())
	})
	return s
}

// request waits for the next connection request.
func (s *server) request(t testing.TB) *eq.ConnReq {
	t.Helper()
	ev := waitEvent(t, s.eq)
	r, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	return r
}

// TestConnectFailureReasons: each cause of a failed connection attempt
// arrives with its own eq.ConnReason, the error code that goes with it,
// the provider's errno in ProvErrno and the reject's data, and leaves the
// endpoint in its state: a reject with data and one without
// (ReasonRejected), nothing listening (ReasonNoListener, ProvErrno 111:
// the kernel's reset), a listener that closes with the request pending
// (ReasonNoListener from the reject's code), the listener's backlog full
// (ReasonBacklogFull: the reject's code, where both before had ProvErrno 0
// and no data), no answer (ReasonTimedOut, with OptConnTimeout 300 ms), no
// route (ReasonUnreachable: ENETUNREACH from a namespace that has none),
// and a malformed answer or a reset (ReasonTransport).
func TestConnectFailureReasons(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	var unreachSrc string // the address of the veth end on this side
	cases := []struct {
		name string
		// peer sets up the far side and returns its address, and what
		// it does once the request is sent (nil: nothing).
		peer      func(t *testing.T) (dest []byte, then func())
		src       func(t *testing.T) *fi.Info // the client's entry, nil for loopback's
		timeout   int                         // OptConnTimeout, 0 for the default
		err       fi.Errno
		provErrno int
		reason    eq.ConnReason
		data      string
		state     ep.CMState
	}{
		{"reject with data", func(t *testing.T) ([]byte, func()) {
			s := newServer(t)
			return s.name, func() { require.NoError(t, s.pep.Reject(s.request(t).Info.Handle, []byte("NOPE!"))) }
		}, nil, 0, fi.ECONNREFUSED, 0, eq.ReasonRejected, "NOPE!", ep.CMRejected},
		{"reject without data", func(t *testing.T) ([]byte, func()) {
			s := newServer(t)
			return s.name, func() { require.NoError(t, s.pep.Reject(s.request(t).Info.Handle, nil)) }
		}, nil, 0, fi.ECONNREFUSED, 0, eq.ReasonRejected, "", ep.CMRejected},
		{"request dropped", func(t *testing.T) ([]byte, func()) {
			s := newServer(t)
			return s.name, func() { require.NoError(t, s.request(t).Info.Handle.Close()) }
		}, nil, 0, fi.ECONNREFUSED, 0, eq.ReasonRejected, "", ep.CMRejected},
		{"nothing listening", func(t *testing.T) ([]byte, func()) {
			return closedPort(t), nil
		}, nil, 0, fi.ECONNREFUSED, int(unix.ECONNREFUSED), eq.ReasonNoListener, "", ep.CMFailed},
		{"listener closed with the request pending", func(t *testing.T) ([]byte, func()) {
			s := newServer(t)
			return s.name, func() {
				s.request(t)
				s.closed = true
				require.NoError(t, s.pep.Close())
			}
		}, nil, 0, fi.ECONNREFUSED, 0, eq.ReasonNoListener, "", ep.CMRejected},
		{"backlog full", func(t *testing.T) ([]byte, func()) {
			s := newServer(t)
			require.NoError(t, s.pep.(ep.BacklogSetter).SetBacklog(1))
			first := newClient(t, info)
			require.NoError(t, first.cm().Connect(s.name, nil))
			s.request(t) // the backlog's one request, never answered
			return s.name, nil
		}, nil, 0, fi.ECONNREFUSED, 0, eq.ReasonBacklogFull, "", ep.CMRejected},
		{"timed out", func(t *testing.T) ([]byte, func()) {
			return silentPeer(t), nil
		}, nil, 300, fi.ETIMEDOUT, 0, eq.ReasonTimedOut, "", ep.CMFailed},
		{"unreachable", func(t *testing.T) ([]byte, func()) {
			dst, src := unroutedAddr(t)
			unreachSrc = src
			return sockaddr4(t, netip.AddrPortFrom(dst, 4711)), nil
		}, func(t *testing.T) *fi.Info {
			in, err := infoAt(fi.EPTypeMsg, unreachSrc)
			require.NoError(t, err)
			return in
		}, 0, fi.ENETUNREACH, int(unix.ENETUNREACH), eq.ReasonUnreachable, "", ep.CMFailed},
		{"malformed answer", func(t *testing.T) ([]byte, func()) {
			return garbagePeer(t), nil
		}, nil, 0, fi.EIO, 0, eq.ReasonTransport, "", ep.CMFailed},
		{"reset", func(t *testing.T) ([]byte, func()) {
			return resetPeer(t), nil
		}, nil, 0, fi.ECONNRESET, int(unix.ECONNRESET), eq.ReasonTransport, "", ep.CMFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dest, then := tc.peer(t)
			in := info
			if tc.src != nil {
				in = tc.src(t)
			}
			c := newClient(t, in)
			if tc.timeout != 0 {
				require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, tc.timeout))
			}
			require.NoError(t, c.cm().Connect(dest, []byte("hello")))
			if then != nil {
				then()
			}
			e := c.failed(t, 20*time.Second)
			t.Logf("%v", e)
			require.Equal(t, tc.reason, e.Reason, "reason of %v", e)
			require.Equal(t, tc.reason, eq.ReasonOf(fmt.Errorf("wrapped: %w", e)))
			require.Equal(t, tc.err, e.Err)
			require.Equal(t, tc.provErrno, e.ProvErrno)
			require.Equal(t, tc.data, string(e.ErrData))
			require.Contains(t, e.Error(), tc.reason.String())
			s, err := ep.State(c.ep)
			require.NoError(t, err)
			require.Equal(t, tc.state, s)
		})
	}
}

// TestConnectTimeoutOption: a connect to a silent peer with
// OptConnTimeout 300 ms fails with fi.ETIMEDOUT and ReasonTimedOut after
// at least that long and well before FI_TCP_CONN_TIMEOUT, which the
// provider's environment sets to 20 s here (the default is 30 s), and
// GetOpt reads the value back.
func TestConnectTimeoutOption(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_CONN_TIMEOUT", "20000")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	dest := silentPeer(t)
	c := newClient(t, info)
	v, err := ep.GetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout)
	require.NoError(t, err)
	require.Equal(t, 20000, v, "the default is FI_TCP_CONN_TIMEOUT")
	require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, 300))
	v, err = ep.GetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout)
	require.NoError(t, err)
	require.Equal(t, 300, v)

	start := time.Now()
	require.NoError(t, c.cm().Connect(dest, nil))
	e := c.failed(t, 30*time.Second)
	took := time.Since(start)
	t.Logf("failed after %v: %v", took, e)
	require.Equal(t, fi.ETIMEDOUT, e.Err)
	require.Equal(t, eq.ReasonTimedOut, e.Reason)
	require.GreaterOrEqual(t, took, 300*time.Millisecond, "ended before the set timeout")
	require.Less(t, took, 10*time.Second, "ended near FI_TCP_CONN_TIMEOUT (20 s), not the set 300 ms")
}

// TestConnectRetriesOption: OptConnRetries 1 makes the kernel send the
// SYN once more only (TCP_SYNCNT), so a connect to a silent peer fails
// after about 3 s (1 s and 2 s of retransmission timeout) with the
// kernel's ETIMEDOUT in ProvErrno and ReasonTimedOut, long before the
// endpoint's 60 s OptConnTimeout; unset, GetOpt reads the kernel's
// net.ipv4.tcp_syn_retries.
func TestConnectRetriesOption(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	dest := silentPeer(t)
	c := newClient(t, info)
	v, err := ep.GetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries)
	require.NoError(t, err)
	b, err := readSysctl("/proc/sys/net/ipv4/tcp_syn_retries")
	require.NoError(t, err)
	require.Equal(t, b, v, "unset, the kernel's tcp_syn_retries")
	require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries, 1))
	require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, 60000))
	v, err = ep.GetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries)
	require.NoError(t, err)
	require.Equal(t, 1, v)

	start := time.Now()
	require.NoError(t, c.cm().Connect(dest, nil))
	e := c.failed(t, 70*time.Second)
	took := time.Since(start)
	t.Logf("failed after %v: %v", took, e)
	require.Equal(t, fi.ETIMEDOUT, e.Err)
	require.Equal(t, eq.ReasonTimedOut, e.Reason)
	require.Equal(t, int(unix.ETIMEDOUT), e.ProvErrno, "the kernel gave up the SYNs (the provider's own timeout has ProvErrno 0)")
	require.Less(t, took, 30*time.Second, "the SYN retries did not bound the attempt")
}

// readSysctl reads an integer from a /proc/sys file.
func readSysctl(path string) (int, error) {
	var n int
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	_, err = fmt.Sscan(string(b), &n)
	return n, err
}

// TestCMStateAndOptions follows the states of both sides of a connection
// through ep.State and OptConnState, from opening to close, and checks the
// option rules: read-only options, values out of range, options set too
// late, and the passive endpoint's FI_OPT_CM_DATA_SIZE.
func TestCMStateAndOptions(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	state := func(x any) ep.CMState {
		t.Helper()
		s, err := ep.State(x)
		require.NoError(t, err)
		v, err := ep.GetOpt(x, ep.OptLevelCM, ep.OptConnState)
		if s == ep.CMClosed {
			require.ErrorIs(t, err, fi.EBADF, "options of a closed endpoint")
		} else {
			require.NoError(t, err)
			require.Equal(t, s, ep.CMState(v), "OptConnState and State agree")
		}
		return s
	}

	// The passive endpoint.
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	pep, err := ep.OpenPassive(f, info)
	require.NoError(t, err)
	require.Equal(t, ep.CMIdle, state(pep))
	v, err := ep.GetOpt(pep, ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.NoError(t, err)
	require.Equal(t, 256, v, "FI_OPT_CM_DATA_SIZE on a passive endpoint, as C's tcp")
	require.ErrorIs(t, ep.SetOpt(pep, ep.OptLevelEndpoint, ep.OptCMDataSize, 1), fi.ENOPROTOOPT)
	require.ErrorIs(t, ep.SetOpt(pep, ep.OptLevelCM, ep.OptConnState, 1), fi.ENOPROTOOPT)
	_, err = ep.GetOpt(pep, ep.OptLevelCM, ep.OptConnTimeout)
	require.ErrorIs(t, err, fi.ENOPROTOOPT)
	require.NoError(t, pep.Bind(q, 0))
	require.NoError(t, pep.Listen())
	require.Equal(t, ep.CMListening, state(pep))
	name := make([]byte, 64)
	n, err := pep.Name(name)
	require.NoError(t, err)

	// The connecting side, and the option rules.
	c := newClient(t, info)
	require.Equal(t, ep.CMIdle, state(c.ep))
	v, err = ep.GetOpt(c.ep, ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.NoError(t, err)
	require.Equal(t, 256, v)
	for _, o := range []struct {
		level ep.OptLevel
		name  ep.OptName
		val   int
		want  fi.Errno
	}{
		{ep.OptLevelEndpoint, ep.OptCMDataSize, 512, fi.ENOPROTOOPT},
		{ep.OptLevelCM, ep.OptConnState, int(ep.CMConnected), fi.ENOPROTOOPT},
		{ep.OptLevelEndpoint, ep.OptMinMultiRecv, 1, fi.ENOPROTOOPT},
		{ep.OptLevelCM, 99, 1, fi.ENOPROTOOPT},
		{99, ep.OptConnTimeout, 1, fi.ENOPROTOOPT},
		{ep.OptLevelCM, ep.OptConnTimeout, 0, fi.EINVAL},
		{ep.OptLevelCM, ep.OptConnTimeout, -5, fi.EINVAL},
		{ep.OptLevelCM, ep.OptConnRetries, 0, fi.EINVAL},
		{ep.OptLevelCM, ep.OptConnRetries, 128, fi.EINVAL},
	} {
		err := ep.SetOpt(c.ep, o.level, o.name, o.val)
		require.ErrorIs(t, err, o.want, "setopt level %d option %d = %d", o.level, o.name, o.val)
		require.Equal(t, o.want, fi.Code(err))
	}
	require.Equal(t, ep.CMIdle, state(c.ep))
	require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, 5000))
	require.NoError(t, ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnRetries, 3))
	require.NoError(t, c.cm().Connect(name[:n], nil))
	require.Equal(t, ep.CMConnecting, state(c.ep), "until the server accepts")
	err = ep.SetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout, 100)
	require.ErrorIs(t, err, fi.EOPBADSTATE, "too late: the attempt runs")
	require.Contains(t, err.Error(), "connecting")
	v, err = ep.GetOpt(c.ep, ep.OptLevelCM, ep.OptConnTimeout)
	require.NoError(t, err)
	require.Equal(t, 5000, v, "the attempt's timeout is unchanged")

	// The accepting side.
	req := waitEvent(t, q).(*eq.ConnReq)
	var srv side
	openSide(t, &srv, f, q, req.Info)
	require.Equal(t, ep.CMReqReceived, state(srv.ep))
	require.ErrorIs(t, ep.SetOpt(srv.ep, ep.OptLevelCM, ep.OptConnTimeout, 100), fi.EOPBADSTATE, "an accepting endpoint does not connect")
	require.NoError(t, srv.cm().Accept(nil))
	require.IsType(t, &eq.Connected{}, waitEvent(t, q))
	require.Equal(t, ep.CMConnected, state(srv.ep))
	require.IsType(t, &eq.Connected{}, waitEvent(t, c.eq))
	require.Equal(t, ep.CMConnected, state(c.ep))

	// Shutdown on one side, then the other.
	require.NoError(t, c.cm().Shutdown(0))
	require.Equal(t, ep.CMShutdownLocal, state(c.ep))
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, c.eq))
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, q))
	require.Equal(t, ep.CMShutdownRemote, state(srv.ep), "the peer shut down")
	require.NoError(t, srv.cm().Shutdown(0))
	require.Equal(t, ep.CMDisconnected, state(srv.ep))

	srv.close(t)
	require.Equal(t, ep.CMClosed, state(srv.ep))
	_, err = ep.GetOpt(srv.ep, ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.ErrorIs(t, err, fi.EBADF)
	require.NoError(t, pep.Close())
	require.Equal(t, ep.CMClosed, state(pep))
	_, err = ep.GetOpt(pep, ep.OptLevelEndpoint, ep.OptCMDataSize)
	require.ErrorIs(t, err, fi.EBADF)
	require.NoError(t, q.Close())
	require.NoError(t, f.Close())
}
