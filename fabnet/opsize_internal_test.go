package fabnet

import (
	"testing"
	"unsafe"
)

// TestOpSize: an op fills a 128-byte size class, so that ops of
// different goroutines never share a cache line.
func TestOpSize(t *testing.T) {
	if n := unsafe.Sizeof(op{}); n != 128 {
		t.Fatalf("op is %d bytes, want 128", n)
	}
}
