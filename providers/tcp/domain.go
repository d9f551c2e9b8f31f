//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is an opened tcp domain (struct fid_domain; fi_domain(3)): the
// objects of one interface address. It has completion queues, counters and
// memory regions; it has no address vectors, which connected (FI_EP_MSG)
// endpoints do not use, so fi.OpenAV gives ENOSYS. Safe for concurrent
// use.
type domain struct {
	// ref counts the endpoints, CQs, counters, AVs and MRs opened on the
	// domain; Close returns EBUSY while any is open.
	ref    kit.Ref
	fabric *fabric
	info   *fi.Info
	mrs    *kit.MRTable
}

var (
	_ fi.Domain        = (*domain)(nil)
	_ eq.CQOpener      = (*domain)(nil)
	_ eq.CounterOpener = (*domain)(nil)
	_ fi.MRRegistrar   = (*domain)(nil)
)

// newDomain returns a domain of f for info; the caller holds a reference
// on f for it, which Close releases.
func newDomain(f *fabric, info *fi.Info) *domain {
	return &domain{fabric: f, info: info.Clone(), mrs: kit.NewMRTable(mrMode)}
}

// Info returns the Info the domain was opened with.
func (d *domain) Info() *fi.Info { return d.info }

// Close closes the domain (fi_close). While endpoints, CQs, counters, AVs
// or memory regions opened on it are open it returns fi.EBUSY, saying
// which ("tcp: close domain: 2 endpoints and 1 cq still open"); once
// closed, bare fi.EBADF. Closing lets the fabric close.
func (d *domain) Close() error {
	if err := d.ref.BeginCloseFor("tcp: close domain", kit.KindEndpoint); err != nil {
		return err
	}
	d.mrs.Close()
	d.fabric.ref.ReleaseKind(kit.KindDomain)
	return nil
}

// acquire takes a reference on the domain for an object opened on it.
func (d *domain) acquire(op string) error {
	if err := d.ref.Acquire(); err != nil {
		return errors.Wrapf(err, "tcp: %s: domain closed", op)
	}
	return nil
}

// OpenCQ opens a completion queue (fi_cq_open): the framework's software
// CQ, which holds a reference on the domain until it closes.
func (d *domain) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) {
	c, err := kit.OpenChildCQ(&d.ref, attr, "tcp")
	if err != nil {
		return nil, err
	}
	q := &completionQueue{ChildCQ: c}
	c.SetProgress(q.eps.progress)
	c.SetWaiter(q.eps.wait)
	return q, nil
}

// OpenCounter opens a counter (fi_cntr_open): the framework's software
// counter, which holds a reference on the domain until it closes.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	c, err := kit.OpenChildCounter(&d.ref, attr, "tcp")
	if err != nil {
		return nil, err
	}
	k := &counter{ChildCounter: c}
	c.SetProgress(k.eps.progress)
	c.SetWaiter(k.eps.wait)
	return k, nil
}

// OpenAV opens an address vector (fi_av_open) of peer sockaddrs
// (sockaddr_in, sockaddr_in6) for RDM endpoints; FI_AV_MAP and
// FI_AV_TABLE both give dense indexes.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	a, err := kit.OpenChildAV(&d.ref, attr, d.info.AddrFormat, checkPeerName, "tcp")
	if err != nil {
		return nil, err
	}
	return &addrVector{ChildAV: a}, nil
}

// checkPeerName vets an AV address: a sockaddr with an address and a
// port.
func checkPeerName(b []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(b)
	if err != nil {
		return errors.Wrap(err, "tcp: av: address")
	}
	if !ap.Addr().IsValid() || ap.Port() == 0 {
		return errors.Wrapf(fi.EINVAL, "tcp: av: address %v has no address or port", ap)
	}
	return nil
}

// addrVector is a software AV that releases its domain's reference when
// it closes.
type addrVector struct {
	*kit.ChildAV
}

// RegisterMR registers memory (fi_mr_regattr) in the domain's table, with
// the C provider's MR mode: keys are the application's requested keys and
// remote addresses are offsets from MRAttr.Offset. The region holds a
// reference on the domain until it closes; its Desc is the
// *kit.MR.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return kit.RegisterChildMR(&d.ref, d.mrs, attr, flags, "tcp")
}

// completionQueue is a software CQ that releases its domain's reference
// when it closes.
type completionQueue struct {
	*kit.ChildCQ
	// eps are the endpoints bound to the queue, whose progress reading it
	// drives.
	eps epSet
}

// counter is a software counter that releases its domain's reference when
// it closes.
type counter struct {
	*kit.ChildCounter
	// eps are the endpoints bound to the counter, as for completionQueue.
	eps epSet
}
