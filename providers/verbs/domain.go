//go:build verbs && cgo

package verbs

import (
	"context"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

var (
	_ fi.Domain        = (*domain)(nil)
	_ eq.CounterOpener = (*domain)(nil)
	_ fi.MRRegistrar   = (*domain)(nil)
)

// domain is an opened verbs domain (struct fid_domain; fi_domain(3);
// vrb_domain): one RDMA device, through the context librdmacm opened for
// it (rdma_get_devices), and one protection domain (ibv_alloc_pd) that
// every memory region and queue pair of the domain shares. kit.Domain
// counts what is open on it and gives Close its fi.EBUSY rule ("verbs:
// close domain: 1 endpoint and 2 mrs still open"). Safe for concurrent
// use.
type domain struct {
	kit.Domain[epSet]
	fabric *fabric
	dev    ctxC
	pd     pdC
	// atomicCap is the device's atomic_cap (ibv_query_device): with
	// atomicCapNone its endpoints refuse FI_SUM and FI_CSWAP (atomic.go).
	atomicCap int
	// ud holds the address handles of its datagram endpoints (udav.go).
	ud     *udDomain
	udOnce sync.Once
}

// open opens the device info.DomainAttr.Name, reads its atomic
// capability and allocates the domain's protection domain
// (rdma_get_devices, ibv_query_device, ibv_alloc_pd).
func (d *domain) open() error {
	dev, err := findContext(deviceOf(d.Info().DomainAttr.Name))
	if err != nil {
		return errors.Wrap(err, "verbs: open domain")
	}
	if d.atomicCap, err = deviceAtomicCap(dev); err != nil {
		return errors.Wrap(err, "verbs: open domain")
	}
	pd, err := allocPD(dev)
	if err != nil {
		return errors.Wrap(err, "verbs: open domain")
	}
	d.dev, d.pd = dev, pd
	return nil
}

// Close closes the domain (fi_close; ibv_dealloc_pd). While endpoints,
// CQs, counters or memory regions opened on it are open it returns
// fi.EBUSY, saying which; once closed, bare fi.EBADF.
func (d *domain) Close() error {
	return d.CloseWith(func() {
		d.ud.close()
		deallocPD(d.pd)
	})
}

// OpenCounter opens a counter (fi_cntr_open): the framework's software
// counter, progressed as the domain's CQs are.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) { return d.NewCounter(attr) }

// The domain's CQs are software CQs (kit.Domain's OpenCQ,
// kit.DomainCQ[epSet]) fed from their endpoints' verbs CQs: each
// endpoint bound to one keeps a verbs CQ; reading the queue polls them
// (ibv_poll_cq), and a blocking read has each endpoint's goroutine wait
// on its completion channel (epSet.wait). The device moves the data on
// its own (FI_PROGRESS_AUTO); completions wait in the verbs CQ until
// read, as in C's provider. Its counters (kit.DomainCounter[epSet]) are
// software counters fed alike.

// epSet is the endpoints whose completions a queue or counter gets
// (kit.Driver); the event queue has none: the rdma_cm goroutine posts to
// it.
type epSet struct{ kit.Set[cqFeeder] }

// cqFeeder is an endpoint whose verbs CQ feeds the set's queues: an
// FI_EP_MSG endpoint or an FI_EP_DGRAM one (ud.go).
type cqFeeder interface {
	progress()
	wake()
}

// Hooks gives the completion queues and counters the set's hooks
// (kit.Driver).
func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }

// wait is the queue's wait hook (kit.WaitFunc): it has every
// endpoint's goroutine wait for its next completion, which it moves into
// the queue, waking the caller, and returns when ctx ends.
func (s *epSet) wait(ctx context.Context) error {
	for _, e := range s.Load() {
		e.wake()
	}
	<-ctx.Done()
	return nil
}

// progress polls the endpoints' verbs CQs (ibv_poll_cq).
func (s *epSet) progress() {
	for _, e := range s.Load() {
		e.progress()
	}
}

