//go:build linux

package shm

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// provName is the provider's name, libfabric's.
const provName = "shm"

// provVersion is the provider's version, as C 1.17's.
var provVersion = fi.MakeVersion(117, 0)

// addrPrefix starts every endpoint name (FI_ADDR_STR).
const addrPrefix = "fi_shm://"

// Attributes of the entry.
const (
	// FI_MULTI_RECV in caps and rx caps, as C 1.17's smr_attr.c.
	infoCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapAtomic | fi.CapRead | fi.CapWrite | fi.CapRecv | fi.CapSend |
		fi.CapRemoteRead | fi.CapRemoteWrite | fi.CapRMAEvent | fi.CapSource | fi.CapDirectedRecv | fi.CapMultiRecv
	txCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapAtomic | fi.CapRead | fi.CapWrite | fi.CapSend
	rxCaps = fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapAtomic | fi.CapRecv | fi.CapRemoteRead | fi.CapRemoteWrite |
		fi.CapRMAEvent | fi.CapSource | fi.CapDirectedRecv | fi.CapMultiRecv

	// injectSize is the largest Inject: what fits in a slot.
	injectSize = inlineMax
	// queueSize is the deepest transmit and receive queue, and the depth
	// entries offer unless hints ask for less (C's: 1024, the most its
	// hints take).
	queueSize = 1024
	iovLimit  = 4
	// rmaIOVLimit: one remote segment per RMA operation.
	rmaIOVLimit = 1
	cqDataSize  = 8
)

// txOpFlags and rxOpFlags are the operation flags hints may ask for as
// defaults (tx_attr.op_flags, rx_attr.op_flags): C 1.17 shm's
// SMR_TX_OP_FLAGS and SMR_RX_OP_FLAGS.
const (
	txOpFlags = fi.FlagCompletion | fi.FlagInjectComplete | fi.FlagTransmitComplete | fi.FlagDeliveryComplete
	rxOpFlags = fi.FlagCompletion | fi.FlagMultiRecv
)

// mrMode: keys are the application's, RMA addresses are offsets into the
// region (no FI_MR_VIRT_ADDR, so Go programs need no pointer arithmetic).
const mrMode fi.MRMode = 0

func newEntry() *fi.Info {
	return &fi.Info{
		Caps:       infoCaps,
		AddrFormat: fi.FormatStr,
		TxAttr: &fi.TxAttr{
			Caps: txCaps, MsgOrder: fi.OrderSAS, CompOrder: fi.OrderNone,
			InjectSize: injectSize, Size: queueSize, IOVLimit: iovLimit, RMAIOVLimit: rmaIOVLimit,
		},
		RxAttr: &fi.RxAttr{
			Caps: rxCaps, MsgOrder: fi.OrderSAS, CompOrder: fi.OrderStrict,
			Size: queueSize, IOVLimit: iovLimit,
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeRDM, Protocol: fi.ProtoSHM, ProtocolVersion: 1,
			MaxMsgSize: math.MaxInt, MemTagFormat: 0xaaaaaaaaaaaaaaaa,
			TxCtxCnt: 1, RxCtxCnt: 1,
		},
		DomainAttr: &fi.DomainAttr{
			Name: provName, Threading: fi.ThreadSafe,
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressManual,
			ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec, MRMode: mrMode,
			MRKeySize: 8, CQDataSize: cqDataSize, CQCnt: 1024, EPCnt: 256,
			TxCtxCnt: 1024, RxCtxCnt: 1024, MaxEPTxCtx: 1, MaxEPRxCtx: 1, MRIOVLimit: 1,
		},
		FabricAttr: &fi.FabricAttr{Name: provName, ProvName: provName, ProvVersion: provVersion, APIVersion: fi.APIVersion},
	}
}

// provider is the shm provider (struct fi_provider "shm"); kit.Provider
// gives its name, "shm", and its version, 117.0 as C 1.17's.
type provider struct{ kit.Provider }

func init() { fi.Register(provider{kit.Provider{ProvName: provName, ProvVersion: provVersion}}) }

var _ fi.Provider = provider{}

