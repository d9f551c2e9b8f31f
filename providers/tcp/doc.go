// Package tcp is gofabric's tcp provider: connected (FI_EP_MSG) endpoints
// over TCP sockets that speak the wire format of libfabric 1.17's tcp
// provider (fi_tcp(7)), so that Go and C peers connect to each other and
// exchange messages and RMA. Importing the package registers it with
// fi.Register under libfabric's name, "tcp", and rxm layered over it
// (providers/rxm) under C's name for that layering, "tcp;ofi_rxm": the
// reliable unconnected (FI_EP_RDM) endpoints, which speak C's ofi_rxm
// protocol over this provider's connections. providers/all imports it.
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
// MSG entries offer FI_MSG and FI_RMA with their direction bits, 128 bytes
// of inject, 4 iovecs per operation (and per RMA), 8 bytes of remote CQ
// data, queues of 256, unbounded message sizes (math.MaxInt), strict
// ordering, FI_THREAD_SAFE, and no MR mode bits: MR keys are the
// application's and RMA addresses are offsets.
//
// The FI_EP_RDM entries of each address are tcp;ofi_rxm's (see RDM
// endpoints below). GetInfo lists them before the MSG ones, as C does:
// the provider's priority (fi.Prioritizer) is below the default, so it is
// asked after the providers of default priority, tcp;ofi_rxm among them
// (the providers of equal priority go by name).
//
// Hints may ask for what C takes, and the entries then carry the hints'
// values, as C's do: deeper or shallower queues (tx_attr.size up to 1024
// and rx_attr.size up to 65536), and default operation flags
// (tx_attr.op_flags: FI_INJECT, FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE,
// FI_DELIVERY_COMPLETE, FI_COMMIT_COMPLETE, FI_COMPLETION;
// rx_attr.op_flags: FI_COMPLETION). An endpoint's queues are sized from
// its Info when it opens (beyond the maxima: fi.EINVAL) and never grow.
// The default flags apply to the calls that take none (Send, Recv, Read,
// Write...): a completion level as described under Data transfer;
// FI_COMPLETION reports under FI_SELECTIVE_COMPLETION; FI_INJECT makes
// every send an inject (its buffer is the application's again when the
// call returns), so sends are limited to the inject size (fi.EINVAL
// beyond; C ignores FI_INJECT there). With nil hints gofabric reports no op flags and queues of 256,
// where C reports its full op flag set and a receive queue of 65536.
//
// # Objects
//
// A fabric opens event queues and passive endpoints (ep.OpenPassive) and
// domains; a domain opens completion queues, counters, address vectors
// (sockaddrs with a port) and endpoints (ep.Open) and registers memory.
// Queues, counters, AVs and the MR table are the framework's (kit).
// Every object holds a reference on its parent, so closing a fabric with a
// domain, EQ or passive endpoint open, or a domain with a CQ, counter, MR
// or endpoint open, returns fi.EBUSY, as fi_close(3) says.
//
// # Connections
//
// A passive endpoint binds its socket when it opens (Name gives the port
// at once; SetName rebinds it before Listen) and listens from Listen on.
// Each accepted socket must deliver a valid CM request (docs/wire-tcp.md,
// §2.3) within FI_TCP_CONN_TIMEOUT, or it is closed without an event; a
// valid one becomes an eq.ConnReq whose Info.Handle names it. Opening an
// endpoint from that Info and calling Accept sends the answer and queues
// eq.Connected at once, as C does; Reject sends the reject with its data
// and closes the socket, and the connecting side gets an *eq.EQError with
// fi.ECONNREFUSED and the data in ErrData. The backlog of requests
// reported and not yet accepted or rejected (ep.BacklogSetter) is by
// default the kernel's accept queue, net.core.somaxconn (4096 since Linux
// 5.4), which is also the listen(2) backlog (C passes 4096 and ignores
// FI_BACKLOG): a burst of connections the kernel queued is reported in
// full (1,000 clients connecting at once all connect). Requests beyond a
// backlog the application set, and those pending when the passive
// endpoint closes, are rejected without data, and with a reject code
// that tells a gofabric requester which (docs/wire-tcp.md, §2.9: a field
// of the reject that C 1.17 ignores, so that a C requester sees the
// plain reject it always did).
//
// A listener reads the requests of at most 256 accepted sockets at once.
// When that many wait, it closes the oldest that has sent nothing (or
// only part of a request) for a second, and while none has, it leaves the
// next connections in the kernel's queue; so sockets that connect and
// send nothing hold at most 256 descriptors and goroutines per listener,
// and clients behind a flood of them still connect.
//
// Connect returns at once; a goroutine dials, sends the request and reads
// the answer, bounded by the connect timeout, and queues eq.Connected or
// an error event. Connect and Accept need an enabled endpoint. Shutdown
// writes what the socket takes of the queued sends, shuts the socket down
// and queues the endpoint's one eq.Shutdown; the peer gets its
// eq.Shutdown when it sees the end of the stream (so does a peer whose
// process died). ep.ConnState enforces the fi_cm(3) state rules: exactly
// one terminal event per endpoint.
//
// # Connection failures
//
// The error event of a failed attempt (*eq.EQError) carries the code, the
// socket's errno in ProvErrno where a system call failed (0 otherwise),
// a reject's data in ErrData, and in Reason (eq.ConnReason, gofabric's
// own, the same on every provider) why it failed:
//
//	cause                                       Err            ProvErrno  Reason
//	the peer's application rejected (data kept) ECONNREFUSED   0          ReasonRejected
//	the peer's backlog of requests was full     ECONNREFUSED   0          ReasonBacklogFull
//	nothing listens (the kernel's TCP reset)    ECONNREFUSED   111        ReasonNoListener
//	the listener closed with the request        ECONNREFUSED   0          ReasonNoListener
//	no answer within the connect timeout        ETIMEDOUT      0          ReasonTimedOut
//	the kernel's SYN retries ran out first      ETIMEDOUT      110        ReasonTimedOut
//	no route (an ICMP unreachable, or none      ENETUNREACH,   101, 113   ReasonUnreachable
//	  locally)                                  EHOSTUNREACH
//	a reset, or a malformed or unexpected       ECONNRESET,    errno, 0   ReasonTransport
//	  answer                                    EIO, ...
//
// Rejects from a C peer carry no reason, and arrive as ReasonRejected,
// with their data; the backlog-full and closing rejects come from
// gofabric passive endpoints (they say so in the reject, §2.9). A failed
// Accept (the answer could not be sent) is ReasonTransport. The
// endpoint's state (below) is ep.CMRejected after a reject and
// ep.CMFailed after the other failures.
//
// # Connection options and state
//
// MSG endpoints implement ep.Options (fi_setopt, fi_getopt):
//
//   - ep.OptLevelEndpoint: FI_OPT_CM_DATA_SIZE, 256, read-only, as C's
//     tcp; setting it, and every other option of the level
//     (FI_OPT_MIN_MULTI_RECV included: the entries do not offer
//     FI_MULTI_RECV), gives fi.ENOPROTOOPT.
//   - ep.OptLevelCM (gofabric's own level; C 1.17 has no such options):
//     ep.OptConnTimeout, the milliseconds Connect waits for the peer's
//     answer (at least 1; default FI_TCP_CONN_TIMEOUT's, 30000);
//     ep.OptConnRetries, the SYN retransmissions of the connecting socket
//     (TCP_SYNCNT, 1 to 127; default the kernel's net.ipv4.tcp_syn_retries,
//     6, about 127 s, so that the timeout ends the attempt first); and
//     ep.OptConnState, the state, read-only (fi.ENOPROTOOPT on set). The
//     two settable ones are set before Connect: after it, or on an
//     endpoint opened from a connection request, SetOpt gives
//     fi.EOPBADSTATE. Values out of range give fi.EINVAL.
//
// Every option of a closed endpoint gives fi.EBADF. Passive endpoints
// answer GetOpt for FI_OPT_CM_DATA_SIZE (256, as C's tcp does on a
// passive endpoint) and ep.OptConnState, and refuse SetOpt with
// fi.ENOPROTOOPT (C: FI_ENOSYS).
//
// Both implement ep.Stater, the state an application can read (ep.State,
// or GetOpt of ep.OptConnState): an MSG endpoint goes from ep.CMIdle
// (ep.CMReqReceived when opened from a request) through ep.CMConnecting
// or ep.CMAccepting to ep.CMConnected, or to ep.CMRejected or
// ep.CMFailed; then ep.CMShutdownLocal, ep.CMShutdownRemote,
// ep.CMDisconnected; and ep.CMClosed. A passive endpoint is ep.CMIdle,
// ep.CMListening, ep.CMClosed. The state moves before the event that
// reports the move is queued: an application that has read eq.Connected
// reads ep.CMConnected.
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
// FI_REMOTE_CQ_DATA, FI_DELIVERY_COMPLETE, FI_TRANSMIT_COMPLETE and
// FI_COMMIT_COMPLETE (all three wait for the peer's ACK, which it sends
// once the message is in the posted receive buffer, as in C; injects never
// wait for one). Completions carry FI_SEND|FI_MSG,
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
// queue, tx_attr.size or rx_attr.size deep, is full). The sockets of a
// domain's connections are registered, edge-triggered, in one epoll
// instance per domain (internal/sockpoll.Group; C 1.17 keeps one per CQ
// wait object), and a connection costs no descriptor but its socket.
// Reading a CQ, counter or EQ runs its domains' progress: one epoll_wait
// with a zero timeout, then the progress (non-blocking reads and writes of
// the socket, which the endpoint owns outside the Go netpoller) of the
// connections that are ready or have work of their own (a Resume, a
// receive side that waited for transmit room, a stall watch due), so that
// a busy-polling application pays one system call per look, however many
// idle connections are bound, and no thread wakes for an arriving message.
// A connection alone in its domain (a ping-pong's) is read at once instead,
// without asking epoll first, which saves a message and its answer that
// system call; not while its sends wait for room or its messages stream in
// (the socket ran dry within the last one), when reading at every look
// would take the socket's lock often enough to slow the stream, and not
// the connections of a layer above (rxm's, in dynamic receive mode).
// When the application stopped reading its queues (the goroutine looks
// whether it still does a millisecond after it last looked, then less and
// less often, up to 16 ms apart, while it keeps reading: each look wakes a
// thread), or is about to block in SRead or Wait, one goroutine per domain
// waits on the epoll instance (in the netpoller) and runs the progress of
// the connections that become readable, or writable while sends wait for
// room; it serves passive RMA targets and blocked readers, and ends with
// the domain's last connection. Endpoints in dynamic receive mode (see
// Layering), the connections of tcp;ofi_rxm, whose entries report
// FI_PROGRESS_MANUAL data progress as C's do, are served by that goroutine
// only while a reader of theirs blocks (what it finds for them otherwise
// waits for the layer's next read): their data moves when the layer reads
// their queues or blocks in them, and a busy-polling application is never
// interrupted by those looks. A reader blocked in CQ.SRead, Counter.Wait or
// EQ.SRead hands over every connection of the endpoints bound to that queue
// or counter, for as long as it blocks, whatever other threads poll
// meanwhile: those that come up after it blocked included, so that a server
// that only ever waits in SRead gets a new peer's first message. While a
// reader blocks, the goroutine watches again right after each progress
// rather than a millisecond later (a 1 MiB rendezvous round trip between
// two readers blocked in SRead took 3.3 ms with that pause, 0.5 to 1 ms
// without). A queue read waits for progress the goroutine is running, so
// that it finds what that progress completed.
// A message that finds no posted receive waits in the socket (TCP
// back-pressure) until one is posted.
//
// # RDM endpoints (tcp;ofi_rxm)
//
// FI_EP_RDM endpoints are rxm's (providers/rxm): a utility provider that
// opens this provider's FI_EP_MSG endpoints through the public API, as
// C's ofi_rxm opens C's tcp, and speaks rxm's protocol over them
// (docs/wire-tcp.md, §3), so that Go and C RDM peers talk. This package
// registers it as rxm.Over(tcp, "tcp;ofi_rxm"); the rxm package's doc has
// its entries, its connections and what it implements. This provider's
// own GetInfo offers FI_EP_MSG entries only, and its OpenEndpoint refuses
// an FI_EP_RDM Info with fi.EINVAL.
//
// # Layering (what providers/rxm uses)
//
// A utility provider layered over FI_EP_MSG endpoints, as C's rxm over
// tcp, finds four extensions by type assertion; none changes GetInfo's
// entries, the wire of plain FI_EP_MSG endpoints or their interop with C:
//
//   - kit.DynRecv (C's OFI_OPS_DYNAMIC_RBUF): SetDynRecv before Enable
//     puts an endpoint in dynamic receive mode. Each incoming message's
//     tcp header and first prefixLen payload bytes go to the handler,
//     which says where the rest goes (placed straight from the socket),
//     discards it, or holds the connection with fi.EAGAIN until Resume.
//     Each message completes on the endpoint's receive CQ with the
//     handler's context (an error entry when the connection loses it
//     half way); a delivery-complete message is acknowledged once
//     placed. Data progress is manual (see Progress), and the stall
//     watch applies: a peer that owes the connection data (the rest of
//     a message the handler placed, the responses to RMA reads such as
//     a rendezvous's) and delivers no byte of it for
//     FI_TCP_STALL_TIMEOUT (default 30 s) loses it, and what it held
//     completes with fi.ETIMEDOUT error entries. A slow peer that keeps
//     delivering is not, however long the transfer; time the connection
//     waits for its own side (a held message, no transmit room) does not
//     count. C's rxm waits for ever.
//   - Tagged sends: an endpoint whose Info has FI_TAGGED (which no entry
//     offers: the layer asks for it) implements ep.Tagged's sends in
//     rxm's raw tagged form (op 0 with the tag flag, docs/wire-tcp.md
//     §3.4), and in dynamic receive mode receives that form; tagged
//     receives are fi.ENOSYS.
//   - ConnTimeout on the fabric: FI_TCP_CONN_TIMEOUT, with which rxm
//     bounds its retries of refused connections.
//   - Alive on the endpoint: whether the connection may still carry data
//     (the peer's end of stream counts before progress has read it).
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
//   - FI_TCP_CONGESTION: gofabric's own: the TCP congestion control of
//     every connection (TCP_CONGESTION in tcp(7)), one of the names in
//     net.ipv4.tcp_available_congestion_control; unset, the system's.
//     A name the kernel does not offer makes GetInfo and OpenFabric fail
//     with fi.EINVAL; one this process may not set (an unprivileged
//     process may set only net.ipv4.tcp_allowed_congestion_control's) is
//     logged as a warning and the connection keeps the system's.
//   - FI_TCP_CONN_TIMEOUT: gofabric's own, with no C counterpart: the
//     milliseconds a connection attempt may take, from the TCP connect to
//     the peer's CM answer, before it fails with fi.ETIMEDOUT on the event
//     queue (unless the endpoint sets its own, ep.OptConnTimeout), and
//     that an accepted socket has to deliver its request; how
//     long tcp;ofi_rxm retries a refused connection before a send reports
//     it; default 30000, at least 1.
//   - FI_TCP_USER_TIMEOUT: gofabric's own (C 1.17 sets no such bound): the
//     milliseconds an established connection survives a peer that stops
//     answering, a cut link or a dead host. Every connection gets
//     TCP_USER_TIMEOUT (tcp(7)) of that much, which fails it once data
//     it sent has gone unacknowledged that long, and keepalive probes
//     after a third of it of silence and then every third (whole seconds,
//     at least one), so that an idle connection finds out too, within
//     the timeout (2 s at the least). The connection then fails: its
//     pending operations complete with fi.ETIMEDOUT error entries and an
//     FI_EP_MSG endpoint gets eq.Shutdown. Default 30000; 0 sets nothing
//     (and turns off Go's keepalive), leaving the kernel's limits: about
//     15 minutes of retransmissions. Each process reads its own
//     environment, so a test can give one side a short bound.
//   - FI_TCP_STALL_TIMEOUT: gofabric's own: the milliseconds the peer of
//     a connection in dynamic receive mode (tcp;ofi_rxm's) may owe it
//     data without delivering a byte of it (see Layering above); default
//     30000, 0 waits for ever.
package tcp
