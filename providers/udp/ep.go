//go:build linux

package udp

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/gofabric/gofabric/internal/sockpoll"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// endpoint is a datagram endpoint (struct fid_ep; FI_EP_DGRAM,
// fi_endpoint(3), fi_msg(3), fi_cm(3)): one UDP socket, created when the
// endpoint opens and bound by Enable. Safe for concurrent use.
type endpoint struct {
	// ref is the endpoint's close state; it counts the multicast groups
	// joined, so Close returns EBUSY while any is open.
	ref    kit.Ref
	domain *domain
	info   *fi.Info
	bind   kit.Bindings
	// MsgOps gives the endpoint the fi_msg(3) calls over PostTx and
	// PostRx (data.go).
	kit.MsgOps
	// family is the socket's address family, AF_INET or AF_INET6.
	family int
	// fd is the socket, non-blocking and unknown to the netpoller.
	fd int

	nameMu    sync.Mutex // guards localName and name, and orders Enable
	localName []byte     // SetName's address, or nil
	name      []byte     // the bound address, set by Enable
	enabled   atomic.Bool

	// Fixed at Enable.
	av *kit.AV
	kit.Completions[epSet]
	events *eventQueue
	auto   *sockpoll.Poller
	autoWG sync.WaitGroup
	// ifindex is the interface of the bound address, 0 for none in
	// particular: multicast joins and sends use it.
	ifindex int
	// polls counts the application's queue reads that ran progress.
	polls atomic.Uint64

	// txMu guards tx, the scratch of vectored sends.
	txMu sync.Mutex
	tx   msgScratch

	// mcMu serialises joins and leaves; groups is the table of joined
	// groups (nil slots are free), read without a lock by the data path.
	mcMu   sync.Mutex
	groups atomic.Pointer[[]*group]

	// peerMu serialises opening peer sockets (peer.go) and closing them;
	// peers is the table of destinations with one, read without a lock by
	// the data path; peerPort says the endpoint's socket could be shared
	// with them (SO_REUSEPORT, set at Enable).
	peerMu      sync.Mutex
	peers       atomic.Pointer[[]*peer]
	peersClosed bool
	peerPort    bool

	// posted mirrors rx.size, so that progress and the background
	// goroutine see without the lock whether receives are posted.
	posted atomic.Int64
	// mu guards the receive side (progress.go).
	mu sync.Mutex
	rx recvPath
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.Namer    = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.Joiner   = (*endpoint)(nil)
	_ ep.Opener   = (*domain)(nil)
)

// OpenEndpoint opens a datagram endpoint (fi_endpoint) and its UDP socket,
// of the family of info's address format (IPv4 unless it is
// FI_SOCKADDR_IN6). It returns fi.EINVAL for an Info that is not
// FI_EP_DGRAM.
func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	if info == nil {
		info = d.Info()
	}
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeDgram {
		return nil, errors.Wrapf(fi.EINVAL, "udp: open endpoint: ep type %v not supported (offers FI_EP_DGRAM)", info.EPAttr.Type)
	}
	e := &endpoint{domain: d, info: kit.EndpointInfo(info, fi.EPTypeDgram, infoCaps), family: unix.AF_INET}
	e.MsgOps = kit.MsgOps{Ops: kit.NewOps(e, "udp", e.info)}
	switch f := e.info.AddrFormat; {
	case f == fi.FormatSockaddrIn6:
		e.family = unix.AF_INET6
	case f == fi.FormatSockaddrIn, f == fi.FormatSockaddr, f == fi.FormatUnspec:
		if ap, af, err := fi.AddrPortFromSockaddr(e.info.SrcAddr); err == nil && af == fi.FormatSockaddrIn6 && ap.IsValid() {
			e.family = unix.AF_INET6
		}
	default:
		return nil, errors.Wrapf(fi.EINVAL, "udp: open endpoint: addr format %v not supported", f)
	}
	e.bind.Init(e.info)
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	fd, err := newSocket(e.family)
	if err != nil {
		d.Release(kit.KindEndpoint)
		return nil, errors.Wrap(err, "udp: open endpoint")
	}
	e.fd = fd
	return e, nil
}

