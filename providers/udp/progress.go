//go:build linux

package udp

import (
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"golang.org/x/sys/unix"
)

// The receive side of an endpoint: the posted receives in order, filled
// from the socket and the joined groups' sockets by progress, under the
// endpoint's mu, without blocking and without allocating. A datagram goes
// to the oldest posted receive whatever its sender (there is no
// FI_DIRECTED_RECV); one longer than that receive's buffers fills them and
// completes with an fi.ETRUNC error entry whose OLen is the bytes lost.
// Datagrams wait in the socket while no receive is posted, and the kernel
// drops what does not fit there: there is no reliability.

// rxEntry is a posted receive.
type rxEntry struct {
	niov   int
	size   int
	report bool
	ctx    any
	iov    [iovLimit][]byte
}

// recvPath is the receive state.
type recvPath struct {
	ring       [queueSize]rxEntry
	head, size int
	msg        msgScratch
	// srcName, srcAddr and srcVer cache the last sender's fi.Addr for
	// FI_SOURCE while the AV's version is srcVer+1 (0: nothing cached).
	srcName [unix.SizeofSockaddrInet6]byte
	srcLen  int
	srcAddr fi.Addr
	srcVer  uint64
	// tick counts progress's polls and idle the endpoint socket's empty
	// ones, once it has peer sockets (progress).
	tick uint64
	idle uint32
}

// post queues a receive; bare fi.EAGAIN when queueSize are posted.
func (r *recvPath) post(x *rxEntry) error {
	if r.size == queueSize {
		return fi.EAGAIN
	}
	r.ring[(r.head+r.size)%queueSize] = *x
	r.size++
	return nil
}

// post1 queues a receive of one buffer, written in its slot (fi_recv's
// path, which post's copy of a whole entry would cost); bare fi.EAGAIN
// when queueSize are posted.
func (r *recvPath) post1(buf []byte, ctx any, report bool) error {
	if r.size == queueSize {
		return fi.EAGAIN
	}
	x := &r.ring[(r.head+r.size)%queueSize]
	x.niov, x.size, x.report, x.ctx = 1, len(buf), report, ctx
	x.iov[0] = buf
	r.size++
	return nil
}

// pop removes the oldest receive into x.
func (r *recvPath) pop(x *rxEntry) {
	*x = r.ring[r.head]
	r.ring[r.head] = rxEntry{}
	r.head = (r.head + 1) % queueSize
	r.size--
}

// cancel completes the receive posted with ctx as fi.ECANCELED; false when
// there is none.
func (r *recvPath) cancel(e *endpoint, ctx any) bool {
	for k := range r.size {
		i := (r.head + k) % queueSize
		if !kit.SameContext(r.ring[i].ctx, ctx) {
			continue
		}
		x := r.ring[i]
		for ; k < r.size-1; k++ {
			r.ring[(r.head+k)%queueSize] = r.ring[(r.head+k+1)%queueSize]
		}
		r.ring[(r.head+r.size-1)%queueSize] = rxEntry{}
		r.size--
		e.posted.Add(-1)
		e.failRecv(x.ctx, fi.ECANCELED, 0, 0)
		return true
	}
	return false
}

// cancelAll completes every posted receive as fi.ECANCELED: the endpoint
// closes.
func (r *recvPath) cancelAll(e *endpoint) {
	var x rxEntry
	for r.size > 0 {
		r.pop(&x)
		e.posted.Add(-1)
		e.failRecv(x.ctx, fi.ECANCELED, 0, 0)
	}
}

// progress runs the endpoint's receive side for the background progress:
// it drains the sockets (recvPath.progress). With no receive posted it
// returns after one atomic load.
func (e *endpoint) progress() { e.runProgress(true) }

// pollProgress is progress for an application's queue read: it receives
// at most one datagram from each socket.
func (e *endpoint) pollProgress() { e.runProgress(false) }

// runProgress is progress and pollProgress, draining or not.
func (e *endpoint) runProgress(drain bool) {
	if e.posted.Load() == 0 || !e.enabled.Load() {
		return
	}
	e.mu.Lock()
	e.rx.progress(e, drain)
	e.mu.Unlock()
}

