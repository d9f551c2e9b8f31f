package pingpong

import (
	"context"
	"os"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// finMsg is the message each side sends after the last size.
var finMsg = []byte("fin\x00")

// opContext is the context of a posted operation; the transport passes
// pointers to its own, which costs no allocation.
type opContext struct{ name string }

// fabricTransport is the Transport over gofabric's providers: fi.GetInfo
// with fi_pingpong's hints, then the endpoint type's objects, and data
// transfers through ep.Msg or ep.Tagged with completions reaped by busy
// polling the CQs (fi_cq_read in a loop, as the C tool does; with manual
// progress this also drives the provider).
type fabricTransport struct {
	o   *Options
	dbg func(string, ...any)

	info   *fi.Info
	fabric fi.Fabric
	eq     eq.EventQueue
	pep    ep.PassiveEndpoint
	domain fi.Domain
	txcq   eq.CompletionQueue
	rxcq   eq.CompletionQueue
	av     fi.AV
	ep     ep.Endpoint
	msg    ep.Msg
	tagged ep.Tagged
	cm     ep.CM
	mrs    []fi.MR

	tx, rx         []byte // the payloads: txAll and rxAll after their prefixes
	txAll, rxAll   []byte // the buffers posted, prefix space first
	txPre, rxPre   int    // FI_MSG_PREFIX space of sends and receives
	txDesc, rxDesc any
	peer           fi.Addr
	injectSize     int
	maxMsg         int

	comp         [1]eq.Completion
	txCtx, rxCtx opContext
	fin          ep.Message
	tfin         ep.TaggedMessage
}

// NewFabricTransport returns the Transport over the registered gofabric
// providers (fi.GetInfo), the real one Main uses.
func NewFabricTransport() Transport {
	return &fabricTransport{txCtx: opContext{"tx"}, rxCtx: opContext{"rx"}, peer: fi.AddrUnspec}
}

// hints are fi_pingpong's fi_getinfo hints.
func (t *fabricTransport) hints() *fi.Info {
	h := (*fi.Info)(nil).Clone()
	h.Caps = fi.CapMsg
	if t.o.Tagged {
		h.Caps = fi.CapTagged
	}
	h.Mode = fi.ModeContext | fi.ModeContext2 | fi.ModeMsgPrefix
	h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeAllocated | fi.MRModeProvKey | fi.MRModeVirtAddr
	h.EPAttr.Type = t.o.EPType
	h.FabricAttr.ProvName = t.o.Provider
	h.DomainAttr.Name = t.o.Domain
	if t.o.EPType == fi.EPTypeDgram && t.o.SizeSet {
		h.EPAttr.MaxMsgSize = t.o.Size
	}
	return h
}

// getInfo calls fi.GetInfo and keeps the first entry.
func (t *fabricTransport) getInfo(ctx context.Context, h *fi.Info) error {
	infos, err := fi.GetInfo(ctx, "", "", 0, h)
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_getinfo")
	}
	t.info = infos[0]
	// FI_MSG_PREFIX (verbs' FI_EP_DGRAM: the receive's Global Route
	// Header): room before the payload of each send and receive, as the C
	// tool leaves it (tx_prefix_size, rx_prefix_size).
	if t.info.EPAttr != nil {
		if t.info.TxAttr != nil && t.info.TxAttr.Mode&fi.ModeMsgPrefix != 0 {
			t.txPre = t.info.EPAttr.MsgPrefixSize
		}
		if t.info.RxAttr != nil && t.info.RxAttr.Mode&fi.ModeMsgPrefix != 0 {
			t.rxPre = t.info.EPAttr.MsgPrefixSize
		}
	}
	if t.info.EPAttr != nil {
		t.maxMsg = t.info.EPAttr.MaxMsgSize
	}
	if t.info.TxAttr != nil {
		t.injectSize = t.info.TxAttr.InjectSize
	}
	t.dbg("using provider %s", t.info.FabricAttr.ProvName)
	return nil
}

