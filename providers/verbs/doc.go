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
// ids with a nil context, so that C holds no Go pointer). A refused
// connection is an fi.ECONNREFUSED error entry whose ProvErrno is the IB
// CM reject reason (RejectReason, every code of the IBTA table):
// RejectConsumer (28) when the peer's application rejected, with its data
// in ErrData; another reason (RejectInvalidServiceID, 8: nothing listens
// on that port) when the transport refused, without data. An unreachable
// peer gives fi.ETIMEDOUT or fi.EHOSTUNREACH. Data: send,
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
