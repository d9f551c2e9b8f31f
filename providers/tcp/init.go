//go:build linux

package tcp

import (
	"context"
	"fmt"
	"math"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/gofabric/gofabric/kit"
	"github.com/gofabric/gofabric/providers/rxm"
)

// provName is the provider's registered name, libfabric's.
const provName = "tcp"

// provVersion is the version the C provider of libfabric 1.17 reports
// (fi_info: "version: 117.0").
var provVersion = fi.MakeVersion(117, 0)

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
	// queueSize is the default transmit and receive queue depth, what
	// entries offer unless hints ask for another (C's default).
	queueSize = 256
	// maxTxSize and maxRxSize are the deepest queues hints may ask for,
	// C's: tx_attr.size 1024 and rx_attr.size 65536 in the C provider's
	// own attributes, of which it reports 256 by default.
	maxTxSize = 1024
	maxRxSize = 65536
	// cqDataSize is the size in bytes of remote CQ data.
	cqDataSize = 8

	// msgTxOpFlags and msgRxOpFlags are the operation flags hints may
	// ask for as defaults (tx_attr.op_flags, rx_attr.op_flags), the C
	// provider's: the completion levels (FI_TRANSMIT_COMPLETE,
	// FI_DELIVERY_COMPLETE and FI_COMMIT_COMPLETE all wait for the peer's
	// ACK), FI_INJECT and FI_COMPLETION.
	msgTxOpFlags = fi.FlagInject | fi.FlagInjectComplete | fi.FlagTransmitComplete | fi.FlagDeliveryComplete |
		fi.FlagCommitComplete | fi.FlagCompletion
	msgRxOpFlags = fi.FlagCompletion
)

// newEntry returns an FI_EP_MSG entry for an address of format f in domain
// and fabric (netif.Offer removes FI_REMOTE_COMM from the caps of
// loopback entries, as the C provider's lack it when it lists
// interfaces).
func newEntry(f fi.AddrFormat, domain, fabric string, _ bool) *fi.Info {
	return &fi.Info{
		Caps:       infoCaps,
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

// provider is the tcp provider (struct fi_provider "tcp"); kit.Provider
// gives its name and version.
type provider struct{ kit.Provider }

// rxmName is libfabric's name of rxm layered over this provider.
const rxmName = provName + ";ofi_rxm"

// init registers rxm over the provider as "tcp;ofi_rxm" (C's ofi_rxm
// over tcp, fi_rxm(7)): the FI_EP_RDM endpoints, which speak C rxm's
// protocol over this provider's connections; then the provider itself.
func init() {
	tcp := provider{kit.Provider{ProvName: provName, ProvVersion: provVersion}}
	fi.Register(rxm.Over(tcp, rxmName))
	fi.Register(tcp)
}

var (
	_ fi.Provider = provider{}
)

// GetInfo returns one FI_EP_MSG entry per address of each interface that
// is up (only FI_TCP_IFACE's when set), as the C provider does: domain
// named after the interface, fabric after the address's subnet, source
// address the interface's with port 0. A source address (FI_SOURCE or
// hints) keeps the entries of the interface that owns it, and the
// wildcard address gives one entry for no interface in particular; a
// destination alone keeps the entry of the interface the route to it
// leaves from.
//
// Hints may ask for queues up to the C provider's maxima (tx_attr.size
// 1024 and rx_attr.size 65536) and for the default operation flags it
// takes (tx_attr.op_flags: FI_INJECT, FI_INJECT_COMPLETE,
// FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE, FI_COMMIT_COMPLETE,
// FI_COMPLETION; rx_attr.op_flags: FI_COMPLETION); the entries carry the
// hints' sizes and op flags, the defaults (256, no op flags) when the
// hints leave them 0, as C's do. FI_EP_RDM entries are tcp;ofi_rxm's
// (providers/rxm over this provider), which init registers.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	p, err := loadParams()
	if err != nil {
		return nil, err
	}
	if reason := badSizes(hints); reason != "" {
		return nil, kit.Declined(provName, reason, "")
	}
	o := p.offer()
	o.Entry = offerEntry(newEntry, maxTxSize, maxRxSize, msgTxOpFlags, msgRxOpFlags)
	msg, err := o.GetInfo(ctx, node, service, flags, hints)
	if err != nil {
		return nil, err
	}
	for _, in := range msg {
		kit.AlterInfo(in, hints, queueSize)
	}
	return msg, nil
}

// offerEntry wraps the entry function entry into the one GetInfo matches
// hints against: its queue sizes are the maxima and its op flags those
// hints may ask for, so that the matcher declines only what exceeds them
// (tx size 1025 not supported (max 1024)). kit.AlterInfo then gives the
// results the sizes and op flags they report.
func offerEntry(entry func(fi.AddrFormat, string, string, bool) *fi.Info, maxTx, maxRx int, txFlags, rxFlags fi.Flags) func(fi.AddrFormat, string, string, bool) *fi.Info {
	return func(f fi.AddrFormat, domain, fabric string, localOnly bool) *fi.Info {
		in := entry(f, domain, fabric, localOnly)
		in.TxAttr.Size, in.RxAttr.Size = maxTx, maxRx
		in.TxAttr.OpFlags, in.RxAttr.OpFlags = txFlags, rxFlags
		return in
	}
}

// badSizes returns why hints' queue sizes cannot be met when one is
// negative (size_t in C), or "".
func badSizes(hints *fi.Info) string {
	switch {
	case hints == nil:
	case hints.TxAttr != nil && hints.TxAttr.Size < 0:
		return fmt.Sprintf("tx size %d not supported", hints.TxAttr.Size)
	case hints.RxAttr != nil && hints.RxAttr.Size < 0:
		return fmt.Sprintf("rx size %d not supported", hints.RxAttr.Size)
	}
	return ""
}

// offer is the provider's interface-based GetInfo with its parameters.
// The entry of a source address that belongs to no interface in
// particular (the wildcard address) is domain "tcp" of fabric "TCP-IP",
// as the C provider names it.
func (p params) offer() netif.Offer {
	return netif.Offer{Prov: provName, IfaceVar: paramIface.Name, Iface: p.iface,
		AnyDomain: "tcp", AnyFabric: "TCP-IP", Entry: newEntry}
}
