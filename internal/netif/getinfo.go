package netif

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Offer is the GetInfo of a provider with one entry per IP address of
// each interface that is up, as libfabric's socket providers (tcp, udp)
// have: the domain named after the interface, the fabric after the
// address's subnet, the source address the interface's with port 0.
type Offer struct {
	// Prov is the provider's name, for errors and reasons.
	Prov string
	// IfaceVar and Iface are the provider's interface variable
	// ("FI_TCP_IFACE") and its value: only that interface's addresses
	// are offered when it is set.
	IfaceVar, Iface string
	// AnyDomain and AnyFabric name the entry of the wildcard source
	// address, which belongs to no interface.
	AnyDomain, AnyFabric string
	// Entry returns a fresh entry of address format f in domain and
	// fabric. localOnly marks the loopback entries of the interface
	// listing, which lack FI_REMOTE_COMM in C: the offer removes it from
	// their caps itself, and Entry narrows whatever else it must (rxm
	// narrows its domain caps too).
	Entry func(f fi.AddrFormat, domain, fabric string, localOnly bool) *fi.Info
}

// GetInfo returns the entries for node, service, flags and hints
// (fi_getinfo): every interface address's; with a source address (from
// FI_SOURCE or hints) those of the interface that owns it, or one entry
// for the wildcard address; with a destination alone the entry of the
// interface the route to it leaves from. Each is matched against the
// hints by kit.MatchInfo; when none is left the error is an
// fi.NoMatchError with the reasons.
func (o Offer) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	ifs, err := List(o.Iface)
	switch {
	case err != nil:
		return nil, err
	case len(ifs) == 0 && o.Iface != "":
		return nil, o.declined(o.IfaceVar + "=" + o.Iface + ": no interface of that name is up with an IP address")
	case len(ifs) == 0:
		return nil, o.declined("no interface is up with an IP address")
	}
	cands, reason, err := o.candidates(ctx, ifs, node, service, flags, hints)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, o.declined(reason)
	}
	var (
		out     []*fi.Info
		reasons []fi.ProviderReason
	)
	for _, c := range cands {
		h := &fi.Info{}
		if hints != nil {
			h = hints.Clone()
		}
		h.SrcAddr, h.DestAddr = c.src, c.dest
		got, err := kit.MatchInfo(ctx, o.Prov, []*fi.Info{c.info}, "", "", flags, h)
		var nm *fi.NoMatchError
		switch {
		case errors.As(err, &nm):
			for _, r := range nm.Reasons {
				if !slices.Contains(reasons, r) {
					reasons = append(reasons, r)
				}
			}
		case err != nil:
			return nil, err
		}
		out = append(out, got...)
	}
	if len(out) == 0 {
		return nil, &fi.NoMatchError{Reasons: reasons}
	}
	return out, nil
}

// declined is GetInfo's ENODATA with one reason.
func (o Offer) declined(reason string) error {
	return &fi.NoMatchError{Reasons: []fi.ProviderReason{{Provider: o.Prov, Reason: reason}}}
}

// candidate is an entry to match against hints, with its addresses.
type candidate struct {
	info      *fi.Info
	src, dest []byte
}

// candidates picks the entries offered for node, service and the hints'
// addresses, or the reason none is. The error is set only for a done ctx.
func (o Offer) candidates(ctx context.Context, ifs []Addr, node, service string, flags fi.Flags, hints *fi.Info) ([]candidate, string, error) {
	var h fi.Info
	if hints != nil {
		h = *hints
	}
	switch h.AddrFormat {
	case fi.FormatUnspec, fi.FormatSockaddr, fi.FormatSockaddrIn, fi.FormatSockaddrIn6:
	default:
		return nil, "addr format " + h.AddrFormat.String() + " not supported (offers FI_SOCKADDR_IN, FI_SOCKADDR_IN6)", nil
	}
	src, dest := slices.Clone(h.SrcAddr), slices.Clone(h.DestAddr)
	if node != "" || service != "" {
		// Resolve in the family of the other address, when hints give it.
		format, other := h.AddrFormat, src
		if flags&fi.FlagSource != 0 {
			other = dest
		}
		if _, f, err := fi.AddrPortFromSockaddr(other); err == nil && format == fi.FormatUnspec {
			format = f
		}
		addr, err := fi.ResolveAddr(ctx, format, node, service, flags)
		if cerr := ctx.Err(); cerr != nil {
			return nil, "", errors.Wrapf(fi.Code(cerr), "%s: getinfo: %v", o.Prov, cerr)
		}
		if err != nil {
			return nil, strings.TrimPrefix(err.Error(), "fi: "), nil
		}
		if flags&fi.FlagSource != 0 {
			src = addr
		} else {
			dest = addr
		}
	}
	where := "an interface that is up"
	if o.Iface != "" {
		where = "interface " + o.IfaceVar + "=" + o.Iface
	}
	var srcAP, destAP netip.AddrPort
	for _, a := range []struct {
		what string
		b    []byte
		ap   *netip.AddrPort
	}{{"src", src, &srcAP}, {"dest", dest, &destAP}} {
		if len(a.b) == 0 {
			continue
		}
		ap, _, err := fi.AddrPortFromSockaddr(a.b)
		if err != nil {
			return nil, a.what + " addr: " + strings.TrimPrefix(err.Error(), "fi: "), nil
		}
		*a.ap = ap
	}
	if srcAP.IsValid() && destAP.IsValid() && srcAP.Addr().Is4() != destAP.Addr().Is4() {
		return nil, "src addr " + srcAP.String() + " and dest addr " + destAP.String() + " are of different families", nil
	}

	var cands []candidate
	switch {
	case srcAP.IsValid() && srcAP.Addr().IsUnspecified():
		cands = append(cands, candidate{info: o.Entry(formatOf(srcAP.Addr()), o.AnyDomain, o.AnyFabric, false), src: src, dest: dest})
	case srcAP.IsValid():
		for _, a := range ifs {
			if a.Addr.WithZone("") == srcAP.Addr().WithZone("") {
				cands = append(cands, candidate{info: o.ifaceEntry(a, false), src: src, dest: dest})
			}
		}
		if len(cands) == 0 {
			return nil, "src addr " + srcAP.Addr().String() + " is not an address of " + where, nil
		}
	case destAP.IsValid():
		local, err := RouteSource(destAP)
		if err != nil {
			return nil, "no route to " + destAP.Addr().String() + ": " + err.Error(), nil
		}
		for _, a := range ifs {
			if a.Addr.WithZone("") == local {
				cands = append(cands, candidate{info: o.ifaceEntry(a, false), src: a.Sockaddr(), dest: dest})
			}
		}
		if len(cands) == 0 {
			return nil, "the route to " + destAP.Addr().String() + " leaves from " + local.String() + ", not an address of " + where, nil
		}
	default:
		for _, a := range ifs {
			cands = append(cands, candidate{info: o.ifaceEntry(a, true), src: a.Sockaddr()})
		}
	}
	return cands, "", nil
}

// ifaceEntry returns the entry of a; listed marks the interface listing,
// whose loopback entries are local only, as in C.
func (o Offer) ifaceEntry(a Addr, listed bool) *fi.Info {
	localOnly := listed && a.Loopback
	in := o.Entry(formatOf(a.Addr), a.Name, a.FabricName(), localOnly)
	if localOnly {
		in.Caps &^= fi.CapRemoteComm
	}
	return in
}

func formatOf(a netip.Addr) fi.AddrFormat {
	if a.Is4() {
		return fi.FormatSockaddrIn
	}
	return fi.FormatSockaddrIn6
}
