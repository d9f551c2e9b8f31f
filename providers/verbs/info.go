//go:build verbs && cgo

package verbs

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gofabric/gofabric/fi"
)

// Defaults of the C provider's parameters (FI_VERBS_TX_SIZE,
// FI_VERBS_RX_SIZE, FI_VERBS_TX_IOV_LIMIT, FI_VERBS_RX_IOV_LIMIT,
// FI_VERBS_INLINE_SIZE; struct vrb_gl_data in verbs_init.c).
const (
	defTxSize     = 384
	defRxSize     = 384
	defTxIOVLimit = 4
	defRxIOVLimit = 4
	defInlineSize = 256
)

// Attributes of the C provider's FI_EP_MSG entries that come from its
// templates (verbs_info.c: VERBS_MSG_CAPS, verbs_tx_attr, verbs_rx_attr,
// verbs_ep_attr, verbs_domain_attr), as fi_getinfo hands them out: the
// transmit and receive capabilities narrowed to their sides, op_flags
// cleared, and the RMA and atomic orderings that libfabric 1.17 implies
// by the older FI_ORDER_* bits.
const (
	msgDomainCaps = fi.CapLocalComm | fi.CapRemoteComm
	msgCaps       = fi.CapMsg | fi.CapRMA | fi.CapAtomic | fi.CapRead | fi.CapWrite | fi.CapSend |
		fi.CapRecv | fi.CapRemoteRead | fi.CapRemoteWrite | msgDomainCaps
	msgTxCaps = fi.CapMsg | fi.CapRMA | fi.CapAtomic | fi.CapRead | fi.CapWrite | fi.CapSend
	msgRxCaps = fi.CapMsg | fi.CapRMA | fi.CapAtomic | fi.CapRecv | fi.CapRemoteRead | fi.CapRemoteWrite
	msgOrder  = fi.OrderRAR | fi.OrderRAW | fi.OrderRAS | fi.OrderWAW | fi.OrderWAS | fi.OrderSAW |
		fi.OrderSAS | fi.OrderRMARAR | fi.OrderRMARAW | fi.OrderRMAWAW | fi.OrderAtomicRAR |
		fi.OrderAtomicRAW | fi.OrderAtomicWAW
	// msgMRMode is OFI_MR_BASIC_MAP | FI_MR_LOCAL as fi_getinfo reports it.
	msgMRMode = fi.MRModeLocal | fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey
	// msgCtxCnt is verbs_domain_attr's tx_ctx_cnt and rx_ctx_cnt.
	msgCtxCnt = 1024
	// mrKeySize is sizeof(ibv_sge.lkey); cqDataSize sizeof(ibv_send_wr.imm_data).
	mrKeySize  = 4
	cqDataSize = 4
	// maxErrData is MAX(sizeof(ibv_wc.vendor_err), UINT8_MAX).
	maxErrData = 255
	// iwarpFabric is the fabric name of iWARP devices (VERBS_IWARP_FABRIC).
	iwarpFabric = "Ethernet-iWARP"
)

