package tcp

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

// ifaceAddr is one IP address of a network interface that is up: the
// source of one of the provider's Info entries.
type ifaceAddr struct {
	// name is the interface's name, the entry's domain name ("eth0").
	name string
	// addr is the address, with the interface index as zone for IPv6
	// link-local addresses (sin6_scope_id).
	addr netip.Addr
	// subnet is the address's network, whose CIDR form is the entry's
	// fabric name ("192.0.2.0/24"). Loopback addresses are their own
	// network ("127.0.0.1/32"), as the C provider names them.
	subnet   netip.Prefix
	loopback bool
	// speed is the link speed in Mb/s, 0 when unknown.
	speed int
}

// fabricName returns the entry's fabric name: the subnet in CIDR form.
func (a ifaceAddr) fabricName() string { return a.subnet.String() }

// listInterfaces returns the IPv4 and IPv6 addresses of the interfaces
// that are up, in the C provider's order: the other interfaces' addresses
// by decreasing link speed, IPv4 before IPv6, later-listed addresses
// before earlier ones where nothing else differs; then the loopback
// addresses, IPv4 first. With only set, it keeps that interface's
// addresses.
func listInterfaces(only string) ([]ifaceAddr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, errors.Wrapf(fi.EIO, "tcp: list interfaces: %v", err)
	}
	var others, loop []ifaceAddr
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || (only != "" && ifi.Name != only) {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			return nil, errors.Wrapf(fi.EIO, "tcp: list addresses of %s: %v", ifi.Name, err)
		}
		lb := ifi.Flags&net.FlagLoopback != 0
		speed := 0
		if !lb {
			speed = linkSpeed(ifi.Name)
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
			ia := ifaceAddr{name: ifi.Name, addr: ip, subnet: netip.PrefixFrom(ip, ones).Masked(), loopback: lb, speed: speed}
			if ip.Is6() && ip.IsLinkLocalUnicast() {
				ia.addr = ip.WithZone(strconv.Itoa(ifi.Index))
			}
			if lb {
				loop = append(loop, ia)
			} else {
				others = append(others, ia)
			}
		}
	}
	slices.Reverse(others)
	slices.SortStableFunc(others, func(a, b ifaceAddr) int {
		if a.speed != b.speed {
			return b.speed - a.speed
		}
		return family(a.addr) - family(b.addr)
	})
	slices.SortStableFunc(loop, func(a, b ifaceAddr) int { return family(a.addr) - family(b.addr) })
	return append(others, loop...), nil
}

// family orders IPv4 before IPv6.
func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// linkSpeed reads an interface's speed in Mb/s from sysfs; 0 when unknown.
func linkSpeed(name string) int {
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
