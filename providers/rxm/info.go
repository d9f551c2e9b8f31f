package rxm

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// Attributes of rxm's own (C's rxm_attr.c), without what gofabric's rxm
// lacks: FI_HMEM and FI_COLLECTIVE. FI_SOURCE and
// FI_DIRECTED_RECV are offered always (C grants them only when asked,
// and gofabric's tcp;ofi_rxm entries have always offered them); FI_ATOMIC
// only when hints ask for it, as C does (alter).
const (
	txMsgCaps = fi.CapMsg | fi.CapSend                           // OFI_TX_MSG_CAPS
	rxMsgCaps = fi.CapMsg | fi.CapRecv                           // OFI_RX_MSG_CAPS
	txRMACaps = fi.CapRMA | fi.CapRead | fi.CapWrite             // OFI_TX_RMA_CAPS
	rxRMACaps = fi.CapRMA | fi.CapRemoteRead | fi.CapRemoteWrite // OFI_RX_RMA_CAPS
	// commCaps are the caps rxm takes from the core's entry.
	commCaps  = fi.CapLocalComm | fi.CapRemoteComm
	rxmTxCaps = txMsgCaps | fi.CapTagged | txRMACaps | fi.CapAtomic
	rxmRxCaps = rxMsgCaps | fi.CapTagged | rxRMACaps | fi.CapAtomic | fi.CapSource | fi.CapDirectedRecv | fi.CapMultiRecv
	// atomicOrders are the orders rxm's atomics do not keep (C's
	// rxm_alter_info): they leave the message orders when FI_ATOMIC is
	// asked for (docs/wire-tcp.md, §3.11.1).
	atomicOrders = fi.OrderRAR | fi.OrderRAW | fi.OrderWAR | fi.OrderWAW | fi.OrderSAR | fi.OrderSAW
	rxmCaps      = rxmTxCaps | rxmRxCaps | commCaps

	// passthruCaps are the caps of the application's hints rxm asks of
	// the core as they are (C's RXM_PASSTHRU_CAPS).
	passthruCaps = fi.CapMsg | fi.CapRMA | fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite |
		fi.CapRemoteRead | fi.CapRemoteWrite | fi.CapHMEM
	// rndvCaps are the caps rxm needs of the core for its rendezvous
	// (RMA reads of the sender's buffers) whenever it sends messages.
	rndvCaps = fi.CapRMA | fi.CapRead | fi.CapRemoteRead | fi.CapRemoteWrite

	// txOpFlags and rxOpFlags are the default operation flags hints may
	// ask for (C's RXM_PASSTHRU_TX_OP_FLAGS and RXM_TX_OP_FLAGS, and
	// RXM_RX_OP_FLAGS); coreTxOpFlags are those of them rxm passes to
	// the core (FI_TRANSMIT_COMPLETE).
	txOpFlags = fi.FlagTransmitComplete | fi.FlagInject | fi.FlagInjectComplete | fi.FlagDeliveryComplete |
		fi.FlagCompletion
	rxOpFlags     = fi.FlagMultiRecv | fi.FlagCompletion
	coreTxOpFlags = fi.FlagTransmitComplete

	// iovLimit is rxm's iov_limit and rma_iov_limit (RXM_IOV_LIMIT), the
	// most the rendezvous descriptor carries.
	iovLimit = rxmwire.RndvIOVLimit
	// cqDataSize is the remote CQ data an rxm header carries.
	cqDataSize = 8
	// tagFormat is rxm's mem_tag_format (FI_TAG_GENERIC).
	tagFormat = 0xaaaaaaaaaaaaaaaa
	// protoVersion is rxm's protocol version (FI_PROTO_RXM, 1).
	protoVersion = 1

	// basicMap are the MR modes rxm asks of the core when the
	// application is no RMA target, and handles itself (OFI_MR_BASIC_MAP).
	basicMap = fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey
)

