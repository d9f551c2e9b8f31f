package fabnet

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// The blocking operations: each posts one asynchronous operation whose
// context is a *op from the queue's free list (a pointer in an any does
// not allocate), then polls the queue for DefaultSpin or
// EndpointConfig.Spin, then sleeps in its blocking read. A completion's
// context leads back to its op.

// Send sends buf on a connected endpoint and waits until it completes
// (fi_send(3), then fi_cq_sread(3) on the send queue; net.Conn's Write
// with a context instead of a deadline). See the package documentation
// for what happens when ctx ends first.
//
// A message of at most the endpoint's inject size (tx_attr.inject_size)
// goes out with fi_inject(3), as fi_pingpong sends small messages: the
// provider copies it, so the call returns at once with buf free again,
// and there is no completion to wait for. A failure after that shows in
// later calls on a connection (its end); on an unconnected endpoint it
// is not reported, as with fi_inject.
func (e *Endpoint) Send(ctx context.Context, buf []byte) error {
	return e.SendTo(ctx, buf, fi.AddrUnspec)
}

// SendTo sends buf to dest, an fi.Addr from Insert, and waits until it
// completes (fi_send(3) on an unconnected endpoint; net.PacketConn's
// WriteTo).
func (e *Endpoint) SendTo(ctx context.Context, buf []byte, dest fi.Addr) error {
	if len(buf) <= e.injectSize && e.msg != nil {
		return e.inject(ctx, opSend, buf, dest, 0)
	}
	a := args{kind: opSend, buf: buf, addr: dest}
	_, _, _, err := e.do(ctx, &e.tx, &a)
	return err
}

// Recv posts buf as a receive buffer and waits for a message (fi_recv(3),
// then fi_cq_sread(3) on the receive queue; net.Conn's Read). It returns
// the message's length; a message longer than buf is truncated and
// reported with an error matching fi.ETRUNC.
func (e *Endpoint) Recv(ctx context.Context, buf []byte) (int, error) {
	a := args{kind: opRecv, buf: buf, addr: fi.AddrUnspec}
	n, _, _, err := e.do(ctx, &e.rx, &a)
	return n, err
}

// RecvFrom is Recv on an unconnected endpoint that also returns the
// sender's fi.Addr (fi_recv(3), then fi_cq_sreadfrom(3); net.PacketConn's
// ReadFrom): fi.AddrUnspec when the endpoint was opened without
// FI_SOURCE or the sender is not in the address vector.
func (e *Endpoint) RecvFrom(ctx context.Context, buf []byte) (int, fi.Addr, error) {
	a := args{kind: opRecv, buf: buf, addr: fi.AddrUnspec, src: true}
	n, _, src, err := e.do(ctx, &e.rx, &a)
	return n, src, err
}

// TSend sends buf with tag to dest (fi.AddrUnspec on a connected
// endpoint) and waits until it completes (fi_tsend(3); fi_tinject(3) up
// to the inject size, as Send). The endpoint needs FI_TAGGED (OpenRDM
// asks for it).
func (e *Endpoint) TSend(ctx context.Context, buf []byte, dest fi.Addr, tag uint64) error {
	if len(buf) <= e.injectSize && e.tagged != nil {
		return e.inject(ctx, opTSend, buf, dest, tag)
	}
	a := args{kind: opTSend, buf: buf, addr: dest, tag: tag}
	_, _, _, err := e.do(ctx, &e.tx, &a)
	return err
}

// TRecv posts buf for a message from src (fi.AddrUnspec: any sender)
// whose tag matches tag in the bits that ignore leaves clear, and waits
// for it (fi_trecv(3)). It returns the message's length and tag.
func (e *Endpoint) TRecv(ctx context.Context, buf []byte, src fi.Addr, tag, ignore uint64) (int, uint64, error) {
	a := args{kind: opTRecv, buf: buf, addr: src, tag: tag, ignore: ignore}
	n, tag, _, err := e.do(ctx, &e.rx, &a)
	return n, tag, err
}

