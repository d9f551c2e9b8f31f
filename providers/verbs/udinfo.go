//go:build verbs && cgo

package verbs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	cerrors "github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Attributes of the C provider's FI_EP_DGRAM entries (verbs_info.c:
// VERBS_DGRAM_CAPS, verbs_dgram_tx_attr, verbs_dgram_rx_attr,
// VERBS_DGRAM_RX_MODE, VERBS_DGRAM_MSG_PREFIX_SIZE, verbs_dgram_domain),
// plus FI_MULTICAST, which gofabric adds (mcast.go).
const (
	udTxCaps  = fi.CapMsg | fi.CapSend | fi.CapMulticast
	udRxCaps  = fi.CapMsg | fi.CapRecv | fi.CapMulticast
	udAllCaps = udTxCaps | udRxCaps | msgDomainCaps
	// udPrefixSize is the msg_prefix_size of the entries with
	// FI_MSG_PREFIX: the 40-byte Global Route Header a UD receive places
	// before the payload.
	udPrefixSize = 40
	// udSuffix ends the domain names of the FI_EP_DGRAM entries
	// ("rxe0-dgram"), as in C.
	udSuffix = "-dgram"
)

// deviceOf is the RDMA device of a domain name: the name less the
// FI_EP_DGRAM entries' suffix.
func deviceOf(domainName string) string { return strings.TrimSuffix(domainName, udSuffix) }

// udInline caches each device's UD inline size (udMaxInline), which C
// probes at start-up.
var udInline sync.Map // device name -> int

// udEntries returns the provider's FI_EP_DGRAM entries as C's fi_getinfo
// lists them (vrb_alloc_info with verbs_dgram_domain): one per device with
// an active port and the InfiniBand transport (RoCE included; not iWARP),
// named "<device>-dgram", FI_ADDR_IB_UD, FI_PROTO_IB_UD, with the C
// entries' mode FI_MSG_PREFIX (rx mode FI_MSG_PREFIX | FI_RX_CQ_DATA),
// msg_prefix_size 40, max_msg_size the port's active MTU (at most its
// max_msg_sz) and inject_size the most inline data a UD queue pair takes
// (vrb_find_max_inline), within max_msg_size. The source address is an
// FI_ADDR_IB_UD name of zeros (any), as C's.
func udEntries() ([]*fi.Info, error) {
	devs, err := queryDevices(defTxSize, defRxSize, defTxIOVLimit, defRxIOVLimit, defInlineSize)
	if err != nil {
		return nil, err
	}
	var out []*fi.Info
	for _, d := range devs {
		if !d.portActive || d.iwarp || d.activeMTU == 0 {
			continue
		}
		e := newMsgEntry(d)
		e.Caps, e.Mode = udAllCaps, fi.ModeMsgPrefix|fi.ModeRxCQData
		e.TxAttr.Caps, e.TxAttr.RMAIOVLimit = udTxCaps, 1
		e.RxAttr.Caps, e.RxAttr.Mode = udRxCaps, fi.ModeMsgPrefix|fi.ModeRxCQData
		mtu := min(d.activeMTU, int(d.maxMsgSz))
		e.EPAttr.Type, e.EPAttr.Protocol = fi.EPTypeDgram, fi.ProtoIBUD
		e.EPAttr.MaxMsgSize, e.EPAttr.MaxOrderRAWSize, e.EPAttr.MaxOrderWAWSize = mtu, mtu, mtu
		e.EPAttr.MsgPrefixSize = udPrefixSize
		e.DomainAttr.Name = d.name + udSuffix
		e.TxAttr.InjectSize = min(udInlineOf(d.name), mtu)
		e.AddrFormat = fi.FormatIBUD
		var zero udName
		b := zero.bytes()
		e.SrcAddr = b[:]
		out = append(out, e)
	}
	return out, nil
}

// udInlineOf is device name's UD inline size, probed once.
func udInlineOf(name string) int {
	if v, ok := udInline.Load(name); ok {
		return v.(int)
	}
	n := 0
	if c, err := openUDContext(name); err == nil {
		n = udMaxInline(c)
		closeUDContext(c)
	}
	udInline.Store(name, n)
	return n
}

