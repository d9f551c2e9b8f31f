//go:build linux

package shm

import (
	"math/bits"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// endpoint is a reliable unconnected endpoint (struct fid_ep; FI_EP_RDM,
// fi_endpoint(3), fi_msg(3), fi_tagged(3), fi_rma(3)). Its inbox is a
// region named after the endpoint; a peer it sends to is reached through
// the peer's region, where it claims an entry on first use. Safe for
// concurrent use.
type endpoint struct {
	domain *domain
	info   *fi.Info
	bind   kit.Bindings
	// The adapter gives the endpoint fi_msg(3), fi_tagged(3) and
	// fi_rma(3) over PostTx and PostRx (data.go).
	kit.MsgOps
	kit.TaggedOps
	kit.RMAOps
	// kit.AtomicOps gives it fi_atomic(3) over PostAtomic (atomic.go).
	kit.AtomicOps
	closed  atomic.Bool
	enabled atomic.Bool
	// noCMA is FI_SHM_DISABLE_CMA as the endpoint opened.
	noCMA bool
	// checkIvl is FI_SHM_CHECK_INTERVAL as the endpoint opened.
	checkIvl time.Duration
	// busy is set while the data path has work besides its rings
	// (answers to send, entries streaming or waiting for answers);
	// adopted mirrors the inbox entries being served. Both let progress
	// skip the lock when there is nothing to do.
	busy    atomic.Bool
	adopted atomic.Uint64
	idle    atomic.Uint32
	// nextCheck is when, in time since epoch, the next check of the
	// peers is due (checkPeers sets it).
	nextCheck atomic.Int64

	nameMu sync.Mutex // guards name and region before Enable
	name   string
	// region is the inbox. Lifetime rule: goroutines reach it without
	// mu (progress's lock-free look at the rings, a waiter marking the
	// inbox sleeping) at any time, even while and after the endpoint
	// closes; so Close never unmaps it, it retires it (region.retire),
	// and the memory is unmapped when no goroutine can reach the
	// endpoint any more. Everything else the data path uses (peers'
	// regions, the ringer) is used under mu after a check of closed.
	region *region
	bell   *doorbell
	ringer *ringer
	// nonce is the region's incarnation number, which the endpoint
	// writes into the entries it claims in peers' inboxes.
	nonce uint64

	// sleepMu guards sleepers, the number of waiters sleeping on the
	// doorbell: the inbox's sleeping word is set while there is one.
	sleepMu  sync.Mutex
	sleepers int
	// probe is a word peers read with process_vm_readv to learn whether
	// cross-memory attach works from them to us.
	probe *[2]uint64

	// Fixed at Enable.
	av *kit.AV
	kit.Completions[epSet]

	// mu guards the data path: the state in dataPath.
	mu sync.Mutex
	dp dataPath
}

var (
	_ ep.Endpoint = (*endpoint)(nil)
	_ ep.Namer    = (*endpoint)(nil)
	_ ep.Msg      = (*endpoint)(nil)
	_ ep.Tagged   = (*endpoint)(nil)
	_ ep.RMA      = (*endpoint)(nil)
	_ ep.Atomic   = (*endpoint)(nil)
	_ ep.Opener   = (*domain)(nil)
)

// names numbers probe words; defaultUses counts the endpoints that took
// the process's default name.
var names, defaultUses atomic.Int64

// OpenEndpoint opens an RDM endpoint (fi_endpoint) and creates its inbox,
// named by info's source address; the default name "fi_shm://<pid>" gets
// a "_<n>" suffix for the second endpoint of a process and later ones.
func (d *domain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	if info == nil {
		info = d.Info()
	}
	if info.EPAttr != nil && info.EPAttr.Type != fi.EPTypeUnspec && info.EPAttr.Type != fi.EPTypeRDM {
		return nil, errors.Wrapf(fi.EINVAL, "shm: open endpoint: ep type %v not supported (offers FI_EP_RDM)", info.EPAttr.Type)
	}
	txSize, rxSize, err := queueSizes(info)
	if err != nil {
		return nil, err
	}
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	e := &endpoint{domain: d, info: kit.EndpointInfo(info, fi.EPTypeRDM, infoCaps), probe: new([2]uint64)}
	ops := kit.NewOps(e, "shm", e.info)
	// FI_MULTI_RECV as a default op flag is for the untagged receives
	// (C's shm has no tagged multi-receive): the tagged calls go without
	// it.
	tops := *ops
	tops.RxFlags &^= fi.FlagMultiRecv
	e.MsgOps, e.TaggedOps, e.RMAOps = kit.MsgOps{Ops: ops}, kit.TaggedOps{Ops: &tops}, kit.RMAOps{Ops: ops}
	atomics := kit.NewAtomics(ops, e, e.info, atomicMax)
	// The valid queries answer as C's shm, built with compiler atomics.
	atomics.Exclude = kit.BuiltinAtomicsExclude
	e.AtomicOps = kit.AtomicOps{Atomics: atomics}
	e.bind.Init(e.info)
	e.dp.init(txSize, rxSize)
	e.noCMA = cmaDisabled()
	e.checkIvl = checkInterval()
	e.probe[0], e.probe[1] = probeMagic, uint64(os.Getpid())<<32|uint64(names.Add(1))
	name := string(e.info.SrcAddr)
	if name == "" {
		name = defaultName()
	}
	if err := e.open(name); err != nil {
		d.Release(kit.KindEndpoint)
		return nil, err
	}
	return e, nil
}

// probeMagic marks the probe word.
const probeMagic = 0x70726f6265736d21

// open creates the inbox and doorbell of name (a taken default name gets
// a suffix), under the user's directory lock.
func (e *endpoint) open(name string) error {
	if err := checkName([]byte(name)); err != nil {
		return err
	}
	dir, err := userDir()
	if err != nil {
		return err
	}
	return lockDir(dir, func() error {
		cleanStale(dir)
		return e.openLocked(name)
	})
}

func (e *endpoint) openLocked(name string) error {
	base := name
	if base == defaultName() {
		// Default names are never reused within a process: an address
		// still in some AV must not reach a later endpoint.
		if k := defaultUses.Add(1); k > 1 {
			name = base + "_" + strconv.FormatInt(k-1, 10)
		}
	}
	for n := 0; ; n++ {
		r, err := createRegion(name)
		if fi.Code(err) == fi.EADDRINUSE && base == defaultName() && n < 1<<16 {
			name = base + "_" + strconv.FormatInt(defaultUses.Add(1)-1, 10)
			continue
		}
		if err != nil {
			return err
		}
		b, err := newDoorbell(name)
		if err != nil {
			r.close()
			return err
		}
		g, err := newRinger()
		if err != nil {
			b.close()
			r.close()
			return err
		}
		e.name, e.region, e.bell, e.ringer, e.nonce = name, r, b, g, r.nonce()
		return nil
	}
}

// Info returns the Info the endpoint was opened with.
func (e *endpoint) Info() *fi.Info { return e.info }

// Name copies the endpoint's name ("fi_shm://...") into buf (fi_getname),
// with the ETOOSMALL rule of ep.Namer.
func (e *endpoint) Name(buf []byte) (int, error) {
	e.nameMu.Lock()
	name := e.name
	e.nameMu.Unlock()
	n := copy(buf, name)
	if n < len(name) {
		return len(name), fi.ETOOSMALL
	}
	return n, nil
}

// SetName renames the endpoint before Enable (fi_setname): its inbox is
// created anew under the name.
func (e *endpoint) SetName(addr []byte) error {
	if err := checkName(addr); err != nil {
		return err
	}
	if e.enabled.Load() {
		return errors.Wrap(fi.EOPBADSTATE, "shm: setname: endpoint already enabled")
	}
	e.nameMu.Lock()
	defer e.nameMu.Unlock()
	if e.closed.Load() {
		return errors.Wrap(fi.EBADF, "shm: setname: endpoint closed")
	}
	if string(addr) == e.name {
		return nil
	}
	old, oldBell, oldRinger := e.region, e.bell, e.ringer
	if err := e.open(string(addr)); err != nil {
		return err
	}
	old.close()
	oldBell.close()
	oldRinger.close()
	return nil
}

// Bind binds an AV, completion queue or counter of this provider
// (fi_ep_bind).
func (e *endpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&e.bind, "shm", e.closed.Load(), obj, flags)
}

