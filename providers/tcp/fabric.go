//go:build linux

package tcp

import (
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is an opened tcp fabric (struct fid_fabric; fi_fabric(3)): an IP
// subnet, or "TCP-IP" for the wildcard address. It holds the provider's
// parameters as they were when it opened. kit.Fabric counts the domains,
// passive endpoints and event queues opened on it, gives Close its
// fi.EBUSY rule ("tcp: close fabric: 1 domain and 1 eq still open") and
// opens its event queues, whose reads drive the progress of the connected
// endpoints bound to them (epSet), so that a peer's disconnect becomes an
// eq.Shutdown event even when nobody reads their CQs. Safe for concurrent
// use.
type fabric struct {
	kit.Fabric[epSet]
	params params
}

var _ fi.Fabric = (*fabric)(nil)

// OpenFabric opens the fabric attr names (fi_fabric(3)): the subnet of an
// interface that is up ("192.0.2.0/24", "127.0.0.1/32") or "TCP-IP". An
// unknown name gives ENODATA, a bad provider parameter EINVAL.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	p, err := loadParams()
	if err != nil {
		return nil, err
	}
	f := &fabric{params: p}
	f.DrivenEQ = true
	if err := f.Init(provName, provVersion, attr, fi.EPTypeMsg); err != nil {
		return nil, err
	}
	if err := p.offer().CheckFabric(attr.Name); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenDomain opens a domain of the fabric (fi_domain(3)) for info, an
// entry GetInfo returned for this fabric.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	d := &domain{fabric: f, mrs: kit.NewMRTable(mrMode)}
	if err := d.Init(&f.Fabric, info, d.mrs); err != nil {
		return nil, err
	}
	return d, nil
}

// ConnTimeout is FI_TCP_CONN_TIMEOUT as the fabric read it when it
// opened (gofabric's own variable; fi_info -e lists it): how long a
// connection attempt, or an accepted socket's request, may take.
// libfabric's C tcp provider has no such parameter; a layer over this
// provider (providers/rxm, tcp;ofi_rxm) bounds its retries of refused
// connections with it.
func (f *fabric) ConnTimeout() time.Duration { return f.params.connTimeout }

// eventQueue is the fabric's EQ.
type eventQueue = kit.FabricEQ[epSet]
