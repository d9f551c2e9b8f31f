//go:build verbs && cgo

package verbs

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// udEndpoint is a datagram endpoint (struct fid_ep; FI_EP_DGRAM,
// fi_endpoint(3), fi_msg(3); vrb_ep of a -dgram domain): a UD queue pair
// on the domain's protection domain (ibv_create_qp, moved to RTS by
// Enable, with C's qkey), completing into a verbs CQ of its own whose
// completion channel a goroutine waits on in the netpoller, as the MSG
// endpoints do. Its name is C's FI_ADDR_IB_UD name of the queue pair
// (udName); peers are addressed through an address vector of such names,
// each with an address handle (udav.go). Datagrams are at most the
// port's MTU (max_msg_size). It joins multicast groups (mcast.go). Safe
// for concurrent use.
type udEndpoint struct {
	domain *domain
	ud     *udDomain
	info   *fi.Info
	bind   kit.Bindings
	// MsgOps gives the endpoint fi_msg(3) over PostTx and PostRx.
	kit.MsgOps
	kit.Completions[epSet]

	// prefix is FI_MSG_PREFIX: each receive buffer starts with the 40
	// bytes where the device puts the Global Route Header. Without it
	// the provider gives the header room of its own.
	prefix bool
	maxMsg int

	// stateMu orders Enable, Join and Close.
	stateMu sync.Mutex
	enabled atomic.Bool
	closed  atomic.Bool
	av      *kit.AV
	name    [udNameLen]byte

	// mu guards the data path.
	mu sync.Mutex
	dp udPath

	mc mcState

	stop   context.CancelFunc
	kick   chan struct{}
	autoWG sync.WaitGroup
}

var (
	_ ep.Endpoint = (*udEndpoint)(nil)
	_ ep.Namer    = (*udEndpoint)(nil)
	_ ep.Msg      = (*udEndpoint)(nil)
	_ ep.Joiner   = (*udEndpoint)(nil)
)

// udTx is a posted send.
type udTx struct {
	ctx    any
	flags  fi.Flags
	report bool
}

// udRx is a posted receive: cap is the payload it takes (without the
// prefix), grh where its Global Route Header lands.
type udRx struct {
	ctx    any
	report bool
	cap    int
	grh    []byte
}

// udPath is a datagram endpoint's verbs objects; guarded by its mu.
type udPath struct {
	vcq  *cq
	qp   qpC
	caps udCaps
	// txIOV and rxIOV are the application's iov limits; a receive posts
	// up to rxIOV+2 SGEs (the header room and the overflow).
	txIOV, rxIOV int
	tx           *slotTable[udTx]
	rx           *slotTable[udRx]
	ssge, rsge   []sgeC
	// scratch holds a 40-byte header slot per receive slot (used without
	// FI_MSG_PREFIX), then the overflow area: every receive ends with an
	// SGE into it, so that a datagram longer than the receive buffer
	// is taken whole by the device and reported as fi.ETRUNC, instead of
	// failing the queue pair (rxe moves a UD queue pair whose receive is
	// too short to the error state).
	scratch  *mr
	overflow int // offset of the overflow area in scratch
	wcs      [pollBatch]completion
}

// openUD opens a datagram endpoint for info (fi_endpoint; vrb_open_ep
// with FI_EP_DGRAM); Enable creates its queue pair.
func (d *domain) openUD(info *fi.Info) (ep.Endpoint, error) {
	if err := d.Acquire(kit.KindEndpoint, "open endpoint"); err != nil {
		return nil, err
	}
	e := &udEndpoint{domain: d, ud: d.udState(), info: kit.EndpointInfo(info, fi.EPTypeDgram, udAllCaps), kick: make(chan struct{}, 1)}
	ops := kit.NewOps(e, "verbs", e.info)
	ops.RxFlags &= fi.FlagCompletion | fi.FlagMore
	e.MsgOps = kit.MsgOps{Ops: ops}
	e.prefix = e.info.Mode&fi.ModeMsgPrefix != 0 || e.info.RxAttr != nil && e.info.RxAttr.Mode&fi.ModeMsgPrefix != 0
	e.maxMsg = 1024
	if e.info.EPAttr != nil && e.info.EPAttr.MaxMsgSize > 0 {
		e.maxMsg = e.info.EPAttr.MaxMsgSize
	}
	e.bind.Init(e.info)
	return e, nil
}