// Setup implements Transport.
func (t *fabricTransport) Setup(ctx context.Context, c *Config) error {
	t.o, t.dbg = c.Options, c.Debugf
	switch {
	case t.o.EPType != fi.EPTypeMsg:
		return t.setupConnectionless(ctx, c.Ctrl)
	case t.o.IsClient():
		return t.connect(ctx, c.Ctrl)
	default:
		return t.listenAccept(ctx, c.Ctrl)
	}
}

// listenAccept is the MSG server: passive endpoint, name to the client,
// then accept its connection request.
func (t *fabricTransport) listenAccept(ctx context.Context, c *Ctrl) error {
	if err := t.getInfo(ctx, t.hints()); err != nil {
		return err
	}
	if err := t.openFabric(); err != nil {
		return err
	}
	pep, err := ep.OpenPassive(t.fabric, t.info)
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_passive_ep")
	}
	t.pep = pep
	if err := pep.Bind(t.eq, 0); err != nil {
		return errors.Wrap(err, "pingpong: fi_pep_bind")
	}
	if err := pep.Listen(); err != nil {
		return errors.Wrap(err, "pingpong: fi_listen")
	}
	name, err := getName(pep)
	if err != nil {
		return err
	}
	if err := c.SendName(t.info.AddrFormat, name); err != nil {
		return err
	}
	t.dbg("server: name sent, waiting for a connection request")
	ev, err := waitEvent(ctx, t.eq, eq.EventConnReq)
	if err != nil {
		return err
	}
	t.info = ev.(*eq.ConnReq).Info
	if err := t.openDomain(); err != nil {
		return err
	}
	if err := t.openEndpoint(); err != nil {
		return err
	}
	if err := t.cm.Accept(nil); err != nil {
		if rerr := pep.Reject(t.info.Handle, nil); rerr != nil {
			t.dbg("fi_reject: %v", rerr)
		}
		return errors.Wrap(err, "pingpong: fi_accept")
	}
	if _, err := waitEvent(ctx, t.eq, eq.EventConnected); err != nil {
		return err
	}
	t.dbg("server: connected")
	return nil
}

// connect is the MSG client: the server's name from the control channel,
// then a connection to it with no private data.
func (t *fabricTransport) connect(ctx context.Context, c *Ctrl) error {
	format, name, err := c.RecvName()
	if err != nil {
		return err
	}
	h := t.hints()
	h.AddrFormat, h.DestAddr = format, name
	if err := t.getInfo(ctx, h); err != nil {
		return err
	}
	if err := t.openFabric(); err != nil {
		return err
	}
	if err := t.openDomain(); err != nil {
		return err
	}
	if err := t.openEndpoint(); err != nil {
		return err
	}
	if err := t.cm.Connect(name, nil); err != nil {
		return errors.Wrap(err, "pingpong: fi_connect")
	}
	if _, err := waitEvent(ctx, t.eq, eq.EventConnected); err != nil {
		return err
	}
	t.dbg("client: connected")
	return nil
}

