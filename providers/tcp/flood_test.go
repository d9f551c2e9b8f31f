//go:build linux

package tcp_test

import (
	"net"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Half-open sockets (issue 16, finding 8): sockets that connect to a
// listener and send nothing. A listener reads the requests of a bounded
// number of accepted sockets at once, closing the oldest silent ones to
// make room, so that a flood of them holds neither a descriptor nor a
// goroutine each and well-behaved clients still connect.

const floodSockets = 1000

// flood opens n TCP connections to addr that send nothing; they stay open
// until the test ends.
func flood(t *testing.T, name []byte, n int) {
	t.Helper()
	ap, _, err := fi.AddrPortFromSockaddr(name)
	require.NoError(t, err)
	for range n {
		c, err := net.Dial("tcp", ap.String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
}

func floodFDs(t *testing.T) {
	if free := freeFDs(t, 2*floodSockets+200); free < 2*floodSockets+200 {
		reftest.Missing(t, "a flood of %d sockets needs about %d descriptors; RLIMIT_NOFILE leaves %d",
			floodSockets, 2*floodSockets+200, free)
	}
}

// TestHalfOpenFloodMSG: after 1,000 silent connections to a passive
// endpoint, a client's request is reported and accepted, and the endpoint
// holds at most tcp.MaxHandshakes sockets whose request it waits for
// (it held all 1,000, each with a goroutine, for FI_TCP_CONN_TIMEOUT).
func TestHalfOpenFloodMSG(t *testing.T) {
	cleanEnv(t)
	floodFDs(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := connectPairAfter(t, func(name []byte) { flood(t, name, floodSockets) })
	require.LessOrEqual(t, tcp.Handshakes(p.pep), tcp.MaxHandshakes)
	p.close(t)
}

// connectPairAfter is connectPair with before run between the server's
// Listen and the client's Connect.
func connectPairAfter(t *testing.T, before func(name []byte)) *pair {
	t.Helper()
	p := &pair{}
	var name []byte
	p.srvFabric, p.srvEQ, p.pep, name = listen(t)
	before(name)
	info := loInfo(t)
	cf, err := fi.OpenFabric(info)
	require.NoError(t, err)
	cq, err := eq.OpenEQ(cf, nil)
	require.NoError(t, err)
	openSide(t, &p.client, cf, cq, info)
	require.NoError(t, p.client.cm().Connect(name, []byte("hello")))
	ev := waitEvent(t, p.srvEQ)
	req, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	openSide(t, &p.server, p.srvFabric, p.srvEQ, req.Info)
	require.NoError(t, p.server.cm().Accept(nil))
	require.IsType(t, &eq.Connected{}, waitEvent(t, p.srvEQ))
	ev = waitEvent(t, cq)
	require.IsType(t, &eq.Connected{}, ev, "got %v", ev)
	return p
}

// TestHalfOpenFloodRDM: the same for the listener of an RDM endpoint
// (tcp;ofi_rxm, whose listener is a passive endpoint of this provider;
// with fewer sockets, enough to fill it: CI time): after the silent
// connections, a peer's first send reaches it.
func TestHalfOpenFloodRDM(t *testing.T) {
	cleanEnv(t)
	floodFDs(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hub := openHostileRDM(t)
	defer hub.close()
	flood(t, hub.name(t), tcp.MaxHandshakes+100)
	hrRequireServes(t, hub, nil)
}