// coreHints returns the hints rxm gives the core provider's GetInfo for
// the application's hints (C's rxm_info_to_core and ofi_info_to_core):
// FI_EP_MSG; the application's caps that pass through, plus FI_MSG for
// tagged messages and the RMA caps of the rendezvous; the modes rxm
// follows (FI_RX_CQ_DATA, FI_CONTEXT), FI_MR_LOCAL and, when the
// application is no RMA target, the MR modes rxm maps itself; the
// application's threading, orders, transmit-complete flag, addresses and
// fabric and domain names; queue depths FI_OFI_RXM_MSG_TX_SIZE and
// MSG_RX_SIZE; and the hints' provider name without layer's own part
// ("tcp;ofi_rxm" asks "tcp").
func coreHints(hints *fi.Info, p params, layer string) *fi.Info {
	ch := (*fi.Info)(nil).Clone()
	ch.Mode = fi.ModeRxCQData | fi.ModeContext
	ch.EPAttr.Type = fi.EPTypeMsg
	ch.TxAttr.Size, ch.RxAttr.Size = p.msgTx, p.msgRx
	var h fi.Info
	if hints != nil {
		h = *hints
	}
	hd := h.DomainAttr
	switch {
	case hd != nil && hd.MRMode&(fi.MRModeBasic|fi.MRModeScalable) != 0:
		ch.Mode |= fi.ModeLocalMR
		ch.DomainAttr.MRMode = hd.MRMode
	case hd == nil || !rmaTarget(h.Caps):
		ch.DomainAttr.MRMode = fi.MRModeLocal | basicMap
	default:
		ch.DomainAttr.MRMode = fi.MRModeLocal | hd.MRMode
	}
	if h.Caps&fi.CapHMEM != 0 {
		ch.DomainAttr.MRMode |= fi.MRModeHMEM
	}
	if hints == nil {
		return ch
	}
	ch.Caps = h.Caps & passthruCaps
	if h.Caps&(fi.CapAtomic|fi.CapTagged) != 0 {
		ch.Caps |= fi.CapMsg | fi.CapSend | fi.CapRecv
	}
	if ch.Caps&fi.CapMsg != 0 {
		ch.Caps |= rndvCaps
	}
	if hd != nil {
		ch.DomainAttr.Caps |= hd.Caps
		ch.DomainAttr.Threading = hd.Threading
		ch.DomainAttr.Name = hd.Name
	}
	if tx := h.TxAttr; tx != nil {
		ch.TxAttr.OpFlags = tx.OpFlags & coreTxOpFlags
		ch.TxAttr.MsgOrder, ch.TxAttr.CompOrder = tx.MsgOrder, tx.CompOrder
	}
	if rx := h.RxAttr; rx != nil {
		ch.RxAttr.MsgOrder, ch.RxAttr.CompOrder = rx.MsgOrder, rx.CompOrder
	}
	ch.AddrFormat = h.AddrFormat
	ch.SrcAddr, ch.DestAddr = slices.Clone(h.SrcAddr), slices.Clone(h.DestAddr)
	if h.FabricAttr != nil {
		ch.FabricAttr.Name = h.FabricAttr.Name
		ch.FabricAttr.ProvName = withoutLayer(h.FabricAttr.ProvName, layer)
	}
	return ch
}

// rmaTarget reports whether caps let peers target the application's
// memory with RMA (C's ofi_rma_target_allowed): FI_RMA or FI_ATOMIC with
// a remote direction or none.
func rmaTarget(caps fi.Caps) bool {
	if caps&(fi.CapRMA|fi.CapAtomic) == 0 {
		return false
	}
	dirs := fi.CapRead | fi.CapWrite | fi.CapRemoteRead | fi.CapRemoteWrite
	return caps&dirs == 0 || caps&(fi.CapRemoteRead|fi.CapRemoteWrite) != 0
}

// withoutLayer removes layer's own component (the last of its name) from
// the provider name sel, as C's ofi_exclude_prov_name does: "tcp;ofi_rxm"
// gives "tcp", "ofi_rxm" gives "" (any core).
func withoutLayer(sel, layer string) string {
	own := layer[strings.LastIndex(layer, ";")+1:]
	var keep []string
	for c := range strings.SplitSeq(sel, ";") {
		if c != "" && !strings.EqualFold(c, own) {
			keep = append(keep, c)
		}
	}
	return strings.Join(keep, ";")
}