// GetInfo returns the provider's one FI_EP_RDM entry (fi_getinfo). Its
// source address is "fi_shm://<pid>", or, with FI_SOURCE, the name that
// node and service make ("fi_shm://node:service", "fi_shm://node",
// "fi_shm://service"); without FI_SOURCE they name the destination. A
// name must be at most 64 bytes of letters, digits and ".:_-".
//
// Hints may ask for what C 1.17's shm takes in its transmit and receive
// attributes: the default operation flags FI_COMPLETION,
// FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE
// (tx_attr.op_flags) and FI_COMPLETION and FI_MULTI_RECV
// (rx_attr.op_flags), and queues of 1 to 1024 entries (tx_attr.size,
// rx_attr.size). The entry carries the hints' op flags and sizes, as C's
// do; without them, none and 1024. FI_MULTI_RECV is offered in caps and
// rx caps, as C's shm does (multi-receive buffers, untagged). FI_HMEM,
// which C's shm offers, is declined with its reason: not implemented.
// FI_ATOMIC is offered, as C's shm always does (its caps carry
// FI_ATOMICS whatever the hints).
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	if _, err := os.Stat(shmDir); err != nil {
		return nil, kit.Declined(provName, shmDir+" is not available: "+err.Error(), "")
	}
	if reason := unsupportedHints(hints); reason != "" {
		return nil, kit.Declined(provName, reason, "")
	}
	e := newEntry()
	// Matched against the op flags hints may ask for; the result then
	// carries the hints' own (kit.AlterInfo).
	e.TxAttr.OpFlags, e.RxAttr.OpFlags = txOpFlags, rxOpFlags
	e.SrcAddr = []byte(defaultName())
	if node != "" || service != "" {
		name := addrPrefix + strings.Trim(node+":"+service, ":")
		if err := checkName([]byte(name)); err != nil {
			return nil, err
		}
		if flags&fi.FlagSource != 0 {
			e.SrcAddr = []byte(name)
		} else {
			e.DestAddr = []byte(name)
		}
	}
	h := hints.Clone()
	if hints != nil {
		if len(hints.SrcAddr) > 0 {
			if err := checkName(hints.SrcAddr); err != nil {
				return nil, err
			}
			e.SrcAddr = append([]byte(nil), hints.SrcAddr...)
		}
		if len(hints.DestAddr) > 0 {
			if err := checkName(hints.DestAddr); err != nil {
				return nil, err
			}
			e.DestAddr = append([]byte(nil), hints.DestAddr...)
		}
		h.SrcAddr, h.DestAddr = nil, nil
	}
	out, err := kit.MatchInfo(ctx, provName, []*fi.Info{e}, "", "", 0, h)
	if err != nil {
		return nil, err
	}
	for _, i := range out {
		i.SrcAddr, i.DestAddr = e.SrcAddr, e.DestAddr
		kit.AlterInfo(i, hints, queueSize)
	}
	return out, nil
}

// unsupportedHints returns why hints cannot be met when they ask for a
// negative queue size (size_t in C), or for what C's shm offers and this
// one does not implement; else "".
func unsupportedHints(hints *fi.Info) string {
	if hints == nil {
		return ""
	}
	caps := hints.Caps
	var txCaps, rxCaps fi.Caps
	if hints.TxAttr != nil {
		txCaps = hints.TxAttr.Caps
		if hints.TxAttr.Size < 0 {
			return fmt.Sprintf("tx size %d not supported", hints.TxAttr.Size)
		}
	}
	if hints.RxAttr != nil {
		rxCaps = hints.RxAttr.Caps
		if hints.RxAttr.Size < 0 {
			return fmt.Sprintf("rx size %d not supported", hints.RxAttr.Size)
		}
	}
	if (caps|txCaps|rxCaps)&fi.CapHMEM != 0 {
		return "FI_HMEM (device memory) is not implemented by gofabric's shm (C's shm offers it)"
	}
	return ""
}

// queueSizes returns the transmit and receive queue depths of an
// endpoint opened with info: its sizes, queueSize for 0; fi.EINVAL
// beyond queueSize or below 0.
func queueSizes(info *fi.Info) (tx, rx int, err error) {
	return kit.QueueSizes(provName, info, queueSize, queueSize, queueSize)
}

// defaultName is the process's default endpoint name, as C's.
func defaultName() string { return addrPrefix + strconv.Itoa(os.Getpid()) }

// checkName validates an endpoint name.
func checkName(b []byte) error {
	s := string(b)
	if !strings.HasPrefix(s, addrPrefix) {
		return errors.Wrapf(fi.EINVAL, "shm: address %q does not start with %q", s, addrPrefix)
	}
	key := s[len(addrPrefix):]
	if key == "" || len(s) > maxNameLen {
		return errors.Wrapf(fi.EINVAL, "shm: address %q: want 1 to %d bytes after the prefix", s, maxNameLen-len(addrPrefix))
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".:_-", c)) {
			return errors.Wrapf(fi.EINVAL, "shm: address %q: only letters, digits and .:_- may follow the prefix", s)
		}
	}
	return nil
}
