//go:build cgo && linux

package main

/*
#cgo LDFLAGS: -lfabric
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"github.com/gofabric/gofabric/fi"
)

// maxSlots and GFI_MAX_PROVS must agree (a negative array length fails
// the build otherwise).
var (
	_ [C.GFI_MAX_PROVS - maxSlots]struct{}
	_ [maxSlots - C.GFI_MAX_PROVS]struct{}
)

// The provider entry points (struct fi_provider): fi_prov_ini's choice of
// provider, getinfo, fabric and cleanup.

// goProvIni picks the provider of this fi_prov_ini call: its slot number,
// or -1 when every provider is registered.
//
//export goProvIni
func goProvIni() (rc C.int) {
	defer recoverInt(&rc, "fi_prov_ini")
	var self string
	if p := C.gfi_self_path(); p != nil {
		self = C.GoString(p)
	}
	s := nextSlot(self)
	if s == nil {
		return -1
	}
	// The name stays allocated: the core keeps the pointer.
	C.gfi_prov_set(C.int(s.index), C.CString(s.cname), C.uint32_t(s.version))
	return C.int(s.index)
}

// goGetinfo is the provider's getinfo (fi_getinfo(3)).
//
//export goGetinfo
func goGetinfo(n C.int, version C.uint32_t, node, service *C.char, flags C.uint64_t,
	hints *C.struct_fi_info, out **C.struct_fi_info) (rc C.int) {
	defer recoverInt(&rc, "fi_getinfo")
	if out == nil {
		return -C.FI_EINVAL
	}
	*out = nil
	s := slotAt(int(n))
	if s == nil {
		return -C.FI_ENODATA
	}
	h, err := infoFromC(hints, s, true)
	if err != nil {
		return -C.int(s.code("getinfo: hints", err))
	}
	infos, err := s.getInfo(fi.Version(version), goStr(node), goStr(service), fi.Flags(flags), h)
	if err != nil {
		return -C.int(s.code("getinfo", err))
	}
	var head, tail *C.struct_fi_info
	for _, g := range infos {
		c := infoToC(g, s, false, nil, nil)
		if c == nil {
			C.fi_freeinfo(head)
			return -C.FI_ENOMEM
		}
		if head == nil {
			head = c
		} else {
			tail.next = c
		}
		tail = c
	}
	*out = head
	return 0
}

// goFabric is the provider's fabric (fi_fabric(3)).
//
//export goFabric
func goFabric(n C.int, attr *C.struct_fi_fabric_attr, out **C.struct_fid_fabric, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_fabric")
	s := slotAt(int(n))
	if s == nil || attr == nil || out == nil {
		return -C.FI_EINVAL
	}
	fa := &fi.FabricAttr{Name: goStr(attr.name), ProvName: s.goName, APIVersion: fi.Version(attr.api_version)}
	if s.util {
		// "gotcp;ofi_gorxm": the layering over the core ("tcp;ofi_rxm").
		fa.ProvName = s.goProvName(goStr(attr.prov_name))
	}
	f, err := s.p.OpenFabric(fa)
	if err != nil {
		return -C.int(s.code("fabric", err))
	}
	o := &fabricObj{slot: s, f: f}
	h := cgo.NewHandle(o)
	c := C.gfi_fabric_new(C.uintptr_t(h), ctx)
	if c == nil {
		h.Delete()
		f.Close()
		return -C.FI_ENOMEM
	}
	o.cfid = unsafe.Pointer(c)
	setCFid(f, unsafe.Pointer(c))
	*out = c
	return 0
}

// goStr copies a C string (nil: "").
func goStr(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// freeC frees C memory (nil is fine).
func freeC(p unsafe.Pointer) {
	if p != nil {
		C.free(p)
	}
}

// recoverInt turns a panic of an entry point into -FI_EOTHER.
func recoverInt[T ~int32 | ~int64](rc *T, op string) {
	if r := recover(); r != nil {
		*rc = -T(panicked(op, r))
	}
}

// apiVersion returns the API version the application opened the fabric
// with (the core stores it in the fabric after fi_fabric).
func (f *fabricObj) apiVersion() fi.Version {
	return fi.Version((*C.struct_fid_fabric)(f.cfid).api_version)
}
