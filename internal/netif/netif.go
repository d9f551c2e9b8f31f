package netif

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Addr is one IP address of a network interface that is up: the source of
// one fi_info entry of the tcp and udp providers (ofi_get_list_of_addr's
// struct slist of addresses in C).
type Addr struct {
	// Name is the interface's name, the entry's domain name ("eth0").
	Name string
	// Addr is the address, with the interface index as zone for IPv6
	// link-local addresses (sin6_scope_id).
	Addr netip.Addr
	// Subnet is the address's network, whose CIDR form is the entry's
	// fabric name ("192.0.2.0/24"). Loopback addresses are their own
	// network ("127.0.0.1/32"), as the C providers name them.
	Subnet netip.Prefix
	// Loopback is set for the addresses of a loopback interface.
	Loopback bool
	// Speed is the link speed in Mb/s, 0 when unknown.
	Speed int
}

// FabricName returns the entry's fabric name (fi_fabric_attr.name): the
// subnet in CIDR form.
func (a Addr) FabricName() string { return a.Subnet.String() }

// Sockaddr returns a's address with port 0 as a struct sockaddr_in or
// sockaddr_in6: the entry's source address (fi_info.src_addr).
func (a Addr) Sockaddr() []byte {
	_, b, err := fi.SockaddrFromAddrPort(netip.AddrPortFrom(a.Addr, 0))
	if err != nil {
		// The zone is the interface's index, which always converts.
		panic(err)
	}
	return b
}

// List returns the IPv4 and IPv6 addresses of the interfaces that are up,
// in the C providers' order: the other interfaces' addresses by
// decreasing link speed, IPv4 before IPv6, later-listed addresses before
// earlier ones where nothing else differs; then the loopback addresses,
// IPv4 first. With only set, it keeps that interface's addresses.
func List(only string) ([]Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, errors.Wrapf(fi.EIO, "netif: list interfaces: %v", err)
	}
	var others, loop []Addr
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || (only != "" && ifi.Name != only) {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			return nil, errors.Wrapf(fi.EIO, "netif: list addresses of %s: %v", ifi.Name, err)
		}
		lb := ifi.Flags&net.FlagLoopback != 0
		speed := 0
		if !lb {
			speed = LinkSpeed(ifi.Name)
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			ones, _ := ipn.Mask.Size()
			if lb {
				ones = ip.BitLen()
			}
			ia := Addr{Name: ifi.Name, Addr: ip, Subnet: netip.PrefixFrom(ip, ones).Masked(), Loopback: lb, Speed: speed}
			if ip.Is6() && ip.IsLinkLocalUnicast() {
				ia.Addr = ip.WithZone(strconv.Itoa(ifi.Index))
			}
			if lb {
				loop = append(loop, ia)
			} else {
				others = append(others, ia)
			}
		}
	}
	slices.Reverse(others)
	slices.SortStableFunc(others, func(a, b Addr) int {
		if a.Speed != b.Speed {
			return b.Speed - a.Speed
		}
		return family(a.Addr) - family(b.Addr)
	})
	slices.SortStableFunc(loop, func(a, b Addr) int { return family(a.Addr) - family(b.Addr) })
	return append(others, loop...), nil
}

// family orders IPv4 before IPv6.
func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// LinkSpeed reads an interface's speed in Mb/s from sysfs; 0 when unknown.
func LinkSpeed(name string) int {
	b, err := os.ReadFile("/sys/class/net/" + name + "/speed")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// RouteSource returns the local address the kernel would send from to
// reach dest: a UDP socket's address after connect(2), which sends
// nothing.
func RouteSource(dest netip.AddrPort) (netip.Addr, error) {
	if dest.Port() == 0 {
		dest = netip.AddrPortFrom(dest.Addr(), 9) // any port routes alike
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dest))
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap().WithZone(""), nil
}
