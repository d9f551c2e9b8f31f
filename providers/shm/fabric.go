//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is the shm fabric (struct fid_fabric): every process of this
// host and user. Safe for concurrent use.
type fabric struct {
	// ref counts the domains and event queues opened on the fabric.
	ref  kit.Ref
	attr fi.FabricAttr
}

var (
	_ fi.Fabric   = (*fabric)(nil)
	_ eq.EQOpener = (*fabric)(nil)
)

// OpenFabric opens the fabric "shm" (fi_fabric).
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr == nil {
		return nil, errors.Wrap(fi.EINVAL, "shm: open fabric: nil attributes")
	}
	if attr.Name != "" && attr.Name != provName {
		return nil, errors.Wrapf(fi.ENODATA, "shm: open fabric: no fabric %q (the one fabric is %q)", attr.Name, provName)
	}
	f := &fabric{attr: *attr}
	f.attr.Fabric = nil
	f.attr.Name, f.attr.ProvName, f.attr.ProvVersion = provName, provName, provVersion
	if f.attr.APIVersion == 0 {
		f.attr.APIVersion = fi.APIVersion
	}
	return f, nil
}

// Close closes the fabric (fi_close): fi.EBUSY while domains or event
// queues are open, saying which ("shm: close fabric: 1 domain still
// open"), and bare fi.EBADF once closed.
func (f *fabric) Close() error { return f.ref.BeginCloseFor("shm: close fabric", kit.KindObject) }

// OpenDomain opens the domain "shm" (fi_domain).
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if info == nil || info.DomainAttr == nil {
		return nil, errors.Wrap(fi.EINVAL, "shm: open domain: info has no domain attributes")
	}
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeRDM {
		return nil, errors.Wrapf(fi.EINVAL, "shm: open domain: ep type %v not supported (offers FI_EP_RDM)", info.EPAttr.Type)
	}
	if err := f.ref.AcquireKind(kit.KindDomain); err != nil {
		return nil, errors.Wrap(err, "shm: open domain: fabric closed")
	}
	return &domain{fabric: f, info: info.Clone(), mrs: kit.NewMRTable(mrMode)}, nil
}

// OpenEQ opens an event queue (fi_eq_open). RDM endpoints report no
// connection events; the queue serves AV and MR events of applications
// that bind one.
func (f *fabric) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) {
	q, err := kit.OpenChildEQ(&f.ref, attr, "shm")
	if err != nil {
		return nil, err
	}
	return &eventQueue{ChildEQ: q}, nil
}

// eventQueue is the fabric's EQ.
type eventQueue struct{ *kit.ChildEQ }