// Read reads len(buf) bytes of the peer's registered memory at addr,
// under the memory region key, into buf and waits until it completes
// (fi_read(3)); src is the peer's fi.Addr, fi.AddrUnspec on a connected
// endpoint. addr is an offset into the region, or a virtual address
// where the domain's MR mode has FI_MR_VIRT_ADDR (fi_mr(3)).
func (e *Endpoint) Read(ctx context.Context, buf []byte, src fi.Addr, addr, key uint64) error {
	a := args{kind: opRead, buf: buf, addr: src, raddr: addr, key: key}
	_, _, _, err := e.do(ctx, &e.tx, &a)
	return err
}

// Write writes buf to the peer's registered memory at addr, under key,
// and waits until it completes (fi_write(3)); dest and addr as for Read.
func (e *Endpoint) Write(ctx context.Context, buf []byte, dest fi.Addr, addr, key uint64) error {
	a := args{kind: opWrite, buf: buf, addr: dest, raddr: addr, key: key}
	_, _, _, err := e.do(ctx, &e.tx, &a)
	return err
}

// opKind is the operation a blocking call posts.
type opKind uint8

const (
	opSend opKind = iota
	opRecv
	opTSend
	opTRecv
	opRead
	opWrite
)

var opNames = [...]string{opSend: "send", opRecv: "recv", opTSend: "tsend", opTRecv: "trecv", opRead: "read", opWrite: "write"}

func (k opKind) String() string { return opNames[k] }

// args are a blocking call's arguments, passed by pointer to a stack
// value.
type args struct {
	kind opKind
	// src: the caller wants the completion's source (RecvFrom).
	src         bool
	buf         []byte
	addr        fi.Addr
	tag, ignore uint64
	raddr, key  uint64
}

// op is one operation's completion record; its pointer is the
// operation's context.
type op struct {
	// done: the operation's completion or error entry was read.
	done bool
	// abandoned: the call that posted it returned first (its context
	// ended); the queue takes the op back when its entry is read.
	abandoned bool
	// n, tag and src are the completion's length, tag and source
	// (fi_cq_tagged_entry len and tag; fi_cq_readfrom's src_addr).
	n   int
	tag uint64
	src fi.Addr
	err *eq.CQError
	// reg is the registration of the operation's buffer, held until its
	// entry is read (FI_MR_LOCAL domains; nil otherwise).
	reg *mrReg
	// pad makes an op 128 bytes, a size class whose objects start on
	// cache-line boundaries, so that the ops of goroutines on different
	// CPUs (the two sides of a conversation in one process) never share
	// a line that each side writes on every operation.
	_ [80]byte
}

// waitQueue is one completion queue with the blocking calls that wait on
// it.
type waitQueue struct {
	// mu is held by a blocking call from its post to its result, so that
	// one operation of the queue is waited for at a time; it guards every
	// field below.
	mu sync.Mutex
	cq eq.CompletionQueue
	// from: the endpoint has FI_SOURCE, so reads can give sources;
	// sfrom is the queue's blocking ReadFrom, nil when it has none.
	from  bool
	sfrom eq.SReadFromer
	// withSrc: the current operation wants its source, so the queue is
	// read with ReadFrom (from is set too).
	withSrc bool
	spin    time.Duration
	ents    [8]eq.Completion
	srcs    [8]fi.Addr
	// idle is the free op of the common case, one operation at a time;
	// free holds more, while abandoned ops are outstanding. Keeping the
	// common one in a field of the queue, not in the slice's small
	// array, keeps the write of every get and put on the queue's own
	// lines.
	idle *op
	free []*op
	// mrs registers the operations' buffers on FI_MR_LOCAL domains (nil
	// elsewhere).
	mrs *mrCache
}

func (q *waitQueue) init(cq eq.CompletionQueue, spin time.Duration, from bool) {
	q.cq, q.spin, q.from = cq, spin, from
	if from {
		q.sfrom, _ = cq.(eq.SReadFromer)
	}
}

// get returns a free op.
func (q *waitQueue) get() *op {
	if o := q.idle; o != nil {
		q.idle = nil
		return o
	}
	if n := len(q.free); n > 0 {
		o := q.free[n-1]
		q.free = q.free[:n-1]
		return o
	}
	return new(op)
}

