package fi

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// Sizes of the C socket address structures on Linux. gofabric's
// FI_SOCKADDR* addresses are Linux's layout on every OS (sa_family with
// Linux's AF_INET and AF_INET6 values, afInet and afInet6), so that the
// bytes mean the same to every peer whatever the host.
const (
	sockaddrInLen  = 16 // sizeof(struct sockaddr_in)
	sockaddrIn6Len = 28 // sizeof(struct sockaddr_in6)
)

// URI schemes of FI_ADDR_STR addresses (fi_getinfo(3) "FI_ADDR_STR"), as
// fi_av_straddr prints them.
const (
	schemeSockaddr    = "fi_sockaddr"
	schemeSockaddrIn  = "fi_sockaddr_in"
	schemeSockaddrIn6 = "fi_sockaddr_in6"
)

// binarySchemes are libfabric's URI schemes of binary address formats that
// gofabric does not encode; ParseAddr refuses them rather than take them
// for FI_ADDR_STR.
var binarySchemes = []string{
	"fi_sockaddr_ib", "fi_addr_psmx", "fi_addr_psmx2", "fi_addr_psmx3",
	"fi_addr_gni", "fi_addr_bgq", "fi_addr_mlx", "fi_addr_ib_ud",
	"fi_addr_efa", "fi_addr_opx", "fi_addr_cxi",
}

// SockaddrFromAddrPort encodes ap as C's struct sockaddr_in (16 bytes, for
// an IPv4 address) or struct sockaddr_in6 (28 bytes, for any other), byte
// for byte as Linux lays them out, on every OS: sa_family (Linux's
// AF_INET, 2, or AF_INET6, 10) in host byte order, the port in network
// byte order, the rest zero except the address and, for IPv6,
// sin6_scope_id from the zone (a number, or an interface name looked up
// with net.InterfaceByName). It returns the matching format,
// FormatSockaddrIn or FormatSockaddrIn6; an invalid ap or an unknown zone
// gives EINVAL.
func SockaddrFromAddrPort(ap netip.AddrPort) (AddrFormat, []byte, error) {
	ip := ap.Addr()
	switch {
	case !ip.IsValid():
		return FormatUnspec, nil, wrapf(EINVAL, "fi: sockaddr: invalid address")
	case ip.Is4():
		b := make([]byte, sockaddrInLen)
		binary.NativeEndian.PutUint16(b[0:], afInet)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a4 := ip.As4()
		copy(b[4:8], a4[:])
		return FormatSockaddrIn, b, nil
	}
	scope, err := scopeID(ip.Zone())
	if err != nil {
		return FormatUnspec, nil, err
	}
	b := make([]byte, sockaddrIn6Len)
	binary.NativeEndian.PutUint16(b[0:], afInet6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a16 := ip.As16()
	copy(b[8:24], a16[:])
	binary.NativeEndian.PutUint32(b[24:], scope)
	return FormatSockaddrIn6, b, nil
}

// scopeID turns an IPv6 zone into a sin6_scope_id.
func scopeID(zone string) (uint32, error) {
	if zone == "" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, wrapf(EINVAL, "fi: sockaddr: unknown zone %q", zone)
	}
	return uint32(ifi.Index), nil
}

// AddrPortFromSockaddr decodes a C struct sockaddr_in (16 bytes) or struct
// sockaddr_in6 (28 bytes) in Linux's layout (on every OS), chosen by its
// sa_family field, and returns the address with its format
// (FormatSockaddrIn or FormatSockaddrIn6). A
// non-zero sin6_scope_id becomes the zone, written as a decimal number;
// sin6_flowinfo is dropped. Anything else gives EINVAL.
func AddrPortFromSockaddr(b []byte) (netip.AddrPort, AddrFormat, error) {
	if len(b) < 2 {
		return netip.AddrPort{}, FormatUnspec, wrapf(EINVAL, "fi: sockaddr: %d bytes is too short", len(b))
	}
	switch fam := binary.NativeEndian.Uint16(b); {
	case fam == afInet && len(b) == sockaddrInLen:
		ip := netip.AddrFrom4([4]byte(b[4:8]))
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:])), FormatSockaddrIn, nil
	case fam == afInet6 && len(b) == sockaddrIn6Len:
		ip := netip.AddrFrom16([16]byte(b[8:24]))
		if scope := binary.NativeEndian.Uint32(b[24:]); scope != 0 {
			ip = ip.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:])), FormatSockaddrIn6, nil
	default:
		return netip.AddrPort{}, FormatUnspec, wrapf(EINVAL, "fi: sockaddr: family %d with %d bytes is not sockaddr_in or sockaddr_in6", fam, len(b))
	}
}

