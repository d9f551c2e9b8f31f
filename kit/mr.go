package kit

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// validAccess are the access bits an MR may be registered with.
const validAccess = fi.AccessRead | fi.AccessWrite | fi.AccessRecv | fi.AccessSend |
	fi.AccessRemoteRead | fi.AccessRemoteWrite

// MRTable is a domain's table of memory regions (libfabric's util MR map):
// it hands out keys and vets every remote access against the region's key,
// range and access rights, so that a peer reaches only memory it was
// granted.
//
// MRTable is safe for concurrent use; Verify takes a read lock and does not
// allocate.
type MRTable struct {
	// provKey: the table assigns keys (FI_MR_PROV_KEY); otherwise the
	// application's requested key is used.
	provKey bool
	// virtAddr: remote addresses are the region's virtual addresses
	// (FI_MR_VIRT_ADDR); otherwise they are offsets from MRAttr.Offset.
	virtAddr bool

	mu      sync.RWMutex   // guards regions and nextKey
	regions map[uint64]*MR // key -> region
	nextKey uint64
}

// NewMRTable returns an empty table for a domain with MR mode mode.
func NewMRTable(mode fi.MRMode) *MRTable {
	return &MRTable{
		provKey:  mode&(fi.MRModeProvKey|fi.MRModeBasic) != 0,
		virtAddr: mode&(fi.MRModeVirtAddr|fi.MRModeBasic) != 0,
		regions:  make(map[uint64]*MR),
		nextKey:  1,
	}
}

// MR is a registered memory region; it implements fi.MR. Its Desc is the
// *MR itself.
type MR struct {
	table  *MRTable
	buf    []byte
	access fi.Access
	key    uint64
	// base is the remote address of buf[0]: its virtual address under
	// FI_MR_VIRT_ADDR, else MRAttr.Offset.
	base    uint64
	context any
	closed  atomic.Bool
}

// Register registers attr.Buf (fi_mr_regattr). Access bits outside the
// defined set give fi.EINVAL; a requested key already in use gives
// fi.ENOKEY. Messages start with "register mr:"; RegisterChildMR puts the
// provider's name before them.
func (t *MRTable) Register(attr *fi.MRAttr, flags fi.Flags) (*MR, error) {
	return t.register(attr, flags, false, 0)
}

// Insert records attr.Buf under key, a key chosen elsewhere, whatever the
// table's FI_MR_PROV_KEY mode: a utility provider's record of a region it
// registered with its core provider, under the core's key, so that it can
// vet a peer's access itself (rxm's atomics, as C's rxm keeps its own MR
// map). Errors as Register's; a key already in use gives fi.ENOKEY.
func (t *MRTable) Insert(attr *fi.MRAttr, key uint64) (*MR, error) {
	return t.register(attr, 0, true, key)
}

// register is Register, or Insert under key when keyed.
func (t *MRTable) register(attr *fi.MRAttr, flags fi.Flags, keyed bool, key uint64) (*MR, error) {
	if attr.Access&^validAccess != 0 {
		return nil, errors.Wrapf(fi.EINVAL, "register mr: unknown access bits %#x", uint64(attr.Access&^validAccess))
	}
	if flags != 0 {
		return nil, errors.Wrapf(fi.EBADFLAGS, "register mr: flags %v not supported (want 0)", flags)
	}
	access := attr.Access
	if access == 0 {
		// fi_mr(3): no access flags means every access the domain offers.
		access = validAccess
	}
	m := &MR{table: t, buf: attr.Buf, access: access, context: attr.Context}
	if t.virtAddr {
		m.base = bufAddr(attr.Buf)
	} else {
		m.base = attr.Offset
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.regions == nil {
		return nil, errors.Wrap(fi.EBADF, "register mr: domain closed")
	}
	switch {
	case keyed:
		if t.regions[key] != nil {
			return nil, errors.Wrapf(fi.ENOKEY, "register mr: key %d already in use", key)
		}
		m.key = key
	case t.provKey:
		for t.regions[t.nextKey] != nil {
			t.nextKey++
		}
		m.key = t.nextKey
		t.nextKey++
	default:
		if t.regions[attr.RequestedKey] != nil {
			return nil, errors.Wrapf(fi.ENOKEY, "register mr: key %d already in use", attr.RequestedKey)
		}
		m.key = attr.RequestedKey
	}
	t.regions[m.key] = m
	return m, nil
}

// Verify checks that a peer may access length bytes at remote address addr
// with key and access (fi.AccessRemoteRead or fi.AccessRemoteWrite) and
// returns that memory. It returns bare fi.EACCES for an unknown key, an
// out-of-range or overflowing span, or a missing right. It does not
// allocate.
func (t *MRTable) Verify(key, addr uint64, length int, access fi.Access) ([]byte, error) {
	t.mu.RLock()
	m := t.regions[key]
	t.mu.RUnlock()
	if m == nil || m.access&access != access || length < 0 {
		return nil, fi.EACCES
	}
	if addr < m.base {
		return nil, fi.EACCES
	}
	off := addr - m.base
	if off > uint64(len(m.buf)) || uint64(length) > uint64(len(m.buf))-off {
		return nil, fi.EACCES
	}
	return m.buf[off : off+uint64(length) : off+uint64(length)], nil
}

// Len returns the number of registered regions.
func (t *MRTable) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.regions)
}

// Close unregisters every region; later registrations fail with EBADF.
func (t *MRTable) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.regions {
		m.closed.Store(true)
	}
	t.regions = nil
}

// Key implements fi.MR (fi_mr_key).
func (m *MR) Key() uint64 { return m.key }

// Desc implements fi.MR (fi_mr_desc): the *MR itself.
func (m *MR) Desc() any { return m }

// Buf returns the registered memory.
func (m *MR) Buf() []byte { return m.buf }

// Access returns the region's access rights.
func (m *MR) Access() fi.Access { return m.access }

// Base returns the remote address of the region's first byte.
func (m *MR) Base() uint64 { return m.base }

// Context returns the context the region was registered with.
func (m *MR) Context() any { return m.context }

// Close implements fi.Fid (fi_close): it unregisters the region, after
// which peers can no longer reach it. Later calls return fi.EBADF.
func (m *MR) Close() error {
	if m.closed.Swap(true) {
		return fi.EBADF
	}
	m.table.mu.Lock()
	if m.table.regions != nil && m.table.regions[m.key] == m {
		delete(m.table.regions, m.key)
	}
	m.table.mu.Unlock()
	return nil
}

var _ fi.MR = (*MR)(nil)
