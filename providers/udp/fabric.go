//go:build linux

package udp

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is an opened udp fabric (struct fid_fabric; fi_fabric(3)): an IP
// subnet, or "UDP-IP" for the wildcard address. kit.Fabric counts the
// domains and event queues opened on it, gives Close its fi.EBUSY rule
// ("udp: close fabric: 1 domain still open") and opens its event queues,
// on which multicast joins report (eq.JoinComplete). Safe for concurrent
// use.
type fabric struct{ kit.Fabric[epSet] }

// eventQueue is the fabric's EQ.
type eventQueue = kit.FabricEQ[epSet]

// OpenFabric opens the fabric attr names (fi_fabric(3)): the subnet of an
// interface that is up ("192.0.2.0/24", "127.0.0.1/32") or "UDP-IP". An
// unknown name gives ENODATA.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	f := new(fabric)
	if err := f.Init(provName, provVersion, attr, fi.EPTypeDgram); err != nil {
		return nil, err
	}
	if err := loadParams().offer().CheckFabric(attr.Name); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenDomain opens a domain of the fabric (fi_domain(3)) for info, an
// entry GetInfo returned for this fabric.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	d := new(domain)
	if err := d.Init(&f.Fabric, info, nil); err != nil {
		return nil, err
	}
	return d, nil
}

var _ fi.Fabric = (*fabric)(nil)
