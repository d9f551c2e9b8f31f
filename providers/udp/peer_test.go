//go:build linux

package udp_test

import (
	"context"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The endpoint sends to its first destinations from sockets connected to
// them (peer.go), and the kernel hands their answers to those sockets.
// These tests check what an application sees through that: the same
// source address on the wire and in FI_SOURCE, every sender heard, no
// error a plain UDP socket would not give, and nothing left open.

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// plainPeer is a UDP socket of the net package on 127.0.0.1: a peer that
// is no gofabric endpoint, closed at cleanup.
func plainPeer(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// nameOf is the address an endpoint's Name gives, as net sees senders.
func nameOf(t *testing.T, name []byte) *net.UDPAddr {
	t.Helper()
	ap, _, err := fi.AddrPortFromSockaddr(name)
	require.NoError(t, err)
	return net.UDPAddrFromAddrPort(ap)
}

// TestPingPongKeepsSources: in a ping-pong both endpoints soon send from
// peer sockets and receive on them; every datagram still comes from the
// sender's own address, FI_SOURCE names it, and a third sender's
// datagrams reach the busy endpoint too, through its own socket.
func TestPingPongKeepsSources(t *testing.T) {
	noLeaks(t)
	a, b, toB, toA := pair(t)
	buf := make([]byte, 64)
	for i := range 50 {
		require.NoError(t, b.msg.Recv(buf, nil, fi.AddrUnspec, "b"))
		require.NoError(t, a.msg.Send([]byte{byte(i)}, nil, toB, "ping"))
		_, src, cerr := readOne(t, b.rxcq)
		require.Nil(t, cerr)
		require.Equal(t, toA, src, "round %d: b sees a's address", i)
		require.Equal(t, byte(i), buf[0])
		readOK(t, a.txcq)

		require.NoError(t, a.msg.Recv(buf, nil, fi.AddrUnspec, "a"))
		if i%2 == 0 {
			require.NoError(t, b.msg.Send([]byte{byte(i + 100)}, nil, toA, "pong"))
			readOK(t, b.txcq)
		} else {
			require.NoError(t, b.msg.Inject([]byte{byte(i + 100)}, toA))
		}
		_, src, cerr = readOne(t, a.rxcq)
		require.Nil(t, cerr)
		require.Equal(t, toB, src, "round %d: a sees b's address", i)
		require.Equal(t, byte(i+100), buf[0])
	}

	// A sender a has never sent to: its datagrams arrive on a's own
	// socket, which a's polls have found empty for a while.
	c := plainPeer(t)
	toC := a.insert(t, sockaddr(c.LocalAddr().String()))
	for i := range 20 {
		require.NoError(t, a.msg.Recv(buf, nil, fi.AddrUnspec, "a"))
		_, err := c.WriteToUDP([]byte{byte(i)}, nameOf(t, a.name))
		require.NoError(t, err)
		_, src, cerr := readOne(t, a.rxcq)
		require.Nil(t, cerr)
		require.Equal(t, toC, src)
		require.Equal(t, byte(i), buf[0])
	}
}

// readOK reads one completion from q and requires it to be no error.
func readOK(t *testing.T, q eq.CompletionQueue) {
	t.Helper()
	_, _, cerr := readOne(t, q)
	require.Nil(t, cerr)
}

// TestManyDestinations: beyond the destinations that get a peer socket,
// sends go out of the endpoint's own socket; either way each datagram
// leaves from the endpoint's address, and every answer is received with
// its sender's fi.Addr, whether the endpoint polls or blocks in SRead.
func TestManyDestinations(t *testing.T) {
	noLeaks(t)
	cleanEnv(t)
	a := newNode(t, loInfo(t, 0), false)
	from := nameOf(t, a.name)
	const n = 12 // more than the endpoint opens peer sockets for
	peers := make([]*net.UDPConn, n)
	addrs := make([]fi.Addr, n)
	for i := range peers {
		peers[i] = plainPeer(t)
		addrs[i] = a.insert(t, sockaddr(peers[i].LocalAddr().String()))
	}
	fds := openFDs(t)
	for round := range 3 {
		for i, p := range peers {
			require.NoError(t, a.msg.Send([]byte{byte(i), byte(round)}, nil, addrs[i], i))
			readOK(t, a.txcq)
			got := make([]byte, 8)
			require.NoError(t, p.SetReadDeadline(time.Now().Add(10*time.Second)))
			k, src, err := p.ReadFromUDP(got)
			require.NoError(t, err)
			require.Equal(t, []byte{byte(i), byte(round)}, got[:k])
			require.Equal(t, from.String(), src.String(), "peer %d: the datagram leaves from the endpoint's address", i)
		}
		// Every peer answers; the answers wait in whichever sockets
		// they reached until receives are posted.
		for i, p := range peers {
			_, err := p.WriteToUDP([]byte{byte(i)}, from)
			require.NoError(t, err)
		}
		seen := map[fi.Addr]bool{}
		for range peers {
			buf := make([]byte, 8)
			require.NoError(t, a.msg.Recv(buf, nil, fi.AddrUnspec, nil))
			var c eq.Completion
			var src fi.Addr
			if round == 1 {
				var cs [1]eq.Completion
				var srcs [1]fi.Addr
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				k, err := a.rxcq.(eq.SReadFromer).SReadFrom(ctx, cs[:], srcs[:])
				cancel()
				require.NoError(t, err)
				require.Equal(t, 1, k)
				c, src = cs[0], srcs[0]
			} else {
				var cerr *eq.CQError
				c, src, cerr = readOne(t, a.rxcq)
				require.Nil(t, cerr)
			}
			require.Equal(t, 1, c.Len)
			require.Equal(t, addrs[buf[0]], src, "the answer of peer %d", buf[0])
			seen[src] = true
		}
		require.Len(t, seen, n)
	}
	require.Equal(t, fds+8, openFDs(t), "peer sockets for the first 8 destinations only")
}

// TestClosedPeerIsSilent: a destination whose port closes answers with
// ICMP port-unreachable, which a connected socket reports on its next
// call. The endpoint goes on as a plain UDP socket would: sends succeed
// (the datagrams are lost), no receive completes with an error, and the
// endpoint still hears others.
func TestClosedPeerIsSilent(t *testing.T) {
	noLeaks(t)
	a, b, toB, toA := pair(t)
	gone := plainPeer(t)
	toGone := a.insert(t, sockaddr(gone.LocalAddr().String()))
	require.NoError(t, a.msg.Inject([]byte("hello"), toGone))
	got := make([]byte, 8)
	require.NoError(t, gone.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := gone.Read(got)
	require.NoError(t, err)
	require.NoError(t, gone.Close())

	buf := make([]byte, 8)
	require.NoError(t, a.msg.Recv(buf, nil, fi.AddrUnspec, "rx"))
	for i := range 10 {
		require.NoError(t, a.msg.Send([]byte{byte(i)}, nil, toGone, i), "send %d to a closed port", i)
		readOK(t, a.txcq)
		time.Sleep(time.Millisecond) // lets the ICMP report arrive
		var c [1]eq.Completion
		_, err := a.rxcq.Read(c[:])
		require.ErrorIs(t, err, fi.EAGAIN, "no completion, and no error entry, for the receive")
	}
	require.NoError(t, b.msg.Inject([]byte("b"), toA))
	_, _, cerr := readOne(t, a.rxcq)
	require.Nil(t, cerr)
	require.Equal(t, "b", string(buf[:1]))
	require.NoError(t, b.msg.Recv(buf, nil, fi.AddrUnspec, nil))
	require.NoError(t, a.msg.Inject([]byte("a"), toB))
	readOK(t, b.rxcq)
}

// TestPeerSocketsClose: the sockets an endpoint opens for its
// destinations close with it.
func TestPeerSocketsClose(t *testing.T) {
	noLeaks(t)
	cleanEnv(t)
	before := openFDs(t)
	t.Run("endpoint", func(t *testing.T) {
		a := newNode(t, loInfo(t, 0), false)
		for range 10 {
			p := plainPeer(t)
			require.NoError(t, a.msg.Inject([]byte("x"), a.insert(t, sockaddr(p.LocalAddr().String()))))
		}
	})
	require.Equal(t, before, openFDs(t), "descriptors open after every object closed")
}

// TestPortNotShared: the endpoint's socket lets its peer sockets bind
// its port (SO_REUSEPORT), but nobody else: another endpoint asking for
// the same address gets EADDRINUSE at Enable, and a socket of another
// user cannot join the port even with SO_REUSEPORT, while one of the same
// user can (the kernel's rule, which the check below would see broken).
func TestPortNotShared(t *testing.T) {
	noLeaks(t)
	cleanEnv(t)
	a := newNode(t, loInfo(t, 0), false)
	p := plainPeer(t)
	require.NoError(t, a.msg.Inject([]byte("x"), a.insert(t, sockaddr(p.LocalAddr().String()))))

	info := a.info.Clone()
	info.SrcAddr = append([]byte(nil), a.name...)
	e2, err := ep.Open(a.domain, info)
	require.NoError(t, err)
	defer func() { require.NoError(t, e2.Close()) }()
	require.NoError(t, e2.Bind(a.txcq, fi.FlagSend))
	require.NoError(t, e2.Bind(a.rxcq, fi.FlagRecv))
	require.NoError(t, e2.Bind(a.av, 0))
	require.ErrorIs(t, e2.Enable(), fi.EADDRINUSE, "a second endpoint on the first one's address")

	if os.Geteuid() != 0 {
		t.Skip("creating a socket as another user (setfsuid) needs root; the rest of the test ran")
	}
	port := nameOf(t, a.name).Port
	bindAs := func(uid int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		require.NoError(t, unix.Setfsuid(uid))
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, unix.Setfsuid(0))
		require.NoError(t, err)
		defer func() { _ = unix.Close(fd) }()
		require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1))
		return unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	}
	require.ErrorIs(t, bindAs(65534), unix.EADDRINUSE, "another user's socket on the endpoint's port")
	require.NoError(t, bindAs(os.Geteuid()), "a socket of the same user may join the port")
}

