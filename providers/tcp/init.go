//go:build linux

package tcp

import (
	"context"
	"math"

	"github.com/cockroachdb/errors"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
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

// Attributes of the C provider's FI_EP_RDM entries, tcp;ofi_rxm (fi_info
// -v -p tcp -t FI_EP_RDM), without FI_MULTI_RECV (not implemented) and
// mode FI_BUFFERED_RECV (not needed), and with FI_SOURCE and
// FI_DIRECTED_RECV, which rxm grants when asked. C lists three variants of
// the entry per address; gofabric lists one.
const (
	rdmCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapRead | fi.CapWrite | fi.CapRecv | fi.CapSend |
		fi.CapRemoteRead | fi.CapRemoteWrite | fi.CapLocalComm | fi.CapRemoteComm | fi.CapSource | fi.CapDirectedRecv
	rdmTxCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapRead | fi.CapWrite | fi.CapSend
	rdmRxCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapRecv | fi.CapRemoteRead | fi.CapRemoteWrite |
		fi.CapSource | fi.CapDirectedRecv
	// rdmProvName is how libfabric names the layering.
	rdmProvName = provName + ";ofi_rxm"
)

// newRDMEntry returns an FI_EP_RDM (tcp;ofi_rxm) entry for an address of
// format f in domain and fabric.
func newRDMEntry(f fi.AddrFormat, domain, fabric string, localOnly bool) *fi.Info {
	caps, dcaps := rdmCaps, domainCaps
	if localOnly {
		caps &^= fi.CapRemoteComm
		dcaps &^= fi.CapRemoteComm // rxm narrows the domain's caps too
	}
	return &fi.Info{
		Caps:       caps,
		AddrFormat: f,
		TxAttr: &fi.TxAttr{
			Caps: rdmTxCaps, MsgOrder: msgOrder, CompOrder: fi.OrderNone,
			InjectSize: rdmInjectSize, Size: rdmQueueSize, IOVLimit: iovLimit, RMAIOVLimit: iovLimit,
		},
		RxAttr: &fi.RxAttr{
			Caps: rdmRxCaps, MsgOrder: msgOrder, CompOrder: fi.OrderNone,
			Size: rdmQueueSize, IOVLimit: iovLimit,
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeRDM, Protocol: fi.ProtoRXM, ProtocolVersion: 1,
			MaxMsgSize: math.MaxInt, MaxOrderRAWSize: math.MaxInt, MaxOrderWAWSize: math.MaxInt,
			MemTagFormat: 0xaaaaaaaaaaaaaaaa, TxCtxCnt: 1, RxCtxCnt: 1,
		},
		DomainAttr: &fi.DomainAttr{
			Name: domain, Threading: fi.ThreadSafe,
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressManual,
			ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec, MRMode: mrMode,
			MRKeySize: 8, CQDataSize: cqDataSize, CQCnt: 65536, EPCnt: 32768,
			TxCtxCnt: 1, RxCtxCnt: 1, MaxEPTxCtx: 1, MaxEPRxCtx: 1,
			MRIOVLimit: 1, Caps: dcaps,
		},
		FabricAttr: &fi.FabricAttr{Name: fabric, ProvName: rdmProvName, ProvVersion: provVersion, APIVersion: fi.APIVersion},
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
	p, err := loadParams()
	if err != nil {
		return nil, err
	}
	o := p.offer()
	o.Entry = newRDMEntry
	rdm, rerr := o.GetInfo(ctx, node, service, flags, hints)
	msg, merr := p.offer().GetInfo(ctx, node, service, flags, hints)
	switch {
	case rerr == nil && merr == nil:
		return append(rdm, msg...), nil
	case rerr == nil:
		return rdm, nil
	case merr == nil:
		return msg, nil
	}
	var a, b *fi.NoMatchError
	if errors.As(rerr, &a) && errors.As(merr, &b) {
		return nil, &fi.NoMatchError{Reasons: append(append([]fi.ProviderReason(nil), a.Reasons...), b.Reasons...)}
	}
	if errors.As(rerr, &a) {
		return nil, merr
	}
	return nil, rerr
}

// offer is the provider's interface-based GetInfo with its parameters.
func (p params) offer() netif.Offer {
	return netif.Offer{Prov: provName, IfaceVar: paramIface.Name, Iface: p.iface,
		AnyDomain: anyDomainName, AnyFabric: anyFabricName, Entry: newEntry}
}
