//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Dynamic receive mode of FI_EP_MSG endpoints (kit.DynRecv, C's
// OFI_OPS_DYNAMIC_RBUF): what a layer over this provider's connections
// (providers/rxm, tcp;ofi_rxm) needs to place each message where it
// matches without a copy. An endpoint with a handler reads each
// message's tcp header and the first prefixLen bytes of its payload
// (rkDynHdr), asks the handler, and places the rest where it says
// (rkDyn), straight from the socket once the staging buffer is drained;
// it acknowledges a delivery-complete message once the rest is placed,
// before its completion, and its stall watch (stall.go) covers the rest
// being placed. A handler's fi.EAGAIN holds the message, and the connection's
// receive side, until Resume: held is set under mu, resume by anyone;
// each side sets its flag before it looks at the other's (the data path
// after setStalled, in recv), so a Resume racing the handler's answer is
// never lost. Raw tagged messages (op 0 with the tag flag, as rxm sends
// them over tcp, docs/wire-tcp.md §3.4) are accepted in this mode when
// the endpoint's Info has FI_TAGGED; they have no prefix.

// dynMaxPrefix is the longest prefix SetDynRecv takes (rxm asks for its
// 64-byte header).
const dynMaxPrefix = 4096

// dynRecv is an endpoint's dynamic receive state, under its mu.
type dynRecv struct {
	h kit.DynRecvHandler
	// done is h as a kit.DynRecvCompleter, nil when it is none.
	done   kit.DynRecvCompleter
	cookie any
	prefix []byte      // prefixLen bytes: the prefix of the message in hand
	n      int         // prefix bytes of the message in hand
	ctx    any         // the handler's context for the message being placed
	arr    kit.Arrival // what the handler is shown, reused
}

var _ kit.DynRecv = (*endpoint)(nil)

