//go:build verbs && cgo

package verbs

import (
	"sync"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is an opened verbs fabric (struct fid_fabric; fi_fabric(3);
// vrb_fabric). It owns one rdma_cm event channel (vrb_eq's channel in
// C, here per fabric), served by one goroutine parked in the netpoller,
// which hands each event to the endpoint owning its id. Safe for
// concurrent use.
type fabric struct {
	// ref counts the domains, event queues and passive endpoints opened
	// on the fabric; Close returns EBUSY while any is open.
	ref  kit.Ref
	attr fi.FabricAttr
	cm   *cmDispatch
}

var (
	_ fi.Fabric   = (*fabric)(nil)
	_ eq.EQOpener = (*fabric)(nil)
)

// OpenFabric opens a fabric (fi_fabric) and its rdma_cm event channel
// (rdma_create_event_channel).
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr == nil {
		return nil, errors.Wrap(fi.EINVAL, "verbs: open fabric: nil attributes")
	}
	entries, err := msgEntries()
	if err != nil || len(entries) == 0 {
		reason, hint := offer()
		return nil, errors.WithHint(errors.Wrapf(fi.ENODATA, "verbs: open fabric: %s", reason), hint)
	}
	known := false
	for _, e := range entries {
		known = known || e.FabricAttr.Name == attr.Name
	}
	if !known {
		return nil, errors.Wrapf(fi.ENODATA, "verbs: open fabric: no fabric %q (the fabrics are the subnets of the active ports, e.g. %q)",
			attr.Name, entries[0].FabricAttr.Name)
	}
	d, err := newCMDispatch()
	if err != nil {
		return nil, err
	}
	f := &fabric{attr: *attr, cm: d}
	f.attr.Fabric = nil
	f.attr.ProvName, f.attr.ProvVersion = provName, provVersion
	if f.attr.APIVersion == 0 {
		f.attr.APIVersion = fi.APIVersion
	}
	return f, nil
}

// Close closes the fabric (fi_close) and its event channel
// (rdma_destroy_event_channel). While domains, passive endpoints or event
// queues opened on it are open it returns fi.EBUSY, saying which ("verbs:
// close fabric: 1 domain still open"); once closed, bare fi.EBADF.
func (f *fabric) Close() error {
	if err := f.ref.BeginCloseFor("verbs: close fabric", kit.KindPassiveEndpoint); err != nil {
		return err
	}
	f.cm.close()
	return nil
}

// OpenDomain opens a domain of the fabric (fi_domain; vrb_domain) for
// info, an entry GetInfo returned: the device info.DomainAttr.Name.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if info == nil || info.DomainAttr == nil || info.DomainAttr.Name == "" {
		return nil, errors.Wrap(fi.EINVAL, "verbs: open domain: info names no device (DomainAttr.Name)")
	}
	if t := info.EPAttr; t != nil && t.Type != fi.EPTypeUnspec && t.Type != fi.EPTypeMsg {
		return nil, errors.Wrapf(fi.EINVAL, "verbs: open domain: ep type %v not supported (offers FI_EP_MSG)", t.Type)
	}
	if err := f.ref.AcquireKind(kit.KindDomain); err != nil {
		return nil, errors.Wrap(err, "verbs: open domain: fabric closed")
	}
	d, err := newDomain(f, info)
	if err != nil {
		f.ref.ReleaseKind(kit.KindDomain)
		return nil, err
	}
	return d, nil
}

// OpenEQ opens an event queue (fi_eq_open): the framework's software EQ,
// written by the fabric's rdma_cm goroutine; it holds a reference on the
// fabric until it closes.
func (f *fabric) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) {
	q, err := kit.OpenChildEQ(&f.ref, attr, "verbs")
	if err != nil {
		return nil, err
	}
	return &eventQueue{ChildEQ: q}, nil
}

// eventQueue is the fabric's EQ.
type eventQueue struct {
	*kit.ChildEQ
}

// cmHandler is an owner of rdma_cm ids: a passive endpoint, a pending
// connection request or an active endpoint.
type cmHandler interface {
	// cmEvent handles one event of an id it owns, on the dispatch
	// goroutine.
	cmEvent(ev cmEventC)
}

// cmDispatch is a fabric's rdma_cm event channel and its goroutine
// (rdma_get_cm_event in a loop, as C's vrb_eq_read does from
// fi_eq_read): each event is copied out and acknowledged at once, then
// given to the owner of its id (of the listening id for a
// CONNECT_REQUEST) found in a Go map keyed by the id's address; C keeps
// no Go pointer.
type cmDispatch struct {
	ch *cmChannel
	// mu is held while an event is taken and its owner looked up, and
	// while an id is destroyed: an id destroyed meanwhile (and its
	// address reused) is never confused with the one an event named.
	mu     sync.Mutex
	owners map[cmIDC]cmHandler
	done   chan struct{}
}

func newCMDispatch() (*cmDispatch, error) {
	ch, err := openCMChannel()
	if err != nil {
		return nil, err
	}
	d := &cmDispatch{ch: ch, owners: map[cmIDC]cmHandler{}, done: make(chan struct{})}
	go d.loop()
	return d, nil
}

// loop serves the channel until it is closed.
func (d *cmDispatch) loop() {
	defer close(d.done)
	for {
		err := d.ch.rc.Read(func(uintptr) bool {
			for {
				d.mu.Lock()
				ev, gerr := getEvent(d.ch.ch)
				var h cmHandler
				if gerr == nil {
					key := ev.id
					if ev.typ == evConnectRequest {
						key = ev.listen
					}
					h = d.owners[key]
				}
				d.mu.Unlock()
				switch {
				case gerr == syscall.EAGAIN:
					return false
				case gerr != nil:
					fi.Logger(provName).Warn("verbs: rdma_get_cm_event failed", "err", gerr)
					return false
				case h != nil:
					h.cmEvent(ev)
				case ev.typ == evConnectRequest:
					// The listener is gone: refuse the request.
					_ = reject(ev.id, nil)
					d.destroy(ev.id)
				}
			}
		})
		if err != nil {
			return
		}
	}
}

// newID creates an id on the channel (rdma_create_id, RDMA_PS_TCP) owned
// by h.
func (d *cmDispatch) newID(h cmHandler) (cmIDC, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, err := createID(d.ch.ch)
	if err != nil {
		return nil, err
	}
	d.owners[id] = h
	return id, nil
}

// setOwner makes h the owner of id's events.
func (d *cmDispatch) setOwner(id cmIDC, h cmHandler) {
	d.mu.Lock()
	d.owners[id] = h
	d.mu.Unlock()
}

// destroy forgets id and destroys it (rdma_destroy_id): no event of it is
// dispatched after.
func (d *cmDispatch) destroy(id cmIDC) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.owners, id)
	destroyID(id)
}

// close stops the goroutine and destroys the channel; every id must be
// destroyed.
func (d *cmDispatch) close() {
	_ = d.ch.f.Close()
	<-d.done
	destroyChannel(d.ch.ch)
}
