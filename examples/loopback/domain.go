package loopback

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is an opened loopback domain (struct fid_domain; fi_domain(3)).
// kit.Domain counts what is open on it, holds its fabric and its MR
// table, and opens completion queues (OpenCQ); its counters, address
// vectors and memory regions are the kit's too, each a child that holds
// a reference on the domain until it closes. Safe for concurrent use.
type domain struct{ kit.Domain[epSet] }

var (
	_ fi.Domain        = (*domain)(nil)
	_ eq.CQOpener      = (*domain)(nil)
	_ eq.CounterOpener = (*domain)(nil)
	_ fi.AVOpener      = (*domain)(nil)
	_ fi.MRRegistrar   = (*domain)(nil)
	_ ep.Opener        = (*domain)(nil)
)

// epSet is the provider's set of endpoints that reading a queue drives,
// the type parameter of its kit objects. Loopback's endpoints complete
// every operation inside the call that makes it possible, so its queues
// drive nothing: epSet is empty and has no Hooks method (it is no
// kit.Driver). A provider with manual progress keeps its endpoints here
// (a kit.Set[*endpoint]) and gives the queues their progress and wait
// hooks.
type epSet struct{}

// The provider's own event queue and AV as its endpoints use them; its
// CQs and counters are kit.DomainCQ[epSet] and kit.DomainCounter[epSet],
// which kit.Completions resolves. kit.BindOwn binds these four and no
// others.
type (
	eventQueue    = kit.FabricEQ[epSet]
	addressVector = kit.DomainAV[epSet]
)

// OpenCounter opens a completion counter (fi_cntr_open).
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	return d.NewCounter(attr)
}

// OpenAV opens an address vector (fi_av_open) of FI_SOCKADDR_IN
// addresses, of type FI_AV_MAP or FI_AV_TABLE.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	return d.NewAV(attr, fi.FormatSockaddrIn, checkName)
}

// RegisterMR registers memory (fi_mr_regattr) in the domain's table.
// Messages need no registration (the domain has no FI_MR_LOCAL); the
// regions are there for applications that register anyway.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return d.NewMR(attr, flags)
}

// OpenEndpoint opens an active endpoint (fi_endpoint): FI_EP_RDM, or
// FI_EP_MSG, which accepts a connection request when info is the Info
// of an eq.ConnReq event (its Handle is the request).
func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	if info == nil || info.EPAttr == nil {
		return nil, errors.Wrapf(fi.EINVAL, "%s: open endpoint: info has no endpoint attributes", provName)
	}
	switch info.EPAttr.Type {
	case fi.EPTypeRDM:
		return newEndpoint(d, info, nil)
	case fi.EPTypeMsg:
		return newConnEndpoint(d, info)
	}
	return nil, errors.Wrapf(fi.ENOSYS, "%s: open endpoint: type %v not supported (offers FI_EP_MSG and FI_EP_RDM)", provName, info.EPAttr.Type)
}
