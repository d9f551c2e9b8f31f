package rxm

import "unsafe"

// bufAddr returns the virtual address of b's first byte, what a
// rendezvous descriptor carries when the core addresses registered
// memory by virtual address (FI_MR_VIRT_ADDR). b is not empty.
func bufAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
