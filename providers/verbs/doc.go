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
// CM reject reason: 28 (consumer defined) when the peer's application
// rejected, with its data in ErrData; another reason (8: nothing listens
// on that port) when the transport refused, without data. An unreachable
// peer gives fi.ETIMEDOUT or fi.EHOSTUNREACH. Data: send,
// receive, inject within the device's inline size, senddata and RMA
// write with immediate data, RMA read and write under the MR modes C's
// provider asks for (FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED,
// FI_MR_PROV_KEY). The data-path calls post one work request whose wr_id
// indexes a fixed slot table (no allocation, a bare fi.EAGAIN when the
// queue is full); completions come from a verbs CQ polled by the
// application's reads and, for blocking waits, through its completion
// channel in the netpoller; a queue opened with fi.WaitFD
// (FI_WAIT_FD) waits the same way while the application sleeps in poll
// on its descriptor (eq.FDWaiter), which is the framework's eventfd, not
// the completion channel's. When the connection goes, every posted
// operation completes with an error entry.
//
// FI_EP_DGRAM (UD) is not offered, and FI_EP_RDM not by verbs itself;
// GetInfo declines them with the reason. FI_EP_RDM over verbs is
// providers/rxm layered on these MSG endpoints, as C's ofi_rxm: it is
// registered as "verbs;ofi_rxm" by providers/all in builds with the verbs
// tag.
package verbs
