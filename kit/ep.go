package kit

import (
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Referenced is implemented by objects that endpoints hold a reference on
// while bound (the software EQ, CQ, counter and AV); their Close returns
// fi.EBUSY until every holder has released it.
type Referenced interface {
	// Acquire takes a reference; it fails with fi.EBADF once the object
	// is closed.
	Acquire() error
	// Release drops a reference taken by Acquire.
	Release()
}

// Bindings is the bind/enable validation base that providers embed in their
// endpoints (libfabric's util_ep bind and enable checks). It records what
// was bound, with which flags, holds a reference on each bound object, and
// checks at Enable that the endpoint has what its type and capabilities
// need.
//
// Bindings is safe for concurrent use.
type Bindings struct {
	mu sync.Mutex // guards every field below

	epType  fi.EPType
	caps    fi.Caps
	enabled bool

	// EQ is the bound event queue, or nil.
	EQ eq.EventQueue
	// TxCQ and RxCQ are the bound completion queues, or nil.
	TxCQ, RxCQ eq.CompletionQueue
	// TxSelective and RxSelective are set when the CQ was bound with
	// FI_SELECTIVE_COMPLETION: only operations with FI_COMPLETION report.
	TxSelective, RxSelective bool
	// Counters by the operation kind they count: fi.FlagSend, FlagRecv,
	// FlagRead, FlagWrite, FlagRemoteRead, FlagRemoteWrite.
	Counters map[fi.Flags]eq.Counter
	// AV is the bound address vector, or nil.
	AV fi.AV

	held []Referenced
}

// cqFlags and cntrFlags are the flags fi_ep_bind accepts for each class.
const (
	cqFlags   = fi.FlagSend | fi.FlagRecv | fi.FlagSelectiveCompletion
	cntrFlags = fi.FlagSend | fi.FlagRecv | fi.FlagRead | fi.FlagWrite |
		fi.FlagRemoteRead | fi.FlagRemoteWrite
)

// Init sets the endpoint's type and capabilities, which Bind and
// CheckEnable validate against.
func (b *Bindings) Init(info *fi.Info) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if info.EPAttr != nil {
		b.epType = info.EPAttr.Type
	}
	b.caps = info.Caps
}

// Bind validates and records a binding (fi_ep_bind). It returns
// fi.EOPBADSTATE after Enable, fi.EBADFLAGS for flags the class does not
// take, fi.EINVAL for a second object of a kind already bound or a class
// the endpoint type cannot bind, fi.EBADF for a closed object, and
// fi.ENOSYS for an object class it does not know.
func (b *Bindings) Bind(obj fi.Fid, flags fi.Flags) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled {
		return errors.Wrap(fi.EOPBADSTATE, "ep: bind: endpoint already enabled")
	}
	switch o := obj.(type) {
	case eq.EventQueue:
		if flags != 0 {
			return errors.Wrapf(fi.EBADFLAGS, "ep: bind eq: flags %v", flags)
		}
		if b.EQ != nil {
			return errors.Wrap(fi.EINVAL, "ep: bind eq: an event queue is already bound")
		}
		if err := b.hold(obj, "eq"); err != nil {
			return err
		}
		b.EQ = o
	case eq.CompletionQueue:
		if bad := flags &^ cqFlags; bad != 0 {
			return errors.Wrapf(fi.EBADFLAGS, "ep: bind cq: flags %v not accepted (want FI_TRANSMIT and/or FI_RECV, optionally FI_SELECTIVE_COMPLETION)", bad)
		}
		if flags&(fi.FlagSend|fi.FlagRecv) == 0 {
			return errors.Wrap(fi.EBADFLAGS, "ep: bind cq: flags name no direction (want FI_TRANSMIT and/or FI_RECV)")
		}
		if (flags&fi.FlagSend != 0 && b.TxCQ != nil) || (flags&fi.FlagRecv != 0 && b.RxCQ != nil) {
			return errors.Wrap(fi.EINVAL, "ep: bind cq: a completion queue is already bound for that direction")
		}
		if err := b.hold(obj, "cq"); err != nil {
			return err
		}
		sel := flags&fi.FlagSelectiveCompletion != 0
		if flags&fi.FlagSend != 0 {
			b.TxCQ, b.TxSelective = o, sel
		}
		if flags&fi.FlagRecv != 0 {
			b.RxCQ, b.RxSelective = o, sel
		}
	case eq.Counter:
		if bad := flags &^ cntrFlags; bad != 0 || flags == 0 {
			return errors.Wrapf(fi.EBADFLAGS, "ep: bind counter: flags %v (want FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ or FI_REMOTE_WRITE)", flags)
		}
		for f := fi.Flags(1); f != 0; f <<= 1 {
			if flags&f != 0 && b.Counters[f] != nil {
				return errors.Wrapf(fi.EINVAL, "ep: bind counter: a counter is already bound for %v", f)
			}
		}
		if err := b.hold(obj, "counter"); err != nil {
			return err
		}
		if b.Counters == nil {
			b.Counters = make(map[fi.Flags]eq.Counter)
		}
		for f := fi.Flags(1); f != 0; f <<= 1 {
			if flags&f != 0 {
				b.Counters[f] = o
			}
		}
	case fi.AV:
		if flags != 0 {
			return errors.Wrapf(fi.EBADFLAGS, "ep: bind av: flags %v", flags)
		}
		if b.epType == fi.EPTypeMsg {
			return errors.Wrap(fi.EINVAL, "ep: bind av: connected (FI_EP_MSG) endpoints take no address vector")
		}
		if b.AV != nil {
			return errors.Wrap(fi.EINVAL, "ep: bind av: an address vector is already bound")
		}
		if err := b.hold(obj, "av"); err != nil {
			return err
		}
		b.AV = o
	default:
		return errors.Wrapf(fi.ENOSYS, "ep: bind: cannot bind a %T", obj)
	}
	return nil
}