// entry returns the rxm entry over the core's FI_EP_MSG entry c (C's
// rxm_info_to_rxm and ofi_info_to_util over rxm's own attributes), named
// name, as GetInfo matches hints against it: its queue depths are the
// deepest hints may ask for and its op flags those hints may ask for.
// From the core come the address format and addresses, the fabric and
// domain names, FI_LOCAL_COMM and FI_REMOTE_COMM, the message orders, the
// message and ordering sizes, the MR modes but FI_MR_LOCAL (rxm registers
// its own buffers), the MR key size, and the limits rxm cannot exceed
// (iov limits, CQ data size); the inject size is the core's less the rxm
// header (as C 1.17 gives it, FI_MR_LOCAL cores included: 192 over
// Soft-RoCE) and at most FI_OFI_RXM_BUFFER_SIZE, which it is when the
// core's is no larger than the header.
// Everything else is rxm's.
func entry(c *fi.Info, p params, name string) *fi.Info {
	ctx, crx, cep, cd := *c.TxAttr, *c.RxAttr, *c.EPAttr, *c.DomainAttr
	caps := rxmCaps&^commCaps | c.Caps&commCaps
	mode := c.Mode &^ fi.ModeRxCQData
	inject := p.bufferSize
	if ctx.InjectSize > rxmwire.HeaderSize {
		inject = min(ctx.InjectSize-rxmwire.HeaderSize, p.bufferSize)
	}
	in := &fi.Info{
		Caps: caps, Mode: mode, AddrFormat: c.AddrFormat,
		SrcAddr: slices.Clone(c.SrcAddr), DestAddr: slices.Clone(c.DestAddr),
		TxAttr: &fi.TxAttr{
			Caps: rxmTxCaps, Mode: mode, OpFlags: txOpFlags, MsgOrder: ctx.MsgOrder, CompOrder: fi.OrderNone,
			InjectSize: inject, Size: p.maxTx,
			IOVLimit: min(iovLimit, ctx.IOVLimit), RMAIOVLimit: min(iovLimit, ctx.RMAIOVLimit),
		},
		RxAttr: &fi.RxAttr{
			Caps: rxmRxCaps, OpFlags: rxOpFlags, MsgOrder: crx.MsgOrder, CompOrder: fi.OrderNone,
			Size: p.maxRx, IOVLimit: min(iovLimit, crx.IOVLimit),
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeRDM, Protocol: fi.ProtoRXM, ProtocolVersion: protoVersion,
			MaxMsgSize: cep.MaxMsgSize, MaxOrderRAWSize: cep.MaxOrderRAWSize,
			MaxOrderWARSize: cep.MaxOrderWARSize, MaxOrderWAWSize: cep.MaxOrderWAWSize,
			MemTagFormat: tagFormat, TxCtxCnt: 1, RxCtxCnt: 1,
		},
		DomainAttr: &fi.DomainAttr{
			Name: cd.Name, Threading: fi.ThreadSafe,
			// gofabric's rxm progresses data manually (C: automatic
			// when hints ask for it).
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressManual,
			ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec,
			MRMode:    cd.MRMode &^ fi.MRModeLocal,
			MRKeySize: cd.MRKeySize, CQDataSize: min(cqDataSize, cd.CQDataSize),
			CQCnt: 1 << 16, EPCnt: 1 << 15, TxCtxCnt: 1, RxCtxCnt: 1, MaxEPTxCtx: 1, MaxEPRxCtx: 1,
			MRIOVLimit: 1,
			// The domain's comm caps are the core's, narrowed to the
			// entry's (C's ofi_alter_info).
			Caps: cd.Caps & caps & commCaps,
		},
		FabricAttr: &fi.FabricAttr{Name: c.FabricAttr.Name, ProvName: name, ProvVersion: version, APIVersion: fi.APIVersion},
	}
	if c.NIC != nil {
		in.NIC = c.Clone().NIC
	}
	return in
}

// GetInfo returns the FI_EP_RDM entries rxm offers over the core
// provider that satisfy hints, one per FI_EP_MSG entry the core returns
// for node, service and flags under the hints rxm derives (fi_getinfo(3);
// C's rxm_getinfo over ofix_getinfo): the core's entry becomes rxm's
// (entry), which is matched against hints as a provider's own entries are
// (kit.MatchInfo), and given the queue depths and default op flags the
// hints ask for, FI_OFI_RXM_TX_SIZE and RX_SIZE (2048) for those they
// leave 0. A core that offers nothing gives its reasons, under rxm's
// name.
func (p *provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	prm, err := loadParams()
	if err != nil {
		return nil, err
	}
	if reason := prm.declined; reason != "" {
		return nil, kit.Declined(p.name, reason, "unset the variable to use rxm")
	}
	if reason := badHints(hints); reason != "" {
		return nil, kit.Declined(p.name, reason, "")
	}
	cores, err := p.core.GetInfo(ctx, node, service, flags, coreHints(hints, prm, p.name))
	if err != nil {
		return nil, p.coreErr(ctx, err)
	}
	var h *fi.Info
	if hints != nil {
		h = hints.Clone() // addresses are the core's, which matched them
		h.SrcAddr, h.DestAddr = nil, nil
	}
	var (
		out     []*fi.Info
		reasons []fi.ProviderReason
	)
	for _, c := range cores {
		if c == nil || c.EPAttr == nil || c.EPAttr.Type != fi.EPTypeMsg || c.TxAttr == nil || c.RxAttr == nil ||
			c.DomainAttr == nil || c.FabricAttr == nil {
			continue
		}
		e := entry(c, prm, p.name)
		got, err := kit.MatchInfo(ctx, p.name, []*fi.Info{e}, "", "", 0, h)
		var nm *fi.NoMatchError
		switch {
		case errors.As(err, &nm):
			reasons = appendNew(reasons, nm.Reasons...)
			continue
		case err != nil:
			return nil, err
		}
		in := got[0]
		in.SrcAddr, in.DestAddr = e.SrcAddr, e.DestAddr
		alter(in, hints, c, prm)
		out = append(out, in)
	}
	if len(out) == 0 {
		if len(reasons) == 0 {
			reasons = append(reasons, fi.ProviderReason{Provider: p.name,
				Reason: "core provider " + p.core.Name() + " returned no FI_EP_MSG entry"})
		}
		return nil, &fi.NoMatchError{Reasons: reasons}
	}
	return out, nil
}