// memRegion is a registered application buffer (struct fid_mr;
// fi_mr_reg; vrb_mr_reg: ibv_reg_mr on the buffer itself, pinned with a
// runtime.Pinner until Close, since the device keeps its address). Under the
// entries' FI_MR_LOCAL its Desc, the *memRegion, gives data-transfer
// calls its lkey; under FI_MR_PROV_KEY and FI_MR_VIRT_ADDR its Key is
// the rkey and peers address it by virtual address.
type memRegion struct {
	domain *domain
	buf    []byte
	m      mrC // nil for an empty buffer
	pin    runtime.Pinner
	base   uint64
	lkey   uint32
	rkey   uint32
	closed atomic.Bool
}

var _ fi.MR = (*memRegion)(nil)

// RegisterMR registers attr.Buf with the domain's protection domain
// (fi_mr_regattr; ibv_reg_mr). Local write is always granted (receives,
// read and atomic results land there); remote read and write as
// attr.Access asks, remote write with the peer's device atomics
// (IBV_ACCESS_REMOTE_ATOMIC), as C's vrb_mr_ofi2ibv_access grants them.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	if attr == nil {
		return nil, errors.Wrap(fi.EINVAL, "verbs: register mr: nil attributes")
	}
	if flags != 0 {
		return nil, errors.Wrapf(fi.EBADFLAGS, "verbs: register mr: flags %v not supported (want 0)", flags)
	}
	const valid = fi.AccessRead | fi.AccessWrite | fi.AccessRecv | fi.AccessSend | fi.AccessRemoteRead | fi.AccessRemoteWrite
	if attr.Access&^valid != 0 {
		return nil, errors.Wrapf(fi.EINVAL, "verbs: register mr: unknown access bits %v", attr.Access&^valid)
	}
	if err := d.Acquire(kit.KindMR, "register mr"); err != nil {
		return nil, err
	}
	r := &memRegion{domain: d, buf: attr.Buf}
	if len(attr.Buf) > 0 {
		access := accessLocalWrite
		if attr.Access&fi.AccessRemoteRead != 0 {
			access |= accessRemoteRead
		}
		if attr.Access&fi.AccessRemoteWrite != 0 {
			access |= accessRemoteWrite | accessRemoteAtomic
		}
		r.pin.Pin(&attr.Buf[0])
		m, err := regMR(d.pd, unsafe.Pointer(&attr.Buf[0]), len(attr.Buf), access)
		if err != nil {
			r.pin.Unpin()
			d.Release(kit.KindMR)
			return nil, errors.Wrap(err, "verbs")
		}
		r.m = m
		r.base = uint64(uintptr(unsafe.Pointer(&attr.Buf[0])))
		r.lkey, r.rkey = mrKeys(m)
	}
	return r, nil
}

// Key is the region's rkey (fi_mr_key).
func (r *memRegion) Key() uint64 { return uint64(r.rkey) }

// Desc is the region itself (fi_mr_desc).
func (r *memRegion) Desc() any { return r }

// Close deregisters the region (fi_close; ibv_dereg_mr). A second Close
// returns fi.EBADF.
func (r *memRegion) Close() error {
	if r.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "verbs: close mr: already closed")
	}
	var err error
	if r.m != nil {
		err = deregMR(r.m)
		r.pin.Unpin()
	}
	r.domain.Release(kit.KindMR)
	return err
}

// lkeyFor returns the lkey under which the device reads or writes the
// n bytes at addr, which must lie inside the region.
func (r *memRegion) lkeyFor(addr uint64, n int) (uint32, bool) {
	if r == nil || r.m == nil || r.closed.Load() || addr < r.base || addr+uint64(n) > r.base+uint64(len(r.buf)) {
		return 0, false
	}
	return r.lkey, true
}

// srcFor returns the address an endpoint of the domain binds its id to
// when its Info has none: the first IP address rdma_cm puts on the
// domain's device.
func (d *domain) srcFor(format fi.AddrFormat) (netip.AddrPort, bool) {
	addrs, err := rdmaAddrs()
	if err != nil {
		return netip.AddrPort{}, false
	}
	for _, a := range addrs[deviceOf(d.Info().DomainAttr.Name)] {
		if format == fi.FormatSockaddrIn6 && !a.Is6() || format == fi.FormatSockaddrIn && !a.Is4() {
			continue
		}
		return netip.AddrPortFrom(a, 0), true
	}
	return netip.AddrPort{}, false
}
