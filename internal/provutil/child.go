package provutil

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Child objects: the framework's software EQ, CQ, counter, AV and MR
// opened on a provider's fabric or domain, holding a reference on it
// (Ref) until they close, so that the parent's Close returns fi.EBUSY
// meanwhile (fi_close(3)). what prefixes errors ("tcp: open cq").

// ChildEQ is an EQ holding a reference on its parent.
type ChildEQ struct {
	*EQ
	parent *Ref
}

// OpenChildEQ opens an EQ for attr under parent.
func OpenChildEQ(parent *Ref, attr *eq.Attr, what string) (*ChildEQ, error) {
	if err := parent.Acquire(); err != nil {
		return nil, errors.Wrapf(err, "%s: parent closed", what)
	}
	q, err := NewEQ(attr)
	if err != nil {
		parent.Release()
		return nil, err
	}
	return &ChildEQ{EQ: q, parent: parent}, nil
}

// Close closes the queue (fi_close) and lets the parent close.
func (q *ChildEQ) Close() error { return q.EQ.CloseWith(q.parent.Release) }

// ChildCQ is a CQ holding a reference on its parent.
type ChildCQ struct {
	*CQ
	parent *Ref
}

// OpenChildCQ opens a CQ for attr under parent.
func OpenChildCQ(parent *Ref, attr *eq.CQAttr, what string) (*ChildCQ, error) {
	if err := parent.Acquire(); err != nil {
		return nil, errors.Wrapf(err, "%s: parent closed", what)
	}
	q, err := NewCQ(attr)
	if err != nil {
		parent.Release()
		return nil, err
	}
	return &ChildCQ{CQ: q, parent: parent}, nil
}

// Close closes the queue (fi_close) and lets the parent close.
func (q *ChildCQ) Close() error { return q.CQ.CloseWith(q.parent.Release) }

// ChildCounter is a counter holding a reference on its parent.
type ChildCounter struct {
	*Counter
	parent *Ref
}

// OpenChildCounter opens a counter for attr under parent.
func OpenChildCounter(parent *Ref, attr *eq.CounterAttr, what string) (*ChildCounter, error) {
	if err := parent.Acquire(); err != nil {
		return nil, errors.Wrapf(err, "%s: parent closed", what)
	}
	c, err := NewCounter(attr)
	if err != nil {
		parent.Release()
		return nil, err
	}
	return &ChildCounter{Counter: c, parent: parent}, nil
}

// Close closes the counter (fi_close) and lets the parent close.
func (c *ChildCounter) Close() error { return c.Counter.CloseWith(c.parent.Release) }

// ChildAV is an AV holding a reference on its parent.
type ChildAV struct {
	*AV
	parent *Ref
}

// OpenChildAV opens an AV of attr, in format and with the provider's
// address check, under parent.
func OpenChildAV(parent *Ref, attr *fi.AVAttr, format fi.AddrFormat, check func([]byte) error, what string) (*ChildAV, error) {
	if err := parent.Acquire(); err != nil {
		return nil, errors.Wrapf(err, "%s: parent closed", what)
	}
	if attr == nil {
		attr = &fi.AVAttr{}
	}
	return &ChildAV{AV: NewAV(attr, format, check), parent: parent}, nil
}

// Close closes the AV (fi_close) and lets the parent close.
func (a *ChildAV) Close() error {
	if err := a.AV.Close(); err != nil {
		return err
	}
	a.parent.Release()
	return nil
}

// ChildMR is a registered region holding a reference on its parent.
type ChildMR struct {
	*MR
	parent *Ref
}

// RegisterChildMR registers attr in table under parent.
func RegisterChildMR(parent *Ref, table *MRTable, attr *fi.MRAttr, flags fi.Flags, what string) (*ChildMR, error) {
	if err := parent.Acquire(); err != nil {
		return nil, errors.Wrapf(err, "%s: parent closed", what)
	}
	m, err := table.Register(attr, flags)
	if err != nil {
		parent.Release()
		return nil, errors.Wrap(err, what)
	}
	return &ChildMR{MR: m, parent: parent}, nil
}

// Close unregisters the region (fi_close) and lets the parent close.
func (m *ChildMR) Close() error {
	if err := m.MR.Close(); err != nil {
		return err
	}
	m.parent.Release()
	return nil
}