// setupConnectionless is RDM and DGRAM: the server sends its endpoint's
// name first, the client answers with its own, and each inserts the
// other's into its AV (its own name first, on the server, or after the
// peer's, on the client, when the domain has FI_LOCAL_COMM).
func (t *fabricTransport) setupConnectionless(ctx context.Context, c *Ctrl) error {
	h := t.hints()
	var peerName []byte
	if t.o.IsClient() {
		format, name, err := c.RecvName()
		if err != nil {
			return err
		}
		h.AddrFormat, h.DestAddr, peerName = format, name, name
	}
	if err := t.getInfo(ctx, h); err != nil {
		return err
	}
	if err := t.openFabric(); err != nil {
		return err
	}
	if err := t.openDomain(); err != nil {
		return err
	}
	if err := t.openEndpoint(); err != nil {
		return err
	}
	if t.o.EPType == fi.EPTypeDgram {
		if err := t.postRecv(); err != nil {
			return err
		}
	}
	namer, ok := t.ep.(ep.Namer)
	if !ok {
		return errors.Wrapf(fi.ENOSYS, "pingpong: endpoint %T has no address (fi_getname)", t.ep)
	}
	own, err := getName(namer)
	if err != nil {
		return err
	}
	if err := c.SendName(t.info.AddrFormat, own); err != nil {
		return err
	}
	if !t.o.IsClient() {
		if _, peerName, err = c.RecvName(); err != nil {
			return err
		}
	}
	local := t.info.DomainAttr != nil && t.info.DomainAttr.Caps&fi.CapLocalComm != 0
	addrs := [][]byte{peerName}
	peerIdx := 0
	switch {
	case local && t.o.IsClient():
		addrs = append(addrs, own)
	case local:
		addrs, peerIdx = [][]byte{own, peerName}, 1
	}
	fa, err := t.av.Insert(addrs, 0)
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_av_insert")
	}
	t.peer = fa[peerIdx]
	t.fin.Addr, t.tfin.Addr = t.peer, t.peer
	return nil
}

// openFabric opens the fabric and its event queue.
func (t *fabricTransport) openFabric() error {
	f, err := fi.OpenFabric(t.info)
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_fabric")
	}
	t.fabric = f
	q, err := eq.OpenEQ(f, &eq.Attr{WaitObj: fi.WaitUnspec})
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_eq_open")
	}
	t.eq = q
	return nil
}

// openDomain opens the domain, its CQs, the AV for RDM and DGRAM, and the
// data buffers, registered when the domain asks for FI_MR_LOCAL.
func (t *fabricTransport) openDomain() error {
	d, err := t.fabric.OpenDomain(t.info)
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_domain")
	}
	t.domain = d
	attr := &eq.CQAttr{Format: eq.FormatContext, WaitObj: fi.WaitNone}
	if t.txcq, err = eq.OpenCQ(d, attr); err != nil {
		return errors.Wrap(err, "pingpong: fi_cq_open tx")
	}
	if t.rxcq, err = eq.OpenCQ(d, attr); err != nil {
		return errors.Wrap(err, "pingpong: fi_cq_open rx")
	}
	if t.o.EPType != fi.EPTypeMsg {
		avType := fi.AVType(0)
		if t.info.DomainAttr != nil {
			avType = t.info.DomainAttr.AVType
		}
		if t.av, err = fi.OpenAV(d, &fi.AVAttr{Type: avType}); err != nil {
			return errors.Wrap(err, "pingpong: fi_av_open")
		}
	}
	n := RxSize(t.o, t.maxMsg)
	t.txAll, t.rxAll = make([]byte, t.txPre+n), make([]byte, t.rxPre+n)
	t.tx, t.rx = t.txAll[t.txPre:], t.rxAll[t.rxPre:]
	touchPages(t.txAll)
	touchPages(t.rxAll)
	if t.info.DomainAttr != nil && t.info.DomainAttr.MRMode&fi.MRModeLocal != 0 {
		if t.txDesc, err = t.register(t.txAll, fi.AccessSend); err != nil {
			return err
		}
		if t.rxDesc, err = t.register(t.rxAll, fi.AccessRecv); err != nil {
			return err
		}
	}
	return nil
}

func (t *fabricTransport) register(buf []byte, access fi.Access) (any, error) {
	mr, err := fi.RegisterMR(t.domain, &fi.MRAttr{Buf: buf, Access: access}, 0)
	if err != nil {
		return nil, errors.Wrap(err, "pingpong: fi_mr_reg")
	}
	t.mrs = append(t.mrs, mr)
	return mr.Desc(), nil
}