// newSocket returns a non-blocking UDP socket of family that receives no
// multicast group it did not join itself (IP_MULTICAST_ALL off).
func newSocket(family int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, errors.Wrapf(fi.Code(err), "socket: %v", err)
	}
	if family == unix.AF_INET {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0)
	} else {
		// IPV6_MULTICAST_ALL needs Linux 4.20; older kernels deliver as
		// before.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, 0)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, errors.Wrapf(fi.Code(err), "setsockopt IP_MULTICAST_ALL: %v", err)
	}
	return fd, nil
}

// Info returns the Info the endpoint was opened with.
func (e *endpoint) Info() *fi.Info { return e.info }

// Bind binds an address vector, completion queue or event queue of this
// provider (fi_ep_bind). Objects of other providers give fi.EINVAL; the
// rest of the rules are kit.Bindings'.
func (e *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&e.bind, "udp", e.ref.Closed(), obj, flags)
}

// Enable checks the bindings (fi_enable: an address vector and a
// completion queue for each direction), binds the socket to the SetName
// address, else the Info's source address, else the wildcard address (an
// ephemeral port where the port is 0), and starts the endpoint's
// background progress.
func (e *endpoint) Enable() error {
	e.nameMu.Lock()
	defer e.nameMu.Unlock()
	if e.ref.Closed() {
		return errors.Wrap(fi.EBADF, "udp: enable: endpoint closed")
	}
	if e.enabled.Load() {
		return nil
	}
	if err := e.bind.CheckEnable(); err != nil {
		return err
	}
	local := e.localName
	if local == nil {
		local = e.info.SrcAddr
	}
	ap := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if e.family == unix.AF_INET6 {
		ap = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	}
	if local != nil {
		var err error
		if ap, err = e.checkName("enable", local); err != nil {
			return err
		}
	}
	if err := unix.Bind(e.fd, toSockaddr(ap)); err != nil {
		return errors.Wrapf(fi.Code(err), "udp: enable: bind %v: %v", ap, err)
	}
	sa, err := unix.Getsockname(e.fd)
	if err != nil {
		return errors.Wrapf(fi.Code(err), "udp: enable: getsockname: %v", err)
	}
	bound := fromSockaddr(sa)
	if _, e.name, err = fi.SockaddrFromAddrPort(bound); err != nil {
		return errors.Wrap(err, "udp: enable: bound address")
	}
	e.ifindex = ifindexOf(bound.Addr())
	// Peer sockets bind the same address and port (peer.go); without
	// SO_REUSEPORT every destination is sent to from this socket.
	e.peerPort = unix.SetsockoptInt(e.fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) == nil
	b := &e.bind
	e.av = b.AV.(*addrVector).AV
	if q, ok := b.EQ.(*eventQueue); ok {
		e.events = q
	}
	e.Resolve(b)
	a, err := startAuto(e)
	if err != nil {
		return errors.Wrap(err, "udp: enable: background progress")
	}
	e.auto = a
	for _, s := range e.Sets {
		s.Add(e)
	}
	e.enabled.Store(true)
	return nil
}

// checkName parses a local address for SetName and Enable: a sockaddr of
// the endpoint's family.
func (e *endpoint) checkName(op string, addr []byte) (netip.AddrPort, error) {
	ap, f, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return ap, errors.Wrapf(err, "udp: %s", op)
	}
	if (f == fi.FormatSockaddrIn6) != (e.family == unix.AF_INET6) || !ap.Addr().IsValid() {
		return ap, errors.Wrapf(fi.EINVAL, "udp: %s: address %v is not of the endpoint's family", op, ap)
	}
	return ap, nil
}

// ifindexOf returns the index of the interface that has address a, 0 for
// the wildcard address or an address no interface has.
func ifindexOf(a netip.Addr) int {
	if a.IsUnspecified() {
		return 0
	}
	ifs, err := netif.List("")
	if err != nil {
		return 0
	}
	for _, x := range ifs {
		if x.Addr.WithZone("") == a.WithZone("") {
			if idx, err := ifaceIndex(x.Name); err == nil {
				return idx
			}
		}
	}
	return 0
}