// Info returns the Info the endpoint was opened with.
func (e *udEndpoint) Info() *fi.Info { return e.info }

// Bind binds an address vector, event queue (for multicast joins),
// completion queue or counter of this provider (fi_ep_bind); the rules
// are kit.Bindings'.
func (e *udEndpoint) Bind(obj fi.Fid, flags fi.Flags) error {
	return kit.BindOwn[epSet](&e.bind, "verbs", e.closed.Load(), obj, flags)
}

// udSizes are the queue pair's wanted capacities from the Info.
func (e *udEndpoint) udSizes() udCaps {
	c := udCaps{sendWR: defTxSize, recvWR: defRxSize, sendSGE: defTxIOVLimit, recvSGE: defRxIOVLimit}
	if a := e.info.TxAttr; a != nil {
		if a.Size > 0 {
			c.sendWR = a.Size
		}
		if a.IOVLimit > 0 {
			c.sendSGE = a.IOVLimit
		}
		c.inline = min(a.InjectSize, e.maxMsg)
	}
	if a := e.info.RxAttr; a != nil {
		if a.Size > 0 {
			c.recvWR = a.Size
		}
		if a.IOVLimit > 0 {
			c.recvSGE = a.IOVLimit
		}
	}
	return c
}

// Enable checks the bindings (an address vector, and a CQ or counter for
// each direction), creates the verbs CQ and the UD queue pair in RTS
// (ibv_create_cq, ibv_create_qp, ibv_modify_qp), reads the endpoint's
// name from port 1 (ibv_query_gid, ibv_query_pkey, ibv_query_port) and
// starts the goroutine that waits for completions (fi_enable;
// vrb_ep_enable, vrb_create_dgram_ep).
func (e *udEndpoint) Enable() error {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if err := e.bind.CheckEnableOpen("verbs", e.closed.Load()); err != nil {
		return err
	}
	if e.enabled.Load() {
		return nil
	}
	av, ok := e.bind.AV.(*kit.DomainAV[epSet])
	if !ok {
		return errors.Wrap(fi.ENOAV, "verbs: enable: no address vector of this provider bound")
	}
	e.mu.Lock()
	err := e.dp.open(e)
	e.mu.Unlock()
	if err != nil {
		return err
	}
	e.av = av.AV
	e.Resolve(&e.bind)
	for _, s := range e.Sets {
		s.Add(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	e.autoWG.Add(1)
	go e.auto(ctx)
	e.enabled.Store(true)
	return nil
}

// open creates the CQ, the queue pair, the scratch region and the slot
// tables, and fills the endpoint's name.
func (d *udPath) open(e *udEndpoint) error {
	want := e.udSizes()
	c, err := newCQOn(e.domain.dev, want.sendWR+want.recvWR)
	if err != nil {
		return errors.Wrap(err, "verbs: enable")
	}
	ask := want
	ask.recvSGE = want.recvSGE + 2
	qp, caps, err := createUDQP(e.domain.pd, c.cq, ask, udQKey)
	if err != nil {
		_ = c.close()
		return errors.Wrap(err, "verbs: enable")
	}
	var n udName
	if err := udPortName(e.domain.dev, e.ud.gidIdx, &n); err != nil {
		_ = destroyUDQP(qp)
		_ = c.close()
		return errors.Wrap(err, "verbs: enable: the endpoint's name")
	}
	n.qpn = qpNum(qp)
	e.name = n.bytes()
	d.overflow = udPrefixSize * caps.recvWR
	scratch, err := registerMR(e.domain.pd, d.overflow+e.maxMsg, accessLocalWrite)
	if err != nil {
		_ = destroyUDQP(qp)
		_ = c.close()
		return errors.Wrap(err, "verbs: enable: scratch region")
	}
	d.vcq, d.qp, d.caps, d.scratch = c, qp, caps, scratch
	d.txIOV = min(caps.sendSGE, want.sendSGE)
	d.rxIOV = min(caps.recvSGE-2, want.recvSGE)
	d.tx = newSlotTable[udTx](caps.sendWR)
	d.rx = newSlotTable[udRx](caps.recvWR)
	d.ssge = newSGEs(max(caps.sendSGE, 1))
	d.rsge = newSGEs(caps.recvSGE)
	return nil
}

// Cancel (fi_cancel): verbs cannot take back posted work; it returns
// fi.ENOENT.
func (e *udEndpoint) Cancel(ctx any) error { return fi.ENOENT }

// SetName is not supported (fi.ENOSYS): a UD endpoint's name is its queue
// pair's (GID, QPN), which no address chooses. C's
// vrb_dgram_ep_setname copies the bytes into the name fi_getname returns,
// so that peers then send to an address that is not the endpoint's.
func (e *udEndpoint) SetName(addr []byte) error {
	return errors.Wrap(fi.ENOSYS, "verbs: setname on a datagram endpoint: its name is its queue pair's GID and number, which Enable assigns")
}

// Name copies the endpoint's FI_ADDR_IB_UD name (32 bytes: GID, QPN,
// LID, P_Key, service 0, SL) into buf (fi_getname;
// vrb_dgram_ep_getname), with the ETOOSMALL rule of ep.Namer: from Enable
// on, fi.EADDRNOTAVAIL before.
func (e *udEndpoint) Name(buf []byte) (int, error) {
	if !e.enabled.Load() {
		return 0, errors.Wrap(fi.EADDRNOTAVAIL, "verbs: getname: a datagram endpoint has its name from Enable on (its queue pair's)")
	}
	return kit.CopyName(buf, e.name[:])
}

// auto is the endpoint's waiting goroutine: as the MSG endpoints'
// (data.go), it arms the CQ and parks on its completion channel only
// while a blocking read waits.
func (e *udEndpoint) auto(ctx context.Context) {
	defer e.autoWG.Done()
	c := e.dp.vcq
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		}
		e.progress()
		if err := reqNotifyCQ(c.cq); err != nil {
			return
		}
		e.progress()
		if err := c.nextEvent(ctx); err != nil {
			return
		}
		e.progress()
	}
}

