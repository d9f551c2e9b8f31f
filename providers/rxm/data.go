package rxm

import (
	"net/netip"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// PostTx sends a message (fi_send, fi_tsend and their forms, through
// kit.MsgOps and kit.TaggedOps; C's rxm_send_common) or posts an RMA
// operation (rma.go): over the peer's connection, opened by the first
// send, which returns fi.EAGAIN until it is up. Messages up to the eager
// limit go eager, longer ones by rendezvous. Bare errors: fi.EINVAL for an
// inject above inject_size, more than iov_limit buffers or an unknown
// fi.Addr, fi.EAGAIN when tx_attr.size operations are in flight or the
// core's queue is full; a connection that could not be opened gives its
// error once (fi.ECONNREFUSED after the connect timeout). An fi.EAGAIN
// runs progress before it returns, so that a caller that only retries
// moves the connection and the core queue on.
func (e *endpoint) PostTx(op kit.Op) error {
	err := e.postTx(&op)
	if err == fi.EAGAIN {
		e.progress()
	}
	return err
}

// postTx is PostTx but for progress.
func (e *endpoint) postTx(op *kit.Op) error {
	tagged := false
	switch op.Kind {
	case kit.OpSend:
	case kit.OpTSend:
		tagged = true
	case kit.OpWrite, kit.OpRead:
		return e.postRMA(op)
	default:
		return fi.ENOSYS
	}
	if len(op.IOV) > iovLimit {
		return fi.EINVAL
	}
	size := op.Len()
	inject := op.Inject || op.Flags&fi.FlagInject != 0
	if inject && (size > e.info.TxAttr.InjectSize || size > maxInject) {
		return fi.EINVAL
	}
	e.mu.Lock()
	defer e.unlock()
	c, tx, err := e.txStart(op.Addr)
	if err != nil {
		return err
	}
	h := &e.hdr
	*h = rxmwire.Header{Type: rxmwire.TypeEager, ConnID: c.remoteID, Size: uint64(size)}
	if tagged {
		h.Op, h.Tag = rxmwire.OpTagged, op.Tag
	}
	if op.Flags&fi.FlagRemoteCQData != 0 {
		h.Flags, h.Data = rxmwire.FlagCQData, op.Data
	}
	tx.ctx, tx.flags, tx.cntr = op.Context, sendFlags(tagged), kit.CntrSend
	tx.report = !op.Inject && (!e.TxSel || op.Flags&fi.FlagCompletion != 0)
	if size > e.eager && !inject {
		if size <= e.sarLimit {
			return e.sendSAR(c, tx, op, h)
		}
		return e.sendRndv(c, tx, op, h)
	}
	tx.kind = txEager
	if tagged && c.tag != nil {
		return e.sendRawTagged(c, tx, op, inject)
	}
	rxmwire.PutHeader(tx.hdr[:], h)
	tx.iov[0] = tx.hdr[:rxmwire.HeaderSize]
	n := 1
	if e.mrLocal {
		// Every buffer the core sends from needs a registered region's
		// descriptor: the header goes from the tx buffer's registered
		// copy space, the payload after it, or from the caller's
		// buffers when it gave descriptors for them all and the core
		// takes that many (C's rxm copies always over such cores).
		if err := e.bounceOf(tx); err != nil {
			e.putTx(tx)
			return err
		}
		k := copy(tx.bounce, tx.hdr[:rxmwire.HeaderSize])
		tx.desc[0] = tx.bdesc
		var bufs [iovLimit][]byte
		nb, _ := op.CopyIOV(bufs[:], "")
		if !inject && nb+1 <= e.coreIOV && allDescs(op, bufs[:nb]) {
			tx.iov[0] = tx.bounce[:k]
			for i, b := range bufs[:nb] {
				tx.iov[n], tx.desc[n] = b, opDesc(op, i)
				n++
			}
		} else {
			for _, b := range bufs[:nb] {
				k += copy(tx.bounce[k:], b)
			}
			tx.iov[0] = tx.bounce[:k]
		}
	} else if inject {
		// The caller's buffer is its own again on return: copy it.
		k := copy(tx.inline[:], tx.hdr[:rxmwire.HeaderSize])
		k += copyOut(tx.inline[k:], op)
		tx.iov[0] = tx.inline[:k]
	} else if op.IOV == nil {
		tx.iov[1] = op.Buf
		n = 2
	} else {
		n += copy(tx.iov[1:], op.IOV)
	}
	tx.msg = ep.Message{IOV: tx.iov[:n], Addr: fi.AddrUnspec, Context: tx}
	if e.mrLocal {
		tx.msg.Desc = tx.desc[:n]
	}
	var flags fi.Flags
	if !op.Inject {
		// The core's acknowledged send, as C passes these flags to it
		// (tcp asks the peer's ACK).
		flags = op.Flags & (fi.FlagDeliveryComplete | fi.FlagTransmitComplete)
	}
	if err := c.msg.SendMsg(&tx.msg, flags); err != nil {
		e.putTx(tx)
		return transient(err)
	}
	return nil
}

// notYet reports whether the core refused an operation rxm makes on its
// own, for a peer's packet (a rendezvous read or read-done, an atomic
// response), only for now: its queue is full (fi.EAGAIN), or the
// connection is not established on its side yet (fi.ENOTCONN: verbs'
// accepting endpoint takes the peer's first packets before its own
// ESTABLISHED event). The operation waits in the deferred queue; a
// connection that never comes up is dropped with it.
func notYet(err error) bool { return err == fi.EAGAIN || err == fi.ENOTCONN }

// txStart begins a transmit operation to addr: the endpoint must be
// enabled and open, the connection to addr up (connFor opens it, and
// fi.EAGAIN says it is not up yet) and a transmit buffer free (else
// fi.EAGAIN). mu is held.
func (e *endpoint) txStart(addr fi.Addr) (*conn, *txBuf, error) {
	switch {
	case e.closed.Load():
		return nil, nil, fi.EBADF
	case !e.enabled:
		return nil, nil, fi.EOPBADSTATE
	}
	c, err := e.connFor(addr)
	if err != nil {
		return nil, nil, err
	}
	tx := e.getTx()
	if tx == nil {
		return nil, nil, fi.EAGAIN
	}
	return c, tx, nil
}

// transient maps the core's errors of a connection going away to
// fi.EAGAIN: the next try opens another.
func transient(err error) error {
	if err == fi.ESHUTDOWN || err == fi.ENOTCONN {
		return fi.EAGAIN
	}
	return err
}

// getTx takes a free transmit buffer, making one while fewer than
// tx_attr.size exist; nil when all are in use. mu is held.
func (e *endpoint) getTx() *txBuf {
	if len(e.free) == 0 {
		if len(e.txs) >= e.txSize {
			return nil
		}
		tx := &txBuf{idx: uint32(len(e.txs))}
		e.txs = append(e.txs, tx)
		e.free = append(e.free, tx)
	}
	tx := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	tx.inUse = true
	tx.gen++
	return tx
}

// putTx frees tx; mu is held.
func (e *endpoint) putTx(tx *txBuf) {
	if tx.awaitsPeer {
		tx.awaitsPeer = false
		e.rndvOut--
	}
	tx.reset()
	e.free = append(e.free, tx)
}

// reset clears a finished operation from tx, but for its copy space.
func (tx *txBuf) reset() {
	closeMRs(&tx.mrs)
	tx.inUse, tx.sent, tx.done, tx.conn, tx.parent = false, false, false, nil, nil
	tx.msg, tx.rmsg, tx.tmsg, tx.ctx = ep.Message{}, ep.RMAMessage{}, ep.TaggedMessage{}, nil
	clear(tx.iov[:])
	clear(tx.desc[:])
	clear(tx.src[:])
	tx.nsrc, tx.nseg, tx.next, tx.pending, tx.err, tx.queued = 0, 0, 0, 0, 0, false
	clear(tx.res[:])
	tx.aop, tx.nres, tx.resLen = 0, 0, 0
}

// connFor returns the connection to send to the AV's addr on, or
// fi.EAGAIN while it is being opened (C's rxm_get_conn); mu is held. A
// refused attempt is tried again by a later send, after a pause, until
// the series of attempts is older than the fabric's connect timeout;
// then, or for another failure, the next send returns the error, once,
// and the one after starts a new series.
func (e *endpoint) connFor(addr fi.Addr) (*conn, error) {
	p := e.cachedPeer(addr)
	if p == nil {
		if e.av == nil {
			return nil, fi.EINVAL
		}
		name, ok := e.av.Addr(addr)
		if !ok {
			return nil, fi.EINVAL
		}
		ap, _, err := fi.AddrPortFromSockaddr(name)
		if err != nil {
			return nil, fi.EINVAL
		}
		p = e.peerFor(ap)
		e.cachePeer(addr, p)
	}
	if p.send != nil {
		return p.send, nil
	}
	if p.out != nil || p.in != nil {
		return nil, fi.EAGAIN
	}
	if code := p.lastErr; code != 0 {
		p.lastErr = 0
		return nil, errors.Wrapf(code, "%s: connection to %v failed", e.domain.fabric.Prov(), p.addr)
	}
	now := time.Now()
	if now.Before(p.retryAt) {
		return nil, fi.EAGAIN
	}
	if p.tryStart.IsZero() {
		p.tryStart = now
	}
	c, err := e.newConn(e.msgInfo, p)
	if err != nil {
		return nil, err
	}
	rec := rxmwire.ConnectRecord{Port: e.self.Port(), FlowCtrl: rxmwire.FlowCtrlOff, EagerLimit: uint32(e.eager),
		RxSize: rxmwire.RxSize, ConnID: rxmwire.MakeConnID(e.pid, p.index)}
	if err := c.cm.Connect(p.name, rxmwire.AppendConnect(nil, &rec)); err != nil {
		e.dropConn(c, fi.ECANCELED)
		return nil, err
	}
	p.out = c
	e.pending.Add(1)
	return nil, fi.EAGAIN
}

// peerFor returns the peer of name ap, added if new; mu is held.
func (e *endpoint) peerFor(ap netip.AddrPort) *peer {
	p := e.peers[ap]
	if p == nil {
		e.npeers++
		p = &peer{addr: ap, index: e.npeers}
		_, p.name, _ = fi.SockaddrFromAddrPort(ap)
		e.peers[ap] = p
	}
	return p
}

// newConn opens, binds and enables a core endpoint for info and posts its
// bounce receives (C's rxm_open_conn); mu is held.
func (e *endpoint) newConn(info *fi.Info, p *peer) (*conn, error) {
	size := rxmwire.HeaderSize + e.eager
	var slab []byte
	if e.bounces > 0 {
		slab = make([]byte, e.bounces*size)
	}
	var slabMR fi.MR
	if e.mrLocal {
		var err error
		if slabMR, err = e.domain.registerInternal(slab, fi.AccessRecv); err != nil {
			return nil, err
		}
	}
	x, err := ep.Open(e.domain.core, info)
	if err != nil {
		if slabMR != nil {
			_ = slabMR.Close()
		}
		return nil, err
	}
	c := &conn{ep: x, peer: p, slab: slabMR, rx: make([]rxBuf, e.bounces)}
	closeConn := func() {
		_ = x.Close()
		if slabMR != nil {
			_ = slabMR.Close()
		}
	}
	c.msg, _ = x.(ep.Msg)
	c.cm, _ = x.(ep.CM)
	c.rma, _ = x.(ep.RMA)
	if c.msg == nil || c.cm == nil {
		closeConn()
		return nil, fi.ENOSYS
	}
	if e.dyn {
		dr, ok := x.(kit.DynRecv)
		if !ok {
			closeConn()
			return nil, fi.ENOSYS
		}
		c.dyn = dr
		c.tag, _ = x.(ep.Tagged)
		if err := dr.SetDynRecv(e, c, rxmwire.HeaderSize); err != nil {
			closeConn()
			return nil, err
		}
	}
	if err := x.Bind(e.msgEQ, 0); err != nil {
		closeConn()
		return nil, err
	}
	if err := x.Bind(e.msgCQ, fi.FlagSend|fi.FlagRecv); err != nil {
		closeConn()
		return nil, err
	}
	if e.coreRW != nil {
		_ = x.Bind(e.coreRW, fi.FlagRemoteWrite) // best effort: see Enable
	}
	if err := x.Enable(); err != nil {
		closeConn()
		return nil, err
	}
	e.conns[x] = c
	for i := range c.rx {
		c.rx[i].c = c
		c.rx[i].buf = slab[i*size : (i+1)*size : (i+1)*size]
		if slabMR != nil {
			c.rx[i].desc = slabMR.Desc()
		}
		if err := c.msg.Recv(c.rx[i].buf, c.rx[i].desc, fi.AddrUnspec, &c.rx[i]); err != nil {
			e.dropConn(c, fi.ECANCELED)
			return nil, err
		}
	}
	return c, nil
}

// dropConn forgets connection c and closes it; mu is held. What was
// pending on it fails with code: rendezvous sends waiting for the
// peer's read-done, deferred operations, and unexpected rendezvous
// requests that came over it (their data cannot be read any more); the
// core completes what it still had queued with errors, which progress
// takes. Unexpected eager messages stay, whole or still being placed:
// the peer sent them before it went.
func (e *endpoint) dropConn(c *conn, code fi.Errno) {
	if c.closed {
		return
	}
	if p := c.peer; p != nil {
		fi.Logger(e.domain.fabric.Prov()).Debug("rxm: connection dropped", "peer", p.addr, "err", code)
	}
	c.closed = true
	delete(e.conns, c.ep)
	if p := c.peer; p != nil {
		if p.send == c {
			p.send = nil
		}
		if p.out == c {
			p.out = nil
			e.pending.Add(-1)
		}
		if p.in == c {
			p.in = nil
			e.pending.Add(-1)
		}
	}
	_ = c.ep.Close()
	if c.slab != nil {
		// The core endpoint is closed: nothing lands in the bounce
		// receives any more (their flushed completions may still come).
		_ = c.slab.Close()
		c.slab = nil
	}
	for _, tx := range e.txs {
		if tx.inUse && (tx.kind == txRndv || tx.kind == txAtomic) && tx.conn == c && tx.sent {
			e.txDone(tx, 0, code)
		}
	}
	deferred := c.deferred
	c.deferred = nil
	for _, op := range deferred {
		if tx := op.resp; tx != nil {
			e.putResp(tx)
			continue
		}
		if rr := op.rr; rr != nil {
			rr.queued = false
			rr.fail(code)
			e.rndvStep(rr)
			continue
		}
		op.sar.queued = false
		op.sar.fail(code)
		e.sarStep(op.sar)
	}
	e.dropSARs(c, code)
	kept := e.unexp[:0]
	for _, u := range e.unexp {
		if d := u.dyn; d != nil && u.conn == c && !d.done {
			if d.kind == dynEager {
				// Its bytes may all be in: the core completes it, with
				// success (a receive takes it then) or an error (then it
				// goes, dynDone). A peer that sends and closes at once
				// has its last messages here when its end is read first.
				kept = append(kept, u)
				continue
			}
			d.orphan = true // a rendezvous request: its data cannot be read any more
			continue
		}
		if u.rndv && u.conn == c {
			if u.dyn != nil {
				e.putDyn(u.dyn)
			}
			continue
		}
		if u.sar != nil && u.sar.c == c && !u.sar.complete {
			e.putSarBuf(u.sar.data)
			e.putSar(u.sar)
			continue
		}
		kept = append(kept, u)
	}
	clear(e.unexp[len(kept):])
	e.unexp = kept
}

// progress reads the core event queue and completion queue (C's
// rxm_ep_do_progress): connection events and deferred operations, then
// the core completions, read without mu (the core's progress may call
// Arrived, dynrecv.go) and handled with it, then the deferred operations
// those let go.
func (e *endpoint) progress() {
	r := e.refs.Load()
	if r == nil {
		return
	}
	e.progMu.Lock()
	defer e.progMu.Unlock()
	if e.refs.Load() != r {
		return // closed meanwhile
	}
	// The connections' events: at every run while a connection is being
	// set up, else every cmInterval (looked at every cmPollMask+1 runs,
	// which spares a busy-polling reader the clock), or when a blocked
	// reader's timed wake asks.
	e.polls++
	busy := false
	if e.pending.Load() > 0 || e.cmDue.Swap(false) ||
		(e.polls&cmPollMask == 0 && time.Since(e.lastCM) >= cmInterval) {
		e.lastCM = time.Now()
		busy = e.pollCM(r.eq)
	}
	for {
		n, err := r.cq.Read(e.entries[:])
		var ce *eq.CQError
		if err == fi.EAVAIL {
			ce, _ = r.cq.ReadErr()
		}
		if n <= 0 && ce == nil {
			break
		}
		busy = true
		e.mu.Lock()
		e.handle(max(n, 0), ce)
		e.unlock()
		if ce == nil && n < len(e.entries) {
			break
		}
	}
	var rwv uint64
	if r.rw != nil {
		rwv = r.rw.Read()
	}
	if busy || (r.rw != nil && rwv != e.coreRWSeen) {
		// Deferred operations wait for room in the core's queues, which
		// completions make, or for a connection, which events bring.
		e.mu.Lock()
		if len(e.deferConns) > 0 {
			e.runDeferred()
		}
		if r.rw != nil && rwv != e.coreRWSeen && e.coreRW == r.rw {
			_ = e.Cntr[kit.CntrRemoteWrite].Add(rwv - e.coreRWSeen)
			e.coreRWSeen = rwv
		}
		e.unlock()
	}
}

// handle takes n core completions from entries and an error one; mu is
// held.
func (e *endpoint) handle(n int, ce *eq.CQError) {
	e.taken += uint64(n)
	for i := range e.entries[:n] {
		e.completed(&e.entries[i])
		e.entries[i] = eq.Completion{}
	}
	if ce != nil {
		e.taken++
		e.failed(ce)
	}
}

// completed takes one core completion; mu is held.
func (e *endpoint) completed(c *eq.Completion) {
	switch x := c.Context.(type) {
	case *txBuf:
		e.txDone(x, c.Flags, 0)
	case *rxBuf:
		if c.Flags&fi.FlagRemoteWrite != 0 {
			// A peer's write with remote CQ data that consumed a bounce
			// receive (verbs' RDMA write with immediate data).
			e.remoteWrite(c)
			e.repost(x)
			return
		}
		e.arrived(x, c.Len)
	case *rndvRead:
		x.rr.readDone(0)
		e.rndvStep(x.rr)
	case *rndvRecv:
		x.doneSent(0)
		e.rndvStep(x)
	case *dynRx:
		x.c.viaCQ.Add(-1)
		e.dynDone(x, c.Len, 0)
	case nil:
		// The peer's write with remote CQ data (fi_writedata): the
		// core's receive side reports it as the target's completion.
		if c.Flags&fi.FlagRemoteWrite != 0 {
			e.remoteWrite(c)
		}
	}
}

// failed takes one core error completion; mu is held.
func (e *endpoint) failed(ce *eq.CQError) {
	switch x := ce.Context.(type) {
	case *txBuf:
		fi.Logger(e.domain.fabric.Prov()).Debug("rxm: core send failed", "kind", x.kind, "err", ce.Err, "prov_errno", ce.ProvErrno)
		e.txDone(x, 0, codeOf(ce))
	case *rxBuf:
		// A flushed bounce receive of a closed connection, or a broken
		// one: drop the connection.
		if !x.c.closed {
			fi.Logger(e.domain.fabric.Prov()).Debug("rxm: bounce receive failed", "err", ce.Err, "prov_errno", ce.ProvErrno)
			e.dropConn(x.c, codeOf(ce))
		}
	case *rndvRead:
		x.rr.readDone(codeOf(ce))
		e.rndvStep(x.rr)
	case *rndvRecv:
		x.doneSent(codeOf(ce))
		e.rndvStep(x)
	case *dynRx:
		e.dynDone(x, ce.Len, codeOf(ce))
	}
}

// codeOf returns an error completion's code, fi.EIO if it has none.
func codeOf(ce *eq.CQError) fi.Errno {
	if ce.Err == 0 {
		return fi.EIO
	}
	return ce.Err
}

// remoteWrite reports a peer's write with remote CQ data on the receive
// queue; mu is held.
func (e *endpoint) remoteWrite(c *eq.Completion) {
	if e.RxCQ != nil && c.Flags&fi.FlagRemoteCQData != 0 {
		_ = e.RxCQ.CompleteOverflow(eq.Completion{Flags: c.Flags, Len: c.Len, Data: c.Data}, fi.AddrUnspec)
	}
	if k := e.Cntr[kit.CntrRemoteWrite]; k != nil && e.coreRW == nil {
		_ = k.Add(1)
	}
}

// txDone ends transmit operation tx: flags are the core's completion's,
// code its error (0 for success); mu is held. An eager send or RMA
// operation completes; a rendezvous request whose send completed waits
// for the peer's read-done.
func (e *endpoint) txDone(tx *txBuf, flags fi.Flags, code fi.Errno) {
	if !tx.inUse {
		return
	}
	switch tx.kind {
	case txSeg:
		e.segDone(tx, code)
		return
	case txAtomicResp:
		e.putResp(tx)
		return
	case txAtomic:
		if tx.done {
			// The response reported the operation (atomicRespArrived);
			// the request's send completing, or failing, only frees the
			// buffer the core sent it from.
			e.putTx(tx)
			return
		}
		if code == 0 {
			tx.sent = true
			if !tx.conn.closed {
				return // the response ends the operation
			}
			code = fi.ECANCELED // no response comes over a closed connection
		}
	}
	if tx.kind == txRndv && code == 0 {
		tx.sent = true
		switch {
		case tx.conn.closed:
			code = fi.ECANCELED // no read-done comes over a closed connection
		case !tx.done:
			return
		}
	}
	ctx, report, slot := tx.ctx, tx.report, tx.cntr
	cflags := tx.flags
	if tx.kind == txRMA && flags != 0 {
		cflags = flags
	}
	e.putTx(tx)
	e.txReport(ctx, report, cflags, slot, code)
}

// txReport reports the end of a transmit operation: its completion, or
// an error entry when code is not 0, and its counter; mu is held.
func (e *endpoint) txReport(ctx any, report bool, cflags fi.Flags, slot int, code fi.Errno) {
	if code != 0 {
		if e.TxCQ != nil {
			_ = e.TxCQ.CompleteErr(&eq.CQError{Context: ctx, Flags: cflags, Err: code})
		}
		if k := e.Cntr[slot]; k != nil {
			_ = k.AddErr(1)
		}
		return
	}
	if e.TxCQ != nil && report {
		_ = e.TxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: cflags}, fi.AddrUnspec)
	}
	if k := e.Cntr[slot]; k != nil {
		_ = k.Add(1)
	}
}