// AddrString formats an address of the given format for people, the way
// fi_av_straddr(3) does: "fi_sockaddr_in://127.0.0.1:4000" for
// FI_SOCKADDR_IN, "fi_sockaddr_in6://[::1]:4000" for FI_SOCKADDR_IN6, either
// of them for FI_SOCKADDR (by sa_family), and the string itself for
// FI_ADDR_STR (without a trailing NUL). Unlike C, a non-zero IPv6 scope id is
// kept as a zone ("[fe80::1%2]") so that [ParseAddr] gives back the same
// bytes. An address it cannot decode, or of another format, is printed as
// "<format hex-bytes>", which ParseAddr rejects.
func AddrString(format AddrFormat, addr []byte) string {
	switch format {
	case FormatSockaddr, FormatSockaddrIn, FormatSockaddrIn6:
		ap, f, err := AddrPortFromSockaddr(addr)
		if err != nil || (format != FormatSockaddr && f != format) {
			break
		}
		if f == FormatSockaddrIn {
			return schemeSockaddrIn + "://" + ap.String()
		}
		return schemeSockaddrIn6 + "://" + ap.String()
	case FormatStr:
		return strings.TrimSuffix(string(addr), "\x00")
	}
	return fmt.Sprintf("<%v %x>", format, addr)
}

// ParseAddr parses an FI_ADDR_STR URI (fi_getinfo(3) "FI_ADDR_STR":
// address_format://node:service...) into an address and its format. It
// resolves no names:
//
//   - "fi_sockaddr_in://1.2.3.4[:port]" gives FormatSockaddrIn and a
//     16-byte struct sockaddr_in;
//   - "fi_sockaddr_in6://[addr[%zone]][:port]" gives FormatSockaddrIn6 and a
//     28-byte struct sockaddr_in6;
//   - "fi_sockaddr://" with either form gives the concrete format of the
//     address (never FormatSockaddr);
//   - any other scheme ("fi_shm://name", "fi_addr_str://...") gives
//     FormatStr with the whole string as the address, except libfabric's
//     other binary formats (fi_addr_psmx2://, fi_sockaddr_ib://...), which
//     give EOPNOTSUPP.
//
// A missing port is 0. Malformed input gives EINVAL. For any (f, b) that
// ParseAddr returns, ParseAddr(AddrString(f, b)) returns (f, b) again.
func ParseAddr(s string) (AddrFormat, []byte, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !validScheme(scheme) {
		return FormatUnspec, nil, wrapf(EINVAL, "fi: parse addr: %q is not an address_format://address URI", s)
	}
	switch scheme {
	case schemeSockaddrIn, schemeSockaddrIn6, schemeSockaddr:
		ap, err := parseHostPort(rest)
		if err != nil {
			return FormatUnspec, nil, errors.Wrapf(err, "fi: parse addr: %q", s)
		}
		f, b, err := SockaddrFromAddrPort(ap)
		if err != nil {
			return FormatUnspec, nil, errors.Wrapf(err, "fi: parse addr: %q", s)
		}
		if (scheme == schemeSockaddrIn && f != FormatSockaddrIn) ||
			(scheme == schemeSockaddrIn6 && f != FormatSockaddrIn6) {
			return FormatUnspec, nil, wrapf(EINVAL, "fi: parse addr: %q: address family does not match the scheme", s)
		}
		return f, b, nil
	}
	for _, bs := range binarySchemes {
		if scheme == bs {
			return FormatUnspec, nil, wrapf(EOPNOTSUPP, "fi: parse addr: %q: address format %s is not supported", s, scheme)
		}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return FormatUnspec, nil, wrapf(EINVAL, "fi: parse addr: %q: NUL byte in address", s)
	}
	return FormatStr, []byte(s), nil
}

// validScheme reports whether s is a URI scheme (RFC 3986, plus '_' as
// libfabric uses).
func validScheme(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlpha(c) && (c < '0' || c > '9') && c != '_' && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parseHostPort parses "1.2.3.4", "1.2.3.4:port", "[v6]" or "[v6]:port".
func parseHostPort(s string) (netip.AddrPort, error) {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.AddrPort{}, wrapf(EINVAL, "missing ']'")
		}
		host, port = s[1:end], s[end+1:]
		if port != "" {
			var ok bool
			if port, ok = strings.CutPrefix(port, ":"); !ok {
				return netip.AddrPort{}, wrapf(EINVAL, "junk after ']'")
			}
		}
	} else if h, p, ok := strings.Cut(s, ":"); ok {
		host, port = h, p
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, wrapf(EINVAL, "%q is not a numeric address", host)
	}
	bracketed := strings.HasPrefix(s, "[")
	if bracketed && ip.Is4() {
		return netip.AddrPort{}, wrapf(EINVAL, "IPv4 address in brackets")
	}
	if !bracketed && !ip.Is4() {
		return netip.AddrPort{}, wrapf(EINVAL, "IPv6 address without brackets")
	}
	var n uint64
	if port != "" {
		if n, err = strconv.ParseUint(port, 10, 16); err != nil {
			return netip.AddrPort{}, wrapf(EINVAL, "bad port %q", port)
		}
	}
	return netip.AddrPortFrom(ip, uint16(n)), nil
}

