// Package hook is gofabric's hook layer, after libfabric's hook providers
// (fi_hook(7)): a provider that wraps another registered provider, passes
// every call through, and on the way injects the faults it was given.
// The conformance suite uses it to show that its tests fail against a
// provider that breaks the rules (fabtests' own tests); a hook provider is
// a testing tool, not something to deploy.
//
// Register a hook under a new name; its entries are the inner provider's
// with prov_name "<inner>;<name>" (a layer over the core provider, as
// "tcp;ofi_rxm" is), selected by that name (hints or FI_PROVIDER).
// Because a plain "tcp" selector also selects "tcp;<name>", register
// hooks only in programs or test binaries that want them.
//
// What is wrapped: fabrics, domains, event queues (events name the
// wrapping objects), passive and active endpoints, and completion queues;
// address vectors, counters and memory regions only where a fault needs
// it. A wrapped endpoint offers the abilities the inner one has among
// ep.CM, ep.Namer, ep.Msg, ep.Tagged, ep.RMA and ep.Joiner.
//
// Faults lists what a hook breaks: one deliberate bug per conformance
// group (the suite's self-test, providers/hook's tests, runs each broken
// provider through its group and requires the group to fail), and seeded
// message faults (faults.go) under which every operation must still end
// in a completion or an error entry, none hang and none arrive
// corrupted.
package hook

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Faults are what a hook breaks.
type Faults struct {
	// DropShutdown: event queues never deliver eq.Shutdown.
	DropShutdown bool
	// TruncateCMData, when positive: Connect, Accept and Reject pass on at
	// most this many bytes of private data, silently.
	TruncateCMData int
	// HideRMAErrors: an RMA operation's error entry is reported as a
	// successful completion (as if the target skipped its key check).
	HideRMAErrors bool

	// Broken behaviours, one or more per conformance group, with which
	// the suite shows it can fail.
	//
	// GetInfoLosesRMA: returned entries lack FI_RMA even when asked for
	// it (unit/getinfo).
	GetInfoLosesRMA bool
	// EQLosesWrites: EventQueue.Write succeeds and the event never comes
	// out (unit/eq).
	EQLosesWrites bool
	// CQCloseIgnoresBinding: closing a CQ an endpoint is bound to
	// reports success (unit/cq).
	CQCloseIgnoresBinding bool
	// CounterOffByOne: Counter.Read returns one more than the count
	// (unit/cntr).
	CounterOffByOne bool
	// AVLookupWrong: AV.Lookup returns another address (unit/av).
	AVLookupWrong bool
	// MRKeyZero: every memory region's Key is 0 (unit/mr).
	MRKeyZero bool
	// SourceUnknown: ReadFrom reports FI_ADDR_NOTAVAIL for every sender
	// (rdm, dgram).
	SourceUnknown bool
	// TagWrong: completions carry their tag plus one (tagged).
	TagWrong bool
	// CloseTwiceOK: a second Close of an endpoint returns nil (close).
	CloseTwiceOK bool
	// IOVLimitIgnored: SendV and RecvV take more segments than the limit
	// by dropping the extra ones (badinput).
	IOVLimitIgnored bool
	// DropJoinComplete: joins never report eq.JoinComplete (multicast).
	DropJoinComplete bool
	// CorruptUnchecked: with Corrupt, corrupted frames are delivered as
	// data instead of as error entries (faults).
	CorruptUnchecked bool

	// Seed seeds the message faults below (faults.go); each is the
	// probability, per message, of its fault. Drop without Faults set in
	// the suite's Config shows lost messages (concurrency, dgram).
	Seed                            uint64
	Drop, Delay, Duplicate, Corrupt float64
	// Cut is the probability, per message, that a connected endpoint's
	// connection is shut down before the message.
	Cut float64
}

// Register registers a hook provider named inner+";"+name over the
// registered provider inner (fi.Register; it panics on a duplicate name).
func Register(name, inner string, f Faults) error {
	in, ok := fi.LookupProvider(inner)
	if !ok {
		return errors.Wrapf(fi.ENODATA, "hook: no provider %q to wrap", inner)
	}
	fi.Register(&provider{name: in.Name() + ";" + name, inner: in, f: f})
	return nil
}

type provider struct {
	name  string
	inner fi.Provider
	f     Faults
}

// Name returns "<inner>;<hook>".
func (p *provider) Name() string { return p.name }

// Version returns the inner provider's version.
func (p *provider) Version() fi.Version { return p.inner.Version() }