// arrived takes a packet in bounce buffer rx of n bytes: an eager
// message matches a posted receive or waits as unexpected, a rendezvous
// request likewise, a read-done completes a rendezvous send; rx is posted
// again. A packet that breaks the protocol drops the connection. mu is
// held.
func (e *endpoint) arrived(rx *rxBuf, n int) {
	c := rx.c
	if c.closed {
		return
	}
	var h rxmwire.Header
	if n < rxmwire.HeaderSize || rxmwire.ParseHeader(rx.buf[:n], uint64(n-rxmwire.HeaderSize), &h) != nil ||
		h.ConnID != uint64(c.peer.index) {
		e.dropConn(c, fi.EIO)
		return
	}
	switch h.Type {
	case rxmwire.TypeEager:
		e.arrivedEager(c, &h, rx.buf[rxmwire.HeaderSize:n])
	case rxmwire.TypeRndvReq:
		if !e.arrivedRndv(c, &h, rx.buf[rxmwire.HeaderSize:n]) {
			e.dropConn(c, fi.EIO)
			return
		}
	case rxmwire.TypeSeg:
		if !e.arrivedSeg(c, &h, rx.buf[rxmwire.HeaderSize:n]) {
			e.dropConn(c, fi.EIO)
			return
		}
	case rxmwire.TypeRndvReadDone:
		if !e.readDoneArrived(c, h.MsgID) {
			e.dropConn(c, fi.EIO)
			return
		}
	case rxmwire.TypeAtomic, rxmwire.TypeAtomicResp:
		if !e.takeAtomic(c, &h, rx.buf[rxmwire.HeaderSize:n]) {
			e.dropConn(c, fi.EIO)
			return
		}
	default:
		// Credits and the write rendezvous are not spoken: the peer is
		// configured otherwise.
		e.dropConn(c, fi.EIO)
		return
	}
	e.repost(rx)
}

