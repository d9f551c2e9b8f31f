package rxm

import (
	"net/netip"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/rxmwire"
	"github.com/gofabric/gofabric/kit"
)

// PostTx sends an eager message (fi_send, fi_tsend and their forms,
// through kit.MsgOps and kit.TaggedOps; C's rxm_send_common): over the
// peer's connection, opened by the first send, which returns fi.EAGAIN
// until it is up. Bare errors: fi.EMSGSIZE above the eager limit (no
// rendezvous yet), fi.EINVAL for an inject above inject_size or an
// unknown fi.Addr, fi.EAGAIN when tx_attr.size sends are in flight.
func (e *endpoint) PostTx(op kit.Op) error {
	tagged := false
	switch op.Kind {
	case kit.OpSend:
	case kit.OpTSend:
		tagged = true
	default:
		return fi.ENOSYS
	}
	if len(op.IOV) > iovLimit {
		return fi.EINVAL
	}
	size := op.Len()
	inject := op.Inject || op.Flags&fi.FlagInject != 0
	switch {
	case inject && (size > e.info.TxAttr.InjectSize || size > maxInject):
		return fi.EINVAL
	case size > rxmwire.EagerLimit:
		return fi.EMSGSIZE
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed.Load():
		return fi.EBADF
	case !e.enabled:
		return fi.EOPBADSTATE
	}
	e.progressLocked()
	c, err := e.connFor(op.Addr)
	if err != nil {
		return err
	}
	if len(e.free) == 0 {
		return fi.EAGAIN
	}
	tx := e.free[len(e.free)-1]
	h := &e.hdr
	*h = rxmwire.Header{Type: rxmwire.TypeEager, ConnID: c.remoteID, Size: uint64(size)}
	if tagged {
		h.Op, h.Tag = rxmwire.OpTagged, op.Tag
	}
	if op.Flags&fi.FlagRemoteCQData != 0 {
		h.Flags, h.Data = rxmwire.FlagCQData, op.Data
	}
	rxmwire.PutHeader(tx.hdr[:], h)
	tx.iov[0] = tx.hdr[:]
	n := 1
	if inject {
		// The caller's buffer is its own again on return: copy it.
		k := copy(tx.inline[:], tx.hdr[:])
		if op.IOV == nil {
			k += copy(tx.inline[k:], op.Buf)
		} else {
			for _, b := range op.IOV {
				k += copy(tx.inline[k:], b)
			}
		}
		tx.iov[0] = tx.inline[:k]
	} else if op.IOV == nil {
		tx.iov[1] = op.Buf
		n = 2
	} else {
		n += copy(tx.iov[1:], op.IOV)
	}
	tx.msg = ep.Message{IOV: tx.iov[:n], Addr: fi.AddrUnspec, Context: tx}
	tx.ctx, tx.flags = op.Context, sendFlags(tagged)
	tx.report = !op.Inject && (!e.TxSel || op.Flags&fi.FlagCompletion != 0)
	if err := c.msg.SendMsg(&tx.msg, 0); err != nil {
		tx.msg, tx.ctx = ep.Message{}, nil
		return err
	}
	e.free = e.free[:len(e.free)-1]
	return nil
}