// badHints returns why rxm offers nothing for hints before it asks the
// core, or "": another endpoint type, a negative queue size.
func badHints(hints *fi.Info) string {
	if hints == nil {
		return ""
	}
	if hints.EPAttr != nil && hints.EPAttr.Type != fi.EPTypeUnspec && hints.EPAttr.Type != fi.EPTypeRDM {
		return "ep type " + hints.EPAttr.Type.String() + " not supported (offers FI_EP_RDM)"
	}
	if tx := hints.TxAttr; tx != nil && tx.Size < 0 {
		return "tx size " + strconv.Itoa(tx.Size) + " not supported"
	}
	if rx := hints.RxAttr; rx != nil && rx.Size < 0 {
		return "rx size " + strconv.Itoa(rx.Size) + " not supported"
	}
	return ""
}

// alter gives a matched entry what C's ofi_alter_info and rxm_alter_info
// give it from hints: the queue depths and default op flags hints ask for
// (FI_OFI_RXM_TX_SIZE and RX_SIZE for depths they leave 0), the core's
// FI_MR_LOCAL when hints support it (rxm registers for an application
// that does not), and FI_ATOMIC only when hints ask for it, with the
// orders and ordering sizes atomics do not keep removed.
func alter(in, hints, core *fi.Info, p params) {
	kit.AlterInfo(in, hints, p.defTx)
	if hints == nil || hints.Caps&fi.CapAtomic == 0 {
		in.Caps &^= fi.CapAtomic
		in.TxAttr.Caps &^= fi.CapAtomic
		in.RxAttr.Caps &^= fi.CapAtomic
	} else {
		in.TxAttr.MsgOrder &^= atomicOrders
		in.RxAttr.MsgOrder &^= atomicOrders
		in.EPAttr.MaxOrderRAWSize, in.EPAttr.MaxOrderWARSize, in.EPAttr.MaxOrderWAWSize = 0, 0, 0
	}
	if hints == nil || hints.RxAttr == nil || hints.RxAttr.Size == 0 {
		in.RxAttr.Size = p.defRx
	}
	if local := core.DomainAttr.MRMode & fi.MRModeLocal; local != 0 && hints != nil &&
		(hints.Mode&fi.ModeLocalMR != 0 || hints.DomainAttr != nil && hints.DomainAttr.MRMode&fi.MRModeLocal != 0) {
		in.DomainAttr.MRMode |= local
	}
}

// coreErr is GetInfo's error when the core offers nothing: the core's
// reasons, said as rxm's ("tcp;ofi_rxm: core tcp: ..."), or its error.
func (p *provider) coreErr(ctx context.Context, err error) error {
	if cerr := fi.ContextError(ctx); cerr != nil {
		return errors.Wrapf(cerr, "%s: getinfo", p.name)
	}
	var nm *fi.NoMatchError
	if !errors.As(err, &nm) {
		return errors.Wrapf(err, "%s: getinfo: core provider %s", p.name, p.core.Name())
	}
	out := &fi.NoMatchError{}
	for _, r := range nm.Reasons {
		r.Reason = "core " + cmp.Or(r.Provider, p.core.Name()) + ": " + r.Reason
		r.Provider = p.name
		out.Reasons = appendNew(out.Reasons, r)
	}
	return out
}

// appendNew appends the reasons rs has not got yet.
func appendNew(rs []fi.ProviderReason, more ...fi.ProviderReason) []fi.ProviderReason {
	for _, r := range more {
		if !slices.ContainsFunc(rs, func(o fi.ProviderReason) bool { return o.Provider == r.Provider && o.Reason == r.Reason }) {
			rs = append(rs, r)
		}
	}
	return rs
}
