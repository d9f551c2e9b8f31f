package tcp

import (
	"context"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/gofabric/gofabric/internal/provutil"
)

// provName is the provider's registered name, libfabric's.
const provName = "tcp"

// provVersion is the version the C provider of libfabric 1.17 reports
// (fi_info: "version: 117.0").
var provVersion = fi.MakeVersion(117, 0)

// Names of the entry for a source address that belongs to no interface in
// particular (the wildcard address), as the C provider names it.
const (
	anyDomainName = "tcp"
	anyFabricName = "TCP-IP"
)

// mrMode is the C provider's MR mode: none of the FI_MR_* requirements.
const mrMode fi.MRMode = 0

// Attributes of the C provider's FI_EP_MSG entries (libfabric 1.17,
// fi_info -v -p tcp -t FI_EP_MSG).
const (
	infoCaps = fi.CapMsg | fi.CapRMA | fi.CapRead | fi.CapWrite | fi.CapRecv | fi.CapSend |
		fi.CapRemoteRead | fi.CapRemoteWrite | fi.CapRMAPmem | fi.CapLocalComm |
		fi.CapRemoteComm | fi.CapRMAEvent
	txCaps     = fi.CapMsg | fi.CapRMA | fi.CapRead | fi.CapWrite | fi.CapSend | fi.CapRMAPmem
	rxCaps     = fi.CapMsg | fi.CapRMA | fi.CapRecv | fi.CapRemoteRead | fi.CapRemoteWrite | fi.CapRMAPmem | fi.CapRMAEvent
	domainCaps = fi.CapLocalComm | fi.CapRemoteComm
	msgOrder   = fi.OrderRAR | fi.OrderRAW | fi.OrderRAS | fi.OrderWAW | fi.OrderWAS | fi.OrderSAW |
		fi.OrderSAS | fi.OrderRMARAR | fi.OrderRMARAW | fi.OrderRMAWAW | fi.OrderAtomicRAR |
		fi.OrderAtomicRAW | fi.OrderAtomicWAW

	// injectSize is the largest message Inject and FI_INJECT take.
	injectSize = 128
	// iovLimit is the most iovecs one operation takes, also for RMA.
	iovLimit = 4
	// queueSize is the transmit and receive queue depth.
	queueSize = 256
	// cqDataSize is the size in bytes of remote CQ data.
	cqDataSize = 8
)

// newEntry returns an FI_EP_MSG entry for an address of format f in domain
// and fabric. A localOnly entry lacks FI_REMOTE_COMM in its caps, as the C
// provider's entries for loopback addresses do when it lists interfaces.
func newEntry(f fi.AddrFormat, domain, fabric string, localOnly bool) *fi.Info {
	caps := infoCaps
	if localOnly {
		caps &^= fi.CapRemoteComm
	}
	return &fi.Info{
		Caps:       caps,
		AddrFormat: f,
		TxAttr: &fi.TxAttr{
			Caps: txCaps, MsgOrder: msgOrder, CompOrder: fi.OrderStrict,
			InjectSize: injectSize, Size: queueSize, IOVLimit: iovLimit, RMAIOVLimit: iovLimit,
		},
		RxAttr: &fi.RxAttr{
			Caps: rxCaps, MsgOrder: msgOrder, CompOrder: fi.OrderStrict,
			Size: queueSize, IOVLimit: iovLimit,
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeMsg, Protocol: fi.ProtoSockTCP,
			MaxMsgSize: math.MaxInt, MaxOrderRAWSize: math.MaxInt, MaxOrderWAWSize: math.MaxInt,
			TxCtxCnt: 1, RxCtxCnt: 1,
		},
		DomainAttr: &fi.DomainAttr{
			Name: domain, Threading: fi.ThreadSafe,
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressAuto,
			ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec, MRMode: mrMode,
			MRKeySize: 8, CQDataSize: cqDataSize, CQCnt: 256, EPCnt: 8192,
			TxCtxCnt: 8192, RxCtxCnt: 8192, MaxEPTxCtx: 1, MaxEPRxCtx: 1, MaxEPSrxCtx: 8192,
			MRIOVLimit: 1, Caps: domainCaps,
		},
		FabricAttr: &fi.FabricAttr{Name: fabric, ProvName: provName, ProvVersion: provVersion, APIVersion: fi.APIVersion},
	}
}

