//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is the shm fabric (struct fid_fabric): every process of this
// host and user. kit.Fabric counts the domains and event queues opened on
// it, gives Close its fi.EBUSY rule ("shm: close fabric: 1 domain still
// open") and opens its event queues, which serve the AV and MR events of
// applications that bind one (RDM endpoints report no connection
// events). Safe for concurrent use.
type fabric struct{ kit.Fabric[epSet] }

var _ fi.Fabric = (*fabric)(nil)

// OpenFabric opens the fabric "shm" (fi_fabric), the one there is.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr != nil && attr.Name != "" && attr.Name != provName {
		return nil, errors.Wrapf(fi.ENODATA, "shm: open fabric: no fabric %q (the one fabric is %q)", attr.Name, provName)
	}
	f := new(fabric)
	if err := f.Init(provName, provVersion, attr, fi.EPTypeRDM); err != nil {
		return nil, err
	}
	f.Attr().Name = provName
	return f, nil
}

// OpenDomain opens the domain "shm" (fi_domain), with the MR table that
// remote operations check their keys in.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	d := &domain{mrs: kit.NewMRTable(mrMode)}
	if err := d.Init(&f.Fabric, info, d.mrs); err != nil {
		return nil, err
	}
	return d, nil
}
