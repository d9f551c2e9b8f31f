package kit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// MatchInfo is the hint matcher providers build their GetInfo on: the Go
// form of libfabric's prov/util attribute checks (ofi_check_info and
// ofi_alter_info in util_attr.c). offered holds the provider's static Info
// entries, best first; MatchInfo returns a merged clone of each one that
// satisfies hints, in the same order, with addresses for node and service.
//
// The rules follow fi_getinfo(3): a zero hint is a wildcard, nil hints
// match every entry, and
//
//   - Mode: zero means the application supports no mode bits, so an entry
//     that requires mode bits (Info, TxAttr or RxAttr Mode) is declined
//     unless hints carry them; likewise the MR mode bits an entry requires
//     (DomainAttr.MRMode; FI_MR_BASIC in hints stands for VIRT_ADDR,
//     ALLOCATED and PROV_KEY, FI_LOCAL_MR in hints.Mode for FI_MR_LOCAL).
//     The result keeps the entry's mode bits.
//   - Caps (and TxAttr, RxAttr, DomainAttr Caps): hints must be a subset of
//     the entry's; the result has the primary caps of hints plus the entry's
//     secondary caps, or the entry's caps when hints ask for none.
//   - EPAttr.Type, Protocol, AddrFormat, FabricAttr.Name, DomainAttr.Name:
//     equal when set (FormatSockaddr on either side accepts
//     FormatSockaddrIn and FormatSockaddrIn6).
//   - Sizes and counts (tx/rx size, inject size, iov limits, max msg size,
//     CQ data size, MR key size, context and object counts...) are minimums:
//     an entry offering less is declined; the result keeps the entry's.
//   - Threading: the entry must be at least as safe (FI_THREAD_SAFE serves
//     every level); progress must be equal; FI_RM_ENABLED needs an entry
//     with FI_RM_ENABLED; AVType must equal unless the entry's is
//     FI_AV_UNSPEC. The result takes these from hints when set.
//   - MsgOrder, CompOrder and OpFlags: hints must be subsets of the entry's.
//   - FabricAttr.ProvName selects as [fi.ProvNameMatches] does, against the
//     entry's ProvName or provName.
//
// Addresses: with node or service set, they are resolved with
// [fi.ResolveAddr] in the result's address format into SrcAddr when flags
// has FlagSource, else into DestAddr; the other address comes from hints.
// Without node and service both come from hints. A FormatSockaddr or
// FormatUnspec result takes the format of the resolved address.
//
// Each declined entry has a reason, logged at debug level through
// fi.Logger(provName). When no entry matches, the error is a
// *fi.NoMatchError (ENODATA) with the distinct reasons, and with advice in
// their Hint where the application can act on them (the mode bits it
// supports). A done ctx gives fi.ContextError's error (ECANCELED or
// ETIMEDOUT).
func MatchInfo(ctx context.Context, provName string, offered []*fi.Info, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	log := fi.Logger(provName)
	r := resolver{ctx: ctx, prov: provName, node: node, service: service, flags: flags, done: map[fi.AddrFormat]resolved{}}
	var (
		out     []*fi.Info
		reasons []string
	)
	for _, offer := range offered {
		if offer == nil {
			continue
		}
		info, reason := matchOne(provName, offer, hints)
		if reason == "" {
			var err error
			if reason, err = r.setAddrs(info, hints); err != nil {
				return nil, err
			}
		}
		if reason != "" {
			log.Debug("getinfo: entry declined", "reason", reason)
			if !slices.Contains(reasons, reason) {
				reasons = append(reasons, reason)
			}
			continue
		}
		out = append(out, info)
	}
	if len(out) == 0 {
		nm := &fi.NoMatchError{}
		for _, reason := range reasons {
			nm.Reasons = append(nm.Reasons, fi.ProviderReason{Provider: provName, Reason: reason, Hint: reasonHint(reason)})
		}
		if len(offered) == 0 {
			nm.Reasons = append(nm.Reasons, fi.ProviderReason{Provider: provName, Reason: "offers no entries"})
		}
		return nil, nm
	}
	return out, nil
}

// reasonHint returns the advice for a decline reason, or "": the mode
// reasons, which the application answers by saying what it supports.
func reasonHint(reason string) string {
	switch {
	case strings.HasPrefix(reason, "mode "), strings.HasPrefix(reason, "tx mode "), strings.HasPrefix(reason, "rx mode "):
		return "hints.Mode (and TxAttr.Mode, RxAttr.Mode) lists the mode bits the application supports, and zero means none: " +
			"set the bits the provider requires if the application follows them (fi_getinfo(3) MODE)"
	case strings.HasPrefix(reason, "mr mode "):
		return "hints.DomainAttr.MRMode lists the MR mode bits the application supports: " +
			"set the bits the provider requires if the application follows them (fi_mr(3) MR MODES)"
	}
	return ""
}

