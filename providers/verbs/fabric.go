//go:build verbs && cgo

package verbs

import (
	"slices"
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
// which hands each event to the endpoint owning its id. kit.Fabric counts
// the domains, event queues and passive endpoints opened on it, gives
// Close its fi.EBUSY rule ("verbs: close fabric: 1 domain still open")
// and opens its event queues, which the rdma_cm goroutine writes. Safe for
// concurrent use.
type fabric struct {
	kit.Fabric[epSet]
	cm *cmDispatch
}

var _ fi.Fabric = (*fabric)(nil)

// OpenFabric opens a fabric (fi_fabric) and its rdma_cm event channel
// (rdma_create_event_channel).
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	f := new(fabric)
	if err := f.Init(provName, provVersion, attr, fi.EPTypeMsg, fi.EPTypeDgram); err != nil {
		return nil, err
	}
	entries, err := msgEntries()
	if err != nil || len(entries) == 0 {
		reason, hint := offer()
		return nil, errors.WithHint(errors.Wrapf(fi.ENODATA, "verbs: open fabric: %s", reason), hint)
	}
	if !slices.ContainsFunc(entries, func(e *fi.Info) bool { return e.FabricAttr.Name == attr.Name }) {
		return nil, errors.Wrapf(fi.ENODATA, "verbs: open fabric: no fabric %q (the fabrics are the subnets of the active ports, e.g. %q)",
			attr.Name, entries[0].FabricAttr.Name)
	}
	if f.cm, err = newCMDispatch(); err != nil {
		return nil, err
	}
	return f, nil
}

// Close closes the fabric (fi_close) and its event channel
// (rdma_destroy_event_channel). While domains, passive endpoints or event
// queues opened on it are open it returns fi.EBUSY, saying which; once
// closed, bare fi.EBADF.
func (f *fabric) Close() error { return f.CloseWith(f.cm.close) }

// OpenDomain opens a domain of the fabric (fi_domain; vrb_domain) for
// info, an entry GetInfo returned: the device info.DomainAttr.Name.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if info != nil && info.DomainAttr != nil && info.DomainAttr.Name == "" {
		return nil, errors.Wrap(fi.EINVAL, "verbs: open domain: info names no device (DomainAttr.Name)")
	}
	d := &domain{fabric: f}
	if err := d.Init(&f.Fabric, info, nil); err != nil {
		return nil, err
	}
	if err := d.open(); err != nil {
		_ = d.Domain.Close()
		return nil, err
	}
	return d, nil
}

// eventQueue is the fabric's EQ.
type eventQueue = kit.FabricEQ[epSet]

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
					_ = reject(ev.id, providerReject(eq.ReasonNoListener))
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
