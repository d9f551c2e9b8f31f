package rxm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// version is the provider's version, C ofi_rxm's in libfabric 1.17
// (fi_info: "version: 117.0").
var version = fi.MakeVersion(117, 0)

// provider is rxm over one core provider (struct fi_provider "ofi_rxm"
// with the core its entries name); kit.Provider gives its name and
// version.
type provider struct {
	kit.Provider
	name string
	core fi.Provider
}

var _ fi.Provider = (*provider)(nil)

// Over returns rxm layered over the core provider, registered and named
// name: its GetInfo offers one FI_EP_RDM entry named name over each
// FI_EP_MSG entry of core (nothing of core's own), and its fabrics,
// domains and memory regions open core's through the public API
// (fi.Provider.OpenFabric, fi.Fabric.OpenDomain, fi.RegisterMR), as C's
// ofi_rxm opens its core provider's. The name is the one applications
// select the layering by, "<core>;<utility>" as libfabric names
// layerings ("tcp;ofi_rxm"); its last component is rxm's own, which the
// hints rxm gives core leave out. Register the result with fi.Register.
// Over panics if core is nil or name is empty, as fi.Register does.
func Over(core fi.Provider, name string) fi.Provider {
	if core == nil {
		panic("rxm: Over core provider is nil")
	}
	if name == "" {
		panic("rxm: Over with empty name")
	}
	return &provider{Provider: kit.Provider{ProvName: name, ProvVersion: version}, name: name, core: core}
}

// OpenFabric opens the fabric attr names (fi_fabric(3); C's rxm_fabric):
// the core provider's fabric of that name, opened with attr under the
// core's name, beneath an rxm fabric. The core's errors come back with
// their codes (an unknown fabric gives ENODATA), a bad FI_OFI_RXM_*
// variable EINVAL.
func (p *provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr == nil {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open fabric: nil attributes", p.name)
	}
	prm, err := loadParams()
	if err != nil {
		return nil, err
	}
	ca := *attr
	ca.Fabric, ca.ProvName, ca.ProvVersion = nil, p.core.Name(), 0
	core, err := p.core.OpenFabric(&ca)
	if err != nil {
		return nil, errors.Wrapf(err, "%s: open fabric: core provider %s", p.name, p.core.Name())
	}
	f := &fabric{prov: p, core: core, params: prm, connTimeout: coreConnTimeout(core)}
	if err := f.Init(p.name, version, attr, fi.EPTypeRDM); err != nil {
		_ = core.Close()
		return nil, err
	}
	return f, nil
}
