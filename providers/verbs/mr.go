//go:build verbs && cgo

package verbs

import (
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// mrAccessAll is what a provider buffer allows: local writes (receives,
// RDMA read results) and the peer's RDMA writes and reads.
const mrAccessAll = accessLocalWrite | accessRemoteWrite | accessRemoteRead

// mr is a registered buffer (ibv_reg_mr): anonymous mmap'd memory,
// outside the Go heap, so that the device and C may keep its address.
type mr struct {
	buf        []byte // the mapping
	m          mrC
	lkey, rkey uint32
}

// registerMR maps size bytes and registers them with pd (mmap,
// ibv_reg_mr) for access, a set of the access* flags.
func registerMR(pd pdC, size, access int) (*mr, error) {
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, errors.Wrapf(fi.Code(err), "verbs: mmap %d bytes: %v", size, err)
	}
	m, err := regMR(pd, unsafe.Pointer(&buf[0]), size, access)
	if err != nil {
		_ = unix.Munmap(buf)
		return nil, err
	}
	r := &mr{buf: buf, m: m}
	r.lkey, r.rkey = mrKeys(m)
	return r, nil
}

// bytes is the registered memory as a Go slice; it is invalid after close.
func (r *mr) bytes() []byte { return r.buf }

// addr is the address of the buffer's byte off, as the device sees it
// (ibv_sge.addr, and remote_addr for the peer).
func (r *mr) addr(off int) uint64 { return uint64(uintptr(unsafe.Pointer(&r.buf[0]))) + uint64(off) }

// span checks that [off, off+n) lies in the buffer.
func (r *mr) span(off, n int) error {
	if off < 0 || n < 0 || off+n > len(r.buf) {
		return errors.Wrapf(fi.EINVAL, "verbs: [%d, %d) outside a %d-byte MR", off, off+n, len(r.buf))
	}
	return nil
}

// close deregisters and unmaps the buffer (ibv_dereg_mr, munmap); a
// second call does nothing.
func (r *mr) close() error {
	if r.m == nil {
		return nil
	}
	err := deregMR(r.m)
	if err == nil {
		err = unix.Munmap(r.buf)
	}
	r.m, r.buf = nil, nil
	return err
}