// GetInfo returns the inner provider's entries under the hook's name
// (fi_getinfo).
func (p *provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	h := hints.Clone()
	h.FabricAttr.ProvName = p.inner.Name()
	infos, err := p.inner.GetInfo(ctx, node, service, flags, h)
	if err != nil {
		return nil, errors.Wrapf(err, "hook %s", p.name)
	}
	for _, i := range infos {
		if i.FabricAttr != nil {
			i.FabricAttr.ProvName = p.name
		}
		if p.f.GetInfoLosesRMA {
			i.Caps &^= fi.CapRMA
		}
	}
	return infos, nil
}

// OpenFabric opens the inner fabric and wraps it (fi_fabric).
func (p *provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	a := *attr
	a.ProvName = p.inner.Name()
	f, err := p.inner.OpenFabric(&a)
	if err != nil {
		return nil, err
	}
	return &fabric{inner: f, h: &hooks{f: p.f}}, nil
}

// hooks is the state a hook's objects share: its faults and the map from
// inner objects to their wrappers, for the fids of events.
type hooks struct {
	f  Faults
	mu sync.Mutex // guards outer and msgs
	// outer maps inner endpoints to their wrappers.
	outer map[fi.Fid]fi.Fid
	// msgs are the endpoints sending through the message faults.
	msgs []*faultMsg

	rngMu sync.Mutex // guards rng
	rng   *rand.Rand
}

func (h *hooks) remember(inner, outer fi.Fid) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.outer == nil {
		h.outer = map[fi.Fid]fi.Fid{}
	}
	h.outer[inner] = outer
}

func (h *hooks) forget(inner fi.Fid) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.outer, inner)
}

func (h *hooks) wrapper(inner fi.Fid) fi.Fid {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o, ok := h.outer[inner]; ok {
		return o
	}
	return inner
}

func (h *hooks) cmData(b []byte) []byte {
	if n := h.f.TruncateCMData; n > 0 && len(b) > n {
		return b[:n]
	}
	return b
}

// unwrap returns the inner object of a wrapper, or obj itself.
func unwrap(obj fi.Fid) fi.Fid {
	switch o := obj.(type) {
	case *eventQueue:
		return o.inner
	case *completionQueue:
		return o.inner
	case *counter:
		return o.Counter
	case *addrVector:
		return o.AV
	}
	return obj
}

type fabric struct {
	inner fi.Fabric
	h     *hooks
}

func (f *fabric) Close() error { return f.inner.Close() }

func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	d, err := f.inner.OpenDomain(info)
	if err != nil {
		return nil, err
	}
	return &domain{inner: d, h: f.h}, nil
}

func (f *fabric) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) {
	q, err := eq.OpenEQ(f.inner, attr)
	if err != nil {
		return nil, err
	}
	return &eventQueue{inner: q, h: f.h}, nil
}

func (f *fabric) OpenPassive(info *fi.Info) (ep.PassiveEndpoint, error) {
	p, err := ep.OpenPassive(f.inner, info)
	if err != nil {
		return nil, err
	}
	w := &passive{inner: p, h: f.h}
	f.h.remember(p, w)
	return w, nil
}

type domain struct {
	inner fi.Domain
	h     *hooks
}

func (d *domain) Close() error   { return d.inner.Close() }
func (d *domain) Info() *fi.Info { return d.inner.Info() }

func (d *domain) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) {
	q, err := eq.OpenCQ(d.inner, attr)
	if err != nil {
		return nil, err
	}
	return &completionQueue{inner: q, h: d.h}, nil
}

func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	c, err := eq.OpenCounter(d.inner, attr)
	if err != nil || !d.h.f.CounterOffByOne {
		return c, err
	}
	return &counter{Counter: c}, nil
}

func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	m, err := fi.RegisterMR(d.inner, attr, flags)
	if err != nil || !d.h.f.MRKeyZero {
		return m, err
	}
	return zeroKeyMR{m}, nil
}

func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	a, err := fi.OpenAV(d.inner, attr)
	if err != nil || !d.h.f.AVLookupWrong {
		return a, err
	}
	return &addrVector{AV: a}, nil
}

// counter reads one too many (CounterOffByOne).
type counter struct{ eq.Counter }

func (c *counter) Read() uint64 { return c.Counter.Read() + 1 }

// zeroKeyMR reports key 0 (MRKeyZero).
type zeroKeyMR struct{ fi.MR }

func (zeroKeyMR) Key() uint64 { return 0 }

// addrVector looks addresses up wrong (AVLookupWrong).
type addrVector struct{ fi.AV }

