//go:build linux

package udp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/gofabric/gofabric/kit"
)

// fabric is an opened udp fabric (struct fid_fabric; fi_fabric(3)): an IP
// subnet, or "UDP-IP" for the wildcard address. Safe for concurrent use.
type fabric struct {
	// ref counts the domains and event queues opened on the fabric; Close
	// returns EBUSY while any is open.
	ref  kit.Ref
	attr fi.FabricAttr
}

var (
	_ fi.Fabric   = (*fabric)(nil)
	_ eq.EQOpener = (*fabric)(nil)
)

// OpenFabric opens the fabric attr names (fi_fabric(3)): the subnet of an
// interface that is up ("192.0.2.0/24", "127.0.0.1/32") or "UDP-IP". An
// unknown name gives ENODATA.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr == nil {
		return nil, errors.Wrap(fi.EINVAL, "udp: open fabric: nil attributes")
	}
	if attr.Name != anyFabricName {
		ifs, err := netif.List("")
		if err != nil {
			return nil, errors.Wrap(err, "udp: open fabric")
		}
		known := false
		for _, a := range ifs {
			known = known || a.FabricName() == attr.Name
		}
		if !known {
			return nil, errors.Wrapf(fi.ENODATA, "udp: open fabric: no fabric %q: it is the subnet of no interface that is up", attr.Name)
		}
	}
	f := &fabric{attr: *attr}
	f.attr.Fabric = nil
	f.attr.ProvName, f.attr.ProvVersion = provName, provVersion
	if f.attr.APIVersion == 0 {
		f.attr.APIVersion = fi.APIVersion
	}
	return f, nil
}

// Close closes the fabric (fi_close). While domains or event queues opened
// on it are open it returns fi.EBUSY, saying which ("udp: close fabric: 1
// domain still open"); once closed, bare fi.EBADF.
func (f *fabric) Close() error { return f.ref.BeginCloseFor("udp: close fabric", kit.KindDomain) }

// OpenDomain opens a domain of the fabric (fi_domain(3)) for info, an
// entry GetInfo returned for this fabric.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if info == nil || info.DomainAttr == nil {
		return nil, errors.Wrap(fi.EINVAL, "udp: open domain: info has no domain attributes")
	}
	if info.FabricAttr != nil && info.FabricAttr.Name != "" && info.FabricAttr.Name != f.attr.Name {
		return nil, errors.Wrapf(fi.EINVAL, "udp: open domain: info is of fabric %q, not %q", info.FabricAttr.Name, f.attr.Name)
	}
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeDgram {
		return nil, errors.Wrapf(fi.EINVAL, "udp: open domain: ep type %v not supported (offers FI_EP_DGRAM)", info.EPAttr.Type)
	}
	if err := f.ref.Acquire(); err != nil {
		return nil, errors.Wrap(err, "udp: open domain: fabric closed")
	}
	return &domain{fabric: f, info: info.Clone()}, nil
}

// OpenEQ opens an event queue (fi_eq_open): the framework's software EQ,
// which holds a reference on the fabric until it closes. Multicast joins
// report on it (eq.JoinComplete).
func (f *fabric) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) {
	q, err := kit.OpenChildEQ(&f.ref, attr, "udp")
	if err != nil {
		return nil, err
	}
	return &eventQueue{ChildEQ: q}, nil
}

// eventQueue is the fabric's EQ.
type eventQueue struct{ *kit.ChildEQ }
