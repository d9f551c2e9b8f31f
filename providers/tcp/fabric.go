//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/gofabric/gofabric/kit"
)

// fabric is an opened tcp fabric (struct fid_fabric; fi_fabric(3)): an IP
// subnet, or "TCP-IP" for the wildcard address. It holds the provider's
// parameters as they were when it opened. Safe for concurrent use.
type fabric struct {
	// ref counts the domains and event queues opened on the fabric; Close
	// returns EBUSY while any is open.
	ref    kit.Ref
	attr   fi.FabricAttr
	params params
}

var (
	_ fi.Fabric   = (*fabric)(nil)
	_ eq.EQOpener = (*fabric)(nil)
)

// OpenFabric opens the fabric attr names (fi_fabric(3)): the subnet of an
// interface that is up ("192.0.2.0/24", "127.0.0.1/32") or "TCP-IP". An
// unknown name gives ENODATA, a bad provider parameter EINVAL.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr == nil {
		return nil, errors.Wrap(fi.EINVAL, "tcp: open fabric: nil attributes")
	}
	p, err := loadParams()
	if err != nil {
		return nil, err
	}
	if attr.Name != anyFabricName {
		ifs, err := netif.List("")
		if err != nil {
			return nil, err
		}
		known := false
		for _, a := range ifs {
			known = known || a.FabricName() == attr.Name
		}
		if !known {
			return nil, errors.Wrapf(fi.ENODATA, "tcp: open fabric: no fabric %q: it is the subnet of no interface that is up", attr.Name)
		}
	}
	f := &fabric{attr: *attr, params: p}
	f.attr.Fabric = nil
	f.attr.ProvName, f.attr.ProvVersion = provName, provVersion
	if f.attr.APIVersion == 0 {
		f.attr.APIVersion = fi.APIVersion
	}
	return f, nil
}

// Close closes the fabric (fi_close). While domains, passive endpoints or
// event queues opened on it are open it returns fi.EBUSY, saying which
// ("tcp: close fabric: 1 domain and 1 eq still open"); once closed, bare
// fi.EBADF.
func (f *fabric) Close() error {
	return f.ref.BeginCloseFor("tcp: close fabric", kit.KindPassiveEndpoint)
}

// OpenDomain opens a domain of the fabric (fi_domain(3)) for info, an
// entry GetInfo returned for this fabric.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if info == nil || info.DomainAttr == nil {
		return nil, errors.Wrap(fi.EINVAL, "tcp: open domain: info has no domain attributes")
	}
	if info.FabricAttr != nil && info.FabricAttr.Name != "" && info.FabricAttr.Name != f.attr.Name {
		return nil, errors.Wrapf(fi.EINVAL, "tcp: open domain: info is of fabric %q, not %q", info.FabricAttr.Name, f.attr.Name)
	}
	if t := info.EPAttr; t != nil && t.Type != fi.EPTypeUnspec && t.Type != fi.EPTypeMsg && t.Type != fi.EPTypeRDM {
		return nil, errors.Wrapf(fi.EINVAL, "tcp: open domain: ep type %v not supported (offers FI_EP_MSG and FI_EP_RDM)", t.Type)
	}
	if err := f.ref.AcquireKind(kit.KindDomain); err != nil {
		return nil, errors.Wrap(err, "tcp: open domain: fabric closed")
	}
	return newDomain(f, info), nil
}

// OpenEQ opens an event queue (fi_eq_open): the framework's software EQ,
// which holds a reference on the fabric until it closes.
func (f *fabric) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) {
	q, err := kit.OpenChildEQ(&f.ref, attr, "tcp")
	if err != nil {
		return nil, err
	}
	e := &eventQueue{ChildEQ: q}
	q.SetProgress(e.eps.progress)
	q.SetWaiter(e.eps.wait)
	return e, nil
}

// eventQueue is the fabric's EQ.
type eventQueue struct {
	*kit.ChildEQ
	// eps are the connected endpoints bound to the queue: reading it
	// drives their progress, so that a peer's disconnect becomes an
	// eq.Shutdown event even when nobody reads their CQs.
	eps epSet
}
