package kit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// AV is the software address vector providers share (libfabric's util_av):
// a table from fi.Addr indexes to peer addresses in the domain's format. It
// implements fi.AV.
//
// AV is safe for concurrent use. Lookups from the data path do not
// allocate: Addr takes no lock, Find a read lock.
type AV struct {
	ref    Ref
	prov   string // names the AV in messages: the provider, or "fi"
	typ    fi.AVType
	format fi.AddrFormat
	// validate checks an address before it is inserted; nil accepts any
	// non-empty address.
	validate func([]byte) error

	// version counts the insertions and removals, so that providers can
	// cache what they derived from entries (a peer's connection, a
	// sender's fi.Addr) and know when to look again.
	version atomic.Uint64

	// table is entries for the data path's lookups (Addr), which take
	// no lock: chunks of slots that writers fill and clear under mu.
	table atomic.Pointer[[]*avChunk]

	mu      sync.RWMutex       // guards the fields below
	entries [][]byte           // fi.Addr -> address; nil marks a free slot
	free    []fi.Addr          // free slots, reused by FI_AV_MAP only
	byAddr  map[string]fi.Addr // address bytes -> fi.Addr
}

// avChunkBits sizes the chunks of AV.table: 256 slots.
const avChunkBits = 8

// avChunk is a run of AV.table's slots, each an address or nil.
type avChunk [1 << avChunkBits]atomic.Pointer[[]byte]

// setSlot publishes entry fa (nil for none) to the lock-free table; mu is
// held. The directory of chunks is copied when it grows, so readers see
// either the old one or the new, whole.
func (av *AV) setSlot(fa fi.Addr, a []byte) {
	c := int(uint64(fa) >> avChunkBits)
	var dir []*avChunk
	if p := av.table.Load(); p != nil {
		dir = *p
	}
	if c >= len(dir) {
		if a == nil {
			return
		}
		grown := make([]*avChunk, c+1, max(c+1, 2*len(dir)))
		copy(grown, dir)
		for i := len(dir); i <= c; i++ {
			grown[i] = new(avChunk)
		}
		dir = grown
		av.table.Store(&dir)
	}
	slot := &dir[c][uint64(fa)&(1<<avChunkBits-1)]
	if a == nil {
		slot.Store(nil)
		return
	}
	slot.Store(&a)
}

// NewAV returns an empty address vector of the given attributes. Addresses
// are in format; validate, if non-nil, vets each address on insertion (the
// provider's own address rules). Its messages name the fi package ("fi: av
// remove: ..."); a provider's AV comes from OpenChildAV, whose messages
// name the provider.
func NewAV(attr *fi.AVAttr, format fi.AddrFormat, validate func([]byte) error) *AV {
	return newAV("fi", attr, format, validate)
}

func newAV(prov string, attr *fi.AVAttr, format fi.AddrFormat, validate func([]byte) error) *AV {
	typ := attr.Type
	if typ == fi.AVUnspec {
		typ = fi.AVMap
	}
	n := attr.Count
	if n <= 0 {
		n = 16
	}
	return &AV{
		prov:     prov,
		typ:      typ,
		format:   format,
		validate: validate,
		entries:  make([][]byte, 0, n),
		byAddr:   make(map[string]fi.Addr, n),
	}
}

// Type returns the AV's type (FI_AV_MAP or FI_AV_TABLE).
func (av *AV) Type() fi.AVType { return av.typ }

// Acquire takes a reference for an endpoint bound to the AV; see
// [Referenced].
func (av *AV) Acquire() error { return av.ref.AcquireKind(KindEndpoint) }

// Release drops a reference taken by Acquire.
func (av *AV) Release() { av.ref.ReleaseKind(KindEndpoint) }

// Insert implements fi.AV (fi_av_insert). Inserting an address already
// present returns its existing fi.Addr. Each address that fails validation
// gets fi.AddrUnspec and the first failure is returned.
func (av *AV) Insert(addrs [][]byte, flags fi.Flags) ([]fi.Addr, error) {
	if av.ref.Closed() {
		return nil, fi.EBADF
	}
	out := make([]fi.Addr, len(addrs))
	var first error
	av.mu.Lock()
	defer av.mu.Unlock()
	for i, a := range addrs {
		out[i] = fi.AddrUnspec
		if err := av.check(a); err != nil {
			if first == nil {
				first = errors.Wrapf(err, "%s: av insert: address %d", av.prov, i)
			}
			continue
		}
		out[i] = av.insertLocked(a)
	}
	return out, first
}

func (av *AV) check(a []byte) error {
	if len(a) == 0 {
		return errors.Wrap(fi.EINVAL, "empty address")
	}
	if av.validate != nil {
		return av.validate(a)
	}
	return nil
}