// put returns o to the free list.
func (q *waitQueue) put(o *op) {
	if o.reg != nil {
		q.mrs.put(o.reg)
		o.reg = nil
	}
	o.done, o.abandoned, o.err = false, false, nil
	if q.idle == nil {
		q.idle = o
		return
	}
	q.free = append(q.free, o)
}

// take hands the first n entries read to their ops.
func (q *waitQueue) take(n int) {
	for i := range n {
		// The entries keep what they hold until the next read: contexts
		// are ops, and Buf is set only for FI_MULTI_RECV, never posted.
		if o, ok := q.ents[i].Context.(*op); ok {
			o.n, o.tag = q.ents[i].Len, q.ents[i].Tag
			o.src = fi.AddrUnspec
			if q.withSrc {
				o.src = q.srcs[i]
			}
			q.finish(o)
		}
	}
}

// finish marks o done, or takes it back when its caller left.
func (q *waitQueue) finish(o *op) {
	if o.abandoned {
		q.put(o)
		return
	}
	o.done = true
}

// read is one non-blocking read of the queue.
func (q *waitQueue) read() (int, error) {
	if q.withSrc {
		return q.cq.ReadFrom(q.ents[:], q.srcs[:])
	}
	return q.cq.Read(q.ents[:])
}

// poll reads every entry the queue holds (which drives the provider's
// progress). It returns an error only when the queue itself fails
// (fi.EBADF once closed).
func (q *waitQueue) poll() error {
	n, err := q.read()
	return q.handle(n, err)
}

// handle takes the n entries of a read that returned err, and reads on
// while more may be queued: after a full read, and after an error
// entry. Its errors are poll's.
func (q *waitQueue) handle(n int, err error) error {
	for {
		q.take(n)
		switch {
		case err == nil:
			if n < len(q.ents) {
				return nil // drained: one read, as a busy-polling loop does
			}
		case err == fi.EAGAIN:
			return nil
		default:
			if err = q.after(err); err != nil && err != fi.EAGAIN {
				return err
			}
		}
		n, err = q.read()
	}
}

// after handles a read's error: fi.EAVAIL reads the error entry and
// gives nil; fi.EAGAIN is returned as is; nil is nil.
func (q *waitQueue) after(err error) error {
	if err == nil || err == fi.EAGAIN {
		return err
	}
	switch fi.Code(err) {
	case fi.EAGAIN:
		return fi.EAGAIN
	case fi.EAVAIL:
		ce, err := q.cq.ReadErr()
		if err != nil {
			if fi.Code(err) == fi.EAGAIN {
				return nil
			}
			return err
		}
		if o, ok := ce.Context.(*op); ok {
			o.err = ce
			q.finish(o)
		}
		return nil
	}
	return err
}

// wait waits until o is done. It returns nil when it is; otherwise the
// queue's failure, or fi.ContextError's error after abandoning o.
func (q *waitQueue) wait(ctx context.Context, e *Endpoint, o *op) error {
	// Poll first: in a conversation the answer is usually a few
	// microseconds away, and a sleeping wait costs tens to wake.
	// The context is looked at every 16 polls and the clock every 64
	// (reading it costs more than a poll of shared memory), from the
	// 64th on: a quick answer pays for neither.
	var start time.Time
	for i := 1; q.spin > 0; i++ {
		// One read; only what it found goes on to handle.
		if n, err := q.read(); n > 0 || err != fi.EAGAIN {
			if err := q.handle(n, err); err != nil {
				return err
			}
			if o.done {
				return nil
			}
		}
		if i&15 != 0 {
			continue
		}
		if ctx.Err() != nil {
			return q.abandon(ctx, e, o)
		}
		if i&63 != 0 {
			continue
		}
		now := time.Now()
		if start.IsZero() {
			start = now
		} else if now.Sub(start) >= q.spin {
			break
		}
		runtime.Gosched() // let a goroutine that answers run
	}
	if q.withSrc && q.sfrom == nil {
		return q.napPoll(ctx, e, o)
	}
	for {
		if err := q.poll(); err != nil {
			return err
		}
		if o.done {
			return nil
		}
		var n int
		var err error
		if q.withSrc {
			n, err = q.sfrom.SReadFrom(ctx, q.ents[:], q.srcs[:])
		} else {
			n, err = q.cq.SRead(ctx, q.ents[:])
		}
		q.take(n)
		switch err = q.after(err); {
		case err == nil, err == fi.EAGAIN:
		case ctx.Err() != nil:
			return q.abandon(ctx, e, o)
		default:
			return err
		}
	}
}