func (b *Bindings) hold(obj fi.Fid, what string) error {
	r, ok := obj.(Referenced)
	if !ok {
		return nil
	}
	if err := r.Acquire(); err != nil {
		return errors.Wrapf(err, "ep: bind %s: the %s is closed", what, what)
	}
	b.held = append(b.held, r)
	return nil
}

// CheckEnable checks that the endpoint has what it needs and marks it
// enabled (fi_enable): an event queue for connected endpoints (fi.ENOEQ),
// a completion queue or counter for each direction its capabilities use
// (fi.ENOCQ), an address vector for unconnected endpoints (fi.ENOAV).
// Enabling twice is allowed and does nothing.
func (b *Bindings) CheckEnable() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled {
		return nil
	}
	if b.epType == fi.EPTypeMsg && b.EQ == nil {
		return errors.Wrap(fi.ENOEQ, "ep: enable: connected endpoint has no event queue bound")
	}
	dirs := b.caps & (fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite)
	if dirs == 0 { // no direction bits: every direction (fi_getinfo(3))
		dirs = fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite
	}
	sends := b.caps&(fi.CapMsg|fi.CapTagged|fi.CapRMA|fi.CapAtomic) != 0 && dirs&(fi.CapSend|fi.CapRead|fi.CapWrite) != 0
	recvs := b.caps&(fi.CapMsg|fi.CapTagged) != 0 && dirs&fi.CapRecv != 0
	if sends && b.TxCQ == nil && b.Counters[fi.FlagSend] == nil && b.Counters[fi.FlagWrite] == nil && b.Counters[fi.FlagRead] == nil {
		return errors.Wrap(fi.ENOCQ, "ep: enable: no transmit completion queue or counter bound")
	}
	if recvs && b.RxCQ == nil && b.Counters[fi.FlagRecv] == nil {
		return errors.Wrap(fi.ENOCQ, "ep: enable: no receive completion queue or counter bound")
	}
	if (b.epType == fi.EPTypeRDM || b.epType == fi.EPTypeDgram) && b.AV == nil {
		return errors.Wrap(fi.ENOAV, "ep: enable: unconnected endpoint has no address vector bound")
	}
	b.enabled = true
	return nil
}

// Enabled reports whether CheckEnable succeeded.
func (b *Bindings) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// Release drops the references the bindings hold, so the bound objects can
// be closed; the endpoint's Close calls it once.
func (b *Bindings) Release() {
	b.mu.Lock()
	held := b.held
	b.held = nil
	b.mu.Unlock()
	for _, r := range held {
		r.Release()
	}
}

// BindOwn is a provider endpoint's fi_ep_bind (C's ofi_ep_bind_valid and
// util_ep's bind): obj must be an object the provider's own fabric and
// domain opened (FabricEQ[S], DomainCQ[S], DomainCounter[S],
// DomainAV[S]), an address vector only on an unconnected endpoint, and
// the endpoint still open (closed false); then b.Bind checks and records
// the binding. The errors name prov: fi.EINVAL for a nil, foreign or
// misplaced object, fi.EBADF once closed.
func BindOwn[S any](b *Bindings, prov string, closed bool, obj fi.Fid, flags fi.Flags) error {
	if obj == nil {
		return errors.Wrapf(fi.EINVAL, "%s: bind: nil object", prov)
	}
	if _, ok := obj.(fi.AV); ok && b.epType == fi.EPTypeMsg {
		return errors.Wrapf(fi.EINVAL, "%s: bind: connected (FI_EP_MSG) endpoints take no address vector", prov)
	}
	switch obj.(type) {
	case *FabricEQ[S], *DomainCQ[S], *DomainCounter[S], *DomainAV[S]:
	default:
		return errors.Wrapf(fi.EINVAL, "%s: bind: %T is not an event queue, completion queue, counter or address vector of this provider", prov, obj)
	}
	if closed {
		return errors.Wrapf(fi.EBADF, "%s: bind: endpoint closed", prov)
	}
	return b.Bind(obj, flags)
}

// CheckEnableOpen is a provider endpoint's fi_enable check: fi.EBADF
// naming prov once the endpoint is closed, else CheckEnable.
func (b *Bindings) CheckEnableOpen(prov string, closed bool) error {
	if closed {
		return errors.Wrapf(fi.EBADF, "%s: enable: endpoint closed", prov)
	}
	return b.CheckEnable()
}

// BoundEQ returns the event queue bound in b when it is the provider's
// own (a FabricEQ[S]), or nil: where an endpoint posts its connection
// events (fi_cm(3)), before and after Enable.
func BoundEQ[S any](b *Bindings) *FabricEQ[S] {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, _ := b.EQ.(*FabricEQ[S])
	return q
}

// EndpointInfo returns the Info an endpoint keeps and answers Info()
// with (fi_endpoint): a copy of info, its endpoint type set to typ and,
// where info asks for no capabilities, the provider's caps.
func EndpointInfo(info *fi.Info, typ fi.EPType, caps fi.Caps) *fi.Info {
	in := info.Clone()
	if in.EPAttr == nil {
		in.EPAttr = &fi.EPAttr{}
	}
	in.EPAttr.Type = typ
	if in.Caps == 0 {
		in.Caps = caps
	}
	return in
}

// Canceled is fi_cancel's answer once the provider looked for the
// operation: nil when it found it (the operation then completes with an
// fi.ECANCELED error entry), bare fi.ENOENT when there is none to cancel.
func Canceled(found bool) error {
	if found {
		return nil
	}
	return fi.ENOENT
}