// attrs returns i's attributes, zero where i or they are nil.
func attrs(i *fi.Info) (fi.TxAttr, fi.RxAttr, fi.EPAttr, fi.DomainAttr, fi.FabricAttr) {
	var (
		tx fi.TxAttr
		rx fi.RxAttr
		ep fi.EPAttr
		d  fi.DomainAttr
		f  fi.FabricAttr
	)
	if i == nil {
		return tx, rx, ep, d, f
	}
	if i.TxAttr != nil {
		tx = *i.TxAttr
	}
	if i.RxAttr != nil {
		rx = *i.RxAttr
	}
	if i.EPAttr != nil {
		ep = *i.EPAttr
	}
	if i.DomainAttr != nil {
		d = *i.DomainAttr
	}
	if i.FabricAttr != nil {
		f = *i.FabricAttr
	}
	return tx, rx, ep, d, f
}

// limit is one "at least" attribute.
type limit struct {
	name         string
	hint, offers int
}

// matchOne checks offer against hints and returns the merged result, or
// the reason it declines.
func matchOne(provName string, offer, hints *fi.Info) (*fi.Info, string) {
	htx, hrx, hep, hd, hf := attrs(hints)
	otx, orx, oep, od, of := attrs(offer)
	pn := of.ProvName
	if pn == "" {
		pn = provName
	}
	var h fi.Info
	if hints != nil {
		h = *hints
	}
	// Caps of attributes default to the entry-wide ones; those asked for
	// in an attribute must be offered there, while hints.Caps only narrows
	// the attributes' caps.
	// Each attribute holds only the caps of its side (FI_SEND is a transmit
	// cap, FI_RECV a receive one), as libfabric masks them.
	otxCaps, orxCaps, odCaps := orDefault(otx.Caps, offer.Caps)&txCaps, orDefault(orx.Caps, offer.Caps)&rxCaps, orDefault(od.Caps, offer.Caps&fi.DomainCaps)
	htxCaps, hrxCaps, hdCaps := orDefault(htx.Caps, h.Caps)&txCaps, orDefault(hrx.Caps, h.Caps)&rxCaps, orDefault(hd.Caps, h.Caps&fi.DomainCaps)

	switch {
	case !fi.ProvNameMatches(hf.ProvName, pn):
		return nil, fmt.Sprintf("prov name %s not selected by hints prov name %q", pn, hf.ProvName)
	case hf.Name != "" && hf.Name != of.Name:
		return nil, fmt.Sprintf("fabric %q not offered (offers %q)", hf.Name, of.Name)
	case hd.Name != "" && hd.Name != od.Name:
		return nil, fmt.Sprintf("domain %q not offered (offers %q)", hd.Name, od.Name)
	case hep.Type != fi.EPTypeUnspec && hep.Type != oep.Type:
		return nil, fmt.Sprintf("ep type %v not supported (offers %v)", hep.Type, oep.Type)
	case hep.Protocol != fi.ProtoUnspec && hep.Protocol != oep.Protocol:
		return nil, fmt.Sprintf("protocol %v not supported (offers %v)", hep.Protocol, oep.Protocol)
	case hep.ProtocolVersion > oep.ProtocolVersion:
		return nil, fmt.Sprintf("protocol version %d not supported (offers %d)", hep.ProtocolVersion, oep.ProtocolVersion)
	case !formatOK(h.AddrFormat, offer.AddrFormat):
		return nil, fmt.Sprintf("addr format %v not supported (offers %v)", h.AddrFormat, offer.AddrFormat)
	case h.Caps&^offer.Caps != 0:
		return nil, fmt.Sprintf("caps %v not supported", h.Caps&^offer.Caps)
	case htx.Caps&txCaps&^otxCaps != 0:
		return nil, fmt.Sprintf("tx caps %v not supported", htx.Caps&txCaps&^otxCaps)
	case hrx.Caps&rxCaps&^orxCaps != 0:
		return nil, fmt.Sprintf("rx caps %v not supported", hrx.Caps&rxCaps&^orxCaps)
	case hd.Caps&^odCaps != 0:
		return nil, fmt.Sprintf("domain caps %v not supported", hd.Caps&^odCaps)
	}
	if hints != nil {
		// As C's ofi_check_info, the MR mode is checked only against
		// hints that carry a domain_attr: ofi_rxm asks its core for the
		// fabric with hints of a fabric_attr and mode ~0 alone.
		if reason := checkModes(h.Mode, htx.Mode, hrx.Mode, hd.MRMode, hints.DomainAttr != nil, offer.Mode, otx.Mode, orx.Mode, od.MRMode); reason != "" {
			return nil, reason
		}
	}
	switch {
	case hd.Threading != fi.ThreadUnspec && od.Threading > hd.Threading:
		return nil, fmt.Sprintf("threading %v not supported (offers %v)", hd.Threading, od.Threading)
	case hd.ControlProgress != fi.ProgressUnspec && hd.ControlProgress != od.ControlProgress:
		return nil, fmt.Sprintf("control progress %v not supported (offers %v)", hd.ControlProgress, od.ControlProgress)
	case hd.DataProgress != fi.ProgressUnspec && hd.DataProgress != od.DataProgress:
		return nil, fmt.Sprintf("data progress %v not supported (offers %v)", hd.DataProgress, od.DataProgress)
	case hd.ResourceMgmt == fi.RMEnabled && od.ResourceMgmt != fi.RMEnabled:
		return nil, fmt.Sprintf("resource mgmt %v not supported (offers %v)", hd.ResourceMgmt, od.ResourceMgmt)
	case hd.AVType != fi.AVUnspec && od.AVType != fi.AVUnspec && hd.AVType != od.AVType:
		return nil, fmt.Sprintf("av type %v not supported (offers %v)", hd.AVType, od.AVType)
	case htx.OpFlags&^otx.OpFlags != 0:
		return nil, fmt.Sprintf("tx op flags %v not supported", htx.OpFlags&^otx.OpFlags)
	case hrx.OpFlags&^orx.OpFlags != 0:
		return nil, fmt.Sprintf("rx op flags %v not supported", hrx.OpFlags&^orx.OpFlags)
	case htx.MsgOrder&^otx.MsgOrder != 0:
		return nil, fmt.Sprintf("tx msg order %v not supported", htx.MsgOrder&^otx.MsgOrder)
	case hrx.MsgOrder&^orx.MsgOrder != 0:
		return nil, fmt.Sprintf("rx msg order %v not supported", hrx.MsgOrder&^orx.MsgOrder)
	case htx.CompOrder&^otx.CompOrder != 0:
		return nil, fmt.Sprintf("tx comp order %v not supported", htx.CompOrder&^otx.CompOrder)
	case hrx.CompOrder&^orx.CompOrder != 0:
		return nil, fmt.Sprintf("rx comp order %v not supported", hrx.CompOrder&^orx.CompOrder)
	}
	for _, l := range []limit{
		{"tx size", htx.Size, otx.Size},
		{"inject size", htx.InjectSize, otx.InjectSize},
		{"tx iov limit", htx.IOVLimit, otx.IOVLimit},
		{"rma iov limit", htx.RMAIOVLimit, otx.RMAIOVLimit},
		{"rx size", hrx.Size, orx.Size},
		{"rx iov limit", hrx.IOVLimit, orx.IOVLimit},
		{"total buffered recv", hrx.TotalBufferedRecv, orx.TotalBufferedRecv},
		{"max msg size", hep.MaxMsgSize, oep.MaxMsgSize},
		{"max order raw size", hep.MaxOrderRAWSize, oep.MaxOrderRAWSize},
		{"max order war size", hep.MaxOrderWARSize, oep.MaxOrderWARSize},
		{"max order waw size", hep.MaxOrderWAWSize, oep.MaxOrderWAWSize},
		{"ep tx ctx cnt", hep.TxCtxCnt, oep.TxCtxCnt},
		{"ep rx ctx cnt", hep.RxCtxCnt, oep.RxCtxCnt},
		{"mr key size", hd.MRKeySize, od.MRKeySize},
		{"cq data size", hd.CQDataSize, od.CQDataSize},
		{"cq cnt", hd.CQCnt, od.CQCnt},
		{"ep cnt", hd.EPCnt, od.EPCnt},
		{"tx ctx cnt", hd.TxCtxCnt, od.TxCtxCnt},
		{"rx ctx cnt", hd.RxCtxCnt, od.RxCtxCnt},
		{"max ep tx ctx", hd.MaxEPTxCtx, od.MaxEPTxCtx},
		{"max ep rx ctx", hd.MaxEPRxCtx, od.MaxEPRxCtx},
		{"max ep stx ctx", hd.MaxEPStxCtx, od.MaxEPStxCtx},
		{"max ep srx ctx", hd.MaxEPSrxCtx, od.MaxEPSrxCtx},
		{"cntr cnt", hd.CntrCnt, od.CntrCnt},
		{"mr iov limit", hd.MRIOVLimit, od.MRIOVLimit},
		{"max err data", hd.MaxErrData, od.MaxErrData},
		{"mr cnt", hd.MRCnt, od.MRCnt},
	} {
		if l.hint > l.offers {
			return nil, fmt.Sprintf("%s %d not supported (max %d)", l.name, l.hint, l.offers)
		}
	}

	info := offer.Clone()
	full := (*fi.Info)(nil).Clone()
	if info.TxAttr == nil {
		info.TxAttr = full.TxAttr
	}
	if info.RxAttr == nil {
		info.RxAttr = full.RxAttr
	}
	if info.EPAttr == nil {
		info.EPAttr = full.EPAttr
	}
	if info.DomainAttr == nil {
		info.DomainAttr = full.DomainAttr
	}
	if info.FabricAttr == nil {
		info.FabricAttr = full.FabricAttr
	}
	info.FabricAttr.ProvName = pn
	info.Caps = mergeCaps(offer.Caps, h.Caps, h.Caps != 0)
	// An attribute whose hint caps come from hints.Caps asked for
	// something even when none of it is of its side: it then gets only
	// its secondary caps (C gives FI_RECV hints an empty tx caps).
	info.TxAttr.Caps = mergeCaps(otxCaps, htxCaps, orDefault(htx.Caps, h.Caps) != 0)
	info.RxAttr.Caps = mergeCaps(orxCaps, hrxCaps, orDefault(hrx.Caps, h.Caps) != 0)
	info.DomainAttr.Caps = mergeCaps(odCaps, hdCaps, hdCaps != 0)
	if hd.Caps == 0 && h.Caps != 0 {
		// Entry-wide caps in hints name the domain caps wanted too: none
		// named, none returned, as libfabric does.
		info.DomainAttr.Caps = h.Caps & odCaps
	}
	if h.AddrFormat != fi.FormatUnspec && h.AddrFormat != fi.FormatSockaddr {
		info.AddrFormat = h.AddrFormat
	}
	if hd.Threading != fi.ThreadUnspec {
		info.DomainAttr.Threading = hd.Threading
	}
	if hd.ResourceMgmt != fi.RMUnspec {
		info.DomainAttr.ResourceMgmt = hd.ResourceMgmt
	}
	if hd.AVType != fi.AVUnspec {
		info.DomainAttr.AVType = hd.AVType
	}
	if htx.OpFlags != 0 {
		info.TxAttr.OpFlags = htx.OpFlags
	}
	if hrx.OpFlags != 0 {
		info.RxAttr.OpFlags = hrx.OpFlags
	}
	if len(hep.AuthKey) > 0 {
		info.EPAttr.AuthKey = slices.Clone(hep.AuthKey)
	}
	if len(hd.AuthKey) > 0 {
		info.DomainAttr.AuthKey = slices.Clone(hd.AuthKey)
	}
	if hd.Domain != nil {
		info.DomainAttr.Domain = hd.Domain
	}
	if hf.Fabric != nil {
		info.FabricAttr.Fabric = hf.Fabric
	}
	if h.Handle != nil {
		info.Handle = h.Handle
	}
	return info, ""
}

