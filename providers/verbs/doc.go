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
// # State
//
// This is the provider's first step (issue 8): the registration, the
// pure-Go fallback, and, with the tag, the discovery of devices and ports
// and the rdma_cm plumbing the connection management will sit on: an event
// channel waited on through the netpoller (no OS thread parked in C),
// events copied out of librdmacm and acknowledged at once, ids with a nil
// context (C holds no Go pointer), and the connect/accept/reject/
// disconnect round trips with private data, tested on Soft-RoCE. Then the
// data-path primitives: buffers mmap'd outside the Go heap and registered
// (ibv_reg_mr), a CQ with a completion channel waited on through the
// netpoller and polled without allocating, receives and signaled sends
// (send, with immediate data, RDMA write and read; inline when they fit)
// whose wr_ids index a fixed slot table. Endpoints on top of them (fi_cm(3)
// semantics, MSG endpoints) come next; until then GetInfo offers no
// entries and says so.
package verbs
