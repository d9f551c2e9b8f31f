//go:build linux

package udp

import (
	"net/netip"
	"unsafe"

	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// Peer sockets. A sendto(2) to an address makes the kernel route the
// datagram anew each time (and draw its IP ID from a table all processors
// share); a socket connect(2)ed to the destination keeps its route and
// numbers its datagrams itself. On this project's 2-processor VMs that
// was about a tenth of a loopback round trip of 64 bytes in C (8.2 µs
// against 7.4 over 200,000 round trips, both sides sending from a
// connected socket). So an endpoint sends to each of its first maxPeers
// unicast destinations from a socket of its own, opened on the first send
// there: bound to the endpoint's own address and port (SO_REUSEPORT, set
// on the endpoint's socket once it is bound, so only processes of the
// same user can share the port) and connected to the destination. The
// peer sees the endpoint's address as the source, as before, and the wire
// does not change: every datagram is still one datagram with no header.
//
// The kernel delivers what the destination sends back to the connected
// socket, the more specific one, so progress receives from every peer
// socket as it does from the endpoint's own (recvPath.progress). A
// connected socket also hears of ICMP errors (a closed port: ECONNREFUSED
// on its next send or receive), which an unconnected one never reports:
// the endpoint drops them, as C's provider never sees them, and a send
// that meets one is made again. Datagrams to other destinations, to
// multicast groups and beyond maxPeers go out of the endpoint's socket as
// before; a peer socket that cannot be opened (no descriptors left, say)
// leaves its destination to the endpoint's socket for good.

// maxPeers is how many destinations an endpoint opens connected sockets
// for.
const maxPeers = 8

// broadcast4 is the limited broadcast address, which takes no connect.
var broadcast4 = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// peer is a destination with a connected socket; sa and fd are fixed once
// published, idle is the receive side's (under the endpoint's mu).
type peer struct {
	sa   []byte // the destination's sockaddr, as the AV gives it
	fd   int    // the connected socket, -1 when it could not be opened
	idle uint32 // consecutive polls that found the socket empty
}

// sendFD returns the socket to send a datagram to sa from, and whether
// it is sa's connected peer socket (else it is the endpoint's). It opens
// the peer socket on the first send to one of the first maxPeers unicast
// destinations (the one time the path allocates and makes system calls
// other than the send).
func (e *endpoint) sendFD(sa []byte) (int, bool) {
	p := e.findPeer(sa)
	if p == nil && e.peerPort {
		p = e.openPeer(sa)
	}
	if p == nil || p.fd < 0 {
		return e.fd, false
	}
	return p.fd, true
}

// findPeer returns sa's peer, nil when it has none yet.
func (e *endpoint) findPeer(sa []byte) *peer {
	if ps := e.peers.Load(); ps != nil {
		for _, p := range *ps {
			if string(p.sa) == string(sa) {
				return p
			}
		}
		if len(*ps) >= maxPeers {
			return noPeer
		}
	}
	return nil
}

// noPeer stands for a destination that gets no peer socket.
var noPeer = &peer{fd: -1}

// openPeer returns sa's peer, opening its socket unless another send did
// or the endpoint closes, under peerMu.
func (e *endpoint) openPeer(sa []byte) *peer {
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	if p := e.findPeer(sa); p != nil {
		return p
	}
	if e.peersClosed {
		return noPeer
	}
	var cur []*peer
	if ps := e.peers.Load(); ps != nil {
		cur = *ps
	}
	p := &peer{sa: append([]byte(nil), sa...), fd: e.dialPeer(sa)}
	next := append(append(make([]*peer, 0, len(cur)+1), cur...), p)
	e.peers.Store(&next)
	return p
}

// dialPeer opens a socket bound to the endpoint's address and connected
// to sa, known to the background progress; -1 when any step fails or sa
// is not a unicast address.
func (e *endpoint) dialPeer(sa []byte) int {
	ap, _, err := fi.AddrPortFromSockaddr(sa)
	if err != nil || !ap.Addr().IsValid() || ap.Port() == 0 || ap.Addr().IsMulticast() ||
		ap.Addr().IsUnspecified() || ap.Addr() == broadcast4 {
		return -1
	}
	fd, err := newSocket(e.family)
	if err != nil {
		return -1
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) != nil ||
		rawSockaddrCall(unix.SYS_BIND, fd, e.name) != nil ||
		rawSockaddrCall(unix.SYS_CONNECT, fd, sa) != nil ||
		e.auto.Add(fd) != nil {
		_ = unix.Close(fd)
		return -1
	}
	return fd
}

// rawSockaddrCall makes bind(2) or connect(2) with a sockaddr in its wire
// form, as the AV and Name keep it.
func rawSockaddrCall(call uintptr, fd int, sa []byte) error {
	if len(sa) == 0 {
		return unix.EINVAL
	}
	_, _, e := unix.Syscall(call, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
	if e != 0 {
		return e
	}
	return nil
}

// closePeers closes the peer sockets for good (Close, after the
// background progress ended).
func (e *endpoint) closePeers() {
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	e.peersClosed = true
	if ps := e.peers.Load(); ps != nil {
		for _, p := range *ps {
			if p.fd >= 0 {
				_ = unix.Close(p.fd)
			}
		}
	}
}

// asyncError reports whether a send on a connected socket failed with an
// ICMP report that arrived earlier (the kernel clears it as it reports
// it), which an unconnected socket would not have seen.
func asyncError(err error) bool {
	return err == unix.ECONNREFUSED || err == unix.EHOSTUNREACH || err == unix.ENETUNREACH || err == unix.EHOSTDOWN
}
