//go:build verbs && cgo

package verbs

import (
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// Multicast on datagram endpoints (fi_join, fi_mc_addr, FI_JOIN_COMPLETE;
// fi_cm(3)), which C libfabric's verbs provider does not offer: each
// group is an rdma_cm id of the UDP port space (RDMA_PS_UDP) bound to the
// device's IP address that joins the group's IP multicast address
// (rdma_join_multicast; on RoCE the kernel derives the group's GID from
// it and joins the IP group on the port's network interface). Its
// RDMA_CM_EVENT_MULTICAST_JOIN gives the group's address handle
// attributes, QP number (0xFFFFFF) and qkey: the endpoint makes an
// address handle of them for its sends to the group and, for a member
// with receive rights, attaches its UD queue pair to the group
// (ibv_attach_mcast), then queues eq.JoinComplete. A
// RDMA_CM_EVENT_MULTICAST_ERROR is an *eq.EQError about the group
// (Reason eq.ReasonTransport, the event's status in ProvErrno). Closing
// the group detaches the queue pair and leaves (ibv_detach_mcast,
// rdma_leave_multicast, rdma_destroy_id); closing the endpoint leaves
// every group it joined.
//
// The qkey: every gofabric UD queue pair has C's qkey (udQKey), which
// its datagrams to the group carry too, so that one queue pair serves
// unicast peers (C's among them) and groups; the join's qkey (rdma_cm's
// RDMA_UDP_QKEY) is not used. Members that are not gofabric endpoints
// (librdmacm's mckey) use that one and do not exchange datagrams with
// gofabric's.

// mcState is an endpoint's multicast groups: an rdma_cm event channel of
// its own, made at the first Join, whose goroutine takes the groups'
// events, and the table of groups (a group's Addr is its index).
type mcState struct {
	// mu guards the fields below and every rdma_cm call on the groups'
	// ids; the event goroutine holds it while it handles an event.
	mu     sync.Mutex
	ch     cmChannelC
	f      *os.File // a duplicate of ch's descriptor, in the netpoller
	done   chan struct{}
	byID   map[cmIDC]*mcGroup
	groups []*mcGroup // by Addr; nil slots are free
	// table is groups for the data path, which reads it without mu.
	table atomic.Pointer[[]*mcGroup]
}

// mcGroup is a joined multicast group (struct fid_mc; fi_join(3)).
type mcGroup struct {
	e          *udEndpoint
	idx        int
	ap         netip.AddrPort
	ctx        any
	send, recv bool
	id         cmIDC // nil once left

	// Set by the join's event, under mc.mu; dest is read by the data
	// path under e.mu and cleared under it before the handle is freed.
	ah       ahC
	ahAttr   ahAttrC
	attached bool
	dest     atomic.Pointer[mcDest]
	failed   atomic.Bool // the join failed (an EQ error was queued)
	closed   atomic.Bool
}

// mcDest is where the group's datagrams go.
type mcDest struct {
	ah   ahC
	qpn  uint32
	qkey uint32
}

var _ ep.MulticastGroup = (*mcGroup)(nil)

// Addr returns the fi.Addr to send to the group with fi.FlagMulticast
// (fi_mc_addr): an index into the endpoint's table of groups, not an AV
// address. It is valid from Join on; sends to it give fi.EAGAIN until the
// join has completed (eq.JoinComplete), and fi.EINVAL once it failed.
func (g *mcGroup) Addr() fi.Addr { return fi.Addr(g.idx) }

// target returns where the group's datagrams go, false before the join
// completed or after it failed.
func (g *mcGroup) target() (ahC, uint32, uint32, bool) {
	d := g.dest.Load()
	if d == nil {
		return nil, 0, 0, false
	}
	return d.ah, d.qpn, d.qkey, true
}

// lookup returns the group with Addr a, or nil.
func (m *mcState) lookup(a fi.Addr) *mcGroup {
	gs := m.table.Load()
	if gs == nil || uint64(a) >= uint64(len(*gs)) {
		return nil
	}
	return (*gs)[a]
}

// publish stores the table for the data path; the caller holds mu.
func (m *mcState) publish() {
	t := append([]*mcGroup(nil), m.groups...)
	m.table.Store(&t)
}

// Join joins the multicast group at addr, a struct sockaddr_in or
// sockaddr_in6 with an IP multicast address (the port is not used), and
// returns it (fi_join). flags fi.FlagSend joins as a send-only member
// (the queue pair is not attached: it receives nothing of the group),
// fi.FlagRecv as a receive-only member, 0 with the endpoint's
// directions. The endpoint needs FI_MULTICAST (else fi.ENOSYS), the
// direction a flag asks for (fi.EINVAL), to be enabled (fi.EOPBADSTATE)
// and an event queue (fi.ENOEQ), where eq.JoinComplete{Fid: group,
// Context: ctx} arrives once the join completed, or an *eq.EQError about
// the group if it failed. An address that is not multicast gives
// fi.EINVAL; a group the endpoint is a member of (the same IP address),
// fi.EALREADY.
func (e *udEndpoint) Join(addr []byte, flags fi.Flags, ctx any) (ep.MulticastGroup, error) {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	q := kit.BoundEQ[epSet](&e.bind)
	switch {
	case e.closed.Load():
		return nil, errors.Wrap(fi.EBADF, "verbs: join: endpoint closed")
	case !e.enabled.Load():
		return nil, errors.Wrap(fi.EOPBADSTATE, "verbs: join: endpoint not enabled")
	case q == nil:
		return nil, errors.Wrap(fi.ENOEQ, "verbs: join: no event queue bound to the endpoint for FI_JOIN_COMPLETE")
	case flags&^(fi.FlagSend|fi.FlagRecv) != 0:
		return nil, errors.Wrapf(fi.EBADFLAGS, "verbs: join: flags %v (want FI_SEND, FI_RECV or 0)", flags&^(fi.FlagSend|fi.FlagRecv))
	case e.info.Caps&fi.CapMulticast == 0:
		return nil, errors.Wrapf(fi.ENOSYS, "verbs: join: endpoint caps %v lack FI_MULTICAST", e.info.Caps)
	}
	dirs := e.info.Caps & (fi.CapSend | fi.CapRecv)
	if dirs == 0 {
		dirs = fi.CapSend | fi.CapRecv
	}
	want := fi.Caps(flags & (fi.FlagSend | fi.FlagRecv))
	if want == 0 {
		want = dirs
	}
	if want&^dirs != 0 {
		return nil, errors.Wrapf(fi.EINVAL, "verbs: join: %v membership on an endpoint with caps %v", want, e.info.Caps)
	}
	ap, f, err := fi.AddrPortFromSockaddr(addr)
	if err != nil {
		return nil, errors.Wrap(err, "verbs: join")
	}
	if !ap.Addr().IsMulticast() {
		return nil, errors.Wrapf(fi.EINVAL, "verbs: join: %v is not a multicast address", ap.Addr())
	}
	src, ok := e.domain.srcFor(f)
	if !ok {
		return nil, errors.Wrapf(fi.EADDRNOTAVAIL, "verbs: join %v: the device has no IP address of that family to join from", ap.Addr())
	}
	m := &e.mc
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := len(m.groups)
	for i, g := range m.groups {
		switch {
		case g == nil && idx == len(m.groups):
			idx = i
		case g != nil && g.ap.Addr() == ap.Addr():
			return nil, errors.Wrapf(fi.EALREADY, "verbs: join: already a member of %v", ap.Addr())
		}
	}
	if err := m.open(e); err != nil {
		return nil, errors.Wrap(err, "verbs: join")
	}
	id, err := createMCID(m.ch)
	if err != nil {
		return nil, errors.Wrap(err, "verbs: join")
	}
	if err := bindAddr(id, src); err != nil {
		destroyID(id)
		return nil, errors.Wrapf(err, "verbs: join %v: bind to %v", ap.Addr(), src.Addr())
	}
	if err := joinMC(id, ap); err != nil {
		destroyID(id)
		return nil, errors.Wrapf(err, "verbs: join %v", ap.Addr())
	}
	g := &mcGroup{e: e, idx: idx, ap: ap, ctx: ctx, send: want&fi.CapSend != 0, recv: want&fi.CapRecv != 0, id: id}
	m.byID[id] = g
	if idx == len(m.groups) {
		m.groups = append(m.groups, g)
	} else {
		m.groups[idx] = g
	}
	m.publish()
	return g, nil
}

// open makes the event channel and starts its goroutine, once; the
// caller holds mu.
func (m *mcState) open(e *udEndpoint) error {
	if m.ch != nil {
		return nil
	}
	ch, fd, err := createChannel()
	if err != nil {
		return err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		destroyChannel(ch)
		return errors.Wrapf(fi.Code(err), "verbs: dup event channel: %v", err)
	}
	f := os.NewFile(uintptr(dup), "rdma-cm-mcast")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		destroyChannel(ch)
		return errors.Wrapf(fi.EIO, "verbs: event channel: %v", err)
	}
	m.ch, m.f, m.done = ch, f, make(chan struct{})
	m.byID = map[cmIDC]*mcGroup{}
	go m.loop(e, ch, rc, m.done)
	return nil
}

