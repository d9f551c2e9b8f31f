package kit

import (
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Fabric is the base of a provider's fabric (libfabric's struct
// util_fabric; fi_fabric(3)): the attributes it was opened with, the
// reference count of what is open on it (domains, passive endpoints,
// event queues), which gives Close the fi.EBUSY rule of fi_close(3), and,
// as util_fabric's default eq_open, OpenEQ. A provider embeds it in its
// fabric type, calls Init from OpenFabric, and adds OpenDomain (over
// Domain.Init) and, for connection-oriented endpoints, OpenPassive (over
// Passive.Init). Every message names the provider.
//
// S is the provider's set of driven endpoints (see Driver), the type
// parameter of all its kit objects: it makes FabricEQ[S] and the domain's
// queues types of the provider's own, which its endpoints recognise (and
// fi_ep_bind refuses another provider's).
//
// Its methods are safe for concurrent use once Init has returned.
type Fabric[S any] struct {
	// Ref counts the objects opened on the fabric, by kind; Close
	// returns fi.EBUSY while any is open.
	Ref Ref
	// DrivenEQ gives the fabric's event queues the hooks of S (Driver)
	// too, so that reading an EQ drives the progress of the endpoints
	// bound to it: a connection-oriented provider whose progress finds
	// the disconnects it reports. Set it before the fabric is shared.
	DrivenEQ bool
	attr     fi.FabricAttr
	prov     string
	types    []fi.EPType
}

// Init sets up the fabric for attr (fi_fabric), before it is shared:
// prov and version name the provider, types are the endpoint types its
// domains offer (CheckDomainInfo's rule). The attributes are copied, with
// the provider's name and version, and the current API version when attr
// has none. A nil attr gives fi.EINVAL. Init checks nothing else: which
// fabric names exist is the provider's to say.
func (f *Fabric[S]) Init(prov string, version fi.Version, attr *fi.FabricAttr, types ...fi.EPType) error {
	if attr == nil {
		return errors.Wrapf(fi.EINVAL, "%s: open fabric: nil attributes", prov)
	}
	f.prov, f.types = prov, types
	f.attr = *attr
	f.attr.Fabric = nil
	f.attr.ProvName, f.attr.ProvVersion = prov, version
	if f.attr.APIVersion == 0 {
		f.attr.APIVersion = fi.APIVersion
	}
	return nil
}

// Attr returns the fabric's attributes (fi_fabric_attr). The provider
// may adjust them until the fabric is shared, and not after.
func (f *Fabric[S]) Attr() *fi.FabricAttr { return &f.attr }

// Prov returns the name of the provider, as its messages begin.
func (f *Fabric[S]) Prov() string { return f.prov }

// Close closes the fabric (fi_close): while domains, passive endpoints or
// event queues opened on it are open it returns fi.EBUSY saying which
// ("tcp: close fabric: 1 domain and 1 eq still open"), and once closed
// bare fi.EBADF.
func (f *Fabric[S]) Close() error { return f.CloseWith(nil) }

// CloseWith is Close that runs teardown, once, when the fabric closes:
// the provider's own resources (an event channel, a goroutine).
func (f *Fabric[S]) CloseWith(teardown func()) error {
	if err := f.Ref.BeginCloseFor(f.prov+": close fabric", KindObject); err != nil {
		return err
	}
	if teardown != nil {
		teardown()
	}
	return nil
}

// Acquire takes a reference of kind k on the fabric for an object opened
// on it; op names the call in the error once the fabric is closed ("tcp:
// open passive endpoint: fabric closed", with fi.EBADF).
func (f *Fabric[S]) Acquire(k Kind, op string) error {
	if err := f.Ref.AcquireKind(k); err != nil {
		return errors.Wrapf(err, "%s: %s: fabric closed", f.prov, op)
	}
	return nil
}

// Release drops a reference taken by Acquire(k, ...).
func (f *Fabric[S]) Release(k Kind) { f.Ref.ReleaseKind(k) }

// CheckDomainInfo checks the Info given to fi_domain on this fabric
// (util_domain_init's checks): it must have domain attributes, belong to
// this fabric when it names one, and ask for an endpoint type the fabric
// offers (or none). Each failure is fi.EINVAL.
func (f *Fabric[S]) CheckDomainInfo(info *fi.Info) error {
	if info == nil || info.DomainAttr == nil {
		return errors.Wrapf(fi.EINVAL, "%s: open domain: info has no domain attributes", f.prov)
	}
	if a := info.FabricAttr; a != nil && a.Name != "" && a.Name != f.attr.Name {
		return errors.Wrapf(fi.EINVAL, "%s: open domain: info is of fabric %q, not %q", f.prov, a.Name, f.attr.Name)
	}
	return f.CheckEPType("open domain", info, f.types...)
}

// CheckEPType checks that info asks for one of the endpoint types (or
// none) for the call op: fi.EINVAL otherwise, "tcp: open passive
// endpoint: ep type FI_EP_RDM not supported (offers FI_EP_MSG)".
func (f *Fabric[S]) CheckEPType(op string, info *fi.Info, types ...fi.EPType) error {
	if info == nil || info.EPAttr == nil || info.EPAttr.Type == fi.EPTypeUnspec {
		return nil
	}
	t := info.EPAttr.Type
	names := make([]string, len(types))
	for i, x := range types {
		if x == t {
			return nil
		}
		names[i] = x.String()
	}
	offers := strings.Join(names, " and ")
	if len(names) > 2 {
		offers = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return errors.Wrapf(fi.EINVAL, "%s: %s: ep type %v not supported (offers %s)", f.prov, op, t, offers)
}

// OpenEQ opens an event queue of attr on the fabric (fi_eq_open;
// util_fabric's ofi_eq_create): the framework's EQ, as a *FabricEQ[S]
// holding a reference on the fabric until it closes, with the hooks its
// Eps gives (Driver) when DrivenEQ is set (eq.EQOpener).
func (f *Fabric[S]) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) {
	c, err := OpenChildEQ(&f.Ref, attr, f.prov)
	if err != nil {
		return nil, err
	}
	q := &FabricEQ[S]{ChildEQ: *c}
	if f.DrivenEQ {
		hook(&q.Eps, q.SetProgress, q.SetWaiter)
	}
	return q, nil
}

// FabricEQ is an event queue opened on a Fabric[S] (fi_eq_open): the
// framework's EQ, holding a reference on the fabric until it closes. Eps
// is the set of endpoints whose progress reading the queue drives, when
// the fabric's DrivenEQ gives the queue hooks.
type FabricEQ[S any] struct {
	ChildEQ
	// Eps is the set of endpoints the queue drives.
	Eps S
}
