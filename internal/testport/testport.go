// Package testport hands tests the port numbers they give to processes
// they start (servers of fi_pingpong, fabtests, the C bridge): ports that
// are free now and that the kernel will not give to anyone meanwhile.
//
// A port taken from the kernel by listening on port 0 comes from the
// ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by
// default), the range every outgoing connection takes its source port
// from: with many tests connecting in parallel, a client of one test
// could hold the port another test's server is about to listen on. The
// ports here come from below that range, which the kernel never assigns
// on its own; each test process starts at a random place in it and steps
// on, so that parallel test binaries rarely try the same one, and a port
// is given out only when both TCP and UDP can bind it on every address.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The range the ports come from: registered ports below the default
// ephemeral range.
const (
	first = 20000
	count = 12000
)

var (
	mu   sync.Mutex
	next = rand.IntN(count)
)

// Free returns a port that TCP and UDP could bind on every address a
// moment ago and that this process has not returned before.
func Free() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range count {
		p := first + next
		next = (next + 1) % count
		if bindable(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("testport: no free port in %d-%d", first, first+count-1)
}

// String is Free as a decimal string for a command line, failing tb when
// there is none.
func String(tb testing.TB) string {
	tb.Helper()
	p, err := Free()
	if err != nil {
		tb.Fatal(err)
	}
	return strconv.Itoa(p)
}

// bindable reports whether TCP and UDP can both bind port on the
// wildcard address now.
func bindable(port int) bool {
	addr := net.JoinHostPort("", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	return c.Close() == nil
}