// Enable checks the bindings (fi_enable: an AV and a CQ or counter per
// direction) and attaches the endpoint to its queues.
func (e *endpoint) Enable() error {
	if err := e.bind.CheckEnableOpen("shm", e.closed.Load()); err != nil {
		return err
	}
	e.nameMu.Lock()
	defer e.nameMu.Unlock()
	if e.enabled.Load() {
		return nil
	}
	b := &e.bind
	e.av = b.AV.(*addrVector).AV
	e.Resolve(b)
	for _, s := range e.Sets {
		s.Add(e)
	}
	e.enabled.Store(true)
	// Readers already blocked on the queues wait on the doorbells they
	// knew: let them look again, with this endpoint.
	e.Signal()
	return nil
}

// Cancel cancels the posted receive with context ctx (fi_cancel); it
// completes with an fi.ECANCELED error entry. A multi-receive buffer
// (FI_MULTI_RECV) is released by that entry, flagged FI_MULTI_RECV as
// in C's shm, once no message streams into it any more. Other
// operations cannot be cancelled: fi.ENOENT.
func (e *endpoint) Cancel(ctx any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return kit.Canceled(e.dp.cancelRecv(e, ctx))
}

// Close closes the endpoint (fi_close): its peers are told it leaves,
// pending operations complete with fi.ECANCELED error entries (which a
// reader blocked in SRead or a counter Wait gets; one with nothing to
// report goes on waiting), its inbox file and doorbell are removed, and
// it lets go of its AV, queues, counters and domain. It may run while
// other goroutines wait on or read the endpoint's queues: those that
// still look at the endpoint find its inbox retired, never unmapped (see
// endpoint.region). A second Close returns fi.EBADF.
func (e *endpoint) Close() error {
	if e.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "shm: close endpoint: already closed")
	}
	e.mu.Lock()
	if e.enabled.Load() {
		e.dp.shutdown(e)
	}
	e.ringer.close() // whoever takes mu later sees closed and rings nothing
	e.mu.Unlock()
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.nameMu.Lock()
	// Closing the doorbell ends the waits on it. Waiters, and pollers
	// that loaded the endpoint before it left its queues, may still
	// look at the inbox: it is retired, not unmapped.
	e.bell.close()
	e.region.retire()
	e.nameMu.Unlock()
	e.bind.Release()
	e.domain.Release(kit.KindEndpoint)
	return nil
}