// connFor returns the connection to send to the AV's addr on, or
// fi.EAGAIN while it is being opened (C's rxm_get_conn); mu is held.
func (e *endpoint) connFor(addr fi.Addr) (*conn, error) {
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
	p := e.peerFor(ap)
	if p.send != nil {
		return p.send, nil
	}
	if p.out != nil {
		return nil, fi.EAGAIN
	}
	now := time.Now()
	if now.Before(p.retryAt) {
		return nil, fi.EAGAIN
	}
	c, err := e.newConn(e.msgInfo, p)
	if err != nil {
		return nil, err
	}
	rec := rxmwire.ConnectRecord{Port: e.self.Port(), FlowCtrl: rxmwire.FlowCtrlOff, EagerLimit: rxmwire.EagerLimit,
		RxSize: rxmwire.RxSize, ConnID: rxmwire.MakeConnID(e.pid, p.index)}
	if err := c.cm.Connect(name, rxmwire.AppendConnect(nil, &rec)); err != nil {
		e.dropConn(c)
		return nil, err
	}
	p.out = c
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
	x, err := ep.Open(e.domain.core, info)
	if err != nil {
		return nil, err
	}
	c := &conn{ep: x, peer: p}
	c.msg, _ = x.(ep.Msg)
	c.cm, _ = x.(ep.CM)
	if c.msg == nil || c.cm == nil {
		_ = x.Close()
		return nil, fi.ENOSYS
	}
	if err := x.Bind(e.msgEQ, 0); err != nil {
		_ = x.Close()
		return nil, err
	}
	if err := x.Bind(e.msgCQ, fi.FlagSend|fi.FlagRecv); err != nil {
		_ = x.Close()
		return nil, err
	}
	if err := x.Enable(); err != nil {
		_ = x.Close()
		return nil, err
	}
	e.conns[x] = c
	for i := range c.rx {
		c.rx[i].c = c
		if err := c.msg.Recv(c.rx[i].buf[:], nil, fi.AddrUnspec, &c.rx[i]); err != nil {
			e.dropConn(c)
			return nil, err
		}
	}
	return c, nil
}

// dropConn forgets connection c and closes it; mu is held.
func (e *endpoint) dropConn(c *conn) {
	if c.closed {
		return
	}
	c.closed = true
	delete(e.conns, c.ep)
	if p := c.peer; p != nil {
		if p.send == c {
			p.send = nil
		}
		if p.out == c {
			p.out = nil
		}
	}
	_ = c.ep.Close()
}

// progress reads the core event queue and completion queue (C's
// rxm_ep_do_progress).
func (e *endpoint) progress() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.progressLocked()
}

// progressLocked is progress with mu held.
func (e *endpoint) progressLocked() {
	if !e.enabled {
		return
	}
	e.cmProgress()
	for {
		n, err := e.msgCQ.Read(e.entries[:])
		for i := range e.entries[:n] {
			e.completed(&e.entries[i])
			e.entries[i] = eq.Completion{}
		}
		if err == fi.EAVAIL {
			if ce, err := e.msgCQ.ReadErr(); err == nil && ce != nil {
				e.failed(ce)
			}
			continue
		}
		if n < len(e.entries) {
			return
		}
	}
}

// completed takes one core completion; mu is held.
func (e *endpoint) completed(c *eq.Completion) {
	switch x := c.Context.(type) {
	case *txBuf:
		e.txDone(x, nil)
	case *rxBuf:
		e.arrived(x, c.Len)
	}
}

// failed takes one core error completion; mu is held.
func (e *endpoint) failed(ce *eq.CQError) {
	switch x := ce.Context.(type) {
	case *txBuf:
		e.txDone(x, ce)
	case *rxBuf:
		// A flushed bounce receive of a closed connection, or a broken
		// one: drop the connection.
		if !x.c.closed {
			e.dropConn(x.c)
		}
	}
}

// txDone completes an eager send and frees its buffer; mu is held.
func (e *endpoint) txDone(tx *txBuf, ce *eq.CQError) {
	ctx, flags, report := tx.ctx, tx.flags, tx.report
	tx.msg, tx.ctx, tx.iov = ep.Message{}, nil, [1 + iovLimit][]byte{}
	e.free = append(e.free, tx)
	if ce != nil {
		if e.TxCQ != nil && report {
			_ = e.TxCQ.CompleteErr(&eq.CQError{Context: ctx, Flags: flags, Err: ce.Err})
		}
		if e.Cntr[kit.CntrSend] != nil {
			_ = e.Cntr[kit.CntrSend].AddErr(1)
		}
		return
	}
	if e.TxCQ != nil && report {
		_ = e.TxCQ.CompleteOverflow(eq.Completion{Context: ctx, Flags: flags}, fi.AddrUnspec)
	}
	if e.Cntr[kit.CntrSend] != nil {
		_ = e.Cntr[kit.CntrSend].Add(1)
	}
}

