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
// FI_EP_DGRAM (UD) is not offered, and FI_EP_RDM not by verbs itself;
// GetInfo declines them with the reason. FI_EP_RDM over verbs is
// providers/rxm layered on these MSG endpoints, as C's ofi_rxm: it is
// registered as "verbs;ofi_rxm" by providers/all in builds with the verbs
// tag.
package verbs