// provider is the tcp provider (struct fi_provider "tcp").
type provider struct{}

func init() { fi.Register(provider{}) }

var _ fi.Provider = provider{}

func (provider) Name() string        { return provName }
func (provider) Version() fi.Version { return provVersion }

// GetInfo returns one FI_EP_MSG entry per address of each interface that
// is up (only FI_TCP_IFACE's when set), as the C provider does: domain
// named after the interface, fabric after the address's subnet, source
// address the interface's with port 0. A source address (FI_SOURCE or
// hints) keeps the entries of the interface that owns it, and the
// wildcard address gives one entry for no interface in particular; a
// destination alone keeps the entry of the interface the route to it
// leaves from.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	if hints != nil && hints.EPAttr != nil && hints.EPAttr.Type == fi.EPTypeRDM {
		return nil, declined("ep type FI_EP_RDM not offered: RDM endpoints over tcp (tcp;ofi_rxm) are not implemented yet; use FI_EP_MSG")
	}
	p, err := loadParams()
	if err != nil {
		return nil, err
	}
	ifs, err := netif.List(p.iface)
	switch {
	case err != nil:
		return nil, err
	case len(ifs) == 0 && p.iface != "":
		return nil, declined(paramIface.Name + "=" + p.iface + ": no interface of that name is up with an IP address")
	case len(ifs) == 0:
		return nil, declined("no interface is up with an IP address")
	}
	cands, reason, err := candidates(ctx, ifs, p.iface, node, service, flags, hints)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, declined(reason)
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
		got, err := provutil.MatchInfo(ctx, provName, []*fi.Info{c.info}, "", "", flags, h)
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
func declined(reason string) error {
	return &fi.NoMatchError{Reasons: []fi.ProviderReason{{Provider: provName, Reason: reason}}}
}

// candidate is an entry to match against hints, with its addresses.
type candidate struct {
	info      *fi.Info
	src, dest []byte
}

// candidates picks the entries GetInfo offers for node, service and the
// hints' addresses, or the reason it offers none. The error is set only
// for a done ctx.
func candidates(ctx context.Context, ifs []netif.Addr, only, node, service string, flags fi.Flags, hints *fi.Info) ([]candidate, string, error) {
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
			return nil, "", errors.Wrapf(fi.Code(cerr), "tcp: getinfo: %v", cerr)
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
	if only != "" {
		where = "interface " + paramIface.Name + "=" + only
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
		cands = append(cands, candidate{info: newEntry(formatOf(srcAP.Addr()), anyDomainName, anyFabricName, false), src: src, dest: dest})
	case srcAP.IsValid():
		for _, a := range ifs {
			if a.Addr.WithZone("") == srcAP.Addr().WithZone("") {
				cands = append(cands, candidate{info: ifaceEntry(a, false), src: src, dest: dest})
			}
		}
		if len(cands) == 0 {
			return nil, "src addr " + srcAP.Addr().String() + " is not an address of " + where, nil
		}
	case destAP.IsValid():
		local, err := netif.RouteSource(destAP)
		if err != nil {
			return nil, "no route to " + destAP.Addr().String() + ": " + err.Error(), nil
		}
		for _, a := range ifs {
			if a.Addr.WithZone("") == local {
				cands = append(cands, candidate{info: ifaceEntry(a, false), src: a.Sockaddr(), dest: dest})
			}
		}
		if len(cands) == 0 {
			return nil, "the route to " + destAP.Addr().String() + " leaves from " + local.String() + ", not an address of " + where, nil
		}
	default:
		for _, a := range ifs {
			cands = append(cands, candidate{info: ifaceEntry(a, true), src: a.Sockaddr()})
		}
	}
	return cands, "", nil
}

// ifaceEntry returns the Info entry of a: localOnly for a loopback
// address when listed marks the interface listing, as in the C provider.
func ifaceEntry(a netif.Addr, listed bool) *fi.Info {
	return newEntry(formatOf(a.Addr), a.Name, a.FabricName(), listed && a.Loopback)
}

func formatOf(a netip.Addr) fi.AddrFormat {
	if a.Is4() {
		return fi.FormatSockaddrIn
	}
	return fi.FormatSockaddrIn6
}
