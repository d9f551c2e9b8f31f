package loopback

import (
	"encoding/binary"
	"net/netip"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// wire is the loopback network: what a real transport keeps in sockets
// or shared memory, this provider keeps in process memory under one
// mutex. Holding wire.mu is what makes a match, a connection step or a
// close atomic across endpoints.
var wire struct {
	// mu guards bound, next, and the fields of endpoints and passive
	// endpoints marked "guarded by wire.mu".
	mu sync.Mutex
	// bound maps a port to its *endpoint or *passiveEP.
	bound map[uint16]any
	// next is the port bindPort tries first when it picks one.
	next uint16
}

// firstPort is the lowest port bindPort picks.
const firstPort = 1024

// bindPort binds obj at port, or at a free port when port is 0, and
// returns the port. A port in use gives fi.EADDRINUSE, and no free port
// fi.EADDRNOTAVAIL. wire.mu is held.
func bindPort(port uint16, obj any) (uint16, error) {
	if wire.bound == nil {
		wire.bound = make(map[uint16]any)
	}
	if port != 0 {
		if _, used := wire.bound[port]; used {
			return 0, errors.Wrapf(fi.EADDRINUSE, "port %d is in use", port)
		}
		wire.bound[port] = obj
		return port, nil
	}
	for range 1<<16 - firstPort {
		if wire.next < firstPort {
			wire.next = firstPort
		}
		p := wire.next
		wire.next++
		if _, used := wire.bound[p]; !used {
			wire.bound[p] = obj
			return p, nil
		}
	}
	return 0, errors.Wrap(fi.EADDRNOTAVAIL, "every port is in use")
}

// loopbackIP is the IP address of the names the provider picks.
var loopbackIP = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// parseName checks that addr is an FI_SOCKADDR_IN address and returns it
// decoded; errors have fi.EINVAL. Callers put the provider and the call
// before its messages, as they do for bindPort's.
func parseName(addr []byte) (netip.AddrPort, error) {
	ap, f, err := fi.AddrPortFromSockaddr(addr)
	if err == nil && f != fi.FormatSockaddrIn {
		err = errors.Wrapf(fi.EINVAL, "address %v is not FI_SOCKADDR_IN", ap)
	}
	return ap, err
}

// makeName returns the FI_SOCKADDR_IN address of ip (127.0.0.1 when it
// is not IPv4) and port.
func makeName(ip netip.Addr, port uint16) []byte {
	if !ip.Is4() {
		ip = loopbackIP
	}
	_, b, _ := fi.SockaddrFromAddrPort(netip.AddrPortFrom(ip, port))
	return b
}

// portOf returns the port of an address the AV checked (checkName): the
// data path's lookup, without allocating.
func portOf(addr []byte) uint16 { return binary.BigEndian.Uint16(addr[2:4]) }

// checkName is the AV's address check (fi_av_insert).
func checkName(addr []byte) error {
	_, err := parseName(addr)
	return err
}

// ring is a fixed-size FIFO, allocated when its endpoint opens, so that
// posting and matching allocate nothing. Its slots are zeroed when they
// empty, so that it keeps no buffer or context reachable.
type ring[T any] struct {
	buf     []T
	head, n int
}

func newRing[T any](size int) ring[T] { return ring[T]{buf: make([]T, max(size, 1))} }

func (r *ring[T]) len() int { return r.n }

// push appends an entry and returns it to be filled in, or nil when the
// ring is full.
func (r *ring[T]) push() *T {
	if r.n == len(r.buf) {
		return nil
	}
	p := &r.buf[(r.head+r.n)%len(r.buf)]
	r.n++
	return p
}

// front returns the oldest entry; the ring must not be empty.
func (r *ring[T]) front() *T { return &r.buf[r.head] }

// pop removes the oldest entry.
func (r *ring[T]) pop() {
	var zero T
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// removeIf removes the entries for which drop returns true, keeping the
// others in order. It is for Close and Cancel, not the data path.
func (r *ring[T]) removeIf(drop func(*T) bool) {
	kept := 0
	for i := range r.n {
		p := &r.buf[(r.head+i)%len(r.buf)]
		if drop(p) {
			continue
		}
		if kept != i {
			r.buf[(r.head+kept)%len(r.buf)] = *p
		}
		kept++
	}
	var zero T
	for i := kept; i < r.n; i++ {
		r.buf[(r.head+i)%len(r.buf)] = zero
	}
	r.n = kept
}