// repost posts bounce receive rx again; mu is held.
func (e *endpoint) repost(rx *rxBuf) {
	if c := rx.c; !c.closed {
		if err := c.msg.Recv(rx.buf, rx.desc, fi.AddrUnspec, rx); err != nil {
			fi.Logger(e.domain.fabric.Prov()).Debug("rxm: bounce receive refused by the core", "peer", c.peer.addr, "err", err)
			e.dropConn(c, fi.Code(err))
		}
	}
}

// arrivedEager takes an eager message; mu is held.
func (e *endpoint) arrivedEager(c *conn, h *rxmwire.Header, payload []byte) {
	src := e.srcOf(c)
	tagged := h.Op == rxmwire.OpTagged
	if i := e.match(tagged, h.Tag, src); i >= 0 {
		r := e.takeRecv(i, h.Size)
		e.deliver(&r, payload, src, tagged, h.Tag, h.HasCQData(), h.Data)
		return
	}
	buf := e.getBuf()
	e.unexp = append(e.unexp, unexpected{data: append(buf, payload...), src: src, tagged: tagged,
		tag: h.Tag, cqData: h.Data, hasCQ: h.HasCQData()})
}

// getBuf returns an empty pooled buffer for an unexpected eager payload;
// mu is held.
func (e *endpoint) getBuf() []byte {
	if k := len(e.bufs); k > 0 {
		b := e.bufs[k-1]
		e.bufs = e.bufs[:k-1]
		return b
	}
	e.nbufs++
	return make([]byte, 0, e.eager)
}

