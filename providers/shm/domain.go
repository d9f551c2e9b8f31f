package shm

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/provutil"
)

// domain is the shm domain (struct fid_domain): address vectors,
// completion queues, counters, memory regions and endpoints. Safe for
// concurrent use.
type domain struct {
	// ref counts the objects opened on the domain.
	ref    provutil.Ref
	fabric *fabric
	info   *fi.Info
	mrs    *provutil.MRTable
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

// Close closes the domain (fi_close): bare fi.EBUSY while objects opened
// on it are open, fi.EBADF once closed.
func (d *domain) Close() error {
	if err := d.ref.BeginClose(); err != nil {
		return err
	}
	d.mrs.Close()
	d.fabric.ref.Release()
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
	if attr == nil {
		attr = &fi.AVAttr{}
	}
	if err := d.acquire("open av"); err != nil {
		return nil, err
	}
	av := provutil.NewAV(attr, fi.FormatStr, checkName)
	return &addrVector{AV: av, parent: &d.ref}, nil
}

// OpenCQ opens a completion queue (fi_cq_open); reading it drives the
// progress of the endpoints bound to it.
func (d *domain) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) {
	if err := d.acquire("open cq"); err != nil {
		return nil, err
	}
	q, err := provutil.NewCQ(attr)
	if err != nil {
		d.ref.Release()
		return nil, err
	}
	c := &completionQueue{CQ: q, parent: &d.ref}
	q.SetProgress(c.eps.progress)
	q.SetWaiter(c.eps.wait)
	return c, nil
}

// OpenCounter opens a counter (fi_cntr_open); reading or waiting on it
// drives the progress of the endpoints bound to it.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	if err := d.acquire("open counter"); err != nil {
		return nil, err
	}
	c, err := provutil.NewCounter(attr)
	if err != nil {
		d.ref.Release()
		return nil, err
	}
	k := &counter{Counter: c, parent: &d.ref}
	c.SetProgress(k.eps.progress)
	c.SetWaiter(k.eps.wait)
	return k, nil
}

// RegisterMR registers memory (fi_mr_regattr): keys are the
// application's, remote addresses offsets from MRAttr.Offset. A peer
// reaches only registered memory, within the region and with its rights.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	if err := d.acquire("register mr"); err != nil {
		return nil, err
	}
	m, err := d.mrs.Register(attr, flags)
	if err != nil {
		d.ref.Release()
		return nil, errors.Wrap(err, "shm")
	}
	return &memRegion{MR: m, parent: &d.ref}, nil
}

type addrVector struct {
	*provutil.AV
	parent *provutil.Ref
}

// Close closes the AV (fi_close) and lets the domain close.
func (a *addrVector) Close() error {
	if err := a.AV.Close(); err != nil {
		return err
	}
	a.parent.Release()
	return nil
}

type completionQueue struct {
	*provutil.CQ
	parent *provutil.Ref
	eps    epSet
}

// Close closes the queue (fi_close) and lets the domain close.
func (q *completionQueue) Close() error { return q.CQ.CloseWith(q.parent.Release) }

type counter struct {
	*provutil.Counter
	parent *provutil.Ref
	eps    epSet
}

// Close closes the counter (fi_close) and lets the domain close.
func (c *counter) Close() error { return c.Counter.CloseWith(c.parent.Release) }

type memRegion struct {
	*provutil.MR
	parent *provutil.Ref
}

// Close unregisters the region (fi_close) and lets the domain close.
func (m *memRegion) Close() error {
	if err := m.MR.Close(); err != nil {
		return err
	}
	m.parent.Release()
	return nil
}