// napPoll waits for o on a queue with sources but no blocking ReadFrom:
// it polls with pauses that grow to a millisecond.
func (q *waitQueue) napPoll(ctx context.Context, e *Endpoint, o *op) error {
	nap := 10 * time.Microsecond
	for {
		if err := q.poll(); err != nil {
			return err
		}
		if o.done {
			return nil
		}
		if ctx.Err() != nil {
			return q.abandon(ctx, e, o)
		}
		time.Sleep(nap)
		nap = min(2*nap, time.Millisecond)
	}
}

// abandon cancels o after ctx ended (fi_cancel). Where the provider
// cancels at once, the cancel's error entry, or the completion that beat
// it, is queued now: then o is done and wait returns nil. Otherwise o
// stays with the queue, which takes it back when its entry comes, and
// wait returns the context's error.
func (q *waitQueue) abandon(ctx context.Context, e *Endpoint, o *op) error {
	_ = e.EP.Cancel(o)
	if err := q.poll(); err == nil && o.done {
		return nil
	}
	o.abandoned = true
	return fi.ContextError(ctx)
}

// inject sends buf with fi_inject or fi_tinject (kind opSend or
// opTSend), retrying while the provider's queue is full. It takes no
// lock but to make progress on a full queue: the provider's inject is
// safe for concurrent use, and there is no completion to wait for.
func (e *Endpoint) inject(ctx context.Context, kind opKind, buf []byte, dest fi.Addr, tag uint64) error {
	if e.closed.Load() {
		return closedErr(kind.String())
	}
	if ctx.Err() != nil {
		return ctxErr(ctx, kind.String())
	}
	for i := 0; ; i++ {
		var err error
		if kind == opTSend {
			err = e.tagged.TInject(buf, dest, tag)
		} else {
			err = e.msg.Inject(buf, dest)
		}
		if err == nil {
			return nil
		}
		if fi.Code(err) != fi.EAGAIN {
			return e.failed(kind.String(), err)
		}
		// The provider's queue is full: reading ours makes progress.
		e.tx.mu.Lock()
		err = e.tx.poll()
		e.tx.mu.Unlock()
		if err != nil {
			return e.failed(kind.String(), err)
		}
		if ctx.Err() != nil {
			return ctxErr(ctx, kind.String())
		}
		if i < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(time.Duration(min(i, 1000)) * time.Microsecond)
		}
	}
}

// do runs one blocking operation: it posts a, retrying while the
// provider's queue is full, waits, and returns the completion's length,
// tag and source, or the error.
func (e *Endpoint) do(ctx context.Context, q *waitQueue, a *args) (n int, tag uint64, src fi.Addr, err error) {
	src = fi.AddrUnspec
	if e.closed.Load() {
		return 0, 0, src, closedErr(a.kind.String())
	}
	if ctx.Err() != nil { // an atomic load: no Done channel, no select
		return 0, 0, src, ctxErr(ctx, a.kind.String())
	}
	q.mu.Lock()
	n, tag, src, err = e.doLocked(ctx, q, a)
	q.mu.Unlock()
	return n, tag, src, err
}