// checkModes returns why the mode bits an entry requires are not all
// supported by hints, or "". The MR mode counts only when the hints have
// a domain attribute (withMR).
func checkModes(hMode, htxMode, hrxMode fi.Mode, hMR fi.MRMode, withMR bool, oMode, otxMode, orxMode fi.Mode, oMR fi.MRMode) string {
	htxMode, hrxMode = orDefault(htxMode, hMode), orDefault(hrxMode, hMode)
	switch {
	case oMode&^hMode != 0:
		return fmt.Sprintf("mode %v required (hints support %v)", oMode&^hMode, hMode)
	case otxMode&^htxMode != 0:
		return fmt.Sprintf("tx mode %v required (hints support %v)", otxMode&^htxMode, htxMode)
	case orxMode&^hrxMode != 0:
		return fmt.Sprintf("rx mode %v required (hints support %v)", orxMode&^hrxMode, hrxMode)
	}
	if !withMR {
		return ""
	}
	if hMR&fi.MRModeBasic != 0 {
		hMR |= fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey
	}
	if hMode&fi.ModeLocalMR != 0 {
		hMR |= fi.MRModeLocal
	}
	if need := oMR &^ (fi.MRModeBasic | fi.MRModeScalable) &^ hMR; need != 0 {
		return fmt.Sprintf("mr mode %v required (hints support %v)", need, hMR)
	}
	return ""
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// mergeCaps returns the caps of a result: the primary caps asked for and
// the secondary caps offered, or all offered when nothing was asked for
// (askedAny false; libfabric's ofi_get_caps).
// txCaps and rxCaps are the capabilities that belong to the transmit and
// receive side (libfabric's FI_TX_CAPS and FI_RX_CAPS).
const (
	txCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapAtomic | fi.CapRead | fi.CapWrite |
		fi.CapSend | fi.CapHMEM | fi.CapTrigger | fi.CapFence | fi.CapMulticast |
		fi.CapRMAPmem | fi.CapNamedRxCtx | fi.CapCollective
	rxCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapAtomic | fi.CapRemoteRead |
		fi.CapRemoteWrite | fi.CapRecv | fi.CapHMEM | fi.CapTrigger | fi.CapRMAPmem |
		fi.CapDirectedRecv | fi.CapVariableMsg | fi.CapMultiRecv | fi.CapSource |
		fi.CapRMAEvent | fi.CapSourceErr | fi.CapCollective
)

func mergeCaps(offered, asked fi.Caps, askedAny bool) fi.Caps {
	if !askedAny {
		return offered
	}
	caps := asked & fi.PrimaryCaps & offered
	if asked&dirCaps == 0 {
		// No direction asked for means every direction of the operations
		// asked for (fi_getinfo(3)), and the result names them, as
		// libfabric's does.
		if asked&(fi.CapMsg|fi.CapTagged) != 0 {
			caps |= offered & (fi.CapSend | fi.CapRecv)
		}
		if asked&(fi.CapRMA|fi.CapAtomic) != 0 {
			caps |= offered & (fi.CapRead | fi.CapWrite | fi.CapRemoteRead | fi.CapRemoteWrite)
		}
	}
	return caps | offered&fi.SecondaryCaps
}

// dirCaps are the capabilities that name a direction of transfer.
const dirCaps = fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite | fi.CapRemoteRead | fi.CapRemoteWrite

// formatOK reports whether an entry of address format offer serves hints
// asking for format hint.
func formatOK(hint, offer fi.AddrFormat) bool {
	sock := func(f fi.AddrFormat) bool { return f == fi.FormatSockaddrIn || f == fi.FormatSockaddrIn6 }
	switch {
	case hint == fi.FormatUnspec || hint == offer:
		return true
	case offer == fi.FormatSockaddr:
		return sock(hint)
	case hint == fi.FormatSockaddr:
		return sock(offer)
	}
	return false
}

// resolver resolves node and service once per address format.
type resolver struct {
	ctx           context.Context
	prov          string
	node, service string
	flags         fi.Flags
	done          map[fi.AddrFormat]resolved
}

type resolved struct {
	addr []byte
	err  error
}

// setAddrs fills info's addresses. It returns the reason to decline info
// when node and service do not resolve in its format, and an error only
// when ctx is done.
func (r *resolver) setAddrs(info, hints *fi.Info) (string, error) {
	if hints != nil {
		info.SrcAddr = slices.Clone(hints.SrcAddr)
		info.DestAddr = slices.Clone(hints.DestAddr)
	}
	if r.node == "" && r.service == "" {
		return "", nil
	}
	res, ok := r.done[info.AddrFormat]
	if !ok {
		res.addr, res.err = fi.ResolveAddr(r.ctx, info.AddrFormat, r.node, r.service, r.flags)
		if err := fi.ContextError(r.ctx); err != nil {
			return "", errors.Wrapf(err, "%s: getinfo", r.prov)
		}
		r.done[info.AddrFormat] = res
	}
	if res.err != nil {
		return strings.TrimPrefix(res.err.Error(), "fi: "), nil
	}
	if info.AddrFormat == fi.FormatUnspec || info.AddrFormat == fi.FormatSockaddr {
		_, f, err := fi.AddrPortFromSockaddr(res.addr)
		if err != nil {
			return "resolve addr: " + err.Error(), nil
		}
		info.AddrFormat = f
	}
	if r.flags&fi.FlagSource != 0 {
		info.SrcAddr = slices.Clone(res.addr)
	} else {
		info.DestAddr = slices.Clone(res.addr)
	}
	return "", nil
}
