package kit

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Child objects: the framework's software EQ, CQ, counter, AV and MR
// opened on a provider's fabric or domain, holding a reference of their
// kind on it (Ref.AcquireKind) until they close, so that the parent's Close
// returns fi.EBUSY meanwhile and says what is still open (fi_close(3)).
//
// prov is the name of the provider that opens them ("tcp"): every message
// of the object names it, as in "tcp: open cq: size -1" and "tcp: close
// cq: 1 endpoint still bound", since the object is what the application
// got from that provider through eq.OpenCQ and friends.

// ChildEQ is an EQ holding a reference on its parent fabric.
type ChildEQ struct {
	*EQ
	parent *Ref
}

// OpenChildEQ opens an EQ for attr under parent, a fabric of provider prov.
func OpenChildEQ(parent *Ref, attr *eq.Attr, prov string) (*ChildEQ, error) {
	if err := parent.AcquireKind(KindEQ); err != nil {
		return nil, errors.Wrapf(err, "%s: open eq: fabric closed", prov)
	}
	q, err := newEQ(prov, attr)
	if err != nil {
		parent.ReleaseKind(KindEQ)
		return nil, err
	}
	return &ChildEQ{EQ: q, parent: parent}, nil
}

// Close closes the queue (fi_close) and lets the parent close.
func (q *ChildEQ) Close() error {
	return q.EQ.CloseWith(func() { q.parent.ReleaseKind(KindEQ) })
}

// ChildCQ is a CQ holding a reference on its parent domain.
type ChildCQ struct {
	*CQ
	parent *Ref
}

// OpenChildCQ opens a CQ for attr under parent, a domain of provider prov.
func OpenChildCQ(parent *Ref, attr *eq.CQAttr, prov string) (*ChildCQ, error) {
	if err := parent.AcquireKind(KindCQ); err != nil {
		return nil, errors.Wrapf(err, "%s: open cq: domain closed", prov)
	}
	q, err := newCQ(prov, attr)
	if err != nil {
		parent.ReleaseKind(KindCQ)
		return nil, err
	}
	return &ChildCQ{CQ: q, parent: parent}, nil
}

// Close closes the queue (fi_close) and lets the parent close.
func (q *ChildCQ) Close() error {
	return q.CQ.CloseWith(func() { q.parent.ReleaseKind(KindCQ) })
}

// ChildCounter is a counter holding a reference on its parent domain.
type ChildCounter struct {
	*Counter
	parent *Ref
}

// OpenChildCounter opens a counter for attr under parent, a domain of
// provider prov.
func OpenChildCounter(parent *Ref, attr *eq.CounterAttr, prov string) (*ChildCounter, error) {
	if err := parent.AcquireKind(KindCounter); err != nil {
		return nil, errors.Wrapf(err, "%s: open counter: domain closed", prov)
	}
	c, err := newCounter(prov, attr)
	if err != nil {
		parent.ReleaseKind(KindCounter)
		return nil, err
	}
	return &ChildCounter{Counter: c, parent: parent}, nil
}

// Close closes the counter (fi_close) and lets the parent close.
func (c *ChildCounter) Close() error {
	return c.Counter.CloseWith(func() { c.parent.ReleaseKind(KindCounter) })
}

// ChildAV is an AV holding a reference on its parent domain.
type ChildAV struct {
	*AV
	parent *Ref
}

// OpenChildAV opens an AV of attr, in format and with the provider's
// address check, under parent, a domain of provider prov.
func OpenChildAV(parent *Ref, attr *fi.AVAttr, format fi.AddrFormat, check func([]byte) error, prov string) (*ChildAV, error) {
	if err := parent.AcquireKind(KindAV); err != nil {
		return nil, errors.Wrapf(err, "%s: open av: domain closed", prov)
	}
	if attr == nil {
		attr = &fi.AVAttr{}
	}
	return &ChildAV{AV: newAV(prov, attr, format, check), parent: parent}, nil
}

// Close closes the AV (fi_close) and lets the parent close.
func (a *ChildAV) Close() error {
	if err := a.AV.Close(); err != nil {
		return err
	}
	a.parent.ReleaseKind(KindAV)
	return nil
}

// ChildMR is a registered region holding a reference on its parent.
type ChildMR struct {
	*MR
	parent *Ref
}

// RegisterChildMR registers attr in table under parent, a domain of
// provider prov; errors read "tcp: register mr: ...".
func RegisterChildMR(parent *Ref, table *MRTable, attr *fi.MRAttr, flags fi.Flags, prov string) (*ChildMR, error) {
	if err := parent.AcquireKind(KindMR); err != nil {
		return nil, errors.Wrapf(err, "%s: register mr: domain closed", prov)
	}
	m, err := table.Register(attr, flags)
	if err != nil {
		parent.ReleaseKind(KindMR)
		return nil, errors.Wrap(err, prov)
	}
	return &ChildMR{MR: m, parent: parent}, nil
}

// Close unregisters the region (fi_close) and lets the parent close.
func (m *ChildMR) Close() error {
	if err := m.MR.Close(); err != nil {
		return err
	}
	m.parent.ReleaseKind(KindMR)
	return nil
}