// doLocked is do with q.mu held.
func (e *Endpoint) doLocked(ctx context.Context, q *waitQueue, a *args) (n int, tag uint64, src fi.Addr, err error) {
	src = fi.AddrUnspec
	q.withSrc = a.src && q.from
	o := q.get()
	var desc any
	if q.mrs != nil {
		reg, err := q.mrs.get(a.buf)
		if err != nil {
			q.put(o)
			return 0, 0, src, e.failed(a.kind.String(), err)
		}
		if reg != nil {
			o.reg, desc = reg, reg.desc
		}
	}
	for i := 0; ; i++ {
		err := e.post(a, o, desc)
		if err == nil {
			break
		}
		if fi.Code(err) != fi.EAGAIN {
			q.put(o)
			return 0, 0, src, e.failed(a.kind.String(), err)
		}
		// The provider's queue is full: reading ours makes progress.
		if err := q.poll(); err != nil {
			q.put(o)
			return 0, 0, src, e.failed(a.kind.String(), err)
		}
		if ctx.Err() != nil {
			q.put(o)
			return 0, 0, src, ctxErr(ctx, a.kind.String())
		}
		if i < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(time.Duration(min(i, 1000)) * time.Microsecond)
		}
	}
	if err := q.wait(ctx, e, o); err != nil {
		if e.closed.Load() {
			return 0, 0, src, closedErr(a.kind.String())
		}
		if !o.abandoned { // the queue failed: o is lost with it
			return 0, 0, src, e.failed(a.kind.String(), err)
		}
		return 0, 0, src, errors.Wrapf(err, "fabnet: %s", a.kind)
	}
	n, tag, ce := o.n, o.tag, o.err
	if ce == nil {
		src = o.src
	} else {
		n, tag = ce.Len, ce.Tag
	}
	q.put(o)
	if ce != nil {
		return n, tag, fi.AddrUnspec, e.entryErr(ctx, a.kind.String(), ce)
	}
	return n, tag, src, nil
}

// post posts a with context o and the buffer's desc.
func (e *Endpoint) post(a *args, o *op, desc any) error {
	switch a.kind {
	case opSend:
		if e.msg == nil {
			return e.msgErr
		}
		return e.msg.Send(a.buf, desc, a.addr, o)
	case opRecv:
		if e.msg == nil {
			return e.msgErr
		}
		return e.msg.Recv(a.buf, desc, a.addr, o)
	case opTSend:
		if e.tagged == nil {
			return e.taggedErr
		}
		return e.tagged.TSend(a.buf, desc, a.addr, a.tag, o)
	case opTRecv:
		if e.tagged == nil {
			return e.taggedErr
		}
		return e.tagged.TRecv(a.buf, desc, a.addr, a.tag, a.ignore, o)
	case opRead:
		if e.rma == nil {
			return e.rmaErr
		}
		return e.rma.Read(a.buf, desc, a.addr, a.raddr, a.key, o)
	default:
		if e.rma == nil {
			return e.rmaErr
		}
		return e.rma.Write(a.buf, desc, a.addr, a.raddr, a.key, o)
	}
}

// entryErr is the error of an operation that ended in error entry ce.
// An fi.ECANCELED entry is the endpoint's Close, the context's end (the
// cancel of abandon), or on a connection its end (the provider flushes
// what is pending when the peer shuts down or the connection is lost).
func (e *Endpoint) entryErr(ctx context.Context, what string, ce *eq.CQError) error {
	if ce.Err == fi.ECANCELED {
		switch {
		case e.closed.Load():
			return closedErr(what)
		case ctx.Err() != nil:
			return ctxErr(ctx, what)
		case e.cm != nil:
			return errors.Wrapf(fi.ESHUTDOWN, "fabnet: %s: the connection ended", what)
		}
	}
	return errors.Wrapf(ce, "fabnet: %s", what)
}

// failed wraps the error of a post or of the queue.
func (e *Endpoint) failed(what string, err error) error {
	if e.closed.Load() {
		return closedErr(what)
	}
	if e.cm != nil && fi.Code(err) == fi.ESHUTDOWN {
		return errors.Wrapf(err, "fabnet: %s: the connection ended", what)
	}
	return errors.Wrapf(err, "fabnet: %s", what)
}

// closedErr is the error of a call on a closed endpoint: fi.EBADF, which
// matches net.ErrClosed.
func closedErr(what string) error {
	return errors.Wrapf(fi.EBADF, "fabnet: %s: use of closed endpoint", what)
}

// ctxErr is fi.ContextError's error for ctx, named by what.
func ctxErr(ctx context.Context, what string) error {
	return errors.Wrapf(fi.ContextError(ctx), "fabnet: %s", what)
}