// putBuf returns an unexpected payload's buffer to the pool; mu is held.
func (e *endpoint) putBuf(b []byte) {
	if cap(b) >= e.eager {
		e.bufs = append(e.bufs, b[:0])
	}
	e.unstarve()
}

// srcOf returns the AV address of connection c's peer, fi.AddrUnspec if
// the AV has none; mu is held.
func (e *endpoint) srcOf(c *conn) fi.Addr {
	if e.av == nil || c.peer == nil {
		return fi.AddrUnspec
	}
	if v := e.av.Version() + 1; c.srcVer == v {
		return c.src
	} else if c.peer.name != nil {
		c.src, c.srcVer = e.av.Find(c.peer.name), v
		return c.src
	}
	if c.peer.name == nil {
		return fi.AddrUnspec
	}
	return e.av.Find(c.peer.name)
}

// match returns the index of the first posted receive a message of the
// kind, tag and source matches, or -1; mu is held.
func (e *endpoint) match(tagged bool, tag uint64, src fi.Addr) int {
	for i := range e.recvs {
		if e.recvs[i].matches(tagged, tag, src) {
			return i
		}
	}
	return -1
}

// matches reports whether receive r takes a message of the kind, tag and
// source (fi_tagged(3): the tags equal but for r's ignore bits; a
// directed receive takes its source's messages only).
func (r *posted) matches(tagged bool, tag uint64, src fi.Addr) bool {
	return r.tagged == tagged && (r.src == fi.AddrUnspec || r.src == src) &&
		(!tagged || (r.tag|r.ignore) == (tag|r.ignore))
}