func (a *addrVector) Lookup(addr fi.Addr, buf []byte) (int, error) {
	n, err := a.AV.Lookup(addr, buf)
	if n > 0 && n <= len(buf) {
		buf[n-1] ^= 0xff
	}
	return n, err
}

func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	e, err := ep.Open(d.inner, info)
	if err != nil {
		return nil, err
	}
	w := wrapEndpoint(e, d.h)
	d.h.remember(e, w)
	return w, nil
}

// eventQueue delivers the inner queue's events with the wrappers' fids,
// less the ones the faults drop.
type eventQueue struct {
	inner eq.EventQueue
	h     *hooks
}

func (q *eventQueue) Close() error { return q.inner.Close() }

func (q *eventQueue) Write(ev eq.Event) error {
	if q.h.f.EQLosesWrites {
		return nil
	}
	return q.inner.Write(ev)
}

func (q *eventQueue) Read() (eq.Event, error) {
	for {
		ev, err := q.inner.Read()
		if err != nil || !q.drop(ev) {
			return q.outer(ev), err
		}
	}
}

func (q *eventQueue) Peek() (eq.Event, error) {
	ev, err := q.inner.Peek()
	return q.outer(ev), err
}

func (q *eventQueue) SRead(ctx context.Context) (eq.Event, error) {
	for {
		ev, err := q.inner.SRead(ctx)
		if err != nil || !q.drop(ev) {
			return q.outer(ev), err
		}
	}
}

func (q *eventQueue) ReadErr() (*eq.EQError, error) {
	e, err := q.inner.ReadErr()
	if e != nil {
		c := *e
		c.Fid = q.h.wrapper(c.Fid)
		return &c, err
	}
	return e, err
}

func (q *eventQueue) drop(ev eq.Event) bool {
	switch ev.(type) {
	case *eq.Shutdown:
		return q.h.f.DropShutdown
	case *eq.JoinComplete:
		return q.h.f.DropJoinComplete
	}
	return false
}

// outer rewrites an event's fid to the wrapper's.
func (q *eventQueue) outer(ev eq.Event) eq.Event {
	switch e := ev.(type) {
	case *eq.ConnReq:
		c := *e
		c.Fid = q.h.wrapper(c.Fid)
		return &c
	case *eq.Connected:
		c := *e
		c.Fid = q.h.wrapper(c.Fid)
		return &c
	case *eq.Shutdown:
		c := *e
		c.Fid = q.h.wrapper(c.Fid)
		return &c
	}
	return ev
}

// completionQueue passes completions through: under HideRMAErrors an RMA
// error entry becomes a success; under the message faults completions
// get their application contexts back, frames are checked (a corrupted
// one becomes an error entry), a duplicate's completion disappears, and
// a dropped send's made-up completion comes out. Error entries it made or
// had to look at wait in pending for ReadErr.
type completionQueue struct {
	inner   eq.CompletionQueue
	h       *hooks
	mu      sync.Mutex // guards pending and made
	pending []*eq.CQError
	made    []eq.Completion
}

func (q *completionQueue) Close() error {
	err := q.inner.Close()
	if q.h.f.CQCloseIgnoresBinding && errors.Is(err, fi.EBUSY) {
		return nil
	}
	return err
}

func (q *completionQueue) Read(entries []eq.Completion) (int, error) {
	return q.read(entries, nil, func(b []eq.Completion, s []fi.Addr) (int, error) { return q.inner.Read(b) })
}

func (q *completionQueue) ReadFrom(entries []eq.Completion, src []fi.Addr) (int, error) {
	return q.read(entries, src, func(b []eq.Completion, s []fi.Addr) (int, error) { return q.inner.ReadFrom(b, s) })
}

// SRead waits on the inner queue, then reads as Read does.
func (q *completionQueue) SRead(ctx context.Context, entries []eq.Completion) (int, error) {
	for {
		if n, err := q.Read(entries); err != fi.EAGAIN {
			return n, err
		}
		n, err := q.inner.SRead(ctx, entries)
		if err != nil && err != fi.EAVAIL {
			return n, err
		}
		if n > 0 || err == fi.EAVAIL {
			if k, err := q.filter(entries, nil, n, err); k > 0 || err != fi.EAGAIN {
				return k, err
			}
		}
	}
}

func (q *completionQueue) ReadErr() (*eq.CQError, error) {
	q.mu.Lock()
	if len(q.pending) > 0 {
		e := q.pending[0]
		q.pending = q.pending[1:]
		q.mu.Unlock()
		return e, nil
	}
	q.mu.Unlock()
	for {
		e, err := q.inner.ReadErr()
		if err != nil || e == nil || !q.h.f.faulty() {
			return e, err
		}
		if t, ok := translateErr(e); ok {
			return t, nil
		}
	}
}