// loop takes the events of ch until its duplicate, read through rc, is
// closed; then it closes done. It is given ch, rc and done rather than
// reading them from m: closeAll clears m.ch while the loop still runs.
func (m *mcState) loop(e *udEndpoint, ch cmChannelC, rc syscall.RawConn, done chan struct{}) {
	defer close(done)
	for {
		err := rc.Read(func(uintptr) bool {
			for {
				ev, gerr := getMCEvent(ch)
				switch {
				case gerr == syscall.EAGAIN:
					return false
				case gerr != nil:
					fi.Logger(provName).Warn("verbs: rdma_get_cm_event failed", "err", gerr)
					return false
				}
				m.event(e, ev)
			}
		})
		if err != nil {
			return
		}
	}
}

// event handles one event of a group's id.
func (m *mcState) event(e *udEndpoint, ev mcEventC) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.byID[ev.id]
	if g == nil || g.closed.Load() {
		return
	}
	q := kit.BoundEQ[epSet](&e.bind)
	switch ev.typ {
	case evMulticastJoin:
		if err := g.joined(ev); err != nil {
			g.fail(q, fi.Code(err), errnoOf(err))
			return
		}
		if q != nil {
			_ = q.Post(&eq.JoinComplete{Fid: g, Context: g.ctx})
		}
	case evMulticastError:
		g.fail(q, statusCode(ev.status, fi.EIO), ev.status)
	case evDeviceRemoval:
		g.fail(q, fi.ENODEV, ev.status)
	default:
		fi.Logger(provName).Debug("verbs: multicast id event ignored", "event", eventName(ev.typ), "group", g.ap.Addr())
	}
}

