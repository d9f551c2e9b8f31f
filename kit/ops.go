package kit

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// OpKind is the kind of a data-transfer operation: what every call of
// fi_msg(3), fi_tagged(3) and fi_rma(3) reduces to.
type OpKind uint8

// Operation kinds.
const (
	// OpSend is fi_send and its forms.
	OpSend OpKind = iota
	// OpTSend is fi_tsend and its forms.
	OpTSend
	// OpWrite is fi_write and its forms.
	OpWrite
	// OpRead is fi_read and its forms.
	OpRead
	// OpRecv is fi_recv and its forms.
	OpRecv
	// OpTRecv is fi_trecv and its forms.
	OpTRecv
)

var opNames = [...]string{"send", "tsend", "write", "read", "recv", "trecv"}

// String returns the call's name without the fi_ prefix ("tsend").
func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return "op?"
}

// Op is one data-transfer operation in its general form, as the adapter
// ([MsgOps], [TaggedOps], [RMAOps]) hands it to a provider's [Poster]:
// the single-buffer calls set Buf and Desc, the vector and message calls
// IOV and Descs (never both). An Op is passed by value so that posting
// allocates nothing; the slices in it are the caller's.
type Op struct {
	// Kind is the operation.
	Kind OpKind
	// Inject is set for the inject calls (fi_inject, fi_injectdata,
	// fi_tinject, fi_tinjectdata, fi_inject_write, fi_inject_writedata):
	// the buffer is the caller's again when the call returns and the
	// operation has no completion. A message call with fi.FlagInject in
	// Flags has the first property but not the second.
	Inject bool
	// Buf is the buffer of a single-buffer call, with its descriptor Desc.
	Buf  []byte
	Desc any
	// IOV is the vector of a vector or message call, with its descriptors
	// Descs (nil where the domain needs none).
	IOV   [][]byte
	Descs []any
	// Addr is the peer: the destination of a transmit, the source a
	// receive matches (fi.AddrUnspec for any), or fi.AddrUnspec on
	// connected endpoints.
	Addr fi.Addr
	// Tag and Ignore are the tag and, for receives, its ignore mask.
	Tag, Ignore uint64
	// Data is the remote CQ data, meaningful with fi.FlagRemoteCQData.
	Data uint64
	// RAddr and Key are the remote address and key of a single-segment
	// RMA call; RMAIOV is the remote vector of fi_readmsg and fi_writemsg
	// (nil otherwise, and then RAddr and Key apply to len(Buf) or the
	// IOV's total length).
	RAddr, Key uint64
	RMAIOV     []ep.RMAIOV
	// Context is the operation context reported in its completion.
	Context any
	// Flags are the operation flags: the caller's for the message calls,
	// else the endpoint's default transmit or receive flags ([Ops]), with
	// fi.FlagRemoteCQData added by the data calls and, for the inject
	// calls, fi.FlagInject added and fi.FlagCompletion removed.
	Flags fi.Flags
}

// Vector reports whether the operation came with a vector (IOV) rather
// than a single buffer.
func (o *Op) Vector() bool { return o.IOV != nil }

// Len returns the operation's local length: len(Buf), or the sum of the
// IOV's lengths.
func (o *Op) Len() int {
	if !o.Vector() {
		return len(o.Buf)
	}
	return IOVLen(o.IOV)
}

// IOVLen returns the total length of a vector of buffers.
func IOVLen(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}

// CopyIOV copies the operation's buffers into dst (Buf as one element;
// dst must have room for one) and returns how many it copied, or
// fi.EINVAL (with the call's name) when there are more than len(dst). Providers keep a fixed array per
// operation, so that posting allocates nothing.
func (o *Op) CopyIOV(dst [][]byte, prov string) (int, error) {
	if o.IOV != nil {
		return o.copyVector(dst, prov)
	}
	dst[0] = o.Buf // the single-buffer calls, inlined; dst holds one at least
	return 1, nil
}

func (o *Op) copyVector(dst [][]byte, prov string) (int, error) {
	if len(o.IOV) > len(dst) {
		return 0, errors.Wrapf(fi.EINVAL, "%s: %v: %d iovecs, the limit is %d", prov, o.Kind, len(o.IOV), len(dst))
	}
	return copy(dst, o.IOV), nil
}

// Poster is what a provider's endpoint implements for the adapter: every
// data-transfer call, reduced to an [Op], arrives at one of two methods.
// They must not block or allocate, and return bare fi.EAGAIN when the
// operation cannot be queued now.
type Poster interface {
	// PostTx queues a transmit-side operation: OpSend, OpTSend, OpWrite
	// or OpRead.
	PostTx(op Op) error
	// PostRx posts a receive: OpRecv or OpTRecv.
	PostRx(op Op) error
}