// wake makes auto wait for the endpoint's next completion.
func (e *udEndpoint) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// progress moves the verbs CQ's completions into the bound queues and
// counters (ibv_poll_cq).
func (e *udEndpoint) progress() {
	e.mu.Lock()
	e.pollLocked()
	e.mu.Unlock()
}

func (e *udEndpoint) pollLocked() {
	d := &e.dp
	if d.vcq == nil {
		return
	}
	for {
		n, err := d.vcq.poll(d.wcs[:])
		if n <= 0 || err != nil {
			return
		}
		for i := range d.wcs[:n] {
			w := &d.wcs[i]
			if w.wrID&rxBit != 0 {
				if op, ok := d.rx.take(w.wrID &^ rxBit); ok {
					e.rxDone(op, w, w.status)
				}
			} else if op, ok := d.tx.take(w.wrID); ok {
				e.txDone(op, w.status)
			}
		}
	}
}

func (e *udEndpoint) count(k int, ok bool) {
	if c := e.Cntr[k]; c != nil {
		if ok {
			_ = c.Add(1)
		} else {
			_ = c.AddErr(1)
		}
	}
}

// txDone reports a send.
func (e *udEndpoint) txDone(op udTx, st wcStatus) {
	if st != wcSuccess {
		e.count(kit.CntrSend, false)
		if e.TxCQ != nil {
			_ = e.TxCQ.CompleteErr(&eq.CQError{Context: op.ctx, Flags: op.flags, Err: wcErrno(st), ProvErrno: int(st)})
		}
		return
	}
	e.count(kit.CntrSend, true)
	if op.report && e.TxCQ != nil {
		_ = e.TxCQ.CompleteOverflow(eq.Completion{Context: op.ctx, Flags: op.flags}, fi.AddrUnspec)
	}
}