// deliver copies a message into receive r and completes it; mu is held.
func (e *endpoint) deliver(r *posted, data []byte, src fi.Addr, tagged bool, tag uint64, hasCQ bool, cqData uint64) {
	placed, rest := 0, data
	for _, b := range r.iov[:r.niov] {
		k := copy(b, rest)
		placed, rest = placed+k, rest[k:]
	}
	flags := recvFlags(tagged)
	var d uint64
	if hasCQ {
		flags, d = flags|fi.FlagRemoteCQData, cqData
	}
	if !tagged {
		tag = 0
	}
	e.rxComplete(r.ctx, r.report, flags, placed, uint64(len(data)), d, tag, src, r.multi, r.iov[0])
}

// rxComplete completes a receive of a size-byte message of which placed
// bytes fit: a completion, or an fi.ETRUNC error entry with the length
// lost (OLen) when the receive was too small. A message in
// multi-receive buffer m (nil for others) landed in buf, which the
// completion carries, and may release m (FI_MULTI_RECV). mu is held.
func (e *endpoint) rxComplete(ctx any, report bool, flags fi.Flags, placed int, size, data, tag uint64, src fi.Addr,
	m *multiRecv, buf []byte) {
	released := false
	if m != nil {
		flags, released = m.Done(flags)
		buf = buf[:placed]
	}
	if over := size - uint64(placed); over > 0 {
		e.rxFailed(&eq.CQError{Context: ctx, Flags: flags, Len: placed, Buf: buf, Data: data, Tag: tag,
			OLen: int(min(over, uint64(maxInt))), Err: fi.ETRUNC})
	} else {
		if e.info.Caps&fi.CapSource == 0 {
			src = fi.AddrUnspec
		}
		if e.RxCQ != nil && report {
			_ = e.RxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: flags, Len: placed, Buf: buf, Data: data, Tag: tag}, src)
		}
		if e.Cntr[kit.CntrRecv] != nil {
			_ = e.Cntr[kit.CntrRecv].Add(1)
		}
	}
	if released {
		e.multiReleased(m)
	}
}

