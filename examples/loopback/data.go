package loopback

import (
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// The data path of endpoints: every call of ep.Msg arrives here from
// kit.MsgOps as a kit.Op, and is matched, queued or refused at once.

// message is a send on its way: waiting in its destination's inbox, or
// on the stack while it is matched at once.
type message struct {
	from  *endpoint
	iov   [iovLimit][]byte
	niov  int
	ctx   any
	flags fi.Flags
	data  uint64
	// inject is set for the inject calls, which have no completion.
	inject bool
	// report says the sender's CQ gets a completion (not inject, and
	// FI_COMPLETION where the CQ is selective).
	report bool
	// inline holds an inject's data while it waits: its buffer is the
	// caller's again as soon as the call returns.
	inline [injectSize]byte
}

// recv is a posted receive.
type recv struct {
	iov    [iovLimit][]byte
	niov   int
	ctx    any
	report bool
}

// Message flags of the completions (fi_cq(3)).
const (
	sendFlags = fi.FlagSend | fi.FlagMsg
	recvFlags = fi.FlagRecv | fi.FlagMsg
)

// PostRx posts a receive (fi_recv and its forms, through kit.MsgOps). A
// message waiting in the inbox is received at once; otherwise the receive
// waits for one, and fi.EAGAIN says rx_attr.size receives are posted.
func (x *endpoint) PostRx(op kit.Op) error {
	var r recv
	n, err := op.CopyIOV(r.iov[:], provName)
	if err != nil {
		return err
	}
	r.niov, r.ctx = n, op.Context
	wire.mu.Lock()
	defer wire.mu.Unlock()
	switch {
	case x.closed:
		return fi.EBADF
	case !x.enabled:
		return fi.EOPBADSTATE
	}
	r.report = !x.RxSel || op.Flags&fi.FlagCompletion != 0
	// At most one of inbox and recvs holds anything: a message waits
	// only while no receive is posted, and a receive only while no
	// message waits. Both are FIFOs, so each sender's messages arrive in
	// order (FI_ORDER_SAS).
	if x.inbox.len() > 0 {
		m := x.inbox.front()
		m.from.queued--
		deliver(m, x, &r)
		x.inbox.pop()
		return nil
	}
	slot := x.recvs.push()
	if slot == nil {
		return fi.EAGAIN
	}
	*slot = r
	return nil
}

// PostTx sends a message (fi_send and its forms, through kit.MsgOps): to
// the connected peer (FI_EP_MSG) or to the AV's op.Addr (FI_EP_RDM). A
// receive posted there takes it at once; otherwise it waits in the
// destination's inbox, and fi.EAGAIN says that inbox is full or
// tx_attr.size of this endpoint's messages wait already. It returns bare
// errors, as the data path must: fi.EINVAL for an inject over inject_size
// or an fi.Addr the AV never gave, fi.EMSGSIZE over max_msg_size,
// fi.EHOSTUNREACH when no endpoint has the address, and the connection's
// fi.ENOTCONN or fi.ESHUTDOWN.
func (x *endpoint) PostTx(op kit.Op) error {
	if op.Kind != kit.OpSend {
		return fi.ENOSYS
	}
	m := message{from: x, ctx: op.Context, flags: op.Flags, data: op.Data, inject: op.Inject}
	n, err := op.CopyIOV(m.iov[:], provName)
	if err != nil {
		return err
	}
	m.niov = n
	size := op.Len()
	switch {
	case (op.Inject || op.Flags&fi.FlagInject != 0) && size > injectSize:
		return fi.EINVAL
	case size > maxMsgSize:
		return fi.EMSGSIZE
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	to, err := x.dest(op.Addr)
	if err != nil {
		return err
	}
	m.report = !op.Inject && (!x.TxSel || op.Flags&fi.FlagCompletion != 0)
	if to.recvs.len() > 0 {
		r := to.recvs.front()
		deliver(&m, to, r)
		to.recvs.pop()
		return nil
	}
	if x.queued >= x.txSize {
		return fi.EAGAIN
	}
	slot := to.inbox.push()
	if slot == nil {
		return fi.EAGAIN
	}
	*slot = m
	if op.Inject || op.Flags&fi.FlagInject != 0 {
		// The caller may reuse its buffer now: keep a copy.
		k := 0
		for _, b := range slot.iov[:slot.niov] {
			k += copy(slot.inline[k:], b)
		}
		slot.iov = [iovLimit][]byte{slot.inline[:k]}
		slot.niov = 1
	}
	x.queued++
	return nil
}

// dest returns the endpoint a send goes to; wire.mu is held.
func (x *endpoint) dest(addr fi.Addr) (*endpoint, error) {
	switch {
	case x.closed:
		return nil, fi.EBADF
	case x.conn != nil:
		if err := x.conn.cm.CanSend(); err != nil {
			return nil, err
		}
		return x.conn.peer.endpoint, nil
	case !x.enabled:
		return nil, fi.EOPBADSTATE
	}
	name, ok := x.av.Addr(addr)
	if !ok {
		return nil, fi.EINVAL
	}
	to, _ := wire.bound[portOf(name)].(*endpoint)
	if to == nil || to.conn != nil || !to.enabled {
		return nil, fi.EHOSTUNREACH
	}
	return to, nil
}

// deliver copies message m into receive r at endpoint to, and completes
// both: the receive (fi.ETRUNC when m does not fit, with the part that
// fits placed) and the send. wire.mu is held.
func deliver(m *message, to *endpoint, r *recv) {
	total := 0
	for _, b := range m.iov[:m.niov] {
		total += len(b)
	}
	placed := scatter(r.iov[:r.niov], m.iov[:m.niov])
	flags, data := recvFlags, uint64(0)
	if m.flags&fi.FlagRemoteCQData != 0 {
		flags, data = flags|fi.FlagRemoteCQData, m.data
	}
	if placed < total {
		to.rxFailed(&eq.CQError{Context: r.ctx, Flags: flags, Len: placed, Data: data,
			OLen: total - placed, Err: fi.ETRUNC})
	} else {
		src := fi.AddrUnspec
		if to.av != nil && to.info.Caps&fi.CapSource != 0 {
			src = to.av.Find(m.from.name)
		}
		if to.RxCQ != nil && r.report {
			_ = to.RxCQ.CompleteOverflow(eq.Completion{Context: r.ctx, Flags: flags, Len: placed, Data: data}, src)
		}
		if to.Cntr[kit.CntrRecv] != nil {
			_ = to.Cntr[kit.CntrRecv].Add(1)
		}
	}
	from := m.from
	if from.TxCQ != nil && m.report {
		_ = from.TxCQ.CompleteOverflow(eq.Completion{Context: m.ctx, Flags: sendFlags}, fi.AddrUnspec)
	}
	if from.Cntr[kit.CntrSend] != nil {
		_ = from.Cntr[kit.CntrSend].Add(1)
	}
}

// scatter copies the segments of src into those of dst in order and
// returns how many bytes it copied.
func scatter(dst, src [][]byte) int {
	n, i, off := 0, 0, 0
	for _, b := range src {
		for len(b) > 0 && i < len(dst) {
			k := copy(dst[i][off:], b)
			n, off, b = n+k, off+k, b[k:]
			if off == len(dst[i]) {
				i, off = i+1, 0
			}
		}
	}
	return n
}

// rxFailed reports a receive that ended in error; wire.mu is held.
func (x *endpoint) rxFailed(e *eq.CQError) {
	if x.RxCQ != nil {
		_ = x.RxCQ.CompleteErr(e)
	}
	if x.Cntr[kit.CntrRecv] != nil {
		_ = x.Cntr[kit.CntrRecv].AddErr(1)
	}
}

// txFailed reports a send that ended in error; wire.mu is held.
func (x *endpoint) txFailed(m *message, code fi.Errno) {
	if x.TxCQ != nil && !m.inject {
		_ = x.TxCQ.CompleteErr(&eq.CQError{Context: m.ctx, Flags: sendFlags, Err: code})
	}
	if x.Cntr[kit.CntrSend] != nil {
		_ = x.Cntr[kit.CntrSend].AddErr(1)
	}
}

// Cancel cancels the receive posted with context ctx, or this endpoint's
// send waiting with it, which completes with an fi.ECANCELED error entry
// (fi_cancel). fi.ENOENT says no such operation waits.
func (x *endpoint) Cancel(ctx any) error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if x.closed {
		return fi.EBADF
	}
	found := false
	x.recvs.removeIf(func(r *recv) bool {
		if found || !kit.SameContext(r.ctx, ctx) {
			return false
		}
		found = true
		x.rxFailed(&eq.CQError{Context: r.ctx, Flags: recvFlags, Err: fi.ECANCELED})
		return true
	})
	if !found {
		x.unqueue(func(m *message) bool {
			if found || !kit.SameContext(m.ctx, ctx) {
				return false
			}
			found = true
			return true
		})
	}
	if !found {
		return fi.ENOENT
	}
	return nil
}

// unqueue removes this endpoint's messages for which drop returns true
// from the inboxes they wait in, and completes them with fi.ECANCELED.
// wire.mu is held.
func (x *endpoint) unqueue(drop func(*message) bool) {
	if x.queued == 0 {
		return
	}
	for _, o := range wire.bound {
		to, ok := o.(*endpoint)
		if !ok {
			continue
		}
		to.inbox.removeIf(func(m *message) bool {
			if m.from != x || !drop(m) {
				return false
			}
			x.queued--
			x.txFailed(m, fi.ECANCELED)
			return true
		})
	}
}