// rxDone reports a receive (w nil: never completed). A datagram longer
// than the buffer completes with fi.ETRUNC: Len what was placed, OLen
// the rest. Len counts the 40-byte prefix under FI_MSG_PREFIX, as C's
// does (wc.byte_len). A datagram sent to a multicast group carries
// fi.FlagMulticast.
func (e *udEndpoint) rxDone(op udRx, w *completion, st wcStatus) {
	flags := fi.FlagRecv | fi.FlagMsg
	if st != wcSuccess || w.byteLen < udPrefixSize {
		e.count(kit.CntrRecv, false)
		if e.RxCQ != nil {
			err := wcErrno(st)
			if st == wcSuccess {
				err = fi.EIO
			}
			_ = e.RxCQ.CompleteErr(&eq.CQError{Context: op.ctx, Flags: flags, Err: err, ProvErrno: int(st)})
		}
		return
	}
	payload := int(w.byteLen) - udPrefixSize
	if grhMulticast(op.grh) {
		flags |= fi.FlagMulticast
	}
	pre := 0
	if e.prefix {
		pre = udPrefixSize
	}
	if payload > op.cap {
		e.count(kit.CntrRecv, false)
		if e.RxCQ != nil {
			_ = e.RxCQ.CompleteErr(&eq.CQError{Context: op.ctx, Flags: flags, Len: pre + op.cap, OLen: payload - op.cap, Err: fi.ETRUNC})
		}
		return
	}
	c := eq.Completion{Context: op.ctx, Flags: flags, Len: pre + payload}
	if w.hasImm {
		c.Flags |= fi.FlagRemoteCQData
		c.Data = uint64(w.immData)
	}
	e.count(kit.CntrRecv, true)
	if op.report && e.RxCQ != nil {
		_ = e.RxCQ.CompleteOverflow(c, fi.AddrUnspec)
	}
}

// grhMulticast reports whether a received Global Route Header names a
// multicast destination: on RoCE v2 with IPv4 the last 20 bytes are the
// IPv4 header (destination 224.0.0.0/4), otherwise the destination GID
// (bytes 24-39) is a multicast GID (ff00::/8).
func grhMulticast(h []byte) bool {
	if len(h) < udPrefixSize {
		return false
	}
	if h[20]>>4 == 4 { // IPv4 header, version 4
		return h[36]&0xf0 == 0xe0
	}
	return h[24] == 0xff
}

// udTxFlags are the flags a send may carry.
const udTxFlags = fi.FlagCompletion | fi.FlagInject | fi.FlagInjectComplete | fi.FlagTransmitComplete |
	fi.FlagDeliveryComplete | fi.FlagRemoteCQData | fi.FlagMulticast | fi.FlagMore

// ready reports why the endpoint cannot transfer data, nil when it can.
func (e *udEndpoint) ready() error {
	switch {
	case e.closed.Load():
		return fi.EBADF
	case !e.enabled.Load():
		return fi.EOPBADSTATE
	}
	return nil
}

