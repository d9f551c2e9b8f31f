//go:build cgo && linux

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/cgo"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/errors"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// maxSlots is GFI_MAX_PROVS: the providers one library registers.
const maxSlots = 8

// The Go objects behind the C fids. Each is reached from C through the
// cgo.Handle its C object holds; C pointers they keep (cfid, C buffers)
// are unsafe.Pointer values to C memory, which the garbage collector
// ignores.

// fabricObj is an opened fabric (struct fid_fabric).
type fabricObj struct {
	slot *slot
	f    fi.Fabric
	cfid unsafe.Pointer // *C.struct_fid_fabric: api_version lives there
}

// domainObj is an opened domain (struct fid_domain).
type domainObj struct {
	fab    *fabricObj
	d      fi.Domain
	format fi.AddrFormat
}

// eqObj is an event queue (struct fid_eq).
type eqObj struct {
	fab *fabricObj
	q   eq.EventQueue
	// poster is the queue's provider-side insert (the framework EQ's Post
	// and PostErr), which the bridge uses for FI_AV_COMPLETE events of
	// asynchronous AV inserts; nil when the provider's queue has none.
	poster eqPoster

	mu sync.Mutex // guards held and errData
	// held are events taken from the Go queue but not consumed: read with
	// FI_PEEK. Each keeps its C form, so that a peek and the read after it
	// return the same fi_info.
	held []heldEvent
	// errData is the C copy of the last error entry's err_data, valid
	// until the next read (fi_eq_readerr).
	errData unsafe.Pointer
}

// eqPoster is the provider-side insert of gofabric's framework EQ.
type eqPoster interface {
	Post(ev eq.Event) error
	PostErr(e *eq.EQError) error
}

// heldEvent is an event in its C form.
type heldEvent struct {
	kind uint32
	data []byte
}

// cqObj is a completion queue (struct fid_cq).
type cqObj struct {
	fab    *fabricObj
	q      eq.CompletionQueue
	format eq.CQFormat

	mu      sync.Mutex     // guards errData
	errData unsafe.Pointer // as eqObj.errData, for fi_cq_readerr

	// signaled: fi_cq_signal found no blocked sread; the next returns.
	signaled atomic.Bool
	wmu      sync.Mutex // guards waiters and wseq
	// waiters cancel the blocked sreads (fi_cq_signal).
	waiters map[uint64]context.CancelFunc
	wseq    uint64
}

// cntrObj is a counter (struct fid_cntr).
type cntrObj struct {
	c eq.Counter
}

// avObj is an address vector (struct fid_av).
type avObj struct {
	dom    *domainObj
	av     fi.AV
	format fi.AddrFormat
	// async: opened with FI_EVENT; inserts complete with FI_AV_COMPLETE
	// events on the bound EQ.
	async bool
	mu    sync.Mutex // guards eq
	eq    *eqObj
}

// mrObj is a memory region (struct fid_mr).
type mrObj struct {
	mr   fi.MR
	desc any
}

// pepObj is a passive endpoint (struct fid_pep).
type pepObj struct {
	fab    *fabricObj
	p      ep.PassiveEndpoint
	format fi.AddrFormat

	cmOnce sync.Once
	cmSize int   // FI_OPT_CM_DATA_SIZE, once known
	cmErr  error // why it is not known
}

// cmDataSize is FI_OPT_CM_DATA_SIZE of a passive endpoint (which C's
// ofi_rxm reads before it listens). gofabric's ep.PassiveEndpoint has no
// CMDataSize, so unless the provider's passive endpoint has one, the
// answer comes from an endpoint of the same fabric opened (and closed at
// once) from the passive endpoint's Info: the size connection requests
// to it can carry is what its provider's endpoints accept.
func (p *pepObj) cmDataSize() (int, error) {
	p.cmOnce.Do(func() {
		if d, ok := p.p.(interface{ CMDataSize() int }); ok {
			p.cmSize = d.CMDataSize()
			return
		}
		info := p.p.Info().Clone()
		info.Handle = nil
		d, err := p.fab.f.OpenDomain(info)
		if err != nil {
			p.cmErr = err
			return
		}
		defer d.Close()
		e, err := ep.Open(d, info)
		if err != nil {
			p.cmErr = err
			return
		}
		defer e.Close()
		cm, ok := e.(ep.CM)
		if !ok {
			p.cmErr = errors.Wrapf(fi.ENOPROTOOPT, "gofabric-fi: getopt: %T has no connection management", e)
			return
		}
		p.cmSize = cm.CMDataSize()
	})
	return p.cmSize, p.cmErr
}

// epObj is an active endpoint (struct fid_ep). The ability interfaces are
// asserted once, at open.
type epObj struct {
	dom    *domainObj
	e      ep.Endpoint
	msg    ep.Msg
	tagged ep.Tagged
	rma    ep.RMA
	cm     ep.CM
	join   ep.Joiner
	format fi.AddrFormat
	// connreq is the C connection request the endpoint was opened from,
	// freed with the endpoint.
	connreq unsafe.Pointer
	// connreqH is connreq's handle.
	connreqH cgo.Handle
}

