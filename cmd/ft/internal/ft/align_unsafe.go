package ft

import "unsafe"

// uintptrOf returns the address of b's first byte, to align a buffer on a
// page (-l). b must not be empty.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
