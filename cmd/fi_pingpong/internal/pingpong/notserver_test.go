//go:build linux

package pingpong

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// notServer listens on loopback and treats every connection with serve;
// it returns the port. Everything it opens is closed when the test ends.
func notServer(t *testing.T, serve func(net.Conn)) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			serve(c)
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// runClient runs "fi_pingpong args... -P port 127.0.0.1" in-process and
// returns its exit status and stderr. The test fails if the client has
// not given up after a minute, far beyond the -T it is given.
func runClient(t *testing.T, port uint16, args ...string) (int, string) {
	t.Helper()
	args = append(args, "-P", strconv.Itoa(int(port)), "127.0.0.1")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := Main(args, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case r := <-done:
		require.Empty(t, r.stdout)
		return r.code, r.stderr
	case <-ctx.Done():
		t.Fatalf("fi_pingpong %v still waits for a peer that is no pingpong server", args)
		return 0, ""
	}
}

// TestClientGivesUpOnNonServer aims the client at ports that accept
// connections but are no fi_pingpong server; it must stop with a clear
// message and a hint instead of waiting forever (the C tool waits forever
// on a silent one).
func TestClientGivesUpOnNonServer(t *testing.T) {
	silent := func(net.Conn) {}
	closing := func(c net.Conn) { c.Close() }
	banner := func(c net.Conn) { c.Write([]byte("SSH-2.0-OpenSSH_9.2p1\r\n")) }
	tests := []struct {
		name   string
		serve  func(net.Conn)
		status int
		msg    string
		hint   string
	}{
		{"silent", silent, int(fi.ETIMEDOUT), "[error] pingpong: ctrl: no name length from 127.0.0.1:%d within 1s: Connection timed out",
			"hint: 127.0.0.1:%d accepted the control connection but does not answer as a fi_pingpong server would; is it one? (-T sets how long to wait)"},
		{"closes at once", closing, int(fi.ECONNABORTED), "[error] pingpong: ctrl: read name length: no data or remote connection closed: Software caused connection abort",
			"hint: 127.0.0.1:%d closed the control connection: is it a fi_pingpong server, and did it fail (see its output)?"},
		{"talks another protocol", banner, int(fi.EINVAL), "[error] pingpong: ctrl: name length 1397966893 exceeds 1024: Invalid argument",
			`hint: is 127.0.0.1:%d a fi_pingpong server? Its first bytes are "SSH-"`},
	}
	for _, tt := range tests {
		for _, ep := range []string{"msg", "rdm", "dgram"} {
			t.Run(tt.name+"/"+ep, func(t *testing.T) {
				port := notServer(t, tt.serve)
				code, stderr := runClient(t, port, "-p", "tcp", "-e", ep, "-T", "1")
				require.Equal(t, tt.status, code, stderr)
				lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
				require.Len(t, lines, 2, stderr)
				require.Equal(t, strings.Replace(tt.msg, "%d", strconv.Itoa(int(port)), 1), lines[0])
				require.Equal(t, strings.Replace(tt.hint, "%d", strconv.Itoa(int(port)), 1), lines[1])
			})
		}
	}
}

// TestClientConnectTimeout checks that -T bounds the connection itself:
// a listener whose backlog is full leaves the client's SYN unanswered.
func TestClientConnectTimeout(t *testing.T) {
	// A listening socket with a backlog of 0 that never accepts: once the
	// kernel's queue holds one connection, further SYNs are dropped.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(fd, 0))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	port := uint16(sa.(*unix.SockaddrInet4).Port)
	// Fill the queue until a connection attempt goes unanswered.
	var fillers []net.Conn
	t.Cleanup(func() {
		for _, c := range fillers {
			c.Close()
		}
	})
	full := false
	for range 8 {
		d := net.Dialer{Timeout: 300 * time.Millisecond}
		c, err := d.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(int(port)))
		if err != nil {
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			require.True(t, ne.Timeout(), "dial: %v", err)
			full = true
			break
		}
		fillers = append(fillers, c)
	}
	require.True(t, full, "the kernel kept accepting connections to a listener with backlog 0")
	code, stderr := runClient(t, port, "-p", "tcp", "-e", "msg", "-T", "1")
	require.Equal(t, int(fi.ETIMEDOUT), code, stderr)
	require.Contains(t, stderr, "[error] pingpong: ctrl: failed to connect to 127.0.0.1:"+strconv.Itoa(int(port)))
	require.Contains(t, stderr, "\nhint: nothing answered within 1s (-T sets how long to wait)\n")
}

// TestClientRefusedHint checks the hint of a client that finds nothing
// listening.
func TestClientRefusedHint(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	code, stderr := runClient(t, port, "-p", "tcp", "-e", "msg")
	require.Equal(t, int(fi.ECONNREFUSED), code, stderr)
	p := strconv.Itoa(int(port))
	require.Equal(t, "[error] pingpong: ctrl: failed to connect to 127.0.0.1:"+p+": Connection refused\n"+
		"hint: start the server first: fi_pingpong with the same options and no address (-B "+p+" to listen on this port)\n", stderr)
}