// mcObj is a joined multicast group (struct fid_mc).
type mcObj struct {
	g ep.MulticastGroup
}

// connReqObj is a connection request (fi_info.handle of FI_CONNREQ).
type connReqObj struct {
	handle fi.Fid
}

// goFids maps the Go objects of providers (the Fid of events) to their C
// fids.
var goFids struct {
	mu sync.Mutex // guards m
	m  map[any]unsafe.Pointer
}

// setCFid records the C fid of a Go object.
func setCFid(goObj any, cfid unsafe.Pointer) {
	if goObj == nil {
		return
	}
	goFids.mu.Lock()
	defer goFids.mu.Unlock()
	if goFids.m == nil {
		goFids.m = make(map[any]unsafe.Pointer)
	}
	goFids.m[goObj] = cfid
}

// dropCFid forgets a Go object.
func dropCFid(goObj any) {
	if goObj == nil {
		return
	}
	goFids.mu.Lock()
	defer goFids.mu.Unlock()
	delete(goFids.m, goObj)
}

// cfidOf returns the C fid of a Go object, or nil.
func cfidOf(goObj any) unsafe.Pointer {
	if goObj == nil {
		return nil
	}
	goFids.mu.Lock()
	defer goFids.mu.Unlock()
	return goFids.m[goObj]
}

// goObjOf returns the provider object behind a bridge object, the key of
// goFids.
func goObjOf(o any) any {
	switch o := o.(type) {
	case *fabricObj:
		return o.f
	case *domainObj:
		return o.d
	case *eqObj:
		return o.q
	case *cqObj:
		return o.q
	case *cntrObj:
		return o.c
	case *avObj:
		return o.av
	case *mrObj:
		return o.mr
	case *pepObj:
		return o.p
	case *epObj:
		return o.e
	case *mcObj:
		return o.g
	}
	return nil
}

// objOf returns the bridge object behind handle h, or nil for 0.
// cgo.Handle.Value panics on handles that were deleted; the entry points'
// recover turns that into an error.
func objOf(h uintptr) any {
	if h == 0 {
		return nil
	}
	return cgo.Handle(h).Value()
}

// ctxOf makes a C context a Go operation context without allocating:
// unsafe.Pointer is stored in an interface as is.
func ctxOf(p unsafe.Pointer) any { return p }

// cctx returns the C context a Go context holds (nil for any other).
func cctx(c any) unsafe.Pointer {
	p, _ := c.(unsafe.Pointer)
	return p
}

// bytesAt is a view of C memory (nil for length 0).
func bytesAt(p unsafe.Pointer, n uintptr) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// badArg is the error of a bad argument from C: EINVAL, with what.
func badArg(format string, args ...any) error {
	return errors.Wrapf(fi.EINVAL, "gofabric-fi: "+format, args...)
}

// panicked reports a recovered panic with its stack on stderr (always: it
// is a bug, which FI_LOG_LEVEL must not hide) and returns FI_EOTHER.
func panicked(op string, r any) fi.Errno {
	fmt.Fprintf(os.Stderr, "gofabric-fi: recovered panic in %s: %v\n%s", op, r, debug.Stack())
	return fi.EOTHER
}

// closeObj closes the Go object behind a bridge object (fi_close).
func closeObj(o any) error {
	switch o := o.(type) {
	case *fabricObj:
		return o.f.Close()
	case *domainObj:
		return o.d.Close()
	case *eqObj:
		if err := o.q.Close(); err != nil {
			return err
		}
		o.mu.Lock()
		freeC(o.errData)
		o.errData = nil
		for _, h := range o.held {
			freeHeld(h)
		}
		o.held = nil
		o.mu.Unlock()
		return nil
	case *cqObj:
		if err := o.q.Close(); err != nil {
			return err
		}
		o.mu.Lock()
		freeC(o.errData)
		o.errData = nil
		o.mu.Unlock()
		return nil
	case *cntrObj:
		return o.c.Close()
	case *avObj:
		return o.av.Close()
	case *mrObj:
		return o.mr.Close()
	case *pepObj:
		return o.p.Close()
	case *epObj:
		if err := o.e.Close(); err != nil {
			return err
		}
		if o.connreq != nil {
			o.connreqH.Delete()
			freeC(o.connreq)
			o.connreq = nil
		}
		return nil
	case *mcObj:
		return o.g.Close()
	}
	return errors.Wrapf(fi.EINVAL, "gofabric-fi: close: not an object (%T)", o)
}

// slotOf returns the provider slot of a bridge object, for its log.
func slotOf(o any) *slot {
	switch o := o.(type) {
	case *fabricObj:
		return o.slot
	case *domainObj:
		return o.fab.slot
	case *eqObj:
		return o.fab.slot
	case *cqObj:
		return o.fab.slot
	case *avObj:
		return o.dom.fab.slot
	case *pepObj:
		return o.fab.slot
	case *epObj:
		return o.dom.fab.slot
	}
	return nil
}
