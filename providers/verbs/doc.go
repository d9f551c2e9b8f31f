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
// # Datagrams (FI_EP_DGRAM)
//
// Each device with an active port of the InfiniBand transport (RoCE
// included, not iWARP) has an FI_EP_DGRAM entry as in C 1.17
// (verbs_info.c, verbs_dgram_ep_msg.c, verbs_dgram_av.c): domain
// "<device>-dgram", protocol FI_PROTO_IB_UD, address format
// FI_ADDR_IB_UD, caps FI_MSG, FI_SEND, FI_RECV, mode FI_MSG_PREFIX (rx
// mode FI_MSG_PREFIX and FI_RX_CQ_DATA) with msg_prefix_size 40,
// max_msg_size the port's active MTU (1 KiB for rxe on a 1500-byte
// netdev), inject_size the most inline data a UD queue pair takes (as
// vrb_find_max_inline probes it), the MSG entries' sizes, orders and MR
// mode otherwise. An endpoint is a UD queue pair on the domain's
// protection domain, moved to RTS by Enable with C's qkey 0x11111111; its
// name (fi_getname) is C's struct ofi_ib_ud_ep_name byte for byte (GID of
// FI_VERBS_GID_IDX, 0 by default as in C, QPN, LID, P_Key, service, SL),
// so that Go and C endpoints exchange names and datagrams (fi_pingpong -e
// dgram interoperates both ways). The address vector keeps the names and
// creates an address handle for each new one at fi_av_insert
// (ibv_create_ah, global with hop limit 64 when the GID has an interface
// id); the handles live until the domain closes (C destroys one at
// fi_av_remove). Sends are one ibv_post_send each (inline up to
// inject_size, FI_REMOTE_CQ_DATA as immediate data), receives one
// ibv_post_recv, with the MSG endpoints' fixed slot tables: no allocation,
// bare fi.EAGAIN when a queue is full; a datagram above max_msg_size is
// fi.EMSGSIZE at the call. Under FI_MSG_PREFIX the 40-byte Global Route
// Header lands at the start of the receive buffer and the completion's
// length counts it, as in C; sends carry no prefix (C's tx mode is 0).
//
// Where gofabric parts from C 1.17: hints that do not declare
// FI_MSG_PREFIX get the entry without it (msg_prefix_size 0), and the
// provider puts each receive's header into registered memory of its own
// (one more SGE); every receive ends with an SGE into a provider overflow
// area, so that a datagram longer than the buffer completes with fi.ETRUNC
// (Len placed, OLen lost) and the endpoint carries on, where rxe moves the
// queue pair of a too-short receive to the error state; fi_setname is
// fi.ENOSYS (C copies the bytes into the name it reports, which no longer
// names the queue pair); GetInfo with a destination node declines (C
// resolves it through its name server, which gofabric does not run:
// exchange fi_getname's names), and with FI_SOURCE an IP address as node
// selects the device that has it (C ignores the node there); FI_SOURCE
// and FI_DIRECTED_RECV are not offered, as in C.
//
// # Multicast (beyond C)
//
// C libfabric's verbs provider offers no fi_join; gofabric's DGRAM
// entries carry FI_MULTICAST and their endpoints implement ep.Joiner with
// the udp provider's semantics. Join takes a struct sockaddr_in or
// sockaddr_in6 with an IP multicast address (the port is not used) and
// joins it through an rdma_cm id of the UDP port space bound to the
// device's IP address (rdma_join_multicast: on RoCE the kernel derives
// the group's GID from the IP address and joins the IP group on the
// port's netdev, as ip maddr shows). RDMA_CM_EVENT_MULTICAST_JOIN gives
// the group's address handle attributes and QP number (0xFFFFFF): the
// endpoint makes the group's address handle, attaches its queue pair when
// the member may receive (ibv_attach_mcast; FI_SEND members are not
// attached and receive nothing of the group), and queues
// eq.JoinComplete{Fid: group, Context: ctx} on the bound event queue
// (FI_JOIN_COMPLETE). RDMA_CM_EVENT_MULTICAST_ERROR (and DEVICE_REMOVAL
// on the group's id) is an *eq.EQError about the group with
// eq.ReasonTransport and the event's status in ProvErrno. SendMsg with
// fi.FlagMulticast to the group's Addr (fi_mc_addr) sends to it
// (fi.EAGAIN until the join completed, fi.EINVAL after it failed);
// receives of datagrams sent to a group carry fi.FlagMulticast. Closing
// the group leaves it (ibv_detach_mcast, rdma_leave_multicast,
// rdma_destroy_id); closing the endpoint leaves every group it joined,
// after which the group's Close only marks it closed (the udp provider
// refuses the endpoint's Close with fi.EBUSY instead). Datagrams to a
// group carry the UD qkey of C's verbs (0x11111111), not the join's
// (rdma_cm's RDMA_UDP_QKEY), so that one queue pair serves both unicast
// peers, C's included, and groups; group members that are not gofabric
// endpoints (librdmacm's mckey) therefore do not exchange datagrams with
// gofabric's. On rxe a group's datagrams reach the members on the same
// host through the IP stack's multicast loopback.
//
// FI_EP_RDM is not offered by verbs itself; GetInfo declines it with the
// reason. FI_EP_RDM over verbs is providers/rxm layered on the MSG
// endpoints, as C's ofi_rxm: it is registered as "verbs;ofi_rxm" by
// providers/all in builds with the verbs tag.
package verbs
