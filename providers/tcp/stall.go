//go:build linux

package tcp

import (
	"time"

	"github.com/gofabric/gofabric/fi"
)

// The stall watch of connections in dynamic receive mode
// (FI_TCP_STALL_TIMEOUT; dynrecv.go). A layer such as rxm owns those
// connections, not an application that could shut one down, and a
// connection holds what its peer owes: the rest of a message whose
// handler said where it goes, or the responses to RMA reads (a
// rendezvous: the peer must answer them). While reads are out only their
// responses count as progress, so that a peer cannot keep a rendezvous
// waiting by sending other messages. A peer that delivers no byte of what
// the connection holds for the timeout, reads it never answers or a
// message it stopped sending half way, loses its connection: what it
// held completes with fi.ETIMEDOUT error entries. Time spent waiting for
// the layer (a handler holding a message until Resume, no transmit room:
// the connection reads nothing then) does not count. Without it such a
// peer held what it owed for as long as it kept its connection open.
// Plain FI_EP_MSG connections, whose application owns them, are not
// watched.
//
// The watch runs at the end of the connection's progress, from the
// application's queue reads or the background goroutine, which arms a
// deadline (sockpoll.MemberConfig.Deadline) while the connection holds
// something; a rendezvous whose reads start outside progress (a receive
// posted for a request that waited) wakes it.

// monoEpoch is the origin of monoNow: time.Since reads the monotonic clock.
var monoEpoch = time.Now()

// monoNow is the monotonic time in nanoseconds since monoEpoch; never 0.
func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }

// holding reports whether the connection holds data the peer owes: reads
// not yet answered, or the rest of a message being placed; waiting for
// our own side does not count.
func (d *dataPath) holding(e *endpoint) bool {
	if e.recvStalled.Load() {
		return false
	}
	return d.reads > 0 || (d.rstate == rsPayload && d.kind == rkDyn)
}

// heldBytes counts the bytes that arrived of what the connection holds:
// read responses while reads are out, else message payload.
func (d *dataPath) heldBytes() uint64 {
	if d.reads > 0 {
		return d.rspBytes
	}
	return d.msgBytes
}

// watchStall checks the connection's stall timeout (under mu, at the end
// of progress): fi.ETIMEDOUT when it held something for stallTimeout
// without a byte of it arriving.
func (d *dataPath) watchStall(e *endpoint) error {
	limit := e.params.stallTimeout
	if !d.watched || limit == 0 {
		return nil
	}
	if !d.holding(e) {
		if d.stallSince != 0 {
			d.stallSince = 0
			e.setStallAt(0)
		}
		return nil
	}
	now := monoNow()
	if b := d.heldBytes(); d.stallSince == 0 || b != d.heldSeen {
		d.stallSince, d.heldSeen = now, b
		e.setStallAt(now + int64(limit))
		return nil
	}
	if now-d.stallSince < int64(limit) {
		return nil
	}
	fi.Logger(provName).Warn("tcp: a peer held a message without progress; dropping its connection",
		"param", paramStallTimeout.Name, "timeout", limit)
	return fi.ETIMEDOUT
}

// readsStarted starts the stall watch of a watched connection whose first
// read went out (under mu): the watch stamps it now, and the background
// goroutine, which may be waiting without a deadline, takes the new one.
func (d *dataPath) readsStarted(e *endpoint) {
	limit := e.params.stallTimeout
	if !d.watched || limit == 0 {
		return
	}
	now := monoNow()
	d.stallSince, d.heldSeen = now, d.heldBytes()
	e.setStallAt(now + int64(limit))
}

// setStallAt sets when the stall watch falls due (0: never) and tells the
// domain's progress when the connection starts or stops having a
// deadline (sockpoll.Member.SetTimed); one that moves later needs
// nothing: the progress it wakes sets the next.
func (e *endpoint) setStallAt(at int64) {
	prev := e.stallAt.Swap(at)
	if (prev == 0) == (at == 0) {
		return
	}
	if m := e.member.Load(); m != nil {
		m.SetTimed(at != 0)
	}
}

// stallDeadline is when the connection's stall watch falls due, the zero
// time when it holds nothing (sockpoll.MemberConfig.Deadline).
func (e *endpoint) stallDeadline() time.Time {
	if ns := e.stallAt.Load(); ns != 0 {
		return monoEpoch.Add(time.Duration(ns - 1))
	}
	return time.Time{}
}