// openEndpoint opens the endpoint, binds its queues, enables it and posts
// the first receive.
func (t *fabricTransport) openEndpoint() error {
	e, err := ep.Open(t.domain, t.info)
	if err != nil {
		return errors.Wrap(err, "pingpong: fi_endpoint")
	}
	t.ep = e
	var ok bool
	if t.o.Tagged {
		t.tagged, ok = e.(ep.Tagged)
	} else {
		t.msg, ok = e.(ep.Msg)
	}
	if !ok {
		return errors.Wrapf(fi.ENOSYS, "pingpong: endpoint %T lacks the operations of %v", e, t.info.Caps&(fi.CapMsg|fi.CapTagged))
	}
	type bind struct {
		obj   fi.Fid
		flags fi.Flags
	}
	binds := []bind{{t.txcq, fi.FlagSend}, {t.rxcq, fi.FlagRecv}}
	if t.o.EPType == fi.EPTypeMsg {
		if t.cm, ok = e.(ep.CM); !ok {
			return errors.Wrapf(fi.ENOSYS, "pingpong: endpoint %T has no connection management", e)
		}
		binds = append(binds, bind{t.eq, 0})
	} else {
		binds = append(binds, bind{t.av, 0})
	}
	for _, b := range binds {
		if err := e.Bind(b.obj, b.flags); err != nil {
			return errors.Wrapf(err, "pingpong: fi_ep_bind %T", b.obj)
		}
	}
	if err := e.Enable(); err != nil {
		return errors.Wrap(err, "pingpong: fi_enable")
	}
	t.fin = ep.Message{IOV: [][]byte{t.txAll[:t.txPre+len(finMsg)]}, Desc: []any{t.txDesc}, Addr: t.peer, Context: &t.txCtx}
	t.tfin = ep.TaggedMessage{IOV: t.fin.IOV, Desc: t.fin.Desc, Addr: t.peer, Tag: Tag, Context: &t.txCtx}
	return t.postRecv()
}

// getName returns an object's fabric address (fi_getname).
func getName(n ep.Namer) ([]byte, error) {
	buf := make([]byte, MaxNameLen)
	l, err := n.Name(buf)
	if err != nil {
		return nil, errors.Wrap(err, "pingpong: fi_getname")
	}
	return buf[:l], nil
}

// waitEvent waits for the next event on q and checks its type.
func waitEvent(ctx context.Context, q eq.EventQueue, want eq.EventType) (eq.Event, error) {
	ev, err := q.SRead(ctx)
	if errors.Is(err, fi.EAVAIL) {
		e, rerr := q.ReadErr()
		if rerr != nil {
			return nil, errors.Wrapf(rerr, "pingpong: fi_eq_readerr waiting for %v", want)
		}
		return nil, errors.Wrapf(e, "pingpong: waiting for %v", want)
	}
	if err != nil {
		return nil, errors.Wrapf(err, "pingpong: fi_eq_sread waiting for %v", want)
	}
	if ev.Type() != want {
		return nil, errors.Wrapf(errProto, "pingpong: got event %v, want %v", ev.Type(), want)
	}
	return ev, nil
}

// MaxMsgSize implements Transport.
func (t *fabricTransport) MaxMsgSize() int { return t.maxMsg }

// Buffers implements Transport.
func (t *fabricTransport) Buffers() (tx, rx []byte) { return t.tx, t.rx }

// progress drives a provider that returned EAGAIN by reading the transmit
// CQ, which holds nothing the caller waits for at that point.
func (t *fabricTransport) progress() { _, _ = t.txcq.Read(t.comp[:]) }

// postRecv posts the receive buffer.
func (t *fabricTransport) postRecv() error {
	for {
		var err error
		if t.o.Tagged {
			err = t.tagged.TRecv(t.rxAll, t.rxDesc, fi.AddrUnspec, Tag, 0, &t.rxCtx)
		} else {
			err = t.msg.Recv(t.rxAll, t.rxDesc, fi.AddrUnspec, &t.rxCtx)
		}
		if err != fi.EAGAIN {
			return err
		}
		t.progress()
	}
}