// SetName sets the address Enable binds the socket to (fi_setname): a
// sockaddr of the endpoint's family; port 0 lets the kernel pick. After
// Enable it returns fi.EOPBADSTATE.
func (e *endpoint) SetName(addr []byte) error {
	if _, err := e.checkName("setname", addr); err != nil {
		return err
	}
	e.nameMu.Lock()
	defer e.nameMu.Unlock()
	switch {
	case e.ref.Closed():
		return errors.Wrap(fi.EBADF, "udp: setname: endpoint closed")
	case e.enabled.Load():
		return errors.Wrap(fi.EOPBADSTATE, "udp: setname: endpoint already enabled (its socket is bound)")
	}
	e.localName = append([]byte(nil), addr...)
	return nil
}

// Name copies the endpoint's address into buf (fi_getname): the bound
// socket's once enabled, else the SetName address, else the Info's source
// address. A buffer too small for it gets a truncated copy, the full
// length and bare fi.ETOOSMALL.
func (e *endpoint) Name(buf []byte) (int, error) {
	e.nameMu.Lock()
	name := e.name
	if name == nil {
		name = e.localName
	}
	e.nameMu.Unlock()
	if name == nil {
		name = e.info.SrcAddr
	}
	if name == nil {
		return 0, errors.Wrap(fi.EADDRNOTAVAIL, "udp: getname: the endpoint has no address before Enable (no source address or SetName)")
	}
	n := copy(buf, name)
	if n < len(name) {
		return len(name), fi.ETOOSMALL
	}
	return len(name), nil
}

// Cancel cancels the posted receive with context ctx (fi_cancel): it
// completes with an fi.ECANCELED error entry. Sends complete when they
// are posted and cannot be cancelled; for them, and for an unknown
// context, it returns fi.ENOENT.
func (e *endpoint) Cancel(ctx any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return kit.Canceled(e.rx.cancel(e, ctx))
}

// Close closes the endpoint (fi_close): posted receives complete with
// fi.ECANCELED error entries, the background progress ends, the socket
// closes, and the endpoint lets go of its AV, queues and domain. While
// multicast groups joined on it are open (close them first: that leaves
// them) it returns fi.EBUSY, saying how many ("udp: close endpoint: 1
// multicast group still open"), and fi.EBADF when already closed.
func (e *endpoint) Close() error {
	if err := e.ref.BeginCloseFor("udp: close endpoint", kit.KindMulticastGroup); err != nil {
		if err == fi.EBADF {
			return errors.Wrap(fi.EBADF, "udp: close endpoint: already closed")
		}
		return err
	}
	e.nameMu.Lock() // waits for an Enable in progress
	a := e.auto
	e.nameMu.Unlock()
	if a != nil {
		a.Halt()
	}
	e.autoWG.Wait()
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.mu.Lock()
	e.rx.cancelAll(e)
	e.mu.Unlock()
	e.closePeers()
	_ = unix.Close(e.fd)
	e.bind.Release()
	e.domain.Release(kit.KindEndpoint)
	return nil
}

// toSockaddr converts an address for bind(2) and the control path.
func toSockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	if z := ap.Addr().Zone(); z != "" {
		if idx, err := ifaceIndex(z); err == nil {
			sa.ZoneId = uint32(idx)
		}
	}
	return sa
}

// fromSockaddr converts getsockname's result; IPv4-mapped addresses are
// reported as IPv4.
func fromSockaddr(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		ip := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 {
			ip = ip.WithZone(strconv.Itoa(int(a.ZoneId)))
		}
		if ip.Is4In6() {
			ip = ip.Unmap()
		}
		return netip.AddrPortFrom(ip, uint16(a.Port))
	}
	return netip.AddrPort{}
}

// ifaceIndex returns the index of the interface named by a zone or name:
// a number is the index itself.
func ifaceIndex(z string) (int, error) {
	if n, err := strconv.Atoi(z); err == nil {
		return n, nil
	}
	ifi, err := net.InterfaceByName(z)
	if err != nil {
		return 0, err
	}
	return ifi.Index, nil
}
