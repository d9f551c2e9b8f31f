//go:build linux

package udp

import (
	"context"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/gofabric/gofabric/kit"
)

// provName is the provider's registered name, libfabric's.
const provName = "udp"

// provVersion is the version the C provider of libfabric 1.17 reports
// (fi_info: "version: 117.0").
var provVersion = fi.MakeVersion(117, 0)

// Attributes of the C provider's FI_EP_DGRAM entries (libfabric 1.17,
// fi_info -v -p udp -t FI_EP_DGRAM).
const (
	infoCaps = fi.CapMsg | fi.CapMulticast | fi.CapRecv | fi.CapSend | fi.CapLocalComm |
		fi.CapRemoteComm | fi.CapSource
	txCaps     = fi.CapMsg | fi.CapMulticast | fi.CapSend
	rxCaps     = fi.CapMsg | fi.CapRecv | fi.CapSource
	domainCaps = fi.CapLocalComm | fi.CapRemoteComm

	// maxMsgSize is the largest datagram payload: an Ethernet MTU of 1500
	// less the IPv4 and UDP headers. Also the inject size.
	maxMsgSize = 1472
	// iovLimit is the most iovecs one operation takes.
	iovLimit = 4
	// queueSize is the transmit and receive queue depth: the most
	// receives posted at once.
	queueSize = 1024
)

// newEntry returns an FI_EP_DGRAM entry for an address of format f in
// domain and fabric (netif.Offer removes FI_REMOTE_COMM from the caps of
// loopback entries, as the C provider's lack it when it lists
// interfaces).
func newEntry(f fi.AddrFormat, domain, fabric string, _ bool) *fi.Info {
	return &fi.Info{
		Caps:       infoCaps,
		AddrFormat: f,
		TxAttr: &fi.TxAttr{
			Caps: txCaps, CompOrder: fi.OrderStrict,
			InjectSize: maxMsgSize, Size: queueSize, IOVLimit: iovLimit,
		},
		RxAttr: &fi.RxAttr{
			Caps: rxCaps, CompOrder: fi.OrderStrict,
			Size: queueSize, IOVLimit: iovLimit,
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeDgram, Protocol: fi.ProtoUDP,
			MaxMsgSize: maxMsgSize, TxCtxCnt: 1, RxCtxCnt: 1,
		},
		DomainAttr: &fi.DomainAttr{
			Name: domain, Threading: fi.ThreadSafe,
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressAuto,
			ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec,
			MRKeySize: 8, CQCnt: 256, EPCnt: 256,
			TxCtxCnt: 256, RxCtxCnt: 256, MaxEPTxCtx: 1, MaxEPRxCtx: 1,
			Caps: domainCaps,
		},
		FabricAttr: &fi.FabricAttr{Name: fabric, ProvName: provName, ProvVersion: provVersion, APIVersion: fi.APIVersion},
	}
}

// provider is the udp provider (struct fi_provider "udp"); kit.Provider
// gives its name and version.
type provider struct{ kit.Provider }

func init() { fi.Register(provider{kit.Provider{ProvName: provName, ProvVersion: provVersion}}) }

var _ fi.Provider = provider{}

// GetInfo returns one FI_EP_DGRAM entry per address of each interface
// that is up (only FI_UDP_IFACE's when set), as the C provider does:
// domain named after the interface, fabric after the address's subnet,
// source address the interface's with port 0. A source address
// (FI_SOURCE or hints) keeps the entries of the interface that owns it,
// and the wildcard address gives one entry for no interface in
// particular; a destination alone keeps the entry of the interface the
// route to it leaves from. FI_EP_RDM (C's udp;ofi_rxd) and FI_EP_MSG are
// declined with the reason.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	if hints != nil && hints.EPAttr != nil {
		switch hints.EPAttr.Type {
		case fi.EPTypeRDM:
			return nil, kit.Declined(provName, "ep type FI_EP_RDM not offered: RDM endpoints over udp (udp;ofi_rxd) are not implemented; use FI_EP_DGRAM", "")
		case fi.EPTypeMsg:
			return nil, kit.Declined(provName, "ep type FI_EP_MSG not offered: udp has only datagram (FI_EP_DGRAM) endpoints", "")
		}
	}
	p := loadParams()
	return p.offer().GetInfo(ctx, node, service, flags, hints)
}

// offer is the provider's interface-based GetInfo with its parameters.
// The C provider declines a source address given to fi_getinfo; gofabric
// names the entry of the wildcard address after the provider, domain
// "udp" of fabric "UDP-IP", as the C tcp provider does ("tcp", "TCP-IP").
func (p params) offer() netif.Offer {
	return netif.Offer{Prov: provName, IfaceVar: paramIface.Name, Iface: p.iface,
		AnyDomain: "udp", AnyFabric: "UDP-IP", Entry: newEntry}
}