// Send implements Transport.
func (t *fabricTransport) Send(n int) error {
	buf := t.txAll[:t.txPre+n]
	inject := n < t.injectSize
	for {
		var err error
		switch {
		case inject && t.o.Tagged:
			err = t.tagged.TInject(buf, t.peer, Tag)
		case inject:
			err = t.msg.Inject(buf, t.peer)
		case t.o.Tagged:
			err = t.tagged.TSend(buf, t.txDesc, t.peer, Tag, &t.txCtx)
		default:
			err = t.msg.Send(buf, t.txDesc, t.peer, &t.txCtx)
		}
		if err == nil {
			break
		}
		if err != fi.EAGAIN {
			return err
		}
		t.progress()
	}
	if inject {
		return nil
	}
	return t.wait(t.txcq)
}

// Recv implements Transport.
func (t *fabricTransport) Recv(check func(n int) error) (int, error) {
	if err := t.wait(t.rxcq); err != nil {
		return 0, err
	}
	n := max(t.comp[0].Len-t.rxPre, 0) // the length counts the prefix
	if check != nil {
		if err := check(n); err != nil {
			return n, err
		}
	}
	return n, t.postRecv()
}

// wait busy-polls cq until one completion arrives. An error completion is
// returned as its *eq.CQError.
func (t *fabricTransport) wait(cq eq.CompletionQueue) error {
	for {
		n, err := cq.Read(t.comp[:])
		switch {
		case n > 0:
			return nil
		case err == fi.EAGAIN:
		case err == fi.EAVAIL:
			e, rerr := cq.ReadErr()
			if rerr != nil {
				return errors.Wrap(rerr, "pingpong: fi_cq_readerr")
			}
			return errors.Wrap(e, "pingpong: completion")
		default:
			return errors.Wrap(err, "pingpong: fi_cq_read")
		}
	}
}

// Finalize implements Transport.
func (t *fabricTransport) Finalize() error {
	copy(t.tx, finMsg)
	for {
		var err error
		if t.o.Tagged {
			err = t.tagged.TSendMsg(&t.tfin, fi.FlagTransmitComplete)
		} else {
			err = t.msg.SendMsg(&t.fin, fi.FlagTransmitComplete)
		}
		if err == nil {
			break
		}
		if err != fi.EAGAIN {
			return errors.Wrap(err, "pingpong: send fin")
		}
		t.progress()
	}
	if err := t.wait(t.txcq); err != nil {
		return err
	}
	_, err := t.Recv(nil)
	return err
}

// Close implements Transport: fi_shutdown for a connection, then every
// object in reverse order of opening. It returns the first error.
func (t *fabricTransport) Close() error {
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	if t.cm != nil {
		// The connection may be down already (the peer shut it down
		// first, or setup failed); the C tool ignores this result too.
		if err := t.cm.Shutdown(0); err != nil {
			t.dbg("fi_shutdown: %v", err)
		}
	}
	// A nil interface field converts to a nil fi.Fid.
	for _, f := range []fi.Fid{t.ep, t.pep, t.av, t.rxcq, t.txcq} {
		if f != nil {
			keep(f.Close())
		}
	}
	for _, mr := range t.mrs {
		keep(mr.Close())
	}
	for _, f := range []fi.Fid{t.eq, t.domain, t.fabric} {
		if f != nil {
			keep(f.Close())
		}
	}
	return first
}

// touchPages writes every page of b once, as C's fi_pingpong memsets its
// buffer. A large allocation comes from the kernel unwritten, and reads of
// an unwritten page map the kernel's shared zero page: a send buffer that
// is never written is copied from that page (with -S 1048576 over tcp rdm,
// about 10% slower per transfer than from written memory), so the two
// tools would not measure the same thing.
func touchPages(b []byte) {
	step := os.Getpagesize()
	for i := 0; i < len(b); i += step {
		b[i] = 0
	}
}