// TestPeerSocketsIPv6: the same over ::1, where the sockaddrs that bind
// and connect the peer sockets are struct sockaddr_in6; each side opens
// one socket for its peer on its first send there, and none after.
func TestPeerSocketsIPv6(t *testing.T) {
	noLeaks(t)
	cleanEnv(t)
	h := udpHints()
	h.DomainAttr.Name = "lo"
	h.AddrFormat = fi.FormatSockaddrIn6
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	if err != nil {
		t.Skipf("no IPv6 loopback address on this host (GetInfo: %v)", err)
	}
	a, b := newNode(t, infos[0], false), newNode(t, infos[0], false)
	toB, toA := a.insert(t, b.name), b.insert(t, a.name)
	before := openFDs(t)
	buf := make([]byte, 8)
	for i := range 20 {
		require.NoError(t, b.msg.Recv(buf, nil, fi.AddrUnspec, nil))
		require.NoError(t, a.msg.Inject([]byte{byte(i)}, toB))
		_, src, cerr := readOne(t, b.rxcq)
		require.Nil(t, cerr)
		require.Equal(t, toA, src)
		require.NoError(t, a.msg.Recv(buf, nil, fi.AddrUnspec, nil))
		require.NoError(t, b.msg.Inject([]byte{byte(i)}, toA))
		_, src, cerr = readOne(t, a.rxcq)
		require.Nil(t, cerr)
		require.Equal(t, toB, src)
		require.Equal(t, byte(i), buf[0])
	}
	require.Equal(t, before+2, openFDs(t), "one peer socket on each side")
}
