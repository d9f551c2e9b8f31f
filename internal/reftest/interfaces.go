package reftest

import (
	"net"
	"strings"
	"testing"
)

// SteadyInterfaces runs list, which lists the host's network interfaces
// twice (through C libfabric and through gofabric, say), until the host's
// interfaces and addresses were the same before and after it, at most
// five times. Other tests of the module add a veth with an address to the
// host for a few seconds (providers/tcp's liveness tests reach a peer in
// a network namespace through one), and two listings that straddle such a
// change describe two different hosts. After five changing runs the last
// run stands, and the test compares what it got.
func SteadyInterfaces(tb testing.TB, list func()) {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		before := interfaces()
		list()
		after := interfaces()
		if before == after || attempt == 5 {
			return
		}
		tb.Logf("the host's interfaces changed while both sides listed them (another test's network namespace); listing again (%d)", attempt)
	}
}

// interfaces describes the host's interfaces: names, flags and addresses.
func interfaces() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, i := range ifs {
		b.WriteString(i.Name + " " + i.Flags.String())
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			b.WriteString(" " + a.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}