// declaresPrefix reports whether hints declare FI_MSG_PREFIX, in the mode
// or the rx mode.
func declaresPrefix(hints *fi.Info) bool {
	return hints.Mode&fi.ModeMsgPrefix != 0 || hints.RxAttr != nil && hints.RxAttr.Mode&fi.ModeMsgPrefix != 0
}

// udAlter adapts a DGRAM entry to hints before matching, as C's
// vrb_alter_info does for FI_RX_CQ_DATA (see GetInfo); and, where gofabric
// goes beyond C, for FI_MSG_PREFIX: hints that do not declare it get an
// entry without it (msg_prefix_size 0), whose receives the provider gives
// room for the Global Route Header itself (ud.go).
func udAlter(e *fi.Info, hints *fi.Info) *fi.Info {
	if hints == nil {
		return e
	}
	switch {
	case !declaresRxCQData(hints):
		e = withoutCQData(e)
	case hints.Mode&fi.ModeRxCQData == 0:
		e = e.Clone()
		e.Mode &^= fi.ModeRxCQData
	}
	switch {
	case !declaresPrefix(hints):
		e = e.Clone()
		e.Mode &^= fi.ModeMsgPrefix
		e.RxAttr.Mode &^= fi.ModeMsgPrefix
		e.EPAttr.MsgPrefixSize = 0
	case hints.Mode&fi.ModeMsgPrefix == 0:
		e = e.Clone()
		e.Mode &^= fi.ModeMsgPrefix
	}
	return e
}

// udGetInfo is GetInfo for FI_EP_DGRAM (vrb_handle_ib_ud_addr): the
// entries that match hints. With fi.FlagSource, service is the source
// name's service number and node, when it is an IP address, selects the
// device that has it (C ignores the node there); a node without
// fi.FlagSource is a destination, which C resolves through its name
// server: gofabric runs none and declines, naming the remedy.
func udGetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	entries, err := udEntries()
	if err != nil || len(entries) == 0 {
		if err == nil {
			return nil, declined("no device with an active port of the InfiniBand transport (RoCE, InfiniBand) for FI_EP_DGRAM", "")
		}
		return nil, declined(offer())
	}
	var dev string
	var svc uint16
	if flags&fi.FlagSource != 0 {
		if service != "" {
			v, err := strconv.ParseUint(service, 10, 16)
			if err != nil {
				return nil, cerrors.Wrapf(fi.EINVAL, "verbs: getinfo: FI_EP_DGRAM service %q is not a number of 16 bits", service)
			}
			svc = uint16(v)
		}
		if ip, err := netip.ParseAddr(node); err == nil {
			if dev, err = rdmaDeviceOf(netip.AddrPortFrom(ip, 0)); err != nil {
				return nil, declined(fmt.Sprintf("FI_EP_DGRAM: node %s is on no RDMA device", node), "")
			}
		}
	} else if node != "" {
		return nil, declined(fmt.Sprintf("FI_EP_DGRAM: destination node %q: resolving a node to an FI_ADDR_IB_UD address needs C's name server, which this provider does not run", node),
			"exchange the endpoints' names (fi_getname) and insert them into the address vector (fi_av_insert)")
	}
	var out []*fi.Info
	nm := &fi.NoMatchError{}
	for _, e := range entries {
		if dev != "" && deviceOf(e.DomainAttr.Name) != dev {
			continue
		}
		got, err := kit.MatchInfo(ctx, provName, []*fi.Info{udAlter(e, hints)}, "", "", flags, hints)
		var m *fi.NoMatchError
		switch {
		case errors.As(err, &m):
			for _, r := range m.Reasons {
				if !containsReason(nm.Reasons, r) {
					nm.Reasons = append(nm.Reasons, r)
				}
			}
			continue
		case err != nil:
			return nil, err
		}
		for _, g := range got {
			if g.SrcAddr == nil {
				n := udName{service: svc}
				b := n.bytes()
				g.SrcAddr = b[:]
			}
		}
		out = append(out, got...)
	}
	if len(out) == 0 {
		if len(nm.Reasons) == 0 {
			return nil, declined(fmt.Sprintf("FI_EP_DGRAM: node %s is on no device with a DGRAM entry", node), "")
		}
		return nil, nm
	}
	return out, nil
}