// Ops is the shared part of the adapter: the provider's Poster, its name
// for error messages, and the endpoint's default operation flags
// (fi_tx_attr and fi_rx_attr op_flags, which fi_control(FI_SETOPSFLAG)
// changes), which the non-message calls pass in
// Op.Flags. A provider sets it up once per endpoint and embeds
// [MsgOps], [TaggedOps] and [RMAOps] pointing at it for the abilities it
// has, so that its endpoint implements ep.Msg, ep.Tagged and ep.RMA.
type Ops struct {
	// Poster receives the operations.
	Poster Poster
	// Prov names the provider in the adapter's errors ("tcp: sendmsg: nil
	// message").
	Prov string
	// TxFlags and RxFlags are the default transmit and receive flags.
	TxFlags, RxFlags fi.Flags
}

// NewOps returns an adapter for p with the default flags of info's
// transmit and receive attributes.
func NewOps(p Poster, prov string, info *fi.Info) *Ops {
	o := &Ops{Poster: p, Prov: prov}
	if info != nil && info.TxAttr != nil {
		o.TxFlags = info.TxAttr.OpFlags
	}
	if info != nil && info.RxAttr != nil {
		o.RxFlags = info.RxAttr.OpFlags
	}
	return o
}

// injectFlags are the flags of an inject call.
func (o *Ops) injectFlags() fi.Flags { return o.TxFlags&^fi.FlagCompletion | fi.FlagInject }

func (o *Ops) nilMsg(call string) error {
	return errors.Wrapf(fi.EINVAL, "%s: %s: nil message", o.Prov, call)
}

// MsgOps implements ep.Msg (fi_msg(3)) over an [Ops]: embed it in an
// endpoint that sends and receives messages.
type MsgOps struct{ *Ops }

var _ ep.Msg = MsgOps{}

// Recv posts a receive buffer (fi_recv).
func (m MsgOps) Recv(buf []byte, desc any, src fi.Addr, ctx any) error {
	return m.Poster.PostRx(Op{Kind: OpRecv, Buf: buf, Desc: desc, Addr: src, Context: ctx, Flags: m.RxFlags})
}

// RecvV posts a vectored receive (fi_recvv).
func (m MsgOps) RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error {
	return m.Poster.PostRx(Op{Kind: OpRecv, IOV: nonNil(iov), Descs: desc, Addr: src, Context: ctx, Flags: m.RxFlags})
}

// RecvMsg posts a receive with flags (fi_recvmsg).
func (m MsgOps) RecvMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return m.nilMsg("recvmsg")
	}
	return m.Poster.PostRx(Op{Kind: OpRecv, IOV: nonNil(msg.IOV), Descs: msg.Desc, Addr: msg.Addr, Context: msg.Context, Data: msg.Data, Flags: flags})
}

// Send sends buf (fi_send).
func (m MsgOps) Send(buf []byte, desc any, dest fi.Addr, ctx any) error {
	return m.Poster.PostTx(Op{Kind: OpSend, Buf: buf, Desc: desc, Addr: dest, Context: ctx, Flags: m.TxFlags})
}

// SendV sends a vector (fi_sendv).
func (m MsgOps) SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error {
	return m.Poster.PostTx(Op{Kind: OpSend, IOV: nonNil(iov), Descs: desc, Addr: dest, Context: ctx, Flags: m.TxFlags})
}

// SendMsg sends with flags (fi_sendmsg).
func (m MsgOps) SendMsg(msg *ep.Message, flags fi.Flags) error {
	if msg == nil {
		return m.nilMsg("sendmsg")
	}
	return m.Poster.PostTx(Op{Kind: OpSend, IOV: nonNil(msg.IOV), Descs: msg.Desc, Addr: msg.Addr, Context: msg.Context, Data: msg.Data, Flags: flags})
}

// Inject sends buf with no completion (fi_inject).
func (m MsgOps) Inject(buf []byte, dest fi.Addr) error {
	return m.Poster.PostTx(Op{Kind: OpSend, Inject: true, Buf: buf, Addr: dest, Flags: m.injectFlags()})
}

// SendData sends buf with remote CQ data (fi_senddata).
func (m MsgOps) SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error {
	return m.Poster.PostTx(Op{Kind: OpSend, Buf: buf, Desc: desc, Addr: dest, Context: ctx, Data: data, Flags: m.TxFlags | fi.FlagRemoteCQData})
}