// recvFailed reports a receive that ended in error, ce; one in
// multi-receive buffer m (nil for others) may release it. mu is held.
func (e *endpoint) recvFailed(ce *eq.CQError, m *multiRecv) {
	released := false
	if m != nil {
		ce.Flags, released = m.Done(ce.Flags)
	}
	e.rxFailed(ce)
	if released {
		e.multiReleased(m)
	}
}

// maxInt is the largest int.
const maxInt = int(^uint(0) >> 1)

// PostRx posts a receive (fi_recv, fi_trecv and their forms): a message
// waiting unexpected is taken at once (an eager one copied, a rendezvous
// one read from its sender); fi.EAGAIN says rx_attr.size receives are
// posted.
func (e *endpoint) PostRx(op kit.Op) error {
	r := posted{ctx: op.Context, src: op.Addr, tag: op.Tag, ignore: op.Ignore, tagged: op.Kind == kit.OpTRecv}
	n, err := op.CopyIOV(r.iov[:], e.domain.fabric.Prov())
	if err != nil {
		return err
	}
	r.niov = n
	if e.mrLocal {
		for i := range n {
			r.desc[i] = opDesc(&op, i)
		}
	}
	if e.info.Caps&fi.CapDirectedRecv == 0 {
		r.src = fi.AddrUnspec
	}
	e.mu.Lock()
	defer e.unlock()
	switch {
	case e.closed.Load():
		return fi.EBADF
	case !e.enabled:
		return fi.EOPBADSTATE
	}
	r.report = !e.RxSel || op.Flags&fi.FlagCompletion != 0
	if op.Flags&fi.FlagMultiRecv != 0 && !r.tagged {
		return e.postMulti(&r, &op)
	}
	for i := 0; i < len(e.unexp); i++ {
		u := &e.unexp[i]
		if !r.matches(u.tagged, u.tag, u.src) {
			continue
		}
		if e.dropIfGone(u) {
			i = -1 // its connection's entries are gone: look again
			continue
		}
		e.takeUnexp(i, &r)
		return nil
	}
	// rx_attr.size receives of each kind, untagged and tagged, as C's
	// rxm keeps two receive queues.
	if n := e.nrecv[boolIndex(r.tagged)]; n >= e.rxSize {
		return fi.EAGAIN
	}
	e.nrecv[boolIndex(r.tagged)]++
	e.recvs = append(e.recvs, r)
	return nil
}