func (av *AV) insertLocked(a []byte) fi.Addr {
	if fa, ok := av.byAddr[string(a)]; ok {
		return fa
	}
	c := append([]byte(nil), a...)
	var fa fi.Addr
	if n := len(av.free); n > 0 && av.typ == fi.AVMap {
		fa = av.free[n-1]
		av.free = av.free[:n-1]
		av.entries[fa] = c
	} else {
		fa = fi.Addr(len(av.entries))
		av.entries = append(av.entries, c)
	}
	av.setSlot(fa, c)
	av.byAddr[string(c)] = fa
	av.version.Add(1)
	return fa
}

// InsertSvc implements fi.AV (fi_av_insertsvc): it resolves node and
// service in the AV's address format and inserts the result.
func (av *AV) InsertSvc(node, service string, flags fi.Flags) (fi.Addr, error) {
	a, err := fi.ResolveAddr(context.Background(), av.format, node, service, flags)
	if err != nil {
		return fi.AddrUnspec, errors.Wrapf(err, "%s: av insertsvc %s:%s", av.prov, node, service)
	}
	out, err := av.Insert([][]byte{a}, flags)
	if err != nil {
		return fi.AddrUnspec, err
	}
	return out[0], nil
}

// Remove implements fi.AV (fi_av_remove). Removing an address that is not
// in the AV returns fi.EINVAL and removes nothing.
func (av *AV) Remove(addrs []fi.Addr, flags fi.Flags) error {
	if av.ref.Closed() {
		return fi.EBADF
	}
	av.mu.Lock()
	defer av.mu.Unlock()
	for _, fa := range addrs {
		if uint64(fa) >= uint64(len(av.entries)) || av.entries[fa] == nil {
			return errors.Wrapf(fi.EINVAL, "%s: av remove: fi_addr %d not in the av", av.prov, uint64(fa))
		}
	}
	for _, fa := range addrs {
		delete(av.byAddr, string(av.entries[fa]))
		av.entries[fa] = nil
		av.setSlot(fa, nil)
		av.free = append(av.free, fa)
	}
	av.version.Add(1)
	return nil
}

// Version returns a number that changes whenever an address is inserted
// or removed: a cache of derived data is valid while it stays the same.
func (av *AV) Version() uint64 { return av.version.Load() }

// Lookup implements fi.AV (fi_av_lookup) with the ETOOSMALL rule.
func (av *AV) Lookup(fa fi.Addr, buf []byte) (int, error) {
	a, ok := av.Addr(fa)
	if !ok {
		if av.ref.Closed() {
			return 0, fi.EBADF
		}
		return 0, errors.Wrapf(fi.EINVAL, "%s: av lookup: fi_addr %d not in the av", av.prov, uint64(fa))
	}
	n := copy(buf, a)
	if n < len(a) {
		return len(a), fi.ETOOSMALL
	}
	return len(a), nil
}

// StrAddr implements fi.AV (fi_av_straddr).
func (av *AV) StrAddr(addr []byte) string { return fi.AddrString(av.format, addr) }

// Addr returns the address behind fa for the data path. The returned
// slice must not be modified. It takes no lock and does not allocate:
// two atomic loads (a read lock's two atomic additions were a tenth of
// udp's work a message beside its system calls).
func (av *AV) Addr(fa fi.Addr) ([]byte, bool) {
	p := av.table.Load()
	if p == nil {
		return nil, false
	}
	dir := *p
	c := uint64(fa) >> avChunkBits
	if c >= uint64(len(dir)) {
		return nil, false
	}
	a := dir[c][uint64(fa)&(1<<avChunkBits-1)].Load()
	if a == nil {
		return nil, false
	}
	return *a, true
}

// Find returns the fi.Addr of addr, or fi.AddrUnspec when addr is not in
// the AV (reverse lookup for FI_SOURCE). It does not allocate.
func (av *AV) Find(addr []byte) fi.Addr {
	av.mu.RLock()
	defer av.mu.RUnlock()
	if fa, ok := av.byAddr[string(addr)]; ok {
		return fa
	}
	return fi.AddrUnspec
}

// Len returns the number of addresses in the AV.
func (av *AV) Len() int {
	av.mu.RLock()
	defer av.mu.RUnlock()
	return len(av.byAddr)
}

// Close implements fi.Fid (fi_close): fi.EBUSY while endpoints are bound,
// wrapped in a message that counts them ("tcp: close av: 1 endpoint still
// bound"), then closes; later calls return bare fi.EBADF.
func (av *AV) Close() error {
	if err := av.ref.beginCloseFor(av.prov+": close av", KindEndpoint, "bound"); err != nil {
		return err
	}
	av.mu.Lock()
	av.entries, av.byAddr, av.free = nil, nil, nil
	av.table.Store(nil)
	av.mu.Unlock()
	return nil
}

var _ fi.AV = (*AV)(nil)