// SetDynRecv puts the endpoint in dynamic receive mode (kit.DynRecv; C's
// fi_set_ops with OFI_OPS_DYNAMIC_RBUF, which rxm sets on its tcp
// endpoints): every incoming message's tcp header and first prefixLen
// (0 to 4096) payload bytes are read, then h decides where the rest goes,
// with cookie in each kit.Arrival. With FI_TAGGED in the endpoint's Info
// the endpoint also takes raw tagged messages (docs/wire-tcp.md §3.4),
// which a plain FI_EP_MSG endpoint refuses by dropping the connection.
// A handler that answers with more than 4 buffers (iovLimit) breaks the
// connection, as an error of its own does (fi.EINVAL).
// It must come before Enable and before any receive is posted
// (fi.EOPBADSTATE); afterwards Recv and its forms return fi.ENOSYS. Data
// progress is then manual, as rxm's entries say (FI_PROGRESS_MANUAL): it
// moves when the endpoint's CQ or counters are read, or while a reader
// blocks on them.
func (e *endpoint) SetDynRecv(h kit.DynRecvHandler, cookie any, prefixLen int) error {
	if h == nil {
		return errors.Wrap(fi.EINVAL, "tcp: set dynamic receive: nil handler")
	}
	if prefixLen < 0 || prefixLen > dynMaxPrefix {
		return errors.Wrapf(fi.EINVAL, "tcp: set dynamic receive: prefix length %d (0 to %d)", prefixLen, dynMaxPrefix)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enabledAt.Load() || e.closing.Load() {
		return errors.Wrap(fi.EOPBADSTATE, "tcp: set dynamic receive: the endpoint is enabled already")
	}
	if e.dp.recvCount > 0 {
		return errors.Wrapf(fi.EOPBADSTATE, "tcp: set dynamic receive: %d receives are posted", e.dp.recvCount)
	}
	e.dp.dyn = &dynRecv{h: h, cookie: cookie, prefix: make([]byte, prefixLen)}
	e.dp.dyn.done, _ = h.(kit.DynRecvCompleter)
	e.dp.tagged = e.info.Caps&fi.CapTagged != 0
	e.dp.watched = true
	return nil
}

// Resume makes the endpoint ask its handler again about the message it
// holds after the handler answered fi.EAGAIN (kit.DynRecv; C's rxm has the
// core provider's progress retry instead). It takes no lock of the
// endpoint: it may be called from any goroutine, also from a handler, of
// this endpoint or another. The next progress of the endpoint asks; while
// a reader is blocked on its queues the background progress runs at once.
func (e *endpoint) Resume() {
	e.dynResume.Store(true)
	if e.dynHeld.Load() {
		// The held message may sit in the staging buffer, with nothing
		// in the socket to wake for: the next progress asks, and the
		// domain's goroutine runs it at once while a reader blocks.
		e.pend()
	}
}

// dynDispatch starts a message (tcp op 0) of an endpoint in dynamic
// receive mode whose header is parsed: its prefix is read first
// (rkDynHdr), none for a tagged message.
func (d *dataPath) dynDispatch(payload uint64) bool {
	y := d.dyn
	y.n = 0
	if !d.rhdr.hasTag() {
		y.n = int(min(uint64(len(y.prefix)), payload))
	}
	d.kind = rkDynHdr
	d.setDst1(y.prefix[:y.n], y.n)
	d.ackSlot = -1
	if d.rhdr.needsAck() {
		d.ackSlot = d.take() // dispatch checked there is one
	}
	d.rleft = payload
	d.rstate = rsPayload
	return true
}

// dynArrived asks the handler about the message whose prefix is in. It
// reports false while the handler holds the message (fi.EAGAIN, until
// Resume); an error of the handler drops the connection.
func (d *dataPath) dynArrived(e *endpoint) (bool, error) {
	if e.dynHeld.Load() {
		if !e.dynResume.Swap(false) {
			return false, nil
		}
		e.dynHeld.Store(false)
	}
	y := d.dyn
	h := &d.rhdr
	a := &y.arr
	a.Cookie, a.Tagged, a.Tag, a.Flags, a.Data = y.cookie, false, 0, 0, 0
	if h.hasTag() {
		a.Tagged, a.Tag = true, h.tag
	}
	if h.flags&flagCQData != 0 {
		a.Flags, a.Data = fi.FlagRemoteCQData, h.cqData
	}
	a.Prefix = y.prefix[:y.n]
	a.Rest = int(min(d.rleft, uint64(maxInt)))
	dst, ctx, err := y.h.Arrived(a)
	a.Cookie, a.Prefix = nil, nil
	if err != nil {
		if err == fi.EAGAIN || fi.Code(err) == fi.EAGAIN {
			e.dynHeld.Store(true)
			return false, nil
		}
		return false, err
	}
	if len(dst) > iovLimit {
		return false, fi.EINVAL // the handler broke its contract
	}
	y.ctx = ctx
	d.kind = rkDyn
	d.setDst(dst, int(min(d.rleft, uint64(kit.IOVLen(dst)))))
	return true, nil
}

// dynFlags returns the completion flags, tag and CQ data of the message
// in hand.
func (d *dataPath) dynFlags() (fi.Flags, uint64, uint64) {
	h := &d.rhdr
	flags := fi.FlagRecv | fi.FlagMsg
	var tag, data uint64
	if h.hasTag() {
		flags, tag = fi.FlagRecv|fi.FlagTagged, h.tag
	}
	if h.flags&flagCQData != 0 {
		flags |= fi.FlagRemoteCQData
		data = h.cqData
	}
	return flags, tag, data
}

// dynFinish completes the message whose rest is all in (placed or
// discarded) with the handler's context.
func (d *dataPath) dynFinish(e *endpoint) {
	flags, tag, data := d.dynFlags()
	if y := d.dyn; y.done != nil && y.done.DynCompleted(y.ctx, d.placed) {
		// The handler took the completion (kit.DynRecvCompleter).
	} else if e.RxCQ != nil {
		_ = e.RxCQ.CompleteOverflow(eq.Completion{Context: d.dyn.ctx, Flags: flags, Len: d.placed, Data: data, Tag: tag}, fi.AddrUnspec)
	}
	if k := e.Cntr[kit.CntrRecv]; k != nil {
		_ = k.Add(1)
	}
	d.dyn.ctx = nil
}

// dynFailed completes the message being placed with an error entry: the
// connection lost it.
func (d *dataPath) dynFailed(e *endpoint, code fi.Errno) {
	flags, tag, data := d.dynFlags()
	if e.RxCQ != nil {
		_ = e.RxCQ.CompleteErr(&eq.CQError{Context: d.dyn.ctx, Flags: flags, Len: d.placed, Data: data, Tag: tag, Err: code})
	}
	if k := e.Cntr[kit.CntrRecv]; k != nil {
		_ = k.AddErr(1)
	}
	d.dyn.ctx = nil
}