// dropIfGone drops the connection of unexpected rendezvous request u
// when the core says it has ended, and reports whether it did: its
// entries then leave the unexpected list (dropConn). The core posts the
// end on the connections' event queue, which progress reads only every
// cmInterval (or at once while a connection is being set up), so a
// receive posted in between would otherwise take a request whose data
// can no longer be read, and fail with the connection's error, although
// the peer hung up before the receive was posted. Eager and segmented
// messages are whole or cut already: only rendezvous requests need the
// peer still there. mu is held.
func (e *endpoint) dropIfGone(u *unexpected) bool {
	if !u.rndv || u.conn == nil || u.conn.closed {
		return false
	}
	st, ok := u.conn.ep.(ep.Stater)
	if !ok {
		return false
	}
	switch st.CMState() {
	case ep.CMShutdownLocal, ep.CMShutdownRemote, ep.CMDisconnected, ep.CMFailed, ep.CMClosed:
		e.dropConn(u.conn, lostWith(u.conn))
		return true
	}
	return false
}

// takeUnexp gives receive r unexpected message i: an eager one is
// copied, a rendezvous one read from its sender, a segmented one placed
// as its segments come; mu is held.
func (e *endpoint) takeUnexp(i int, r *posted) {
	m := e.unexp[i]
	e.unexp = append(e.unexp[:i], e.unexp[i+1:]...)
	e.unexp[len(e.unexp):cap(e.unexp)][0] = unexpected{}
	switch {
	case m.dyn != nil:
		e.takeDyn(&m, r)
	case m.rndv:
		e.startRndv(m.conn, r, &m)
	case m.sar != nil:
		e.matchSAR(m.sar, r)
	default:
		e.deliver(r, m.data, m.src, m.tagged, m.tag, m.hasCQ, m.cqData)
		e.putBuf(m.data)
	}
}