// PostTx sends an operation of the adapter (kit.Poster): fi_send,
// fi_sendv, fi_sendmsg, fi_senddata (IBV_WR_SEND_WITH_IMM), fi_inject and
// fi_injectdata, as one UD send (ibv_post_send) to an address of the
// bound AV, or with fi.FlagMulticast to a joined group's Addr. A datagram
// above max_msg_size gives fi.EMSGSIZE, an inject above inject_size
// likewise; sends within inject_size go inline (IBV_SEND_INLINE: the
// buffer is the caller's again at once), the others need the desc of a
// registered region (FI_MR_LOCAL). A send full queue gives bare
// fi.EAGAIN; no allocation.
func (e *udEndpoint) PostTx(op kit.Op) error {
	if op.Kind != kit.OpSend {
		return fi.ENOSYS
	}
	if err := e.ready(); err != nil {
		return err
	}
	flags := op.Flags
	if flags&^udTxFlags != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: send flags %v", flags&^udTxFlags)
	}
	n, total := 1, len(op.Buf)
	if op.Vector() {
		n, total = len(op.IOV), kit.IOVLen(op.IOV)
	}
	if total > e.maxMsg {
		return fi.EMSGSIZE
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Where the datagram goes: an AV address, or a group (whose handle
	// is freed under mu when it is left).
	var ah ahC
	var qpn, qkey uint32
	if flags&fi.FlagMulticast != 0 {
		g := e.mc.lookup(op.Addr)
		if g == nil || !g.send {
			return errors.Wrapf(fi.EINVAL, "verbs: send: fi_addr %d is no group joined with FI_SEND", uint64(op.Addr))
		}
		var ok bool
		if ah, qpn, qkey, ok = g.target(); !ok {
			if g.failed.Load() {
				return errors.Wrapf(fi.EINVAL, "verbs: send: the join of group %v failed", g.ap.Addr())
			}
			return fi.EAGAIN // the join has not completed yet
		}
	} else {
		name, ok := e.av.Addr(op.Addr)
		if !ok {
			return errors.Wrapf(fi.EINVAL, "verbs: send: fi_addr %d is not in the address vector", uint64(op.Addr))
		}
		if ah = e.ud.ah(name); ah == nil {
			return errors.Wrapf(fi.EINVAL, "verbs: send: fi_addr %d has no address handle", uint64(op.Addr))
		}
		qpn, qkey = nameQPN(name), udQKey
	}
	inject := op.Inject || flags&fi.FlagInject != 0
	d := &e.dp
	if d.qp == nil {
		return fi.EBADF
	}
	if n > d.txIOV {
		return errors.Wrapf(fi.EINVAL, "verbs: send: %d iovecs, the limit is %d", n, d.txIOV)
	}
	inline := total <= d.caps.inline
	if inject && !inline {
		return errors.Wrapf(fi.EMSGSIZE, "verbs: inject of %d bytes, the inject size is %d", total, d.caps.inline)
	}
	k := 0
	for i := range n {
		b, desc := op.Buf, op.Desc
		if op.Vector() {
			b, desc = op.IOV[i], nil
			if i < len(op.Descs) {
				desc = op.Descs[i]
			}
		}
		if len(b) == 0 {
			continue
		}
		addr, lkey := bufAddr(b), uint32(0)
		if !inline {
			r, _ := desc.(*memRegion)
			var ok bool
			if lkey, ok = r.lkeyFor(addr, len(b)); !ok {
				return errors.Wrap(fi.EINVAL, "verbs: send: buffer without the desc of a region that holds it (FI_MR_LOCAL)")
			}
		}
		setSGE(&d.ssge[k], addr, uint32(len(b)), lkey)
		k++
	}
	report := !op.Inject && (!e.TxSel || flags&fi.FlagCompletion != 0)
	wrID, err := d.tx.put(udTx{ctx: op.Context, flags: fi.FlagSend | fi.FlagMsg | flags&fi.FlagMulticast, report: report})
	if err != nil {
		return fi.EAGAIN
	}
	fl := 0
	if inline {
		fl = sendInline
	}
	withImm := flags&fi.FlagRemoteCQData != 0
	if errno := postUDSend(d.qp, wrID, d.ssge[:k], fl, withImm, uint32(op.Data), ah, qpn, qkey); errno != 0 {
		d.tx.take(wrID)
		return postErr("ibv_post_send", errno)
	}
	return nil
}

// nameQPN is the queue pair number of an FI_ADDR_IB_UD name.
func nameQPN(name []byte) uint32 {
	n, _ := parseUDName(name)
	return n.qpn
}

// PostRx posts a receive of the adapter (kit.Poster): fi_recv, fi_recvv
// and fi_recvmsg (ibv_post_recv; the source address is not matched:
// FI_DIRECTED_RECV is not offered). Under FI_MSG_PREFIX the buffers start
// with the 40-byte prefix (fi.EINVAL when they are shorter); without it
// the provider adds an SGE for the header in front. Every receive ends
// with an SGE into the provider's overflow area (see udPath). The
// buffers need the desc of a registered region (FI_MR_LOCAL). A full
// receive queue gives bare fi.EAGAIN; no allocation.
func (e *udEndpoint) PostRx(op kit.Op) error {
	if op.Kind != kit.OpRecv {
		return fi.ENOSYS
	}
	if err := e.ready(); err != nil {
		return err
	}
	if op.Flags&^(fi.FlagCompletion|fi.FlagMore) != 0 {
		return errors.Wrapf(fi.EBADFLAGS, "verbs: recv flags %v", op.Flags&^(fi.FlagCompletion|fi.FlagMore))
	}
	n, total := 1, len(op.Buf)
	if op.Vector() {
		n, total = len(op.IOV), kit.IOVLen(op.IOV)
	}
	capacity := total
	if e.prefix {
		if total < udPrefixSize {
			return errors.Wrapf(fi.EINVAL, "verbs: recv: %d bytes, less than the %d-byte prefix (FI_MSG_PREFIX)", total, udPrefixSize)
		}
		capacity -= udPrefixSize
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d := &e.dp
	if d.qp == nil {
		return fi.EBADF
	}
	if n > d.rxIOV {
		return errors.Wrapf(fi.EINVAL, "verbs: recv: %d iovecs, the limit is %d", n, d.rxIOV)
	}
	report := !e.RxSel || op.Flags&fi.FlagCompletion != 0
	wrID, err := d.rx.put(udRx{ctx: op.Context, report: report, cap: capacity})
	if err != nil {
		return fi.EAGAIN
	}
	slot := int(uint32(wrID))
	k := 0
	var grh []byte
	if !e.prefix {
		off := slot * udPrefixSize
		grh = d.scratch.bytes()[off : off+udPrefixSize]
		setSGE(&d.rsge[k], d.scratch.addr(off), udPrefixSize, d.scratch.lkey)
		k++
	}
	for i := range n {
		b, desc := op.Buf, op.Desc
		if op.Vector() {
			b, desc = op.IOV[i], nil
			if i < len(op.Descs) {
				desc = op.Descs[i]
			}
		}
		if len(b) == 0 {
			continue
		}
		if grh == nil && len(b) >= udPrefixSize {
			grh = b[:udPrefixSize]
		}
		addr := bufAddr(b)
		r, _ := desc.(*memRegion)
		lkey, ok := r.lkeyFor(addr, len(b))
		if !ok {
			d.rx.take(wrID)
			return errors.Wrap(fi.EINVAL, "verbs: recv: buffer without the desc of a region that holds it (FI_MR_LOCAL)")
		}
		setSGE(&d.rsge[k], addr, uint32(len(b)), lkey)
		k++
	}
	setSGE(&d.rsge[k], d.scratch.addr(d.overflow), uint32(e.maxMsg), d.scratch.lkey)
	k++
	d.rx.slots[slot].v.grh = grh
	if errno := postRecvSGL(d.qp, wrID|rxBit, d.rsge[:k]); errno != 0 {
		d.rx.take(wrID)
		return postErr("ibv_post_recv", errno)
	}
	return nil
}

// Close closes the endpoint (fi_close; ibv_destroy_qp, ibv_destroy_cq):
// it leaves every multicast group it joined (mcast.go), receives still
// posted complete with fi.ECANCELED error entries, and it lets go of its
// AV, queues, counters and domain. A second Close returns fi.EBADF. On
// Soft-RoCE, ibv_destroy_qp of a queue pair that sent to a multicast
// group waits until the kernel has freed the last packet it gave the
// network interface (rxe holds the queue pair for it): in the qemu VM of
// the tests that is about 50 s.
func (e *udEndpoint) Close() error {
	e.stateMu.Lock()
	if e.closed.Swap(true) {
		e.stateMu.Unlock()
		return errors.Wrap(fi.EBADF, "verbs: close endpoint: already closed")
	}
	e.stateMu.Unlock()
	e.mc.closeAll(e)
	if e.stop != nil {
		e.stop()
	}
	e.autoWG.Wait()
	e.mu.Lock()
	d := &e.dp
	if d.qp != nil {
		_ = destroyUDQP(d.qp)
		d.qp = nil
	}
	if d.vcq != nil {
		e.pollLocked()
		d.tx.drain(func(op udTx) { e.txDone(op, wcWRFlushErr) })
		d.rx.drain(func(op udRx) { e.rxDone(op, nil, wcWRFlushErr) })
		freeSGEs(d.ssge)
		freeSGEs(d.rsge)
		d.ssge, d.rsge = nil, nil
		_ = d.vcq.close()
		d.vcq = nil
		_ = d.scratch.close()
	}
	e.mu.Unlock()
	for _, s := range e.Sets {
		s.Remove(e)
	}
	e.bind.Release()
	e.domain.Release(kit.KindEndpoint)
	return nil
}
