package rxm

import (
	"time"

	"github.com/gofabric/gofabric/ep"
)

// SetDefaultConnTimeout sets the connect timeout rxm uses over a core
// fabric without ConnTimeout, for fabrics opened until restore runs.
func SetDefaultConnTimeout(d time.Duration) (restore func()) {
	old := defaultConnTimeout
	defaultConnTimeout = d
	return func() { defaultConnTimeout = old }
}

// Ticks returns how many times blocked readers of rxm queues slept a
// tick rather than waiting on a core completion queue.
func Ticks() int64 { return ticks.Load() }

// SetForceMRLocal makes endpoints opened until restore runs treat their
// core as FI_MR_LOCAL (verbs' path over tcp).
func SetForceMRLocal(on bool) (restore func()) {
	old := forceMRLocal
	forceMRLocal = on
	return func() { forceMRLocal = old }
}

// SARSent returns how many messages went in SAR segments.
func SARSent() int64 { return sarSent.Load() }

// SetForceBounce makes endpoints opened until restore runs use posted
// bounce receives over tcp too, instead of its dynamic receive mode.
func SetForceBounce(on bool) (restore func()) {
	old := forceBounce
	forceBounce = on
	return func() { forceBounce = old }
}

// SARActive reports whether endpoints opened now over tcp send messages
// above the eager limit in SAR segments: only with bounce receives (C's
// rxm turns SAR off with dynamic receive buffers).
func SARActive() bool { return forceBounce || forceMRLocal }

// UsesDynRecv reports whether rxm endpoint e takes its connections'
// messages in dynamic receive mode.
func UsesDynRecv(e ep.Endpoint) bool {
	x := e.(*endpoint)
	x.mu.Lock()
	defer x.unlock()
	return x.dyn
}

// RndvSentOf returns how many of endpoint e's rendezvous sends have had
// their request's send complete and wait for the peer's read-done.
func RndvSentOf(e ep.Endpoint) int {
	x := e.(*endpoint)
	x.mu.Lock()
	defer x.unlock()
	n := 0
	for _, tx := range x.txs {
		if tx.inUse && tx.kind == txRndv && tx.sent {
			n++
		}
	}
	return n
}

// ProgressCoreFirst runs rxm endpoint e's core progress without taking
// its completions (a read of none), then has e's next progress read the
// connections' events before those completions: the order in which a
// peer's close can be seen before the messages it sent.
func ProgressCoreFirst(e ep.Endpoint) {
	x := e.(*endpoint)
	if r := x.refs.Load(); r != nil {
		_, _ = r.cq.Read(nil)
	}
	x.cmDue.Store(true)
}
