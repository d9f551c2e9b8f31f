//go:build linux

package udp_test

import (
	"context"
	"net/netip"
	"os/exec"
	"runtime"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// inNetns moves the test's goroutine, for the rest of its life, onto an OS
// thread of a new network namespace whose only interface is lo, up, with
// multicast on and a multicast route: sockets the test opens touch no
// real network. The thread is never unlocked, so it ends with the test.
// Without the privilege to make namespaces the test skips, except under
// GOFABRIC_STRICT.
func inNetns(t *testing.T) {
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		reftest.Missing(t, "cannot make a network namespace (needs CAP_SYS_ADMIN): %v", err)
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up", "multicast", "on"},
		{"route", "add", "224.0.0.0/4", "dev", "lo"},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", args, out)
	}
}

var group = sockaddr("239.1.2.3:45678")

// sockaddr returns the struct sockaddr_in or sockaddr_in6 of s.
func sockaddr(s string) []byte {
	_, b, err := fi.SockaddrFromAddrPort(netip.MustParseAddrPort(s))
	if err != nil {
		panic(err)
	}
	return b
}

// join joins n to the group with flags and checks the FI_JOIN_COMPLETE
// event.
func join(t testing.TB, n *node, flags fi.Flags) ep.MulticastGroup {
	t.Helper()
	ctx := &struct{ flags fi.Flags }{flags}
	g, err := n.ep.(ep.Joiner).Join(group, flags, ctx)
	require.NoError(t, err)
	rctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	ev, err := n.eq.SRead(rctx)
	require.NoError(t, err)
	require.Equal(t, &eq.JoinComplete{Fid: g, Context: ctx}, ev)
	return g
}

// TestMulticast: a sender joined send-only and receivers joined for both
// directions, receive-only and send-only; each receives exactly what its
// membership allows, and a member that leaves receives no more. A unicast
// marker sent after each multicast shows, by arriving first, that the
// multicast never came.
func TestMulticast(t *testing.T) {
	inNetns(t)
	noLeaks(t)
	cleanEnv(t)
	info := loInfo(t, fi.CapMsg|fi.CapMulticast)
	sender := newNode(t, info, true)
	both, recvOnly, sendOnly := newNode(t, info, true), newNode(t, info, true), newNode(t, info, true)
	gs := join(t, sender, fi.FlagSend)
	gBoth := join(t, both, 0)
	defer gBoth.Close()
	gRecv := join(t, recvOnly, fi.FlagRecv)
	gSend := join(t, sendOnly, fi.FlagSend)
	defer gSend.Close()

	payload := []byte("to the group")
	marker := []byte("marker")
	send := func() {
		t.Helper()
		m := ep.Message{IOV: [][]byte{payload}, Addr: gs.Addr(), Context: "mc"}
		require.NoError(t, sender.msg.SendMsg(&m, fi.FlagMulticast))
		c, _, cerr := readOne(t, sender.txcq)
		require.Nil(t, cerr)
		require.Equal(t, fi.FlagSend|fi.FlagMsg|fi.FlagMulticast, c.Flags)
	}
	// expect checks n's next datagram: the payload, or the marker (sent
	// to it now by unicast) when want is false.
	expect := func(n *node, want bool) {
		t.Helper()
		buf := make([]byte, 64)
		require.NoError(t, n.msg.Recv(buf, nil, fi.AddrUnspec, nil))
		if !want {
			require.NoError(t, sender.msg.Inject(marker, sender.insert(t, n.name)))
		}
		c, src, cerr := readOne(t, n.rxcq)
		require.Nil(t, cerr)
		if want {
			require.Equal(t, payload, buf[:c.Len])
			require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMulticast, c.Flags)
			require.Equal(t, fi.AddrUnspec, src, "the sender is not in the receiver's AV")
			return
		}
		require.Equal(t, marker, buf[:c.Len], "no multicast datagram before the marker")
	}

	send()
	expect(both, true)
	expect(recvOnly, true)
	expect(sendOnly, false)
	expect(sender, false)

	require.NoError(t, gRecv.Close(), "leave")
	require.ErrorIs(t, gRecv.Close(), fi.EBADF)
	send()
	expect(both, true)
	expect(recvOnly, false)

	// A receive-only member cannot send to the group; a left group's
	// address sends nowhere.
	gRecv = join(t, recvOnly, fi.FlagRecv)
	m := ep.Message{IOV: [][]byte{payload}, Addr: gRecv.Addr()}
	require.ErrorIs(t, recvOnly.msg.SendMsg(&m, fi.FlagMulticast), fi.EINVAL)
	require.ErrorIs(t, recvOnly.ep.Close(), fi.EBUSY, "a joined group holds the endpoint")
	require.NoError(t, gRecv.Close())
	m.Addr = gs.Addr()
	require.NoError(t, gs.Close())
	require.ErrorIs(t, sender.msg.SendMsg(&m, fi.FlagMulticast), fi.EINVAL)
}

// TestJoinErrors checks Join's refusals; none of them touches a network
// (the successful join is send-only: no IP membership).
func TestJoinErrors(t *testing.T) {
	noLeaks(t)
	cleanEnv(t)
	noEQ := newNode(t, loInfo(t, fi.CapMsg|fi.CapMulticast), false)
	_, err := noEQ.ep.(ep.Joiner).Join(group, 0, nil)
	require.ErrorIs(t, err, fi.ENOEQ)

	n := newNode(t, loInfo(t, fi.CapMsg|fi.CapMulticast), true)
	j := n.ep.(ep.Joiner)
	_, err = j.Join(sockaddr("127.0.0.1:45678"), fi.FlagSend, nil)
	require.ErrorIs(t, err, fi.EINVAL, "not a multicast address")
	_, err = j.Join(sockaddr("[ff02::1]:45678"), fi.FlagSend, nil)
	require.ErrorIs(t, err, fi.EINVAL, "not the endpoint's family")
	_, err = j.Join(group, fi.FlagRead, nil)
	require.ErrorIs(t, err, fi.EBADFLAGS)
	g := join(t, n, fi.FlagSend)
	_, err = j.Join(group, fi.FlagSend, nil)
	require.ErrorIs(t, err, fi.EALREADY)
	require.NoError(t, g.Close())

	noMC := newNode(t, loInfo(t, fi.CapMsg), true)
	_, err = noMC.ep.(ep.Joiner).Join(group, fi.FlagSend, nil)
	require.ErrorIs(t, err, fi.ENOSYS, "no FI_MULTICAST")

	sendOnly := newNode(t, loInfo(t, fi.CapMsg|fi.CapMulticast|fi.CapSend), true)
	_, err = sendOnly.ep.(ep.Joiner).Join(group, fi.FlagRecv, nil)
	require.ErrorIs(t, err, fi.EINVAL, "FI_RECV membership on a send-only endpoint")
}