// progress runs the data path once: the progress hook of the queues the
// endpoint is bound to. With nothing in its rings and nothing pending it
// returns after a few atomic loads, taking no lock: the common case of a
// busy-polling loop. Every 256 idle polls it reads the clock, and once a
// check is due (checkEvery) it runs anyway, to check its peers
// (checkPeers): a dead peer is found within checkEvery and 256 polls.
func (e *endpoint) progress() {
	idle := false
	if !e.busy.Load() && !e.inputWaiting() {
		// A plain load and store, not an atomic add: a lost count
		// among racing pollers costs nothing.
		n := e.idle.Load() + 1
		if e.idle.Store(n); n&255 != 0 || !e.checkIsDue() {
			return
		}
		idle = true
	}
	e.mu.Lock()
	if !e.closed.Load() {
		e.dp.progress(e, idle)
		e.setBusy(e.dp.pending())
	}
	e.mu.Unlock()
}

// checkIsDue reports whether the next check of the peers is due. Out of
// line, so that the clock costs progress's common path nothing.
//
//go:noinline
func (e *endpoint) checkIsDue() bool { return time.Since(epoch) >= time.Duration(e.nextCheck.Load()) }

// checkDue checks the endpoint's peers (checkPeers) if a check is due,
// or at once with now set: what a waiter does when it wakes.
func (e *endpoint) checkDue(now bool) {
	e.mu.Lock()
	if t := time.Now(); !e.closed.Load() && (now || t.Sub(e.dp.checked) >= checkEvery) {
		e.dp.checked = t
		e.dp.checkPeers(e)
		e.setBusy(e.dp.pending())
	}
	e.mu.Unlock()
}

// setBusy records whether the data path has work besides its rings; it
// writes the shared flag only when it changes.
func (e *endpoint) setBusy(b bool) {
	if e.busy.Load() != b {
		e.busy.Store(b)
	}
}

// inputWaiting reports whether a peer claimed an entry of the inbox that
// is not served yet, or a served entry's ring holds a slot. It reads only
// shared words, without the lock.
func (e *endpoint) inputWaiting() bool {
	r := e.region
	active := r.active()
	if active != e.adopted.Load() {
		return true
	}
	for active != 0 {
		i := bits.TrailingZeros64(active)
		active &^= 1 << i
		if r.ready(i) {
			return true
		}
	}
	return false
}

// sleep prepares to block: it sets the inbox's sleeping word, so that
// senders ring the doorbell, asks the owners of the inboxes it waits for
// room in to ring it when they made some, and reports whether anything
// arrived or moved meanwhile, or the endpoint closed (then the caller
// must not sleep; sleep undid itself).
func (e *endpoint) sleep() (busy bool) {
	e.sleepMu.Lock()
	e.sleepers++
	e.region.word32(hSleeping).Store(1)
	e.sleepMu.Unlock()
	e.mu.Lock()
	busy = e.closed.Load() || e.dp.anyInput(e) || e.dp.askForRoom(e)
	if !e.closed.Load() {
		e.setBusy(e.dp.pending())
	}
	e.mu.Unlock()
	if busy {
		e.wake()
	}
	return busy
}

// wake undoes sleep: the last sleeper clears the sleeping word.
func (e *endpoint) wake() {
	e.sleepMu.Lock()
	if e.sleepers--; e.sleepers == 0 {
		e.region.word32(hSleeping).Store(0)
	}
	e.sleepMu.Unlock()
}

// ringPeer rings p's doorbell if its owner sleeps.
func (e *endpoint) ringPeer(p *peer) {
	if p.r.word32(hSleeping).Load() != 0 {
		e.ringer.ring(&p.bell)
	}
}

// unixAddr is the doorbell address of a peer.
func unixAddr(name string) unix.SockaddrUnix { return unix.SockaddrUnix{Name: bellPath(name)} }

// complete queues a successful completion and counts it.
func (e *endpoint) completeTx(ctx any, flags fi.Flags, report bool, cnt int) {
	if report && e.TxCQ != nil {
		_ = e.TxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: flags}, fi.AddrUnspec)
	}
	if c := e.Cntr[cnt]; c != nil {
		_ = c.Add(1)
	}
}

// failTx queues an error entry and counts it.
func (e *endpoint) failTx(ctx any, flags fi.Flags, cnt int, code fi.Errno, inject bool) {
	if !inject && e.TxCQ != nil {
		_ = e.TxCQ.CompleteErr(&eq.CQError{Context: ctx, Flags: flags, Err: code})
	}
	if c := e.Cntr[cnt]; c != nil {
		_ = c.AddErr(1)
	}
}
