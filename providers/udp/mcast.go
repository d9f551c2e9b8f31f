//go:build linux

package udp

import (
	"net/netip"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// group is a joined multicast group (struct fid_mc; fi_join(3)). A member
// with receive permission has a socket of its own, bound to the group's
// address and port with SO_REUSEADDR (so that every member on the host
// receives each datagram) and joined to the group (IP_ADD_MEMBERSHIP or
// IPV6_JOIN_GROUP) on the interface of the endpoint's address; the
// endpoint's progress fills posted receives from it too. A send-only
// member has no socket and no IP membership: it sends to the group from
// the endpoint's socket. Closing the group leaves it. Safe for concurrent
// use.
type group struct {
	e        *endpoint
	idx      int
	ap       netip.AddrPort
	sockaddr []byte
	send     bool
	// fd is the receiving socket, -1 for a send-only member or once the
	// group is left; changed under e.mu.
	fd     int
	closed atomic.Bool
}

var _ ep.MulticastGroup = (*group)(nil)

// Addr returns the fi.Addr to send to the group with fi.FlagMulticast
// (fi_mc_addr): msg.Addr of SendMsg. It is an index into the endpoint's
// table of groups, not an AV address.
func (g *group) Addr() fi.Addr { return fi.Addr(g.idx) }

// group returns the joined group with Addr a, or nil.
func (e *endpoint) group(a fi.Addr) *group {
	gs := e.groups.Load()
	if gs == nil || uint64(a) >= uint64(len(*gs)) {
		return nil
	}
	return (*gs)[a]
}

// Join joins the multicast group at addr, a sockaddr of the endpoint's
// family with a multicast address and a port (fi_join). flags
// fi.FlagSend joins as a send-only member, fi.FlagRecv as a receive-only
// member, 0 with the endpoint's directions; the endpoint must have
// FI_MULTICAST (else fi.ENOSYS) and the direction a flag asks for
// (fi.EINVAL). The endpoint must be enabled (fi.EOPBADSTATE) and bound to
// an event queue (fi.ENOEQ). The join takes effect before Join returns and
// its eq.JoinComplete{Fid: group, Context: ctx} is queued on that event
// queue. Joining a group the endpoint is a member of gives fi.EALREADY;
// an address that is not multicast, fi.EINVAL.
func (e *endpoint) Join(addr []byte, flags fi.Flags, ctx any) (ep.MulticastGroup, error) {
	switch {
	case e.ref.Closed():
		return nil, errors.Wrap(fi.EBADF, "udp: join: endpoint closed")
	case !e.enabled.Load():
		return nil, errors.Wrap(fi.EOPBADSTATE, "udp: join: endpoint not enabled")
	case e.events == nil:
		return nil, errors.Wrap(fi.ENOEQ, "udp: join: no event queue bound to the endpoint for FI_JOIN_COMPLETE")
	case flags&^(fi.FlagSend|fi.FlagRecv) != 0:
		return nil, errors.Wrapf(fi.EBADFLAGS, "udp: join: flags %v (want FI_SEND, FI_RECV or 0)", flags&^(fi.FlagSend|fi.FlagRecv))
	case e.info.Caps&fi.CapMulticast == 0:
		return nil, errors.Wrapf(fi.ENOSYS, "udp: join: endpoint caps %v lack FI_MULTICAST", e.info.Caps)
	}
	dirs := e.info.Caps & (fi.CapSend | fi.CapRecv)
	if dirs == 0 { // no direction bits: both (fi_getinfo(3))
		dirs = fi.CapSend | fi.CapRecv
	}
	want := fi.Caps(flags & (fi.FlagSend | fi.FlagRecv)) // FI_SEND and FI_RECV share their bits with the caps
	if want == 0 {
		want = dirs
	}
	if want&^dirs != 0 {
		return nil, errors.Wrapf(fi.EINVAL, "udp: join: %v membership on an endpoint with caps %v", want, e.info.Caps)
	}
	ap, err := e.checkName("join", addr)
	if err != nil {
		return nil, err
	}
	if !ap.Addr().IsMulticast() || ap.Port() == 0 {
		return nil, errors.Wrapf(fi.EINVAL, "udp: join: %v is not a multicast address with a port", ap)
	}
	_, sa, err := fi.SockaddrFromAddrPort(ap)
	if err != nil {
		return nil, errors.Wrap(err, "udp: join")
	}

	e.mcMu.Lock()
	defer e.mcMu.Unlock()
	var cur []*group
	if p := e.groups.Load(); p != nil {
		cur = *p
	}
	idx := len(cur)
	for i, g := range cur {
		switch {
		case g == nil && idx == len(cur):
			idx = i
		case g != nil && g.ap == ap:
			return nil, errors.Wrapf(fi.EALREADY, "udp: join: already a member of %v", ap)
		}
	}
	if err := e.ref.Acquire(); err != nil {
		return nil, errors.Wrap(err, "udp: join: endpoint closed")
	}
	g := &group{e: e, idx: idx, ap: ap, sockaddr: sa, send: want&fi.CapSend != 0, fd: -1}
	if want&fi.CapRecv != 0 {
		if g.fd, err = e.memberSocket(ap); err != nil {
			e.ref.Release()
			return nil, errors.Wrapf(err, "udp: join %v", ap)
		}
	}
	if g.send {
		e.setMulticastIf()
	}
	if g.fd >= 0 {
		if err := e.auto.Add(g.fd); err != nil {
			_ = unix.Close(g.fd)
			e.ref.Release()
			return nil, errors.Wrapf(fi.Code(err), "udp: join %v: epoll: %v", ap, err)
		}
	}
	next := append([]*group(nil), cur...)
	if idx == len(next) {
		next = append(next, g)
	} else {
		next[idx] = g
	}
	e.groups.Store(&next)
	if err := e.events.Post(&eq.JoinComplete{Fid: g, Context: ctx}); err != nil {
		e.leave(g)
		return nil, errors.Wrapf(err, "udp: join %v: queue FI_JOIN_COMPLETE", ap)
	}
	return g, nil
}

// memberSocket returns a socket bound to the group's address and port and
// joined to it on the endpoint's interface.
func (e *endpoint) memberSocket(ap netip.AddrPort) (int, error) {
	fd, err := newSocket(e.family)
	if err != nil {
		return -1, err
	}
	fail := func(op string, err error) (int, error) {
		_ = unix.Close(fd)
		return -1, errors.Wrapf(fi.Code(err), "%s: %v", op, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt SO_REUSEADDR", err)
	}
	if err := unix.Bind(fd, toSockaddr(ap)); err != nil {
		return fail("bind", err)
	}
	if e.family == unix.AF_INET {
		err = unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, e.mreqn(ap))
	} else {
		err = unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, e.mreq6(ap))
	}
	if err != nil {
		return fail("add membership", err)
	}
	return fd, nil
}