// errnoOf is the errno in err's chain, 0 when there is none.
func errnoOf(err error) int {
	var e syscall.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return 0
}

// joined makes the group's address handle from the join's attributes
// and, for a receiving member, attaches the queue pair; the caller holds
// mc.mu.
func (g *mcGroup) joined(ev mcEventC) error {
	e := g.e
	ah, err := createAHFrom(e.domain.pd, &ev.ah)
	if err != nil {
		return err
	}
	g.ah, g.ahAttr = ah, ev.ah
	if g.recv {
		e.mu.Lock()
		if e.dp.qp != nil {
			err = attachMC(e.dp.qp, &g.ahAttr, false)
		}
		e.mu.Unlock()
		if err != nil {
			return err
		}
		g.attached = true
	}
	g.dest.Store(&mcDest{ah: ah, qpn: ev.qpNum, qkey: udQKey})
	return nil
}

// fail reports the group's failure on q, once the data path no longer
// sends to it; the caller holds mc.mu.
func (g *mcGroup) fail(q *eventQueue, code fi.Errno, status int) {
	if code == fi.EOTHER {
		code = fi.EIO
	}
	g.failed.Store(true)
	g.release()
	if q != nil {
		_ = q.PostErr(&eq.EQError{Fid: g, Context: g.ctx, Err: code, ProvErrno: status, Reason: eq.ReasonTransport})
	}
}

// release stops the data path's sends to the group, detaches the queue
// pair and frees the address handle; the caller holds mc.mu.
func (g *mcGroup) release() {
	e := g.e
	e.mu.Lock()
	g.dest.Store(nil)
	if g.attached && e.dp.qp != nil {
		if err := attachMC(e.dp.qp, &g.ahAttr, true); err != nil {
			fi.Logger(provName).Debug("verbs: ibv_detach_mcast failed", "err", err)
		}
	}
	g.attached = false
	e.mu.Unlock()
	if g.ah != nil {
		destroyAH(g.ah)
		g.ah = nil
	}
}

// leave releases the group and leaves it (rdma_leave_multicast,
// rdma_destroy_id); the caller holds mc.mu.
func (m *mcState) leave(g *mcGroup) {
	g.release()
	if g.id != nil {
		if err := leaveMC(g.id, g.ap); err != nil {
			fi.Logger(provName).Debug("verbs: rdma_leave_multicast failed", "err", err)
		}
		delete(m.byID, g.id)
		destroyID(g.id)
		g.id = nil
	}
	if g.idx < len(m.groups) && m.groups[g.idx] == g {
		m.groups[g.idx] = nil
		m.publish()
	}
}

// Close leaves the group (fi_close on the fid_mc): the queue pair is
// detached, so datagrams sent to the group no longer reach the
// endpoint, its Addr no longer sends, and the id leaves the group
// (ibv_detach_mcast, rdma_leave_multicast, rdma_destroy_id). After the
// endpoint closed (which left it) it only marks the group closed. A
// second Close returns fi.EBADF.
func (g *mcGroup) Close() error {
	if g.closed.Swap(true) {
		return errors.Wrap(fi.EBADF, "verbs: leave: group already closed")
	}
	m := &g.e.mc
	m.mu.Lock()
	m.leave(g)
	m.mu.Unlock()
	return nil
}

// closeAll leaves every group and closes the channel: the endpoint's
// Close.
func (m *mcState) closeAll(e *udEndpoint) {
	m.mu.Lock()
	for _, g := range m.groups {
		if g != nil {
			m.leave(g)
		}
	}
	ch, f, done := m.ch, m.f, m.done
	m.ch = nil
	m.mu.Unlock()
	if ch == nil {
		return
	}
	_ = f.Close()
	<-done
	destroyChannel(ch)
}
