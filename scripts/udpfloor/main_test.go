//go:build linux

package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// client runs the client against the server on port, dialling again
// until the server listens (a refused dial costs the server nothing), and
// returns its output.
func client(t *testing.T, port int, args ...string) string {
	t.Helper()
	args = append(args, "-P", strconv.Itoa(port), "127.0.0.1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out bytes.Buffer
		err := run(args, &out)
		if err == nil {
			return out.String()
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("client: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkRow asserts fi_pingpong's result row, as bench-compare.sh reads
// it: size, every round trip acknowledged, a positive usec/xfer and an
// MB/sec that agrees with it. MB/sec is bytes per microsecond, so it is
// size/usec-per-transfer; printed with two decimals it is 0.00 for small
// messages on a slow host (1 B at 370 µs), which is why the check is the
// agreement and not a positive value.
func checkRow(t *testing.T, out string, size, iters int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"bytes", "#sent", "#ack", "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec"}, strings.Fields(lines[0]))
	f := strings.Fields(lines[1])
	require.Len(t, f, 8, out)
	require.Equal(t, strconv.Itoa(size), f[0])
	require.Equal(t, "="+strconv.Itoa(iters), f[2])
	require.Equal(t, strconv.Itoa(2*iters*size), f[3])
	mbs, err := strconv.ParseFloat(f[5], 64)
	require.NoError(t, err)
	us, err := strconv.ParseFloat(f[6], 64)
	require.NoError(t, err)
	require.Greater(t, us, 0.0, "usec/xfer in %q", lines[1])
	// Both figures are rounded to 0.01: allow that, and 1% for the
	// rounding of usec/xfer when it is small.
	require.InDelta(t, float64(size)/us, mbs, 0.006+0.01*mbs, "MB/sec against size/usec-per-xfer in %q", lines[1])
}

// A Go server and a Go client make the round trips and the client prints
// the row bench-compare.sh reads; the server prints nothing.
func TestGoPair(t *testing.T) {
	for _, size := range []int{1, 64, 1472, 65507} {
		port := freePort(t)
		srv := make(chan error, 1)
		var srvOut bytes.Buffer
		go func() {
			srv <- run([]string{"-p", "udp", "-e", "dgram", "-S", strconv.Itoa(size), "-I", "200", "-B", strconv.Itoa(port)}, &srvOut)
		}()
		out := client(t, port, "-p", "udp", "-e", "dgram", "-S", strconv.Itoa(size), "-I", "200")
		require.NoError(t, <-srv)
		require.Empty(t, srvOut.String())
		checkRow(t, out, size, 200)
	}
}

// The C side speaks the same control exchange: a C server answers a Go
// client, and a Go server a C client.
func TestInteropWithC(t *testing.T) {
	gcc := reftest.Tool(t, "gcc", "gcc") // builds the C side, c/udpfloor.c
	cbin := filepath.Join(t.TempDir(), "udpfloor-c")
	out, err := exec.Command(gcc, "-O2", "-Wall", "-Werror", "-o", cbin, "c/udpfloor.c").CombinedOutput()
	require.NoError(t, err, "%s", out)

	port := freePort(t)
	srv := exec.Command(cbin, "-p", "udp", "-e", "dgram", "-S", "64", "-I", "300", "-B", strconv.Itoa(port))
	require.NoError(t, srv.Start())
	checkRow(t, client(t, port, "-S", "64", "-I", "300"), 64, 300)
	require.NoError(t, srv.Wait())

	port = freePort(t)
	done := make(chan error, 1)
	go func() { done <- run([]string{"-S", "1024", "-I", "300", "-B", strconv.Itoa(port)}, &bytes.Buffer{}) }()
	var cout []byte
	for deadline := time.Now().Add(10 * time.Second); ; {
		cout, err = exec.Command(cbin, "-S", "1024", "-I", "300", "-P", strconv.Itoa(port), "127.0.0.1").CombinedOutput()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, err, "%s", cout)
	require.NoError(t, <-done)
	checkRow(t, string(cout), 1024, 300)
}

// Bad options are refused before any socket opens.
func TestBadOptions(t *testing.T) {
	for _, args := range [][]string{
		{"-p", "tcp", "-B", "1"},
		{"-e", "msg", "-B", "1"},
		{"-S", "0", "-B", "1"},
		{"-S", "65508", "-B", "1"},
		{"-I", "0", "-B", "1"},
		{},
		{"-B", "1", "-P", "2", "127.0.0.1"},
		{"-P", "2", "10.0.0.1"},
	} {
		require.Error(t, run(args, &bytes.Buffer{}), "%v", args)
	}
}

// c/inproc.c, the C counterpart of providers/udp's in-process benchmark,
// builds against C libfabric and prints a Go benchmark line.
func TestCInProc(t *testing.T) {
	gcc := reftest.Tool(t, "gcc", "gcc")
	if _, err := os.Stat("/usr/include/rdma/fabric.h"); err != nil {
		reftest.Missing(t, "C libfabric's headers (Debian package libfabric-dev) not installed: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "inproc")
	out, err := exec.Command(gcc, "-O2", "-Wall", "-Werror", "-o", bin, "c/inproc.c", "-lfabric").CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command(bin, "1000")
	cmd.Env = append(os.Environ(), "FI_PROVIDER=udp")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	f := strings.Fields(string(out))
	require.Len(t, f, 4, "%s", out)
	require.Equal(t, "BenchmarkCInProcPingPong/posted=2", f[0])
	require.Equal(t, "1000", f[1])
	ns, err := strconv.ParseFloat(f[2], 64)
	require.NoError(t, err)
	require.Greater(t, ns, 0.0)
	require.Equal(t, "ns/op", f[3])
}