// arrived takes a message in bounce buffer rx of n bytes: it matches a
// posted receive or waits as unexpected, and rx is posted again; mu is
// held.
func (e *endpoint) arrived(rx *rxBuf, n int) {
	c := rx.c
	if c.closed {
		return
	}
	var h rxmwire.Header
	if n < rxmwire.HeaderSize || rxmwire.ParseHeader(rx.buf[:n], uint64(n-rxmwire.HeaderSize), &h) != nil || h.Type != rxmwire.TypeEager {
		e.dropConn(c) // a protocol violation, or what this step does not take
		return
	}
	payload := rx.buf[rxmwire.HeaderSize:n]
	src := e.srcOf(c)
	tagged := h.Op == rxmwire.OpTagged
	if i := e.match(tagged, h.Tag, src); i >= 0 {
		r := e.recvs[i]
		e.recvs = append(e.recvs[:i], e.recvs[i+1:]...)
		e.deliver(&r, payload, src, tagged, h.Tag, h.HasCQData(), h.Data)
	} else {
		e.unexp = append(e.unexp, unexpected{data: append([]byte(nil), payload...), src: src, tagged: tagged,
			tag: h.Tag, cqData: h.Data, hasCQ: h.HasCQData()})
	}
	if err := c.msg.Recv(rx.buf[:], nil, fi.AddrUnspec, rx); err != nil {
		e.dropConn(c)
	}
}

// srcOf returns the AV address of connection c's peer, fi.AddrUnspec if
// the AV has none; mu is held.
func (e *endpoint) srcOf(c *conn) fi.Addr {
	if e.av == nil || c.peer == nil {
		return fi.AddrUnspec
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
	if len(rest) > 0 {
		e.rxFailed(&eq.CQError{Context: r.ctx, Flags: flags, Len: placed, Data: d, Tag: tag, OLen: len(rest), Err: fi.ETRUNC})
		return
	}
	if e.info.Caps&fi.CapSource == 0 {
		src = fi.AddrUnspec
	}
	if e.RxCQ != nil && r.report {
		_ = e.RxCQ.CompleteOverflow(eq.Completion{Context: r.ctx, Flags: flags, Len: placed, Data: d, Tag: tag}, src)
	}
	if e.Cntr[kit.CntrRecv] != nil {
		_ = e.Cntr[kit.CntrRecv].Add(1)
	}
}

// PostRx posts a receive (fi_recv, fi_trecv and their forms): a message
// waiting unexpected is taken at once; fi.EAGAIN says rx_attr.size
// receives are posted.
func (e *endpoint) PostRx(op kit.Op) error {
	r := posted{ctx: op.Context, src: op.Addr, tag: op.Tag, ignore: op.Ignore, tagged: op.Kind == kit.OpTRecv}
	n, err := op.CopyIOV(r.iov[:], e.domain.fabric.Prov())
	if err != nil {
		return err
	}
	r.niov = n
	if e.info.Caps&fi.CapDirectedRecv == 0 {
		r.src = fi.AddrUnspec
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed.Load():
		return fi.EBADF
	case !e.enabled:
		return fi.EOPBADSTATE
	}
	r.report = !e.RxSel || op.Flags&fi.FlagCompletion != 0
	e.progressLocked()
	for i := range e.unexp {
		u := &e.unexp[i]
		if !r.matches(u.tagged, u.tag, u.src) {
			continue
		}
		m := *u
		e.unexp = append(e.unexp[:i], e.unexp[i+1:]...)
		e.deliver(&r, m.data, m.src, m.tagged, m.tag, m.hasCQ, m.cqData)
		return nil
	}
	if len(e.recvs) >= e.rxSize {
		return fi.EAGAIN
	}
	e.recvs = append(e.recvs, r)
	return nil
}
