package kit

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Domain is the base of a provider's domain (libfabric's struct
// util_domain; fi_domain(3)): the Info it was opened with, the reference
// count of what is open on it (endpoints, completion queues, counters,
// address vectors, memory regions), which gives Close the fi.EBUSY rule
// of fi_close(3), the reference it holds on its fabric until it closes,
// and, for a provider that registers memory in software, its MRTable. A
// provider embeds it in its domain type and calls Init from its fabric's
// OpenDomain. The base opens completion queues itself (OpenCQ, which
// every domain has); counters, address vectors and memory registration,
// which not every provider has, each take the provider one line over
// NewCounter, NewAV and NewMR:
//
//	func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) { return d.NewMR(attr, flags) }
//
// so that embedding the base never claims an ability (eq.CounterOpener,
// fi.MRRegistrar...) the provider lacks. S is the provider's set of
// driven endpoints, as for Fabric. Every message names the provider.
//
// Its methods are safe for concurrent use once Init has returned.
type Domain[S any] struct {
	// Ref counts the objects opened on the domain, by kind; Close
	// returns fi.EBUSY while any is open.
	Ref    Ref
	fabric *Fabric[S]
	info   *fi.Info
	mrs    *MRTable
}

// Init opens the domain on fabric f for info (fi_domain), before the
// domain is shared: it checks info (Fabric.CheckDomainInfo), takes a
// reference on f, which Close releases, and keeps a copy of info. mrs is
// the domain's memory region table, or nil when the provider registers
// memory otherwise or not at all; Close closes it.
func (d *Domain[S]) Init(f *Fabric[S], info *fi.Info, mrs *MRTable) error {
	if err := f.CheckDomainInfo(info); err != nil {
		return err
	}
	if err := f.Acquire(KindDomain, "open domain"); err != nil {
		return err
	}
	d.fabric, d.info, d.mrs = f, info.Clone(), mrs
	return nil
}

// Info returns the Info the domain was opened with (fi.Domain).
func (d *Domain[S]) Info() *fi.Info { return d.info }

// MRs returns the domain's memory region table, nil without one.
func (d *Domain[S]) MRs() *MRTable { return d.mrs }

// Close closes the domain (fi_close): while objects opened on it are
// open it returns fi.EBUSY saying which ("tcp: close domain: 2 endpoints
// and 1 cq still open"), and once closed bare fi.EBADF. Closing closes
// the MR table and lets the fabric close.
func (d *Domain[S]) Close() error { return d.CloseWith(nil) }

// CloseWith is Close that runs teardown, once, when the domain closes,
// before the fabric's reference is released: the provider's own
// resources (a protection domain).
func (d *Domain[S]) CloseWith(teardown func()) error {
	if err := d.Ref.BeginCloseFor(d.fabric.prov+": close domain", KindEndpoint); err != nil {
		return err
	}
	if teardown != nil {
		teardown()
	}
	if d.mrs != nil {
		d.mrs.Close()
	}
	d.fabric.Release(KindDomain)
	return nil
}

// Acquire takes a reference of kind k on the domain for an object opened
// on it (fi_endpoint takes one for its endpoint: KindEndpoint); op names
// the call in the error once the domain is closed ("tcp: open endpoint:
// domain closed", with fi.EBADF).
func (d *Domain[S]) Acquire(k Kind, op string) error {
	if err := d.Ref.AcquireKind(k); err != nil {
		return errors.Wrapf(err, "%s: %s: domain closed", d.fabric.prov, op)
	}
	return nil
}

// Release drops a reference taken by Acquire(k, ...).
func (d *Domain[S]) Release(k Kind) { d.Ref.ReleaseKind(k) }

// Driver is implemented by a provider's set of driven endpoints, the type
// S of its kit objects, when reading its completion queues and counters
// drives their progress (FI_PROGRESS_MANUAL: fi_cq_read runs the data
// path; C's util_cq progress function), and its event queues' too when
// the fabric's DrivenEQ says so. Typically
//
//	type epSet struct{ kit.Set[*endpoint] }
//
//	func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }
//
// Hooks returns the progress and wait hooks (see WaitFunc) that a queue
// installs at open, nil for none. The queue calls them as they are, so
// that a read pays no more than the hooks' own call: return method values
// of the set, as above, not closures over an interface. A set that is not
// a Driver gives its queues no hooks.
type Driver interface {
	Hooks() (progress func(), wait WaitFunc)
}