// InjectData injects buf with remote CQ data (fi_injectdata).
func (m MsgOps) InjectData(buf []byte, data uint64, dest fi.Addr) error {
	return m.Poster.PostTx(Op{Kind: OpSend, Inject: true, Buf: buf, Addr: dest, Data: data, Flags: m.injectFlags() | fi.FlagRemoteCQData})
}

// TaggedOps implements ep.Tagged (fi_tagged(3)) over an [Ops]: embed it
// in an endpoint that offers FI_TAGGED.
type TaggedOps struct{ *Ops }

var _ ep.Tagged = TaggedOps{}

// TRecv posts a tagged receive (fi_trecv).
func (t TaggedOps) TRecv(buf []byte, desc any, src fi.Addr, tag, ignore uint64, ctx any) error {
	return t.Poster.PostRx(Op{Kind: OpTRecv, Buf: buf, Desc: desc, Addr: src, Tag: tag, Ignore: ignore, Context: ctx, Flags: t.RxFlags})
}

// TRecvV posts a vectored tagged receive (fi_trecvv).
func (t TaggedOps) TRecvV(iov [][]byte, desc []any, src fi.Addr, tag, ignore uint64, ctx any) error {
	return t.Poster.PostRx(Op{Kind: OpTRecv, IOV: nonNil(iov), Descs: desc, Addr: src, Tag: tag, Ignore: ignore, Context: ctx, Flags: t.RxFlags})
}

// TRecvMsg posts a tagged receive with flags (fi_trecvmsg).
func (t TaggedOps) TRecvMsg(msg *ep.TaggedMessage, flags fi.Flags) error {
	if msg == nil {
		return t.nilMsg("trecvmsg")
	}
	return t.Poster.PostRx(Op{Kind: OpTRecv, IOV: nonNil(msg.IOV), Descs: msg.Desc, Addr: msg.Addr, Tag: msg.Tag, Ignore: msg.Ignore,
		Context: msg.Context, Data: msg.Data, Flags: flags})
}

// TSend sends a tagged message (fi_tsend).
func (t TaggedOps) TSend(buf []byte, desc any, dest fi.Addr, tag uint64, ctx any) error {
	return t.Poster.PostTx(Op{Kind: OpTSend, Buf: buf, Desc: desc, Addr: dest, Tag: tag, Context: ctx, Flags: t.TxFlags})
}

// TSendV sends a vectored tagged message (fi_tsendv).
func (t TaggedOps) TSendV(iov [][]byte, desc []any, dest fi.Addr, tag uint64, ctx any) error {
	return t.Poster.PostTx(Op{Kind: OpTSend, IOV: nonNil(iov), Descs: desc, Addr: dest, Tag: tag, Context: ctx, Flags: t.TxFlags})
}

// TSendMsg sends a tagged message with flags (fi_tsendmsg).
func (t TaggedOps) TSendMsg(msg *ep.TaggedMessage, flags fi.Flags) error {
	if msg == nil {
		return t.nilMsg("tsendmsg")
	}
	return t.Poster.PostTx(Op{Kind: OpTSend, IOV: nonNil(msg.IOV), Descs: msg.Desc, Addr: msg.Addr, Tag: msg.Tag,
		Context: msg.Context, Data: msg.Data, Flags: flags})
}

// TInject injects a tagged message (fi_tinject).
func (t TaggedOps) TInject(buf []byte, dest fi.Addr, tag uint64) error {
	return t.Poster.PostTx(Op{Kind: OpTSend, Inject: true, Buf: buf, Addr: dest, Tag: tag, Flags: t.injectFlags()})
}

// TSendData sends a tagged message with remote CQ data (fi_tsenddata).
func (t TaggedOps) TSendData(buf []byte, desc any, data uint64, dest fi.Addr, tag uint64, ctx any) error {
	return t.Poster.PostTx(Op{Kind: OpTSend, Buf: buf, Desc: desc, Addr: dest, Tag: tag, Context: ctx, Data: data, Flags: t.TxFlags | fi.FlagRemoteCQData})
}

// TInjectData injects a tagged message with remote CQ data
// (fi_tinjectdata).
func (t TaggedOps) TInjectData(buf []byte, data uint64, dest fi.Addr, tag uint64) error {
	return t.Poster.PostTx(Op{Kind: OpTSend, Inject: true, Buf: buf, Addr: dest, Tag: tag, Data: data, Flags: t.injectFlags() | fi.FlagRemoteCQData})
}

