package kit

import "unsafe"

// bufAddr returns the virtual address of b's first byte, the remote address
// of a region under FI_MR_VIRT_ADDR. Go's garbage collector does not move
// heap objects, so the address is stable while the region holds b.
func bufAddr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