// hook installs the hooks the set s gives, if it is a Driver, on a
// queue's SetProgress and SetWaiter.
func hook(s any, setProgress func(func()), setWaiter func(WaitFunc)) {
	if d, ok := s.(Driver); ok {
		progress, wait := d.Hooks()
		setProgress(progress)
		setWaiter(wait)
	}
}

// DomainCQ is a completion queue opened on a Domain[S] (fi_cq_open; C's
// util_cq): the framework's CQ, holding a reference on the domain until
// it closes, whose reads drive the progress of the endpoints in Eps.
type DomainCQ[S any] struct {
	ChildCQ
	// Eps is the set of endpoints the queue drives: an endpoint adds
	// itself when it is enabled and leaves when it closes.
	Eps S
}

// OpenCQ opens a completion queue of attr on the domain (fi_cq_open;
// eq.CQOpener), a *DomainCQ[S] with the hooks its Eps gives (Driver).
func (d *Domain[S]) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) {
	c, err := OpenChildCQ(&d.Ref, attr, d.fabric.prov)
	if err != nil {
		return nil, err
	}
	q := &DomainCQ[S]{ChildCQ: *c}
	hook(&q.Eps, q.SetProgress, q.SetWaiter)
	return q, nil
}

// DomainCounter is a counter opened on a Domain[S] (fi_cntr_open; C's
// util_cntr), as DomainCQ is a completion queue.
type DomainCounter[S any] struct {
	ChildCounter
	// Eps is the set of endpoints the counter drives.
	Eps S
}

// NewCounter opens a counter of attr on the domain (fi_cntr_open), a
// *DomainCounter[S] with the hooks its Eps gives (Driver); a provider's
// OpenCounter returns it.
func (d *Domain[S]) NewCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	c, err := OpenChildCounter(&d.Ref, attr, d.fabric.prov)
	if err != nil {
		return nil, err
	}
	k := &DomainCounter[S]{ChildCounter: *c}
	hook(&k.Eps, k.SetProgress, k.SetWaiter)
	return k, nil
}

// DomainAV is an address vector opened on a Domain[S] (fi_av_open; C's
// util_av): the framework's AV, holding a reference on the domain until
// it closes.
type DomainAV[S any] struct {
	ChildAV
}

// NewAV opens an address vector of attr on the domain (fi_av_open), a
// *DomainAV[S] for addresses of format, each vetted by check (the
// provider's rule for a peer address; nil takes any); a provider's OpenAV
// returns it.
func (d *Domain[S]) NewAV(attr *fi.AVAttr, format fi.AddrFormat, check func([]byte) error) (fi.AV, error) {
	a, err := OpenChildAV(&d.Ref, attr, format, check, d.fabric.prov)
	if err != nil {
		return nil, err
	}
	return &DomainAV[S]{ChildAV: *a}, nil
}

// NewMR registers memory in the domain's MR table (fi_mr_regattr, with
// the table's key, range and access rules): the region holds a reference
// on the domain until it closes, and its Desc is the *MR. A provider's
// RegisterMR returns it. Without a table it returns fi.ENOSYS.
func (d *Domain[S]) NewMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	if d.mrs == nil {
		return nil, errors.Wrapf(fi.ENOSYS, "%s: register mr: the domain has no memory registration", d.fabric.prov)
	}
	m, err := RegisterChildMR(&d.Ref, d.mrs, attr, flags, d.fabric.prov)
	if err != nil {
		return nil, err
	}
	return m, nil
}

var (
	_ eq.EQOpener   = (*Fabric[struct{}])(nil)
	_ fi.Domain     = (*Domain[struct{}])(nil)
	_ eq.CQOpener   = (*Domain[struct{}])(nil)
	_ fi.AV         = (*DomainAV[struct{}])(nil)
	_ eq.Counter    = (*DomainCounter[struct{}])(nil)
	_ eq.EventQueue = (*FabricEQ[struct{}])(nil)
	_ eq.FDWaiter   = (*DomainCQ[struct{}])(nil)
)
