//go:build cgo && linux

package main

/*
#include "bridge.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/gofabric/gofabric/fi"
)

// struct fi_info conversions, both ways. Sizes: gofabric writes
// "unlimited" as math.MaxInt, C as SIZE_MAX. Addresses: FI_ADDR_STR
// addresses carry their terminating NUL in C (and in addrlen), not in Go.

// goSize converts a C size.
func goSize(v C.size_t) int {
	if uint64(v) > math.MaxInt {
		return math.MaxInt
	}
	return int(v)
}

// cSize converts a Go size.
func cSize(v int) C.size_t {
	if v == math.MaxInt || v < 0 {
		return ^C.size_t(0)
	}
	return C.size_t(v)
}

// addrFromC copies an address of format f from C.
func addrFromC(f fi.AddrFormat, p unsafe.Pointer, n C.size_t) []byte {
	b := bytesAt(p, uintptr(n))
	if b == nil {
		return nil
	}
	if f == fi.FormatStr {
		for i, c := range b {
			if c == 0 {
				b = b[:i]
				break
			}
		}
	}
	return append([]byte(nil), b...)
}

// strAddrAt returns the FI_ADDR_STR address at p: the bytes before its
// NUL, at most max of them.
func strAddrAt(p unsafe.Pointer, max int) []byte {
	if p == nil {
		return nil
	}
	n := int(C.strnlen((*C.char)(p), C.size_t(max)))
	return unsafe.Slice((*byte)(p), n)
}

// addrLenC returns how many bytes the address b of format f takes in C.
func addrLenC(f fi.AddrFormat, b []byte) int {
	if f == fi.FormatStr {
		return len(b) + 1
	}
	return len(b)
}

// copyAddrC copies the address b of format f into the C buffer p of
// size n, truncating, and returns the full size it needs.
func copyAddrC(f fi.AddrFormat, b []byte, p unsafe.Pointer, n int) int {
	need := addrLenC(f, b)
	if p != nil && n > 0 {
		dst := unsafe.Slice((*byte)(p), n)
		k := copy(dst, b)
		if f == fi.FormatStr {
			if k == n {
				k--
			}
			dst[k] = 0
		}
	}
	return need
}

// addrToC returns a malloc'ed C copy of the address b of format f.
func addrToC(f fi.AddrFormat, b []byte) (unsafe.Pointer, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	n := addrLenC(f, b)
	p := C.calloc(1, C.size_t(n))
	if p == nil {
		return nil, 0
	}
	copyAddrC(f, b, p, n)
	return p, C.size_t(n)
}

// cBytes returns a malloc'ed copy of b (nil for none).
func cBytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(C.CBytes(b)), C.size_t(len(b))
}

// cStr returns a malloc'ed C string (nil for "").
func cStr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// infoFromC converts a C fi_info (hints, or the info an object is opened
// with) into gofabric's. Provider names are translated to gofabric's;
// fi_info.handle must be one of this library's connection requests or
// passive endpoints.
func infoFromC(c *C.struct_fi_info, s *slot, hints bool) (*fi.Info, error) {
	if c == nil {
		return nil, nil
	}
	g := &fi.Info{Caps: fi.Caps(c.caps), Mode: fi.Mode(c.mode), AddrFormat: fi.AddrFormat(c.addr_format)}
	g.SrcAddr = addrFromC(g.AddrFormat, c.src_addr, c.src_addrlen)
	g.DestAddr = addrFromC(g.AddrFormat, c.dest_addr, c.dest_addrlen)
	if c.handle != nil {
		switch {
		case C.gfi_handle(c.handle, C.FI_CLASS_CONNREQ) != 0:
			g.Handle = objOf(uintptr(C.gfi_handle(c.handle, C.FI_CLASS_CONNREQ))).(*connReqObj).handle
		case C.gfi_handle(c.handle, C.FI_CLASS_PEP) != 0:
			g.Handle = objOf(uintptr(C.gfi_handle(c.handle, C.FI_CLASS_PEP))).(*pepObj).p
		case !hints:
			return nil, badArg("fi_info.handle %p is not a connection request of this provider", c.handle)
		}
	}
	if t := c.tx_attr; t != nil {
		g.TxAttr = &fi.TxAttr{
			Caps: fi.Caps(t.caps), Mode: fi.Mode(t.mode), OpFlags: fi.Flags(t.op_flags),
			MsgOrder: fi.MsgOrder(t.msg_order), CompOrder: fi.MsgOrder(t.comp_order),
			InjectSize: goSize(t.inject_size), Size: goSize(t.size), IOVLimit: goSize(t.iov_limit),
			RMAIOVLimit: goSize(t.rma_iov_limit), TClass: fi.TrafficClass(t.tclass),
		}
	}
	if r := c.rx_attr; r != nil {
		g.RxAttr = &fi.RxAttr{
			Caps: fi.Caps(r.caps), Mode: fi.Mode(r.mode), OpFlags: fi.Flags(r.op_flags),
			MsgOrder: fi.MsgOrder(r.msg_order), CompOrder: fi.MsgOrder(r.comp_order),
			TotalBufferedRecv: goSize(r.total_buffered_recv), Size: goSize(r.size), IOVLimit: goSize(r.iov_limit),
		}
	}
	if e := c.ep_attr; e != nil {
		g.EPAttr = &fi.EPAttr{
			Type: fi.EPType(e._type), Protocol: fi.Protocol(e.protocol), ProtocolVersion: uint32(e.protocol_version),
			MaxMsgSize: goSize(e.max_msg_size), MsgPrefixSize: goSize(e.msg_prefix_size),
			MaxOrderRAWSize: goSize(e.max_order_raw_size), MaxOrderWARSize: goSize(e.max_order_war_size),
			MaxOrderWAWSize: goSize(e.max_order_waw_size), MemTagFormat: uint64(e.mem_tag_format),
			TxCtxCnt: goSize(e.tx_ctx_cnt), RxCtxCnt: goSize(e.rx_ctx_cnt),
			AuthKey: append([]byte(nil), bytesAt(unsafe.Pointer(e.auth_key), uintptr(e.auth_key_size))...),
		}
	}
	if d := c.domain_attr; d != nil {
		g.DomainAttr = &fi.DomainAttr{
			Name: goStr(d.name), Threading: fi.Threading(d.threading),
			ControlProgress: fi.Progress(d.control_progress), DataProgress: fi.Progress(d.data_progress),
			ResourceMgmt: fi.ResourceMgmt(d.resource_mgmt), AVType: fi.AVType(d.av_type), MRMode: fi.MRMode(d.mr_mode),
			MRKeySize: goSize(d.mr_key_size), CQDataSize: goSize(d.cq_data_size), CQCnt: goSize(d.cq_cnt),
			EPCnt: goSize(d.ep_cnt), TxCtxCnt: goSize(d.tx_ctx_cnt), RxCtxCnt: goSize(d.rx_ctx_cnt),
			MaxEPTxCtx: goSize(d.max_ep_tx_ctx), MaxEPRxCtx: goSize(d.max_ep_rx_ctx),
			MaxEPStxCtx: goSize(d.max_ep_stx_ctx), MaxEPSrxCtx: goSize(d.max_ep_srx_ctx),
			CntrCnt: goSize(d.cntr_cnt), MRIOVLimit: goSize(d.mr_iov_limit), Caps: fi.Caps(d.caps),
			Mode: fi.Mode(d.mode), MaxErrData: goSize(d.max_err_data), MRCnt: goSize(d.mr_cnt),
			TClass:  fi.TrafficClass(d.tclass),
			AuthKey: append([]byte(nil), bytesAt(unsafe.Pointer(d.auth_key), uintptr(d.auth_key_size))...),
		}
		if d.domain != nil {
			if h := C.gfi_handle(&d.domain.fid, C.FI_CLASS_DOMAIN); h != 0 {
				g.DomainAttr.Domain = objOf(uintptr(h)).(*domainObj).d
			} else if !hints {
				return nil, badArg("domain_attr.domain %p is not a domain of this provider", d.domain)
			}
		}
		if !hints {
			g.DomainAttr.MRMode = mrFromV1(g.DomainAttr.MRMode)
		}
		if len(g.DomainAttr.AuthKey) == 0 {
			g.DomainAttr.AuthKey = nil
		}
	}
	if g.EPAttr != nil && len(g.EPAttr.AuthKey) == 0 {
		g.EPAttr.AuthKey = nil
	}
	if f := c.fabric_attr; f != nil {
		g.FabricAttr = &fi.FabricAttr{
			Name: goStr(f.name), ProvName: s.goProvName(goStr(f.prov_name)),
			ProvVersion: fi.Version(f.prov_version), APIVersion: fi.Version(f.api_version),
		}
		if f.fabric != nil {
			if h := C.gfi_handle(&f.fabric.fid, C.FI_CLASS_FABRIC); h != 0 {
				g.FabricAttr.Fabric = objOf(uintptr(h)).(*fabricObj).f
			} else if !hints {
				return nil, badArg("fabric_attr.fabric %p is not a fabric of this provider", f.fabric)
			}
		}
	}
	if n := c.nic; n != nil {
		g.NIC = &fi.NIC{}
		if d := n.device_attr; d != nil {
			g.NIC.DeviceName, g.NIC.DeviceID, g.NIC.DeviceVersion = goStr(d.name), goStr(d.device_id), goStr(d.device_version)
			g.NIC.VendorID, g.NIC.Driver, g.NIC.Firmware = goStr(d.vendor_id), goStr(d.driver), goStr(d.firmware)
		}
		if l := n.link_attr; l != nil {
			g.NIC.LinkAddress, g.NIC.MTU, g.NIC.Speed = goStr(l.address), goSize(l.mtu), goSize(l.speed)
			g.NIC.LinkState, g.NIC.NetworkType = fi.LinkState(l.state), goStr(l.network_type)
		}
	}
	return g, nil
}

// infoToC builds a C fi_info (fi_allocinfo: the caller, or the
// application through fi_freeinfo, frees it) from gofabric's. getinfo
// entries leave fabric_attr.prov_name unset for the core to fill; event
// entries (FI_CONNREQ) carry it, the API version of fab, and handle.
func infoToC(g *fi.Info, s *slot, event bool, fab *fabricObj, handle *C.struct_fid) *C.struct_fi_info {
	c := C.gfi_allocinfo()
	if c == nil {
		return nil
	}
	c.caps, c.mode, c.addr_format = C.uint64_t(g.Caps), C.uint64_t(g.Mode), C.uint32_t(g.AddrFormat)
	c.src_addr, c.src_addrlen = addrToC(g.AddrFormat, g.SrcAddr)
	c.dest_addr, c.dest_addrlen = addrToC(g.AddrFormat, g.DestAddr)
	c.handle = handle
	if t := g.TxAttr; t != nil {
		a := c.tx_attr
		a.caps, a.mode, a.op_flags = C.uint64_t(t.Caps), C.uint64_t(t.Mode), C.uint64_t(t.OpFlags)
		a.msg_order, a.comp_order = C.uint64_t(t.MsgOrder), C.uint64_t(t.CompOrder)
		a.inject_size, a.size, a.iov_limit = cSize(t.InjectSize), cSize(t.Size), cSize(t.IOVLimit)
		a.rma_iov_limit, a.tclass = cSize(t.RMAIOVLimit), C.uint32_t(t.TClass)
	}
	if r := g.RxAttr; r != nil {
		a := c.rx_attr
		a.caps, a.mode, a.op_flags = C.uint64_t(r.Caps), C.uint64_t(r.Mode), C.uint64_t(r.OpFlags)
		a.msg_order, a.comp_order = C.uint64_t(r.MsgOrder), C.uint64_t(r.CompOrder)
		a.total_buffered_recv, a.size, a.iov_limit = cSize(r.TotalBufferedRecv), cSize(r.Size), cSize(r.IOVLimit)
	}
	if e := g.EPAttr; e != nil {
		a := c.ep_attr
		a._type, a.protocol, a.protocol_version = C.enum_fi_ep_type(e.Type), C.uint32_t(e.Protocol), C.uint32_t(e.ProtocolVersion)
		a.max_msg_size, a.msg_prefix_size = cSize(e.MaxMsgSize), cSize(e.MsgPrefixSize)
		a.max_order_raw_size, a.max_order_war_size = cSize(e.MaxOrderRAWSize), cSize(e.MaxOrderWARSize)
		a.max_order_waw_size, a.mem_tag_format = cSize(e.MaxOrderWAWSize), C.uint64_t(e.MemTagFormat)
		a.tx_ctx_cnt, a.rx_ctx_cnt = cSize(e.TxCtxCnt), cSize(e.RxCtxCnt)
		a.auth_key, a.auth_key_size = cBytes(e.AuthKey)
	}
	if d := g.DomainAttr; d != nil {
		a := c.domain_attr
		a.name, a.threading = cStr(d.Name), C.enum_fi_threading(d.Threading)
		a.control_progress, a.data_progress = C.enum_fi_progress(d.ControlProgress), C.enum_fi_progress(d.DataProgress)
		a.resource_mgmt, a.av_type = C.enum_fi_resource_mgmt(d.ResourceMgmt), C.enum_fi_av_type(d.AVType)
		a.mr_mode, a.mr_key_size, a.cq_data_size = C.int(d.MRMode), cSize(d.MRKeySize), cSize(d.CQDataSize)
		a.cq_cnt, a.ep_cnt, a.tx_ctx_cnt, a.rx_ctx_cnt = cSize(d.CQCnt), cSize(d.EPCnt), cSize(d.TxCtxCnt), cSize(d.RxCtxCnt)
		a.max_ep_tx_ctx, a.max_ep_rx_ctx = cSize(d.MaxEPTxCtx), cSize(d.MaxEPRxCtx)
		a.max_ep_stx_ctx, a.max_ep_srx_ctx = cSize(d.MaxEPStxCtx), cSize(d.MaxEPSrxCtx)
		a.cntr_cnt, a.mr_iov_limit, a.caps = cSize(d.CntrCnt), cSize(d.MRIOVLimit), C.uint64_t(d.Caps)
		a.mode, a.max_err_data, a.mr_cnt, a.tclass = C.uint64_t(d.Mode), cSize(d.MaxErrData), cSize(d.MRCnt), C.uint32_t(d.TClass)
		a.auth_key, a.auth_key_size = cBytes(d.AuthKey)
	}
	if f := g.FabricAttr; f != nil {
		c.fabric_attr.name = cStr(f.Name)
		// prov_name stays NULL in a core provider's getinfo entries: the
		// core sets it to the DL provider's name (and asserts it unset
		// for core providers); ofi_gorxm's name their core, to which the
		// core appends ";ofi_gorxm".
		if n := s.cProvName(f.ProvName, event); n != "" {
			c.fabric_attr.prov_name = cStr(n)
		}
		if event {
			c.fabric_attr.prov_version = C.uint32_t(s.version)
			if fab != nil {
				c.fabric_attr.api_version = C.uint32_t(fab.apiVersion())
			}
		}
	}
	if n := g.NIC; n != nil {
		c.nic = nicToC(n)
	}
	return c
}

// nicToC builds a struct fid_nic (bridge.c's, which fi_freeinfo closes and
// fi_dupinfo duplicates).
func nicToC(n *fi.NIC) *C.struct_fid_nic {
	strs := []*C.char{cStr(n.DeviceName), cStr(n.DeviceID), cStr(n.DeviceVersion), cStr(n.VendorID),
		cStr(n.Driver), cStr(n.Firmware), cStr(n.LinkAddress), cStr(n.NetworkType)}
	defer func() {
		for _, s := range strs {
			freeC(unsafe.Pointer(s))
		}
	}()
	return C.gfi_nic_new(strs[0], strs[1], strs[2], strs[3], strs[4], strs[5], strs[6],
		cSize(n.MTU), cSize(n.Speed), C.int(n.LinkState), strs[7])
}
