// Package tcp is gofabric's tcp provider: connected (FI_EP_MSG) endpoints
// over TCP sockets that speak the wire format of libfabric 1.17's tcp
// provider (fi_tcp(7)), so that Go and C peers connect to each other and
// exchange messages and RMA. Importing the package registers it with
// fi.Register under libfabric's name, "tcp"; providers/all imports it.
//
// # Entries
//
// GetInfo offers what the C provider offers for FI_EP_MSG, with its
// attributes (fi_info -v -p tcp): one entry per IPv4 and IPv6 address of
// each interface that is up, the domain named after the interface ("eth0",
// "lo"), the fabric after the address's subnet ("192.0.2.0/24"; loopback
// addresses are their own subnet, "127.0.0.1/32" and "::1/128"), the
// source address the interface's with port 0, the interfaces ordered as C
// orders them and loopback last. Addresses are struct sockaddr_in
// (FI_SOCKADDR_IN, 16 bytes) and sockaddr_in6 (FI_SOCKADDR_IN6, 28 bytes).
// A source address (FI_SOURCE, or hints) keeps the entry of the interface
// that owns it, and the wildcard address gets one entry of domain "tcp"
// and fabric "TCP-IP"; a destination alone keeps the entry of the
// interface the kernel routes it from. Unlike C, GetInfo filters by the
// fabric, domain and address format of hints, and declines a source
// address no interface has.
//
// Entries offer FI_MSG and FI_RMA with their direction bits, 128 bytes of
// inject, 4 iovecs per operation (and per RMA), 8 bytes of remote CQ data,
// queues of 256, unbounded message sizes (math.MaxInt), strict ordering,
// FI_THREAD_SAFE, and no MR mode bits: MR keys are the application's and
// RMA addresses are offsets. There is no FI_TAGGED and no FI_EP_RDM:
// tcp;ofi_rxm, the RDM layering over these endpoints, is not implemented
// yet, and GetInfo's ENODATA says so.
//
// # Objects and progress
//
// A fabric opens event queues and domains; a domain opens completion
// queues and counters and registers memory. They are the framework's
// software queues, counters and MR table (internal/provutil); a domain has
// no address vectors (FI_EP_MSG endpoints take none). Every object holds a
// reference on its parent, so closing a fabric with a domain or EQ open,
// or a domain with a CQ, counter or MR open, returns fi.EBUSY, as
// fi_close(3) says. Like C, entries report FI_PROGRESS_AUTO for control
// and data; until endpoints exist, nothing needs progress and the provider
// starts no goroutine.
//
// # Connection private data
//
// Connect, Accept and Reject carry at most 256 bytes of private data,
// the C provider's limit. gofabric refuses more with fi.EINVAL rather than
// truncate it silently as the C tcp provider does, and refuses an incoming
// CM message that announces more, as libfabric's newer xnet code does.
//
// # Environment
//
// The provider reads these variables (fi_info -e lists them) when GetInfo
// runs and when a fabric opens; a fabric keeps what it read. A value that
// does not parse, or is out of range, makes GetInfo and OpenFabric fail
// with fi.EINVAL naming the variable.
//
//   - FI_TCP_IFACE: the one interface to use ("eth0"). GetInfo offers only
//     its addresses (C adds the loopback addresses anyway), and none when
//     no such interface is up.
//   - FI_TCP_PORT_LOW_RANGE, FI_TCP_PORT_HIGH_RANGE: the range of local
//     ports passive endpoints bind to, 1 to 65535, both set or neither;
//     unset, the kernel picks an ephemeral port.
//   - FI_TCP_NODELAY: whether the provider's sockets get TCP_NODELAY
//     (default yes).
//   - FI_TCP_CONN_TIMEOUT: gofabric's own, with no C counterpart: the
//     milliseconds a Connect may take, from the TCP connect to the peer's
//     CM response, before it fails with fi.ETIMEDOUT on the event queue;
//     0 (the default) leaves it to the kernel and the peer.
package tcp
