// Package verbs is gofabric's verbs provider: RDMA devices (InfiniBand,
// RoCE, iWARP) through rdma-core's libibverbs and librdmacm, as libfabric's
// verbs provider (fi_verbs(7)). Importing the package registers it with
// fi.Register under libfabric's name, "verbs"; providers/all imports it.
//
// # Building
//
// The provider needs cgo and rdma-core's headers, so its implementation
// sits behind the build tag "verbs":
//
//	apt-get install libibverbs-dev librdmacm-dev
//	go build -tags verbs ./...
//
// A default build (no tag, or CGO_ENABLED=0) stays pure Go: the provider
// is registered all the same, and GetInfo declines with fi.ENODATA and a
// reason that says how to build it, so that fi_info and an application's
// NoMatchError tell why there is no verbs entry. A build with the tag on
// a host without RDMA devices declines likewise, naming what is missing.
//
// # What it offers
//
// FI_EP_MSG endpoints (RC queue pairs) with fi_cm(3) semantics: passive
// endpoints, connect, accept, reject with consumer data, shutdown, names,
// and private data within the transport's limit (CMDataSize), over an
// rdma_cm event channel waited on through the netpoller (no OS thread
// parked in C; events copied out of librdmacm and acknowledged at once;
// ids with a nil context, so that C holds no Go pointer); see
// Connection management for failures, options and states. Data: send,
// receive, inject within the device's inline size, senddata and RMA
// write with immediate data, RMA read and write under the MR modes C's
// provider asks for (FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED,
// FI_MR_PROV_KEY), and the device's atomics (see Atomics). The data-path calls post one work request whose wr_id
// indexes a fixed slot table (no allocation, a bare fi.EAGAIN when the
// queue is full); completions come from a verbs CQ polled by the
// application's reads and, for blocking waits, through its completion
// channel in the netpoller; a queue opened with fi.WaitFD
// (FI_WAIT_FD) waits the same way while the application sleeps in poll
// on its descriptor (eq.FDWaiter), which is the framework's eventfd, not
// the completion channel's. When the connection goes, every posted
// operation completes with an error entry.
//
// # Connection management
//
// Every error entry that ends a connection attempt or a connection
// carries an eq.ConnReason (EQError.Reason, eq.ReasonOf), the same on
// every provider, beside the provider's own code in ProvErrno:
//
//   - RDMA_CM_EVENT_REJECTED: ProvErrno is the IB CM reject reason
//     (RejectReason, every code of the IBTA table, seed 004; C puts it
//     negated in prov_errno) and RejectReason.Reason gives the reason.
//     RejectConsumer (28), the peer application's fi_reject:
//     fi.ECONNREFUSED, eq.ReasonRejected, its data (possibly none) in
//     ErrData, the endpoint in ep.CMRejected. RejectInvalidServiceID (8),
//     nothing listening on the port: fi.ECONNREFUSED,
//     eq.ReasonNoListener. RejectTimeout (4), the peer's CM timed out:
//     fi.ETIMEDOUT, eq.ReasonTimedOut. Any other reason: fi.ECONNREFUSED,
//     eq.ReasonTransport.
//   - A passive endpoint refuses by itself a request that its backlog
//     (ep.BacklogSetter, ep.DefaultBacklog; above rdma_listen's backlog
//     of 1024, which the rdma_cm goroutine keeps empty) has no room for,
//     and one that arrives once it is closed: a consumer reject without
//     data for any peer (C's verbs reads it as fi_reject without data),
//     tagged after the data's header so that a gofabric requester reports
//     eq.ReasonBacklogFull or eq.ReasonNoListener, fi.ECONNREFUSED. A
//     request rdma_cm itself drops (its own backlog full, which needs
//     the process to stop reading events) is never answered and ends as
//     a timeout.
//   - ADDR_ERROR, ROUTE_ERROR and UNREACHABLE whose status is
//     -ETIMEDOUT (the CM's request unanswered; an address resolution no
//     neighbour answered within the resolution timeout): fi.ETIMEDOUT,
//     eq.ReasonTimedOut, as the connect timeout's own entry, so that
//     the two cannot race to different reasons. With another status they
//     are eq.ReasonUnreachable with the status's code (fi.EHOSTUNREACH
//     for ADDR_ERROR and ROUTE_ERROR without one, fi.ETIMEDOUT for
//     UNREACHABLE, C's code for all four). CONNECT_ERROR and other
//     failures: eq.ReasonTransport with the status's code. ProvErrno is
//     the errno of the event's status, as in C.
//   - An address the host has no route to fails at once, before
//     rdma_cm: fi.ENETUNREACH (or fi.EHOSTUNREACH for an unreachable
//     route), eq.ReasonUnreachable, from the route lookup connect(2)
//     makes (of a UDP socket, which sends nothing). rdma_cm cannot tell:
//     its id, bound to the device, resolves with the device as the
//     output interface, for which Linux takes an address without a
//     route to be on the link, so that C's verbs times out an ARP
//     nobody answers instead. A call that fails (rdma_resolve_route,
//     rdma_create_qp, rdma_connect, rdma_accept) gives its errno's code
//     with eq.ReasonUnreachable for the address codes, eq.ReasonTimedOut
//     for fi.ETIMEDOUT, eq.ReasonTransport for the rest.
//   - The endpoint's connect timeout (below): fi.ETIMEDOUT,
//     eq.ReasonTimedOut.
//
// A peer that receives the request but never answers it (an application
// that leaves the eq.ConnReq pending) is acknowledged by its kernel's CM
// with an MRA, after which the requester's CM waits for minutes before
// UNREACHABLE; set a connect timeout to bound it.
//
// Options (ep.SetOpt, ep.GetOpt; fi_endpoint(3) has none for these, so
// they are at gofabric's ep.OptLevelCM): ep.OptConnTimeout, in
// milliseconds, set before Connect, bounds rdma_resolve_addr and
// rdma_resolve_route (2000 ms otherwise, C's VERBS_RESOLVE_TIMEOUT) and
// the whole attempt: when it expires before eq.Connected, the attempt's
// queue pair and id are destroyed (the CM rejects the request at the
// peer with RejectTimeout) and an fi.ETIMEDOUT, eq.ReasonTimedOut entry
// ends it. 0, the default, leaves the attempt to the CM's timeouts.
// ep.OptConnRetries, 0 to 7, is the transport retry count of the request
// (rdma_conn_param.retry_count): how often either queue pair resends an
// unacknowledged packet before the connection fails; C passes 15, which
// the kernel's rdma_cm clamps to 7, and so does the default here (read
// as 7). The CM's own resends of the request are the kernel's
// (CMA_MAX_CM_RETRIES), not settable. ep.OptConnState is the state,
// read-only. FI_OPT_CM_DATA_SIZE (ep.OptLevelEndpoint) is 55 on active
// and passive endpoints, as C's vrb_ep_getopt; a passive endpoint has
// no option to set.
//
// States (ep.State, ep.Stater, ep.OptConnState), with seed 004's IB CM
// states: ep.CMIdle (Idle), ep.CMConnecting (REQ Sent, REP Wait, and
// rdma_cm's address and route resolution before them),
// ep.CMReqReceived (REQ Rcvd; the CM has sent an MRA), ep.CMAccepting
// (REP Sent), ep.CMConnected (Established), ep.CMShutdownLocal (DREQ
// Sent), ep.CMShutdownRemote (DREQ Rcvd), ep.CMDisconnected (TimeWait),
// ep.CMRejected and ep.CMFailed (a REJ or a timeout, back to Idle in IB,
// final here), ep.CMClosed; passive endpoints ep.CMIdle, ep.CMListening
// (Listen), ep.CMClosed.
//
// Connection parameters, as C's vrb_ep_prepare_rdma_cm_param: responder
// resources and initiator depth RDMA_MAX_RESP_RES and
// RDMA_MAX_INIT_DEPTH, which librdmacm turns into the device's
// max_qp_rd_atom and max_qp_init_rd_atom (on accept, clamped also to
// what the request offered); flow control on; RNR retry count 7 (retry
// forever); the transport retry count above. SetName on an active
// endpoint binds the source address before Connect (rdma_create_id and
// rdma_bind_addr on a new id, as C's vrb_msg_ep_setname).
//
// Other rdma_cm events: DEVICE_REMOVAL ends an attempt under way with an
// fi.ENODEV entry, eq.ReasonTransport, and a connection with eq.Shutdown
// (its one terminal event; C reports an fi.ENODEV entry there too); on a
// passive endpoint it is an fi.ENODEV entry, eq.ReasonTransport, from the
// passive endpoint, as in C: close it, as the device goes only once its
// ids are destroyed. ADDR_CHANGE (the local address moved, a bonding
// failover) is, as in C, an fi.EADDRNOTAVAIL entry: it fails an attempt
// under way (eq.ReasonUnreachable); on a connection (eq.ReasonTransport)
// it leaves the connection and its state as they are, for the
// application to shut down or keep. TIMEWAIT_EXIT (the connection's
// time-wait is over: the CM will not reuse its queue pair number, so the
// queue pair and id may be released) is taken without an entry, as in C,
// and the state stays ep.CMDisconnected; the endpoint keeps both until
// Close, which rdma_cm allows in any state. (The tests remove rxe0 under
// a listening passive endpoint in a VM of their own; Soft-RoCE raises no
// ADDR_CHANGE, which they hand to a connected endpoint as the dispatcher
// would.)
//
// # Atomics
//
// fi_atomic(3) (ep.Atomic) with the device's own operations, one 64-bit
// word each (count 1), as C's verbs provider offers them
// (vrb_msg_ep_atomic_ops, vrb_query_atomic): fi_atomic with
// FI_ATOMIC_WRITE, an RDMA write (with FI_REMOTE_CQ_DATA one with
// immediate data, which consumes a receive at the target, as
// fi_writedata); fi_fetch_atomic with FI_ATOMIC_READ, an RDMA read, and
// FI_SUM, the device's fetch-and-add; fi_compare_atomic with FI_CSWAP, its
// compare-and-swap. FI_SUM and FI_CSWAP take FI_INT64 and FI_UINT64,
// FI_ATOMIC_READ and FI_ATOMIC_WRITE those and FI_DOUBLE. Every other
// pair is fi.EOPNOTSUPP from the valid calls and the data calls alike.
// The result buffer needs the desc of a registered region (FI_MR_LOCAL);
// operand and compare values are copied into the work request. The
// target region needs fi.AccessRemoteWrite, which also grants the peer's
// device atomics (IBV_ACCESS_REMOTE_ATOMIC, as in C). Completions carry
// FI_ATOMIC with FI_WRITE (fi_atomic) or FI_READ (fetch and compare);
// every request is fenced behind the reads and atomics before it, as in
// C. A remote fault (wrong key, outside the region, no remote write) is
// an error completion (fi.EACCES), after which, as after any error
// completion on an RC queue pair, the connection carries nothing more.
// Atomicity is the device's: with atomic_cap IBV_ATOMIC_HCA (rxe, most
// adapters) the operations are atomic among those of that device, not
// with the CPU's atomic instructions on the same memory;
// IBV_ATOMIC_GLOB extends it to those.
//
// Where gofabric parts from C 1.17: C also offers FI_FLOAT (it reports
// 4-byte elements and reads, writes or adds 8 bytes) and FI_SUM and
// FI_CSWAP on FI_DOUBLE (the device adds and compares the bits as
// integers), which gofabric refuses; C refuses with -FI_ENOSYS or
// -FI_EINVAL where gofabric says fi.EOPNOTSUPP, and a count other than 1
// with -FI_E2BIG where it says fi.EMSGSIZE; C 1.17 hands the device the
// addresses of the operand and compare buffers instead of their values
// (fixed in libfabric 2.2); C reports FI_ATOMIC alone for fetch-add and
// compare-swap and FI_RMA with FI_READ or FI_WRITE for the read and
// write; C posts a fetch-add or compare-swap to a misaligned address,
// which the peer's device refuses, where gofabric gives fi.EINVAL at the
// call; C drops the remote CQ data of a fetch or compare silently, where
// gofabric gives fi.EBADFLAGS (only the RDMA write carries immediate
// data); C has no fi_inject_atomic, gofabric sends FI_ATOMIC_WRITE's word
// inline; and C never looks at the device's atomic_cap, where gofabric
// refuses FI_SUM and FI_CSWAP on a device with IBV_ATOMIC_NONE. The
// fi_info entries carry FI_ATOMIC as C's do.
//
// FI_EP_DGRAM (UD) is not offered, and FI_EP_RDM not by verbs itself;
// GetInfo declines them with the reason. FI_EP_RDM over verbs is
// providers/rxm layered on these MSG endpoints, as C's ofi_rxm: it is
// registered as "verbs;ofi_rxm" by providers/all in builds with the verbs
// tag.
package verbs