func (e *endpoint) mreqn(ap netip.AddrPort) *unix.IPMreqn {
	return &unix.IPMreqn{Multiaddr: ap.Addr().As4(), Ifindex: int32(e.ifindex)}
}

func (e *endpoint) mreq6(ap netip.AddrPort) *unix.IPv6Mreq {
	return &unix.IPv6Mreq{Multiaddr: ap.Addr().As16(), Interface: uint32(e.ifindex)}
}

// setMulticastIf makes the endpoint's socket send multicast out of the
// interface of its address (IP_MULTICAST_IF), when it has one in
// particular; otherwise the routing table chooses.
func (e *endpoint) setMulticastIf() {
	if e.ifindex == 0 {
		return
	}
	if e.family == unix.AF_INET {
		_ = unix.SetsockoptIPMreqn(e.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(e.ifindex)})
	} else {
		_ = unix.SetsockoptInt(e.fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, e.ifindex)
	}
}

// Close leaves the group (fi_close on the fid_mc): the membership is
// dropped (IP_DROP_MEMBERSHIP) and its socket closed, so datagrams sent to
// the group no longer reach the endpoint, and its Addr no longer sends. A
// second Close returns fi.EBADF.
func (g *group) Close() error {
	if g.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "udp: leave: group already closed")
	}
	g.e.mcMu.Lock()
	defer g.e.mcMu.Unlock()
	g.e.leave(g)
	return nil
}

// leave removes g from the table and drops its membership; the caller
// holds mcMu.
func (e *endpoint) leave(g *group) {
	cur := *e.groups.Load()
	next := append([]*group(nil), cur...)
	next[g.idx] = nil
	e.groups.Store(&next)
	e.mu.Lock()
	fd := g.fd
	g.fd = -1
	e.mu.Unlock()
	if fd >= 0 {
		e.auto.Remove(fd)
		if e.family == unix.AF_INET {
			_ = unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_DROP_MEMBERSHIP, e.mreqn(g.ap))
		} else {
			_ = unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_LEAVE_GROUP, e.mreq6(g.ap))
		}
		_ = unix.Close(fd)
	}
	e.ref.Release()
}
