//go:build linux

package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is the shm domain (struct fid_domain): address vectors,
// completion queues, counters, memory regions and endpoints. Safe for
// concurrent use.
type domain struct {
	// ref counts the objects opened on the domain.
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
	_ fi.AVOpener      = (*domain)(nil)
)

// Info returns the Info the domain was opened with.
func (d *domain) Info() *fi.Info { return d.info }

// Close closes the domain (fi_close): fi.EBUSY while objects opened on it
// are open, saying which ("shm: close domain: 2 endpoints and 1 cq still
// open"), and bare fi.EBADF once closed.
func (d *domain) Close() error {
	if err := d.ref.BeginCloseFor("shm: close domain", kit.KindEndpoint); err != nil {
		return err
	}
	d.mrs.Close()
	d.fabric.ref.ReleaseKind(kit.KindDomain)
	return nil
}

func (d *domain) acquire(op string) error {
	if err := d.ref.Acquire(); err != nil {
		return errors.Wrapf(err, "shm: %s: domain closed", op)
	}
	return nil
}

// OpenAV opens an address vector (fi_av_open) of FI_ADDR_STR endpoint
// names; FI_AV_MAP and FI_AV_TABLE both give dense indexes.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	a, err := kit.OpenChildAV(&d.ref, attr, fi.FormatStr, checkName, "shm")
	if err != nil {
		return nil, err
	}
	return &addrVector{ChildAV: a}, nil
}

// OpenCQ opens a completion queue (fi_cq_open); reading it drives the
// progress of the endpoints bound to it.
func (d *domain) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) {
	c, err := kit.OpenChildCQ(&d.ref, attr, "shm")
	if err != nil {
		return nil, err
	}
	q := &completionQueue{ChildCQ: c}
	c.SetProgress(q.eps.progress)
	c.SetWaiter(q.eps.wait)
	return q, nil
}

// OpenCounter opens a counter (fi_cntr_open); reading or waiting on it
// drives the progress of the endpoints bound to it.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	c, err := kit.OpenChildCounter(&d.ref, attr, "shm")
	if err != nil {
		return nil, err
	}
	k := &counter{ChildCounter: c}
	c.SetProgress(k.eps.progress)
	c.SetWaiter(k.eps.wait)
	return k, nil
}

// RegisterMR registers memory (fi_mr_regattr): keys are the
// application's, remote addresses offsets from MRAttr.Offset. A peer
// reaches only registered memory, within the region and with its rights.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return kit.RegisterChildMR(&d.ref, d.mrs, attr, flags, "shm")
}

// addrVector is the domain's AV.
type addrVector struct{ *kit.ChildAV }

type completionQueue struct {
	*kit.ChildCQ
	// eps are the endpoints bound to the queue, whose progress reading it
	// drives.
	eps epSet
}

type counter struct {
	*kit.ChildCounter
	// eps are the endpoints bound to the counter, as for completionQueue.
	eps epSet
}