func (q *completionQueue) read(entries []eq.Completion, src []fi.Addr, read func([]eq.Completion, []fi.Addr) (int, error)) (int, error) {
	if q.h.f.faulty() {
		q.h.releaseAll()
		q.mu.Lock()
		if len(q.made) > 0 && len(entries) > 0 {
			n := copy(entries, q.made)
			q.made = q.made[n:]
			for i := range n {
				if src != nil {
					src[i] = fi.AddrUnspec
				}
			}
			q.mu.Unlock()
			return n, nil
		}
		q.mu.Unlock()
	}
	q.mu.Lock()
	busy := len(q.pending) > 0
	q.mu.Unlock()
	if busy {
		return 0, fi.EAVAIL
	}
	n, err := read(entries, src)
	return q.filter(entries, src, n, err)
}

// filter applies the faults' translation and HideRMAErrors to what the
// inner queue returned.
func (q *completionQueue) filter(entries []eq.Completion, src []fi.Addr, n int, err error) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range n {
		if q.h.f.SourceUnknown && src != nil {
			src[i] = fi.AddrUnspec
		}
		if q.h.f.TagWrong && entries[i].Flags&fi.FlagTagged != 0 {
			entries[i].Tag++
		}
	}
	if q.h.f.faulty() {
		k := 0
		for i := range n {
			c, bad, ok := q.h.translate(entries[i])
			switch {
			case !ok:
			case bad != nil:
				q.pending = append(q.pending, bad)
			default:
				entries[k] = c
				if src != nil {
					src[k] = src[i]
				}
				k++
			}
		}
		n = k
		if n == 0 && len(q.pending) > 0 {
			return 0, fi.EAVAIL
		}
		if n == 0 && err == nil {
			return 0, fi.EAGAIN
		}
	}
	if !q.h.f.HideRMAErrors || err != fi.EAVAIL || len(entries) == 0 {
		return n, err
	}
	e, rerr := q.inner.ReadErr()
	if rerr != nil || e == nil {
		return n, err
	}
	if e.Flags&fi.FlagRMA == 0 {
		q.pending = append(q.pending, e)
		return 0, fi.EAVAIL
	}
	entries[0] = eq.Completion{Context: e.Context, Flags: e.Flags, Len: e.Len, Data: e.Data, Tag: e.Tag}
	if src != nil {
		src[0] = fi.AddrUnspec
	}
	return 1, nil
}

// pushErr queues an error entry the hook made up (a delayed send the
// inner endpoint refused).
func (q *completionQueue) pushErr(e *eq.CQError) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, e)
}

// made queues a completion the hook made up.
func (q *completionQueue) inject(c eq.Completion) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.made = append(q.made, c)
}

// register and unregister track the endpoints sending through faults.
func (h *hooks) register(m *faultMsg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, m)
}

func (h *hooks) unregister(m *faultMsg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = slices.DeleteFunc(h.msgs, func(x *faultMsg) bool { return x == m })
}

// WaitFD passes the inner queue's wait descriptor through (fi_control
// with FI_GETWAIT; eq.FDWaiter), fi.ENOSYS when it has none.
func (q *completionQueue) WaitFD() (int, error) { return eq.WaitFD(q.inner) }

// TryWait is fi_trywait: fi.EAGAIN while the hook holds entries of its
// own (made-up completions, error entries it looked at), else the inner
// queue's answer.
func (q *completionQueue) TryWait() error {
	q.mu.Lock()
	held := len(q.pending) > 0 || len(q.made) > 0
	q.mu.Unlock()
	if held {
		return fi.EAGAIN
	}
	return eq.TryWait(q.inner)
}

// WaitFD passes the inner queue's wait descriptor through (eq.FDWaiter).
func (q *eventQueue) WaitFD() (int, error) { return eq.WaitFD(q.inner) }

// TryWait passes fi_trywait to the inner queue.
func (q *eventQueue) TryWait() error { return eq.TryWait(q.inner) }

// WaitFD passes the inner counter's wait descriptor through (eq.FDWaiter).
func (c *counter) WaitFD() (int, error) { return eq.WaitFD(c.Counter) }

// TryWait passes fi_trywait to the inner counter.
func (c *counter) TryWait() error { return eq.TryWait(c.Counter) }

var (
	_ eq.FDWaiter = (*completionQueue)(nil)
	_ eq.FDWaiter = (*eventQueue)(nil)
	_ eq.FDWaiter = (*counter)(nil)
)
