package fabnet

import (
	"sync"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// mrCacheSize is how many registrations of the caller's buffers an
// endpoint keeps: a conversation reuses a few buffers, and each cached
// registration keeps its buffer reachable until it is evicted or the
// endpoint closes.
const mrCacheSize = 16

// mrKeyBase is the first key asked for on a domain that does not assign
// keys itself (no FI_MR_PROV_KEY): the cache's registrations are local
// only, but such a domain may still want each key unique; these stay
// clear of the small keys applications choose.
const mrKeyBase = 0xfab0_0000_0000_0000

// mrCache registers the buffers of the blocking calls with the domain
// where its MR mode has FI_MR_LOCAL (fi_mr(3): every buffer passed to a
// data-transfer call needs the desc of a registration), as libfabric's
// registration cache does for its utility providers: a buffer inside a
// registration already made reuses it, so a conversation over the same
// buffers registers once and the steady state allocates nothing. A
// registration covers its slice up to its capacity. An operation holds
// its registration until its completion is read, also when its caller
// left (an abandoned op), so that no memory is deregistered under a
// posted operation.
type mrCache struct {
	mu      sync.Mutex
	dom     fi.Domain
	provKey bool
	clock   uint64
	nextKey uint64
	regs    [mrCacheSize]mrReg
	// extras are the registrations made outside the cache, until their
	// operations are done.
	extras []*mrReg
}

// mrReg is one registration.
type mrReg struct {
	start, end uintptr
	mr         fi.MR
	desc       any
	// refs counts the posted operations using the registration; used is
	// the cache's clock at its last use.
	refs int
	used uint64
	// extra: the registration is outside the cache (every cached one was
	// in use), and closes when its last operation is done.
	extra bool
}

// newMRCache returns the cache of an endpoint on dom, or nil when the
// domain's MR mode (from info) does not ask for local registrations.
func newMRCache(dom fi.Domain, info *fi.Info) *mrCache {
	if info.DomainAttr == nil || info.DomainAttr.MRMode&fi.MRModeLocal == 0 {
		return nil
	}
	return &mrCache{dom: dom, provKey: info.DomainAttr.MRMode&fi.MRModeProvKey != 0, nextKey: mrKeyBase}
}

// get returns the registration covering buf, registering buf (to its
// capacity) when none does; nil for an empty buffer. The caller passes
// the registration's desc to the operation and releases it with put once
// the operation's completion was read.
func (c *mrCache) get(buf []byte) (*mrReg, error) {
	if len(buf) == 0 {
		return nil, nil
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	end := p + uintptr(len(buf))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	var victim *mrReg
	for i := range c.regs {
		r := &c.regs[i]
		if r.mr != nil && r.start <= p && end <= r.end {
			r.refs++
			r.used = c.clock
			return r, nil
		}
		if r.refs == 0 && (victim == nil || victim.mr != nil && (r.mr == nil || r.used < victim.used)) {
			victim = r
		}
	}
	full := buf[:cap(buf)]
	attr := fi.MRAttr{Buf: full, Access: fi.AccessSend | fi.AccessRecv | fi.AccessRead | fi.AccessWrite}
	if !c.provKey {
		attr.RequestedKey = c.nextKey
		c.nextKey++
	}
	mr, err := fi.RegisterMR(c.dom, &attr, 0)
	if err != nil {
		return nil, errors.Wrapf(err, "register the %d-byte buffer (the domain's MR mode has FI_MR_LOCAL)", len(full))
	}
	if victim == nil {
		victim = &mrReg{extra: true}
		c.extras = append(c.extras, victim)
	} else if victim.mr != nil {
		_ = victim.mr.Close()
	}
	*victim = mrReg{start: p, end: p + uintptr(len(full)), mr: mr, desc: mr.Desc(), refs: 1, used: c.clock, extra: victim.extra}
	return victim, nil
}

// put releases r, taken by get.
func (c *mrCache) put(r *mrReg) {
	c.mu.Lock()
	r.refs--
	if r.extra && r.refs == 0 && r.mr != nil {
		_ = r.mr.Close()
		r.mr, r.desc = nil, nil
		for i, x := range c.extras {
			if x == r {
				c.extras = append(c.extras[:i], c.extras[i+1:]...)
				break
			}
		}
	}
	c.mu.Unlock()
}

// close deregisters everything; the endpoint is closed, so no operation
// uses them any more.
func (c *mrCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for i := range c.regs {
		r := &c.regs[i]
		if r.mr != nil {
			if err := r.mr.Close(); err != nil && first == nil {
				first = err
			}
		}
		*r = mrReg{}
	}
	for _, r := range c.extras {
		if r.mr != nil {
			if err := r.mr.Close(); err != nil && first == nil {
				first = err
			}
			r.mr, r.desc = nil, nil
		}
	}
	c.extras = nil
	return first
}
