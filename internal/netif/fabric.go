package netif

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// CheckFabric checks, for the provider's fi_fabric, that name is a fabric
// its GetInfo offers: the subnet of an interface that is up (of any
// interface: FI_<PROV>_IFACE narrows GetInfo's entries, not the fabrics
// one may open) or AnyFabric. Another name gives fi.ENODATA.
func (o Offer) CheckFabric(name string) error {
	if name == o.AnyFabric {
		return nil
	}
	ifs, err := List("")
	if err != nil {
		return errors.Wrapf(err, "%s: open fabric", o.Prov)
	}
	for _, a := range ifs {
		if a.FabricName() == name {
			return nil
		}
	}
	return errors.Wrapf(fi.ENODATA, "%s: open fabric: no fabric %q: it is the subnet of no interface that is up", o.Prov, name)
}