// msgEntries returns the provider's FI_EP_MSG entries as C's fi_getinfo
// without hints lists them (vrb_init_info, vrb_alloc_info and
// vrb_get_device_attrs for each device, vrb_getifaddrs and
// vrb_get_srcaddr_devs for the addresses, vrb_set_default_info for the
// default sizes): for each device with an active port, in
// ibv_get_device_list's order, one entry per IP address that rdma_cm binds
// to that device, in getifaddrs' order. C lists a third entry per address,
// FI_SOCKADDR_IB; msgEntries leaves it out (fi cannot print that format).
func msgEntries() ([]*fi.Info, error) {
	devs, err := queryDevices(defTxSize, defRxSize, defTxIOVLimit, defRxIOVLimit, defInlineSize)
	if err != nil {
		return nil, err
	}
	addrs, err := rdmaAddrs()
	if err != nil {
		return nil, err
	}
	var out []*fi.Info
	for _, d := range devs {
		if !d.portActive {
			continue // vrb_get_device_attrs: "there are no active ports"
		}
		for _, a := range addrs[d.name] {
			e := newMsgEntry(d)
			e.AddrFormat, e.SrcAddr, err = fi.SockaddrFromAddrPort(netip.AddrPortFrom(a, 0))
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// newMsgEntry returns an FI_EP_MSG entry of device d without an address
// (vrb_alloc_info with verbs_msg_domain, vrb_get_device_attrs, then
// vrb_set_default_info).
func newMsgEntry(d devAttrs) *fi.Info {
	e := &fi.Info{
		Caps: msgCaps,
		Mode: fi.ModeRxCQData,
		TxAttr: &fi.TxAttr{
			Caps: msgTxCaps, MsgOrder: msgOrder, CompOrder: fi.OrderStrict,
			Size:        withDefault(d.maxQPWR, defTxSize),
			IOVLimit:    withDefault(d.maxSGE, defTxIOVLimit),
			RMAIOVLimit: withDefault(1, defTxIOVLimit),
		},
		RxAttr: &fi.RxAttr{
			Caps: msgRxCaps, Mode: fi.ModeRxCQData, MsgOrder: msgOrder,
			CompOrder: fi.OrderStrict | fi.OrderData,
			Size:      withDefault(minNonZero(d.maxQPWR, d.maxSRQWR), defRxSize),
			IOVLimit:  withDefault(minNonZero(d.maxSGE, d.maxSRQSGE), defRxIOVLimit),
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeMsg, Protocol: fi.ProtoRDMACMIBRC, ProtocolVersion: 1,
			MaxMsgSize: int(d.maxMsgSz), MaxOrderRAWSize: int(d.maxMsgSz), MaxOrderWAWSize: int(d.maxMsgSz),
			TxCtxCnt: 1, RxCtxCnt: 1,
		},
		DomainAttr: &fi.DomainAttr{
			Name: d.name, Threading: fi.ThreadSafe,
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressAuto,
			ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec, MRMode: msgMRMode,
			MRKeySize: mrKeySize, CQDataSize: cqDataSize,
			CQCnt: d.maxCQ, EPCnt: d.maxQP,
			TxCtxCnt: min(msgCtxCnt, d.maxQP), RxCtxCnt: min(msgCtxCnt, d.maxQP),
			MaxEPTxCtx: min(msgCtxCnt, d.maxQP), MaxEPRxCtx: min(msgCtxCnt, d.maxQP),
			MaxEPSrxCtx: d.maxSRQ, MRIOVLimit: 1, Caps: msgDomainCaps,
			MaxErrData: maxErrData, MRCnt: d.maxMR,
		},
		FabricAttr: &fi.FabricAttr{
			Name:     fmt.Sprintf("IB-0x%x", d.subnetPrefix),
			ProvName: provName, ProvVersion: provVersion, APIVersion: fi.APIVersion,
		},
		NIC: nicOf(d),
	}
	if d.maxInline >= 0 {
		e.TxAttr.InjectSize = min(d.maxInline, defInlineSize)
	}
	if d.iwarp {
		e.FabricAttr.Name = iwarpFabric
		e.EPAttr.Protocol = fi.ProtoIWARP
		e.DomainAttr.CQDataSize = 0
	}
	return e
}

// nicOf returns the entry's NIC: the device's identity from
// ibv_query_device and the active port's link from ibv_query_port
// (vrb_get_device_attrs, vrb_speed, vrb_pstate_2_lstate,
// vrb_link_layer_str).
func nicOf(d devAttrs) *fi.NIC {
	n := &fi.NIC{
		DeviceName:    d.name,
		DeviceID:      fmt.Sprintf("0x%04x", d.vendorPartID),
		DeviceVersion: fmt.Sprint(d.hwVer),
		VendorID:      fmt.Sprintf("0x%04x", d.vendorID),
		Firmware:      d.fwVer,
		MTU:           d.activeMTU,
		Speed:         linkSpeed(d.activeSpeed, d.activeWidth),
		NetworkType:   "Unknown",
	}
	if d.portActive {
		n.LinkState = fi.LinkUp // vrb_pstate_2_lstate(IBV_PORT_ACTIVE)
	}
	switch {
	case d.ethernet:
		n.NetworkType = "Ethernet"
	case d.infiniband:
		n.NetworkType = "InfiniBand"
	}
	return n
}

// linkSpeed is a port's speed in bits per second from its active_speed and
// active_width codes (ofi_vrb_speed in libfabric 1.17: per-lane 2.5, 5, 8,
// 14 or 25 Gb/s times 1, 4, 8 or 12 lanes; 0 for other codes).
func linkSpeed(speed, width uint8) int {
	const gbit = 1000 * 1000 * 1000
	var s, w int
	switch speed {
	case 1:
		s = gbit * 5 / 2
	case 2:
		s = 5 * gbit
	case 4, 8:
		s = 8 * gbit
	case 16:
		s = 14 * gbit
	case 32:
		s = 25 * gbit
	}
	switch width {
	case 1:
		w = 1
	case 2:
		w = 4
	case 4:
		w = 8
	case 8:
		w = 12
	}
	return s * w
}

// withDefault is vrb_set_default_attr: the provider's default, unless the
// device supports less, then the device's value.
func withDefault(dev, def int) int {
	if def > dev {
		return dev
	}
	return def
}

// minNonZero is MIN(a, b), or a when the device reports b as 0 (the
// receive side's sizes when the device has no shared receive queues).
func minNonZero(a, b int) int {
	if b == 0 {
		return a
	}
	return min(a, b)
}

// rdmaAddrs maps RDMA device names to their IP addresses, as
// vrb_getifaddrs finds them: the addresses of the interfaces that are up,
// except "lo", that rdma_bind_addr puts on a device, in getifaddrs'
// order (the IPv4 addresses of every interface by index, then the IPv6
// ones). IPv6 link-local addresses carry their interface as zone, as C
// appends "%ifname" before rdma_getaddrinfo.
func rdmaAddrs() (map[string][]netip.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := map[string][]netip.Addr{}
	for _, v4 := range []bool{true, false} {
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagUp == 0 || ifc.Name == "lo" {
				continue
			}
			as, err := ifc.Addrs()
			if err != nil {
				continue
			}
			for _, a := range as {
				p, err := netip.ParsePrefix(a.String())
				if err != nil || p.Addr().Is4() != v4 {
					continue
				}
				ip := p.Addr()
				if ip.Is6() && ip.IsLinkLocalUnicast() {
					ip = ip.WithZone(ifc.Name)
				}
				dev, err := rdmaDeviceOf(netip.AddrPortFrom(ip, 0))
				if err != nil {
					continue // vrb_ifa_rdma_info failed: not an RDMA address
				}
				out[dev] = append(out[dev], ip)
			}
		}
	}
	return out, nil
}