// progress fills posted receives from the endpoint's socket, then from
// each joined group's. With drain it goes on while receives are posted
// and datagrams wait (the background progress, which would otherwise be
// woken again for each datagram queued); without, it receives at most
// one datagram from each socket, as C's provider does in each fi_cq_read.
// An application that polls calls again soon, and a receive that found a
// datagram would otherwise be followed by one that finds none before the
// completion reaches the application: with two receives posted (C's and
// Go's fi_pingpong post two for FI_EP_DGRAM), that second, empty
// recvfrom(2) lay between every message and its answer (fi_pingpong udp
// 64 B, 4 interleaved rounds: 2.58 against 2.28 us a message; C 2.14).
//
// With peer sockets (peer.go) an application's poll skips a socket that
// has been empty for idleAfter polls in a row, except on every idleEvery-th
// poll: most of a round trip's time goes to the system calls, and a
// ping-pong with one peer would otherwise make two of them (the peer
// socket's and the endpoint's, where nothing comes) for each look. A
// datagram on a quiet socket waits at most idleEvery polls, and the
// background progress, which runs when nobody polls, watches them all.
func (r *recvPath) progress(e *endpoint, drain bool) {
	if r.size == 0 || e.ref.Closed() {
		return
	}
	if ps := e.peers.Load(); ps == nil {
		for r.size > 0 && r.recvFrom(e, e.fd, 0, false) && drain {
		}
	} else {
		r.tick++
		sweep := drain || r.tick%idleEvery == 0
		for _, p := range *ps {
			if p.fd >= 0 {
				r.poll(e, p.fd, &p.idle, sweep, drain)
			}
		}
		r.poll(e, e.fd, &r.idle, sweep, drain)
	}
	if gs := e.groups.Load(); gs != nil {
		for _, g := range *gs {
			if g == nil || g.fd < 0 {
				continue
			}
			for r.size > 0 && r.recvFrom(e, g.fd, fi.FlagMulticast, false) && drain {
			}
		}
	}
}

// idleAfter and idleEvery are progress's rule for quiet sockets.
const (
	idleAfter = 16
	idleEvery = 8
)

// poll receives from fd, the endpoint's socket or a peer socket, unless
// it is quiet (idle counts its empty polls) and this is no sweep.
func (r *recvPath) poll(e *endpoint, fd int, idle *uint32, sweep, drain bool) {
	if *idle >= idleAfter && !sweep {
		return
	}
	got := false
	for r.size > 0 && r.recvFrom(e, fd, 0, fd != e.fd) {
		got = true
		if !drain {
			break
		}
	}
	switch {
	case got:
		*idle = 0
	case *idle < idleAfter:
		*idle++
	}
}

// recvFrom receives one datagram from fd into the oldest posted receive
// and completes it; false when fd has none. On a connected peer socket an
// error is an ICMP report for an earlier send, which the receive consumed:
// that is no datagram either.
func (r *recvPath) recvFrom(e *endpoint, fd int, flags fi.Flags, connected bool) bool {
	x := &r.ring[r.head]
	withSource := e.info.Caps&fi.CapSource != 0
	n, name, err := r.msg.recv(fd, x.iov[:x.niov], withSource)
	if err == unix.EAGAIN || err != nil && connected {
		return false
	}
	// The slot is released where it is (pop would copy the entry out).
	ctx, report, size := x.ctx, x.report, x.size
	clear(x.iov[:x.niov])
	x.ctx = nil
	r.head = (r.head + 1) % queueSize
	r.size--
	e.posted.Add(-1)
	switch {
	case err != nil:
		e.failRecv(ctx, errnoOf(err), 0, 0)
	case n > size:
		e.failRecv(ctx, fi.ETRUNC, size, n-size)
	default:
		if report && e.RxCQ != nil {
			src := fi.AddrUnspec
			if withSource {
				src = r.source(e, name)
			}
			_ = e.RxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: fi.FlagRecv | fi.FlagMsg | flags, Len: n}, src)
		}
	}
	return true
}

// source returns the fi.Addr of the sender name in the endpoint's AV
// (fi.AddrUnspec, FI_ADDR_NOTAVAIL, when it is not there), from the cache
// while the AV has not changed.
func (r *recvPath) source(e *endpoint, name []byte) fi.Addr {
	v := e.av.Version() + 1
	if v == r.srcVer && r.srcLen == len(name) && string(r.srcName[:r.srcLen]) == string(name) {
		return r.srcAddr
	}
	r.srcAddr = e.av.Find(name)
	r.srcLen = copy(r.srcName[:], name)
	r.srcVer = v
	return r.srcAddr
}

// failRecv queues an error entry for a receive: code, with the bytes
// placed and lost for fi.ETRUNC.
func (e *endpoint) failRecv(ctx any, code fi.Errno, n, olen int) {
	if e.RxCQ != nil {
		_ = e.RxCQ.CompleteErr(&eq.CQError{Context: ctx, Flags: fi.FlagRecv | fi.FlagMsg, Len: n, OLen: olen, Err: code})
	}
}
