package loopback

import (
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is the opened loopback fabric (struct fid_fabric;
// fi_fabric(3)). kit.Fabric counts what is open on it, gives Close the
// fi.EBUSY rule of fi_close(3) and opens event queues (OpenEQ); fabric
// adds the openers of its domains and passive endpoints (pep.go). Safe
// for concurrent use.
type fabric struct{ kit.Fabric[epSet] }

var (
	_ fi.Fabric        = (*fabric)(nil)
	_ eq.EQOpener      = (*fabric)(nil)
	_ ep.PassiveOpener = (*fabric)(nil)
)

// OpenDomain opens a domain (fi_domain(3)) for info, an entry GetInfo
// returned, with a table for the memory it registers.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if err := f.CheckDomainInfo(info); err != nil {
		return nil, err
	}
	d := &domain{}
	if err := d.Init(&f.Fabric, info, kit.NewMRTable(info.DomainAttr.MRMode)); err != nil {
		return nil, err
	}
	return d, nil
}
