// Package fabnet is gofabric's Go-native way in: connections, listeners
// and endpoints in the shape of package net and librdmacm, built only on
// the public fi, eq and ep packages (an application of the libfabric
// model, as net is one of the system calls). Everything it does, a
// program can do with those packages itself; fabnet does the steps in
// the right order, waits with a context, and closes what it opened.
//
// # Connections
//
// [Dial] (librdmacm's rdma_connect after rdma_create_ep; net.Dial) finds
// the provider's FI_EP_MSG entries for an address (fi_getinfo), opens a
// fabric, domain, event queue, two completion queues and an endpoint,
// binds and enables them, connects (fi_connect) with the Dialer's private
// data, and waits on the event queue for FI_CONNECTED. It returns a
// [*Conn] with the peer's accept data, a [*RejectedError] with the
// reject's data and its reason when the request is refused (the peer's
// application rejected it, nothing listens, the listener's backlog is
// full), or an error that wraps the failure's fi.Errno and names the
// step; eq.ReasonOf reads the reason of a failed connect from either
// (eq.ReasonTimedOut when the provider's connect timeout ran out,
// eq.ReasonUnreachable...). When the context ends first the endpoint is
// closed and the error is fi.ContextError's: both
// context.DeadlineExceeded and fi.ETIMEDOUT after a deadline.
//
// [Listen] (rdma_listen; net.Listen) opens a passive endpoint with its
// own fabric and event queue. [Listener.Next] returns each connection
// request as a [*Request], which shows the requester's private data and
// address before the application decides; [Request.Accept] (fi_accept)
// returns the connection and [Request.Reject] (fi_reject) refuses it with
// data. [Listener.Accept] does both, asking [ListenConfig.OnRequest] on
// the way: an error from it rejects the request, as the return value of
// the kernel's rdma_cm event handler does.
//
// # Endpoints
//
// [NewEndpoint] is librdmacm's rdma_create_ep: from a provider, an
// address and hints, one call gives the fabric, domain, queues, address
// vector and endpoint, bound and enabled, and [Endpoint.Close] closes
// them in order. [OpenRDM] is the reliable unconnected (FI_EP_RDM) form:
// an endpoint with its address vector, whose [Endpoint.Insert] and
// [Endpoint.InsertSvc] give the fi.Addr of peers (fi_av_insert).
//
// # Blocking operations
//
// [Endpoint.Send], [Endpoint.Recv], [Endpoint.SendTo],
// [Endpoint.RecvFrom], [Endpoint.TSend], [Endpoint.TRecv], [Endpoint.Read]
// and [Endpoint.Write] post the asynchronous operation (fi_send, fi_recv,
// fi_tsend, fi_trecv, fi_read, fi_write) and wait for its completion, for
// programs that do not run a progress loop of their own. They wait the
// way the fastest programs do: they poll the completion queue for a short
// while (EndpointConfig.Spin, 50 µs by default; a wake-up from a sleeping
// wait costs tens of microseconds on a virtual machine), and only then
// sleep in the queue's blocking read (fi_cq_sread). In steady state they
// allocate nothing: they look at the context with its Err method (an
// atomic load for the standard library's contexts) and derive no
// contexts of their own, so a context made once serves every call.
//
// When the context ends first, the operation is cancelled (fi_cancel) and
// the call returns fi.ContextError's error once the provider has given
// the buffer back. An operation the provider cannot cancel (a send
// already handed to the transport, a receive whose message is arriving)
// may still complete later: its buffer stays in the provider's use until
// it does or the endpoint closes, and such a receive's message goes to
// that buffer, not to a later call. A receive that completed before the
// cancel is returned, not lost.
//
// On domains whose MR mode has FI_MR_LOCAL (verbs), every buffer of a
// data-transfer call needs a registration's desc (fi_mr(3)): the
// blocking calls register the caller's buffers themselves, as
// libfabric's registration cache does for its utility providers. A
// buffer inside an earlier registration reuses it (a registration covers
// its slice up to its capacity), so a conversation over the same buffers
// registers once; an endpoint keeps its 16 most recent registrations,
// which keep their buffers reachable until evicted or the endpoint
// closes, and never deregisters memory under an operation still posted.
// fabnet's hints therefore declare FI_MR_LOCAL; without hints of the
// caller's they also declare FI_MR_ALLOCATED, FI_MR_VIRT_ADDR and
// FI_MR_PROV_KEY, which the endpoint's Info shows for the addresses and
// keys of Read and Write.
//
// On providers whose data progress is manual (FI_PROGRESS_MANUAL: shm,
// tcp;ofi_rxm), an endpoint moves data only while a call reads its
// queues, as in libfabric: the target of Read and Write answers while it
// waits in a blocking call (a Recv for the message that says the peer is
// done, say) or polls its queues.
//
// The blocking calls own the endpoint's completion queues: a program that
// mixes them with operations of its own on the same endpoint must not
// read those queues itself, and its own completions are dropped. Calls of
// one direction (sends, RMA; receives) are serialized, as a net.Conn's
// Writes and Reads are; a send and a receive proceed at once.
//
// # Closing
//
// Close on a Conn, Endpoint or Listener wakes the calls that wait on it;
// they return an error that matches net.ErrClosed and fi.EBADF. A Conn
// whose peer shut the connection down fails its waiting and later
// operations with fi.ESHUTDOWN.
//
// # Concurrency
//
// Conn, Endpoint, Listener and Request are safe for concurrent use.
package fabnet
