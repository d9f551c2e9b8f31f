//go:build verbs && cgo

package verbs

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rdmaAddr returns the first IPv4 address rdma_cm puts on an RDMA device
// (in the Soft-RoCE VM, eth0's, on rxe0), skipping the test on a host
// without an RDMA device.
func rdmaAddr(t testing.TB) netip.Addr {
	t.Helper()
	devs, err := listDevices()
	if err != nil || len(devs) == 0 {
		t.Skipf("this host has no RDMA device (%v); run the tests in the Soft-RoCE VM (README)", err)
	}
	byDev, err := rdmaAddrs()
	require.NoError(t, err)
	for _, d := range devs {
		for _, a := range byDev[d.name] {
			if a.Is4() {
				return a
			}
		}
	}
	t.Skipf("no IPv4 address on the netdev of an RDMA device (%d devices) for rdma_cm to reach it by", len(devs))
	return netip.Addr{}
}

// nextOf waits for ch's next event and requires its type.
func nextOf(t *testing.T, ch *cmChannel, want int) cmEventC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := ch.next(ctx)
	require.NoError(t, err)
	require.Equal(t, eventName(want), eventName(ev.typ), "status %d", ev.status)
	return ev
}

// dial resolves dst on a fresh id of ch and gives it a queue pair.
func dial(t *testing.T, ch *cmChannel, dst netip.AddrPort) (cmIDC, *qpRes) {
	t.Helper()
	id, err := createID(ch.ch)
	require.NoError(t, err)
	require.NoError(t, resolveAddr(id, dst, 2000))
	nextOf(t, ch, evAddrResolved)
	require.NoError(t, resolveRoute(id, 2000))
	nextOf(t, ch, evRouteResolved)
	qp, err := createQP(id, nil)
	require.NoError(t, err)
	return id, qp
}

// The rdma_cm round trips the provider's connection management maps
// onto fi_cm(3): a request carries the connector's private data; a
// consumer reject reaches the connector as REJECTED with reason 28 and
// the rejector's data; an accept gives ESTABLISHED at both ends with the
// acceptor's data at the connector; a disconnect gives DISCONNECTED at
// both once the passive side answers it. Waiting happens in the
// netpoller, and an idle wait ends with the context. (Private data comes
// back padded to the IB CM message's field: the provider will carry its
// length itself, as C's verbs provider does.)
func TestCMRoundTrips(t *testing.T) {
	ip := rdmaAddr(t)
	srv, err := openCMChannel()
	require.NoError(t, err)
	defer srv.close()
	cli, err := openCMChannel()
	require.NoError(t, err)
	defer cli.close()

	ln, err := createID(srv.ch)
	require.NoError(t, err)
	defer destroyID(ln)
	require.NoError(t, bindAddr(ln, netip.AddrPortFrom(ip, 0)))
	require.NoError(t, listen(ln, 8))
	dst := netip.AddrPortFrom(ip, srcPort(ln))
	require.NotZero(t, dst.Port())

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = srv.next(ctx)
	cancel()
	require.Error(t, err, "no event: the wait ends with its context")

	// Reject with data.
	id, qp := dial(t, cli, dst)
	require.NoError(t, connect(id, []byte("hello-request"), cmRetryDefault))
	req := nextOf(t, srv, evConnectRequest)
	require.GreaterOrEqual(t, len(req.data), len("hello-request"))
	require.Equal(t, []byte("hello-request"), req.data[:len("hello-request")], "the request's private data")
	require.NoError(t, reject(req.id, []byte("no-thanks")))
	destroyID(req.id)
	rej := nextOf(t, cli, evRejected)
	require.Equal(t, rejConsumer, rej.status, "a consumer reject")
	require.GreaterOrEqual(t, len(rej.data), len("no-thanks"))
	require.Equal(t, []byte("no-thanks"), rej.data[:len("no-thanks")], "the reject's private data")
	destroyQP(id, qp)
	destroyID(id)

	// Accept with data, then disconnect.
	id, qp = dial(t, cli, dst)
	defer destroyID(id)
	defer destroyQP(id, qp)
	require.NoError(t, connect(id, []byte("again"), cmRetryDefault))
	req = nextOf(t, srv, evConnectRequest)
	sqp, err := createQP(req.id, nil)
	require.NoError(t, err)
	defer destroyID(req.id)
	defer destroyQP(req.id, sqp)
	require.NoError(t, accept(req.id, []byte("welcome")))
	est := nextOf(t, cli, evEstablished)
	require.GreaterOrEqual(t, len(est.data), len("welcome"))
	require.Equal(t, []byte("welcome"), est.data[:len("welcome")], "the accept's private data")
	nextOf(t, srv, evEstablished)
	// The passive side hears of the disconnect first and must answer it
	// with its own rdma_disconnect (the DREP): only then does the active
	// side get its DISCONNECTED, at once rather than after the CM's DREQ
	// timeout.
	require.NoError(t, disconnect(id))
	nextOf(t, srv, evDisconnected)
	require.NoError(t, disconnect(req.id))
	nextOf(t, cli, evDisconnected)
}
