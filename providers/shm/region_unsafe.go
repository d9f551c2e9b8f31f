//go:build linux

package shm

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory ordering. Regions are shared between processes through a
// MAP_SHARED mapping; the only synchronisation is the atomic words below,
// whose Go operations are sequentially consistent (at least
// acquire/release, which is what the protocol needs):
//
//   - a ring's producer (the peer) writes a slot, then stores the tail;
//     the consumer (the owner) loads the tail, then reads the slot, then
//     stores the head; the producer loads the head before it reuses a
//     slot. A slot is thus never read while written, nor written while
//     read;
//   - a SAR chunk's busy word is stored 1 by the producer after it filled
//     the chunk (and before the slot that names it is published), and
//     stored 0 by the consumer after it copied the chunk out;
//   - claim words are claimed with compare-and-swap; an entry is used
//     only after its ready word is 1, stored last by the claimer;
//   - the magic word is stored last by the owner when it creates the
//     region and cleared first when it closes it.
//
// Every word is 8-byte aligned (offsets are multiples of 8 from a
// page-aligned mapping), as sync/atomic requires.

// word64 returns the 64-bit word at offset off of the mapping.
func (r *region) word64(off int) *atomic.Uint64 {
	_ = r.mem[off+7]
	return (*atomic.Uint64)(unsafe.Pointer(&r.mem[off]))
}

// word32 returns the 32-bit word at offset off of the mapping.
func (r *region) word32(off int) *atomic.Uint32 {
	_ = r.mem[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&r.mem[off]))
}

// retireMem replaces the mapping mem, in place, by private zero pages
// (mmap MAP_FIXED): from then on nothing reaches the shared file through
// those addresses, and a late reader finds zeros there.
func retireMem(mem []byte) error {
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&mem[0]), uintptr(len(mem)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	return err
}

// bufAddr returns the virtual address of b's first byte (0 for an empty
// slice), which a peer uses with process_vm_readv/writev. Go's collector
// does not move heap objects; the endpoint keeps b referenced until the
// operation completes.
func bufAddr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

// bufAddr64 returns the address of a probe word pair.
func bufAddr64(p *[2]uint64) uint64 { return uint64(uintptr(unsafe.Pointer(p))) }

// bytesOf returns the bytes of a probe word pair.
func bytesOf(p *[2]uint64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), 16) }