// RMAOps implements ep.RMA (fi_rma(3)) over an [Ops]: embed it in an
// endpoint that offers FI_RMA.
type RMAOps struct{ *Ops }

var _ ep.RMA = RMAOps{}

// Read reads remote memory into buf (fi_read).
func (r RMAOps) Read(buf []byte, desc any, src fi.Addr, addr, key uint64, ctx any) error {
	return r.Poster.PostTx(Op{Kind: OpRead, Buf: buf, Desc: desc, Addr: src, RAddr: addr, Key: key, Context: ctx, Flags: r.TxFlags})
}

// ReadV is the vectored Read (fi_readv).
func (r RMAOps) ReadV(iov [][]byte, desc []any, src fi.Addr, addr, key uint64, ctx any) error {
	return r.Poster.PostTx(Op{Kind: OpRead, IOV: nonNil(iov), Descs: desc, Addr: src, RAddr: addr, Key: key, Context: ctx, Flags: r.TxFlags})
}

// ReadMsg reads with flags (fi_readmsg).
func (r RMAOps) ReadMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	return r.rmaMsg(OpRead, "readmsg", msg, flags)
}

// Write writes buf to remote memory (fi_write).
func (r RMAOps) Write(buf []byte, desc any, dest fi.Addr, addr, key uint64, ctx any) error {
	return r.Poster.PostTx(Op{Kind: OpWrite, Buf: buf, Desc: desc, Addr: dest, RAddr: addr, Key: key, Context: ctx, Flags: r.TxFlags})
}

// WriteV is the vectored Write (fi_writev).
func (r RMAOps) WriteV(iov [][]byte, desc []any, dest fi.Addr, addr, key uint64, ctx any) error {
	return r.Poster.PostTx(Op{Kind: OpWrite, IOV: nonNil(iov), Descs: desc, Addr: dest, RAddr: addr, Key: key, Context: ctx, Flags: r.TxFlags})
}

// WriteMsg writes with flags (fi_writemsg).
func (r RMAOps) WriteMsg(msg *ep.RMAMessage, flags fi.Flags) error {
	return r.rmaMsg(OpWrite, "writemsg", msg, flags)
}

// InjectWrite writes buf with no completion (fi_inject_write).
func (r RMAOps) InjectWrite(buf []byte, dest fi.Addr, addr, key uint64) error {
	return r.Poster.PostTx(Op{Kind: OpWrite, Inject: true, Buf: buf, Addr: dest, RAddr: addr, Key: key, Flags: r.injectFlags()})
}

// WriteData writes with remote CQ data (fi_writedata).
func (r RMAOps) WriteData(buf []byte, desc any, data uint64, dest fi.Addr, addr, key uint64, ctx any) error {
	return r.Poster.PostTx(Op{Kind: OpWrite, Buf: buf, Desc: desc, Addr: dest, RAddr: addr, Key: key, Context: ctx, Data: data, Flags: r.TxFlags | fi.FlagRemoteCQData})
}

// InjectWriteData injects a write with remote CQ data
// (fi_inject_writedata).
func (r RMAOps) InjectWriteData(buf []byte, data uint64, dest fi.Addr, addr, key uint64) error {
	return r.Poster.PostTx(Op{Kind: OpWrite, Inject: true, Buf: buf, Addr: dest, RAddr: addr, Key: key, Data: data, Flags: r.injectFlags() | fi.FlagRemoteCQData})
}

// rmaMsg posts fi_readmsg or fi_writemsg. RAddr and Key mirror the first
// remote segment, for providers that take one.
func (r RMAOps) rmaMsg(kind OpKind, call string, msg *ep.RMAMessage, flags fi.Flags) error {
	if msg == nil {
		return r.nilMsg(call)
	}
	op := Op{Kind: kind, IOV: nonNil(msg.IOV), Descs: msg.Desc, Addr: msg.Addr, RMAIOV: msg.RMAIOV, Context: msg.Context, Data: msg.Data, Flags: flags}
	if len(msg.RMAIOV) > 0 {
		op.RAddr, op.Key = msg.RMAIOV[0].Addr, msg.RMAIOV[0].Key
	}
	return r.Poster.PostTx(op)
}

// emptyIOV stands for a vector call's nil vector, so that Op.Vector
// tells the call's form without another field.
var emptyIOV = [][]byte{}

func nonNil(iov [][]byte) [][]byte {
	if iov == nil {
		return emptyIOV
	}
	return iov
}
