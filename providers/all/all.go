// Package all registers every gofabric provider with the fi registry, the
// way a C application gets every provider libfabric was built with. Import
// it for its side effect:
//
//	import _ "github.com/gofabric/gofabric/providers/all"
//
// It registers shm (FI_EP_RDM over shared memory), tcp (FI_EP_MSG over
// TCP sockets, and with it rxm over tcp as "tcp;ofi_rxm": FI_EP_RDM over
// TCP sockets, package rxm), udp (FI_EP_DGRAM over UDP sockets, with
// multicast) and verbs (RDMA devices; pure Go without its build tag, when
// it only says why it offers nothing); built with the verbs tag, also rxm
// over verbs as "verbs;ofi_rxm" (FI_EP_RDM over RDMA devices). shm, tcp
// and udp run on Linux only:
// elsewhere the package still compiles and they register stand-ins that
// offer nothing, so that GetInfo's ENODATA names them and says why ("tcp:
// available on Linux only (this is darwin/arm64)"). It reads no
// environment variables itself; each provider's doc lists the ones it
// reads.
package all

import (
	// shm registers "shm": RDM endpoints between processes of one host.
	_ "github.com/gofabric/gofabric/providers/shm"
	// tcp registers "tcp" (libfabric 1.17's tcp provider, fi_tcp(7)) and
	// rxm over it, "tcp;ofi_rxm" (fi_rxm(7)).
	_ "github.com/gofabric/gofabric/providers/tcp"
	// udp registers "udp" (libfabric 1.17's udp provider, fi_udp(7)).
	_ "github.com/gofabric/gofabric/providers/udp"
	// verbs registers "verbs" (libfabric 1.17's verbs provider,
	// fi_verbs(7)); build with -tags verbs for RDMA devices.
	_ "github.com/gofabric/gofabric/providers/verbs"
)
