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
// # Objects
//
// A fabric opens event queues and passive endpoints (ep.OpenPassive) and
// domains; a domain opens completion queues, counters and endpoints
// (ep.Open) and registers memory. Queues, counters and the MR table are
// the framework's (internal/provutil); a domain has no address vectors.
// Every object holds a reference on its parent, so closing a fabric with a
// domain, EQ or passive endpoint open, or a domain with a CQ, counter, MR
// or endpoint open, returns fi.EBUSY, as fi_close(3) says.
//
// # Connections
//
// A passive endpoint binds its socket when it opens (Name gives the port
// at once; SetName rebinds it before Listen) and listens from Listen on.
// Each accepted socket must deliver a valid CM request (§2.3 of the wire
// spec) within FI_TCP_CONN_TIMEOUT, or it is closed without an event; a
// valid one becomes an eq.ConnReq whose Info.Handle names it. Opening an
// endpoint from that Info and calling Accept sends the answer and queues
// eq.Connected at once, as C does; Reject sends the reject with its data
// and closes the socket, and the connecting side gets an *eq.EQError with
// fi.ECONNREFUSED and the data in ErrData. Requests beyond the backlog
// (ep.BacklogSetter, default ep.DefaultBacklog) and those pending when the
// passive endpoint closes are rejected without data.
//
// Connect returns at once; a goroutine dials, sends the request and reads
// the answer, bounded by FI_TCP_CONN_TIMEOUT, and queues eq.Connected or
// an error event: fi.ECONNREFUSED (rejected, or nothing listening),
// fi.ETIMEDOUT, or the socket's error. Connect and Accept need an enabled
// endpoint. Shutdown writes what the socket takes of the queued sends,
// shuts the socket down and queues the endpoint's one eq.Shutdown; the
// peer gets its eq.Shutdown when it sees the end of the stream (so does a
// peer whose process died). ep.ConnState enforces the fi_cm(3) state rules:
// exactly one terminal event per endpoint.
//
// Connect, Accept and Reject carry at most 256 bytes of private data, the
// C provider's limit. gofabric refuses more with fi.EINVAL rather than
// truncate it silently as the C tcp provider does (fi_cm(3) allows
// either), and refuses an incoming CM message that announces more, as
// libfabric's newer xnet code does.
//
// # Data transfer
//
// Send, Inject, SendData, InjectData, the V and Msg forms, Recv, RecvV,
// RecvMsg, and RMA Read, Write, WriteData and InjectWrite(Data), with the
// flags FI_COMPLETION (under FI_SELECTIVE_COMPLETION), FI_INJECT,
// FI_REMOTE_CQ_DATA, FI_DELIVERY_COMPLETE and FI_TRANSMIT_COMPLETE (both
// wait for the peer's ACK, as in C). Completions carry FI_SEND|FI_MSG,
// FI_RECV|FI_MSG (with FI_REMOTE_CQ_DATA and the data when sent),
// FI_RMA|FI_READ, FI_RMA|FI_WRITE, and at the target of a write with data
// FI_RMA|FI_REMOTE_WRITE|FI_REMOTE_CQ_DATA. A message longer than the
// posted buffer fills it and completes with an fi.ETRUNC error entry whose
// OLen is the excess; the connection goes on (C drops it). Receives may be
// posted from the endpoint's opening on; sends need eq.Connected
// (fi.ENOTCONN before, fi.ESHUTDOWN after).
//
// Writes always ask for the target's ACK, so a write completes once the
// data is placed. The target checks every RMA against its registrations
// (key, range, FI_REMOTE_READ or FI_REMOTE_WRITE); the 1.17 protocol has
// no error reply, so a refused RMA, like any malformed or oversize header,
// makes the target drop the connection, as C does: no memory is touched,
// and the initiator's pending operations, that RMA included, complete with
// error entries. When a connection ends every pending operation, posted
// receives included, completes with an fi.ECANCELED error entry, as in C.
//
// # Progress
//
// Entries report FI_PROGRESS_AUTO, as C's do, and it holds: data moves
// whether or not the application calls in. Data calls never block and do
// not allocate: an operation goes into a fixed-size queue entry and is
// written at once as far as the socket takes it (fi.EAGAIN when the
// queue of 256 is full). Reading a CQ, counter or EQ runs progress on its
// endpoints: non-blocking reads and writes of the socket, which the
// endpoint owns outside the Go netpoller, so that a busy-polling
// application pays one system call per look and no thread wakes for an
// arriving message. When the application has not read its queues for a
// millisecond, or is about to block in SRead or Wait, a goroutine per
// connection arms the socket in an epoll instance of its own (in the
// netpoller) and runs progress when it is readable, or writable while
// sends wait for room; it serves passive RMA targets and blocked readers.
// A message that finds no posted receive waits in the socket (TCP
// back-pressure) until one is posted.
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
//     milliseconds a connection attempt may take, from the TCP connect to
//     the peer's CM answer, before it fails with fi.ETIMEDOUT on the event
//     queue, and that an accepted socket has to deliver its request;
//     default 30000, at least 1.
package tcp
