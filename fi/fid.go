package fi

import "strings"

// Fid is the base of every fabric object (struct fid): all it requires is
// Close, which mirrors fi_close(3).
//
// Close is idempotent: while other objects are bound to the object or
// opened on it, it closes nothing and returns an error with EBUSY in its
// chain that says which kinds are still open and how many ("tcp: close
// domain: 2 endpoints and 1 cq still open"; compare with errors.Is); it
// returns nil when it closes the object, and EBADF on every later call.
// Close waits for every goroutine the object started.
type Fid interface {
	Close() error
}

// Fabric is an opened fabric (struct fid_fabric; fi_fabric(3)). Event
// queues and passive endpoints are opened from a fabric through eq.OpenEQ
// and ep.OpenPassive, which find the optional opener interfaces those
// packages define.
type Fabric interface {
	Fid
	// OpenDomain opens a domain of this fabric described by info
	// (fi_domain(3)).
	OpenDomain(info *Info) (Domain, error)
}

// Domain is an opened access domain (struct fid_domain; fi_domain(3)).
// Optional abilities (AVs, MRs, CQs, counters, endpoints) are separate
// interfaces found by the package-level openers: [OpenAV], [RegisterMR],
// eq.OpenCQ, eq.OpenCounter, ep.Open.
type Domain interface {
	Fid
	// Info returns the Info the domain was opened with.
	Info() *Info
}

// AVAttr mirrors struct fi_av_attr (fi_av(3)).
type AVAttr struct {
	Type AVType
	// Count is the number of addresses expected; zero lets the provider
	// choose.
	Count int
	// Flags are AV flags (FI_SYMMETRIC...).
	Flags Flags
}

// AV is an address vector (struct fid_av; fi_av(3)): a table mapping peer
// addresses to the Addr values data-transfer calls take.
//
// Implementations are safe for concurrent use.
type AV interface {
	Fid
	// Insert adds addresses (each in the domain's address format) and
	// returns their Addr values in order; an address that cannot be
	// inserted gets AddrUnspec and the first error is returned
	// (fi_av_insert).
	Insert(addrs [][]byte, flags Flags) ([]Addr, error)
	// InsertSvc inserts the address node and service name
	// (fi_av_insertsvc).
	InsertSvc(node, service string, flags Flags) (Addr, error)
	// Remove removes addresses (fi_av_remove).
	Remove(addrs []Addr, flags Flags) error
	// Lookup copies the address behind addr into buf and returns the
	// address's full length; if buf is too short the address is truncated
	// and ETOOSMALL is returned (fi_av_lookup).
	Lookup(addr Addr, buf []byte) (int, error)
	// StrAddr formats an address of this AV's format for people
	// (fi_av_straddr).
	StrAddr(addr []byte) string
}

// AVOpener is implemented by domains that open address vectors.
type AVOpener interface {
	OpenAV(attr *AVAttr) (AV, error)
}

// OpenAV opens an address vector on d (fi_av_open). It returns ENOSYS when
// the domain has no address vectors.
func OpenAV(d Domain, attr *AVAttr) (AV, error) {
	o, ok := d.(AVOpener)
	if !ok {
		return nil, wrapf(ENOSYS, "fi: open av: domain %T has no address vectors", d)
	}
	if attr == nil {
		attr = &AVAttr{}
	}
	return o.OpenAV(attr)
}

// MRAttr describes a memory registration (struct fi_mr_attr; fi_mr(3)).
type MRAttr struct {
	// Buf is the memory to register. It must stay reachable and must not
	// move for the registration's lifetime: register memory the Go
	// runtime does not move (any heap slice qualifies in the gc runtime).
	Buf    []byte
	Access Access
	// Offset is the MR's offset for FI_MR_VIRT_ADDR-less RMA addressing.
	Offset uint64
	// RequestedKey is the key asked for when the provider does not assign
	// keys itself (FI_MR_PROV_KEY not set).
	RequestedKey uint64
	// Context is the user context reported with MR events.
	Context any
}

// MR is a memory region (struct fid_mr; fi_mr(3)).
type MR interface {
	Fid
	// Key is the remote protection key peers use (fi_mr_key).
	Key() uint64
	// Desc is the local descriptor passed to data-transfer calls
	// (fi_mr_desc).
	Desc() any
}

// MRRegistrar is implemented by domains that register memory.
type MRRegistrar interface {
	RegisterMR(attr *MRAttr, flags Flags) (MR, error)
}

// RegisterMR registers memory with d (fi_mr_regattr). It returns ENOSYS when
// the domain does not register memory.
func RegisterMR(d Domain, attr *MRAttr, flags Flags) (MR, error) {
	o, ok := d.(MRRegistrar)
	if !ok {
		return nil, wrapf(ENOSYS, "fi: register mr: domain %T does not register memory", d)
	}
	if attr == nil {
		return nil, wrapf(EINVAL, "fi: register mr: nil attributes")
	}
	return o.RegisterMR(attr, flags)
}

// OpenFabric opens the fabric described by info.FabricAttr with the provider
// it names (fi_fabric(3)). A layered name ("tcp;ofi_rxm") goes, as in C's
// fi_fabric, to the provider registered under the whole name, else to the
// one registered under its last component (the utility provider on top,
// "ofi_rxm", which opens what it layers over itself), else to the one
// registered under its first (the core, "tcp"). The provider gets
// info.FabricAttr as it is, layered name included.
func OpenFabric(info *Info) (Fabric, error) {
	if info == nil || info.FabricAttr == nil {
		return nil, wrapf(EINVAL, "fi: open fabric: info has no fabric attributes")
	}
	full := info.FabricAttr.ProvName
	top := full[strings.LastIndex(full, ";")+1:]
	for _, name := range []string{full, top, CoreProviderName(full)} {
		if p, ok := lookupProvider(name); ok {
			return p.OpenFabric(info.FabricAttr)
		}
	}
	return nil, wrapf(ENODATA, "fi: open fabric: no provider %q registered", full)
}