// ResolveAddr turns a fi_getinfo node and service into an address of the
// given format, as providers do for fi_getinfo(3) and fi_av_insertsvc(3):
//
//   - FormatStr: node is the address itself (an FI_ADDR_STR string) and
//     service must be empty;
//   - a node that is a URI ("fi_sockaddr_in://...") is parsed with
//     [ParseAddr] and service must be empty;
//   - FormatSockaddrIn, FormatSockaddrIn6, FormatSockaddr and FormatUnspec:
//     node is a numeric address or a host name resolved through
//     net.DefaultResolver (IPv4 only for FormatSockaddrIn, IPv6 only for
//     FormatSockaddrIn6, the first address of either family otherwise),
//     service a port number or a service name. An empty node means the
//     wildcard address with FlagSource and the loopback address without, as
//     getaddrinfo(3) does. The result is a struct sockaddr_in or
//     sockaddr_in6 (see [AddrPortFromSockaddr] to tell which).
//
// With FlagNumericHost a node that is not a numeric address gives EINVAL,
// and no lookup is made. Names that do not resolve give ENODATA; a
// cancelled ctx gives ECANCELED or ETIMEDOUT. Other formats give EINVAL.
func ResolveAddr(ctx context.Context, format AddrFormat, node, service string, flags Flags) ([]byte, error) {
	if format == FormatStr || strings.Contains(node, "://") {
		return resolveURI(format, node, service)
	}
	var network string
	switch format {
	case FormatUnspec, FormatSockaddr:
		network = "ip"
	case FormatSockaddrIn:
		network = "ip4"
	case FormatSockaddrIn6:
		network = "ip6"
	default:
		return nil, wrapf(EINVAL, "fi: resolve addr: cannot resolve into address format %v", format)
	}
	port, err := resolvePort(ctx, service)
	if err != nil {
		return nil, err
	}
	ip, err := resolveHost(ctx, network, node, flags)
	if err != nil {
		return nil, err
	}
	_, b, err := SockaddrFromAddrPort(netip.AddrPortFrom(ip, port))
	if err != nil {
		return nil, errors.Wrapf(err, "fi: resolve addr: node %q", node)
	}
	return b, nil
}

// resolveURI handles FI_ADDR_STR nodes.
func resolveURI(format AddrFormat, node, service string) ([]byte, error) {
	if service != "" {
		return nil, wrapf(EINVAL, "fi: resolve addr: service %q given with address string %q", service, node)
	}
	if format == FormatStr {
		if node == "" {
			return nil, wrapf(EINVAL, "fi: resolve addr: FI_ADDR_STR needs the address in node")
		}
		if strings.IndexByte(node, 0) >= 0 {
			return nil, wrapf(EINVAL, "fi: resolve addr: NUL byte in address string %q", node)
		}
		return []byte(node), nil
	}
	f, b, err := ParseAddr(node)
	if err != nil {
		return nil, err
	}
	if f != format && !((format == FormatUnspec || format == FormatSockaddr) && (f == FormatSockaddrIn || f == FormatSockaddrIn6)) {
		return nil, wrapf(EINVAL, "fi: resolve addr: %q is not of address format %v", node, format)
	}
	return b, nil
}

// resolvePort turns a service into a port.
func resolvePort(ctx context.Context, service string) (uint16, error) {
	if service == "" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(service, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n > 65535 {
			return 0, wrapf(EINVAL, "fi: resolve addr: port %s out of range", service)
		}
		return uint16(n), nil
	}
	n, err := net.DefaultResolver.LookupPort(ctx, "tcp", service)
	if err != nil {
		return 0, lookupErr(ctx, err, "service %q", service)
	}
	return uint16(n), nil
}

// resolveHost turns a node into an IP address of network's family.
func resolveHost(ctx context.Context, network, node string, flags Flags) (netip.Addr, error) {
	if node == "" {
		switch {
		case flags&FlagSource != 0 && network == "ip6":
			return netip.IPv6Unspecified(), nil
		case flags&FlagSource != 0:
			return netip.IPv4Unspecified(), nil
		case network == "ip6":
			return netip.IPv6Loopback(), nil
		}
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
	}
	if ip, err := netip.ParseAddr(node); err == nil {
		if network == "ip4" {
			ip = ip.Unmap()
		}
		if (network == "ip4" && !ip.Is4()) || (network == "ip6" && ip.Is4()) {
			return netip.Addr{}, wrapf(ENODATA, "fi: resolve addr: node %q is not an %s address", node, network)
		}
		return ip, nil
	}
	if flags&FlagNumericHost != 0 {
		return netip.Addr{}, wrapf(EINVAL, "fi: resolve addr: FI_NUMERICHOST set but node %q is not a numeric address", node)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, network, node)
	if err != nil {
		return netip.Addr{}, lookupErr(ctx, err, "node %q", node)
	}
	if len(ips) == 0 {
		return netip.Addr{}, wrapf(ENODATA, "fi: resolve addr: node %q has no %s address", node, network)
	}
	return ips[0].Unmap(), nil
}

// lookupErr wraps a resolver error: the context's code when ctx is done,
// else ENODATA.
func lookupErr(ctx context.Context, err error, format string, args ...any) error {
	code := ENODATA
	if ctx.Err() != nil {
		code = Code(ctx.Err())
	}
	return errors.Wrapf(code, "fi: resolve addr: "+format+": %v", append(args, err)...)
}