// peerCacheMax bounds the AV addresses whose peers connFor remembers.
const peerCacheMax = 1 << 16

// cachedPeer returns the peer of AV address addr that connFor found
// last, nil when it has none or the AV changed since; mu is held.
func (e *endpoint) cachedPeer(addr fi.Addr) *peer {
	if e.av == nil || uint64(addr) >= uint64(len(e.peerCache)) || e.peerCacheVer != e.av.Version() {
		return nil
	}
	return e.peerCache[addr]
}

// cachePeer remembers p as the peer of AV address addr; mu is held.
func (e *endpoint) cachePeer(addr fi.Addr, p *peer) {
	if uint64(addr) >= peerCacheMax {
		return
	}
	if v := e.av.Version(); e.peerCacheVer != v {
		clear(e.peerCache)
		e.peerCacheVer = v
	}
	if int(addr) >= len(e.peerCache) {
		e.peerCache = append(e.peerCache, make([]*peer, int(addr)+1-len(e.peerCache))...)
	}
	e.peerCache[addr] = p
}

// boolIndex is 1 for true, 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unpost removes posted receive i, which a message took or a cancel
// ended; mu is held.
func (e *endpoint) unpost(i int) posted {
	r := e.recvs[i]
	e.recvs = append(e.recvs[:i], e.recvs[i+1:]...)
	e.nrecv[boolIndex(r.tagged)]--
	return r
}

// repostFront posts r again ahead of every other receive, as if no
// message had taken it; mu is held.
func (e *endpoint) repostFront(r *posted) {
	e.recvs = append(e.recvs, posted{})
	copy(e.recvs[1:], e.recvs)
	e.recvs[0] = *r
	e.nrecv[boolIndex(r.tagged)]++
}

// copyOut copies the bytes of op's buffer, or of its iov in order, into
// dst and returns how many fit.
func copyOut(dst []byte, op *kit.Op) int {
	if op.IOV == nil {
		return copy(dst, op.Buf)
	}
	k := 0
	for _, b := range op.IOV {
		k += copy(dst[k:], b)
	}
	return k
}
