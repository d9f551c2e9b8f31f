package kit

import "github.com/gofabric/gofabric/fi"

// Dynamic receive buffers: the Go form of libfabric's
// OFI_OPS_DYNAMIC_RBUF (include/ofi_util.h, the ops a utility provider
// sets on a core endpoint with fi_set_ops), through which C's rxm has the
// tcp provider ask it, for each incoming message, where the payload goes.
// A layer over FI_EP_MSG endpoints (providers/rxm) uses it to read its
// own header first and place the rest of the message straight from the
// socket into the buffer its matching picked, without posted bounce
// receives or a copy.

// Arrival is an incoming message as the endpoint shows it to a
// [DynRecvHandler] (C: the message size and header get_rbuf is asked
// about): its transport header's fields and the first bytes of its
// payload. The endpoint reuses one Arrival per connection; it and its
// Prefix are valid only during the handler's call.
type Arrival struct {
	// Cookie is the value given to SetDynRecv for this endpoint (rxm:
	// its connection).
	Cookie any
	// Tagged reports a tagged message (the tcp provider's raw tagged
	// form: op 0 with the tag flag, docs/wire-tcp.md §3.4), whose Tag is
	// valid and which has no Prefix.
	Tagged bool
	// Tag is the message's tag when Tagged.
	Tag uint64
	// Flags is fi.FlagRemoteCQData when the message carries remote CQ
	// data (Data), else 0.
	Flags fi.Flags
	// Data is the remote CQ data, valid with fi.FlagRemoteCQData.
	Data uint64
	// Prefix holds the first bytes of an untagged message's payload: the
	// prefix length SetDynRecv asked for, or the whole payload when it is
	// shorter. Empty for tagged messages.
	Prefix []byte
	// Rest is the number of payload bytes after Prefix, still in the
	// stream: what the handler's answer places or discards.
	Rest int
}

// DynRecvHandler decides where incoming messages go on an endpoint in
// dynamic receive mode ([DynRecv]): C's get_rbuf callback of
// OFI_OPS_DYNAMIC_RBUF.
type DynRecvHandler interface {
	// Arrived is called once the message's header and Prefix are in. It
	// returns where the Rest bytes go (at most the endpoint's iov limit
	// of buffers, 4 on tcp; bytes beyond their total are discarded) and
	// the context of the message's completion; nil dst discards the
	// Rest. Either way the message then completes on the endpoint's
	// receive CQ with ctx: Len is the bytes placed in dst (Prefix not
	// counted), Flags fi.FlagRecv with fi.FlagMsg or fi.FlagTagged (and
	// fi.FlagRemoteCQData), Data and Tag as in the Arrival; a message the
	// connection loses before it is all in completes as an *eq.CQError
	// with ctx instead.
	//
	// Bare fi.EAGAIN holds the message, and with it the connection's
	// whole receive side, until [DynRecv.Resume]: then Arrived is asked
	// again about the same message. Any other error breaks the
	// connection, as a protocol violation does: it is dropped, its
	// pending operations fail and its eq.Shutdown is reported.
	//
	// Arrived runs in the endpoint's progress with the endpoint's lock
	// held: it must not call the endpoint's data operations (sends,
	// receives, RMA, Cancel, Close), nor wait for another goroutine that
	// does. It may call Resume, of this endpoint or another.
	Arrived(a *Arrival) (dst [][]byte, ctx any, err error)
}

// DynRecv is implemented by FI_EP_MSG endpoints that can hand their
// incoming messages to a [DynRecvHandler] instead of posted receives
// (fi_set_ops with OFI_OPS_DYNAMIC_RBUF; the tcp provider's endpoints).
// In this mode the endpoint takes no posted receives, and data progress
// is manual: it moves when the endpoint's queues are read, or while a
// reader blocks on them.
type DynRecv interface {
	// SetDynRecv puts the endpoint in dynamic receive mode before
	// Enable: each incoming message's first prefixLen payload bytes are
	// read, then h decides where the rest goes. cookie is handed back
	// in every Arrival. It fails with fi.EOPBADSTATE once the endpoint
	// is enabled or has receives posted, fi.EINVAL for a nil h or a
	// prefixLen out of range.
	SetDynRecv(h DynRecvHandler, cookie any, prefixLen int) error
	// Resume makes the endpoint ask its handler again about the message
	// it holds after the handler returned fi.EAGAIN. It never blocks and
	// may be called from any goroutine, also from within a handler; a
	// Resume with nothing held costs at most one more call of the
	// handler later.
	Resume()
}

// DynRecvCompleter may be implemented by a [DynRecvHandler] that can take
// a message's successful completion at once, in the endpoint's progress,
// instead of from the endpoint's completion queue: a layer then skips
// one queue's write and read per message. DynCompleted is called, with
// the endpoint's lock held and under the same rules as Arrived, when the
// Rest of a message is all in, with the context Arrived gave and the
// bytes placed; when it reports true the endpoint writes no completion
// queue entry for the message (its receive counter still counts it), and
// when it reports false the entry is written as without this interface.
// Error completions always go to the completion queue. A handler that
// takes some completions at once and leaves others to the queue keeps
// their order itself.
type DynRecvCompleter interface {
	DynCompleted(ctx any, n int) bool
}
