// Package tcp is gofabric's tcp provider: connected (FI_EP_MSG) endpoints
// over TCP sockets that speak the wire format of libfabric 1.17's tcp
// provider (fi_tcp(7)), and reliable unconnected (FI_EP_RDM) endpoints that
// speak its ofi_rxm layering over those ("tcp;ofi_rxm"), so that Go and C
// peers connect to each other and exchange messages, tagged messages and
// RMA. Importing the package registers it with fi.Register under
// libfabric's name, "tcp"; providers/all imports it.
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
// Every address also gets an FI_EP_RDM entry, listed before the MSG ones as
// C lists them, with provider name "tcp;ofi_rxm" and C's attributes: FI_MSG,
// FI_TAGGED and FI_RMA, 64 bytes of inject, queues of 2048, protocol
// FI_PROTO_RXM, data progress FI_PROGRESS_MANUAL, completion order
// FI_ORDER_NONE; FI_SOURCE and FI_DIRECTED_RECV when asked for. Unlike C
// they do not offer FI_MULTI_RECV, which is not implemented: hints asking
// for it (a cap, or rx_attr.op_flags) get no RDM entry, and the reason
// says so.
//
// Hints may ask for what C takes, and the entries then carry the hints'
// values, as C's do: deeper or shallower queues (tx_attr.size up to 1024
// and rx_attr.size up to 65536 on FI_EP_MSG; 16384 and 65536 on
// FI_EP_RDM), and default operation flags (tx_attr.op_flags: FI_INJECT,
// FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE,
// FI_COMPLETION, and FI_COMMIT_COMPLETE on FI_EP_MSG only;
// rx_attr.op_flags: FI_COMPLETION). An endpoint's queues are sized from
// its Info when it opens (beyond the maxima: fi.EINVAL) and never grow.
// On an RDM endpoint rx_attr.size bounds the posted receives of each kind
// (untagged, tagged); tx_attr.size is nominal: sends get fi.EAGAIN once
// 256 operations wait on one peer's connection or 256 rendezvous sends
// wait for their read-done, whatever it says. The default flags apply to
// the calls that take none (Send, Recv, Read, Write...): a completion
// level as described under Data transfer; FI_COMPLETION reports under
// FI_SELECTIVE_COMPLETION; FI_INJECT makes every send an inject (its
// buffer is the application's again when the call returns), so sends are
// limited to the inject size (fi.EINVAL beyond; C ignores FI_INJECT
// there). With nil hints gofabric reports no op flags and queues of 256,
// where C reports its full op flag set and a receive queue of 65536.
//
// # Objects
//
// A fabric opens event queues and passive endpoints (ep.OpenPassive) and
// domains; a domain opens completion queues, counters, address vectors
// (for RDM endpoints: sockaddrs with a port) and endpoints (ep.Open) and
// registers memory. Queues, counters, AVs and the MR table are the
// framework's (kit).
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
// endpoint closes, are rejected without data.
//
// A listener reads the requests of at most 256 accepted sockets at once.
// When that many wait, it closes the oldest that has sent nothing (or
// only part of a request) for a second, and while none has, it leaves the
// next connections in the kernel's queue; so sockets that connect and
// send nothing hold at most 256 descriptors and goroutines per listener,
// and clients behind a flood of them still connect.
//
// Connect returns at once; a goroutine dials, sends the request and reads
// the answer, bounded by FI_TCP_CONN_TIMEOUT, and queues eq.Connected or
// an error event: fi.ECONNREFUSED, fi.ETIMEDOUT, or the socket's error. A
// refusal says who refused: nothing listening at the address (the kernel
// refused the TCP connect) has ProvErrno 111 (ECONNREFUSED, the socket's
// errno, which failed socket calls report in ProvErrno), a reject by the
// peer (its application, or its backlog full) ProvErrno 0 and the
// reject's data, if any, in ErrData. Connect and Accept need an enabled
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
// queue, tx_attr.size or rx_attr.size deep, is full). Reading a CQ,
// counter or EQ runs progress on its
// endpoints: non-blocking reads and writes of the socket, which the
// endpoint owns outside the Go netpoller, so that a busy-polling
// application pays one system call per look and no thread wakes for an
// arriving message. When the application has not read its queues for a
// millisecond, or is about to block in SRead or Wait, a goroutine per
// connection arms the socket in an epoll instance of its own (in the
// netpoller) and runs progress when it is readable, or writable while
// sends wait for room; it serves passive RMA targets and blocked readers.
// The connections of RDM endpoints, whose entries report FI_PROGRESS_MANUAL
// data progress as C's do, are handed to that goroutine only by a reader
// about to block: their data moves when the application reads its queues
// or blocks in them, and a busy-polling application is never interrupted
// by the millisecond look. A reader blocked in CQ.SRead, Counter.Wait or
// EQ.SRead hands over every connection of the endpoints bound to that
// queue or counter, for as long as it blocks, whatever other threads poll
// meanwhile: those a peer opens to the endpoint, or a send opens, after
// it blocked included, so that a server that only ever waits in SRead
// gets a new peer's first message. While a reader blocks, the goroutine
// watches again right after each progress rather than a millisecond
// later (a 1 MiB rendezvous round trip between two readers blocked in
// SRead took 3.3 ms with that pause, 0.5 to 1 ms without).
// A message that finds no posted receive waits in the socket (TCP
// back-pressure) until one is posted.
//
// # RDM endpoints (tcp;ofi_rxm)
//
// An RDM endpoint is ofi_rxm's protocol (docs/wire-tcp.md, §3) over this
// provider's own connections, as C layers it: a passive endpoint whose
// address is the endpoint's name (Name, SetName before Enable), and at most
// one connection per peer, opened by the first send to a peer with no
// connection, from the IP of the name, with rxm's connect record (the
// listening port and pid<<32|index), or accepted from the peer. The
// connection management runs on goroutines of its own: Enable starts
// listening, and requests are answered as rxm does: a record that fails
// C's checks is rejected with reason 1; a peer we are connecting to at the
// same time is accepted, or rejected with reason 2 ("already connected"),
// by comparing the two addresses. A request naming a peer we have a
// connection with replaces that connection when it is gone (the peer
// closed or died and came back); while it is alive the request is
// rejected with reason 2, whichever process the record names. C's rxm
// rejects it only when the record names the same process, and otherwise
// takes it for a restart and closes the live connection: a process on
// the peer's host could then take over the peer's connection by naming
// its address, and what was in flight on it was lost. A restarted peer
// whose old connection still looks alive (its host rebooted) is refused,
// and retries, until that connection fails (FI_TCP_USER_TIMEOUT).
//
// The first send to a peer with no connection returns bare fi.EAGAIN, and
// so do the next ones until the connection is up: retrying while reading
// the CQ, as fi_pingpong does, never stalls, because the connection does
// not wait for the application. An attempt that is refused (nothing
// listening yet, the peer's backlog or rxm refusing, or reset before the
// answer) is retried by a later send, after a pause that grows from 1 ms
// to 1 s, while the sends keep returning fi.EAGAIN, as C's rxm does while
// it connects; once FI_TCP_CONN_TIMEOUT has passed since the first
// attempt, or when an attempt fails otherwise (timed out after
// FI_TCP_CONN_TIMEOUT, unreachable), the next send returns that error
// (fi.ECONNREFUSED, fi.ETIMEDOUT) once, and the one after starts over.
// So 3,000 peers whose first sends reach one endpoint at once all get
// through, with no error reaching the application. A connection that ends
// (the peer closed or died, or broke the protocol) fails what was pending
// on it with fi.ECANCELED error entries (fi.ETIMEDOUT when it timed out),
// the rendezvous sends waiting for that peer included; other peers are
// not touched, and the next send to the peer opens a new connection.
//
// A peer cannot hold the endpoint's receives for ever: a connection that
// holds a posted receive (a rendezvous whose reads the peer must answer,
// or a message whose payload it stopped sending half way) and delivers no
// byte of it for FI_TCP_STALL_TIMEOUT (default 30 s) is dropped, and
// those receives complete with fi.ETIMEDOUT error entries. A slow peer
// that keeps delivering is not, however long the transfer; time the
// connection waits for the application (no receive posted, no buffer
// free) does not count. The watch runs with progress: from CQ reads, or
// from the connection's goroutine while a reader blocks. C's rxm waits
// for ever.
//
// Untagged messages of up to 16384 bytes (rxm's eager limit) go with the
// 64-byte rxm header, tagged ones in the raw tagged form (the tag in the
// tcp header, no rxm header); longer ones by rendezvous: the sender
// registers its buffers in the domain's MR table under rxm's keys
// (0x80000000 | a counter), sends a descriptor, and completes when the
// receiver has read the data with tcp RMA reads straight into its posted
// buffer and answered read-done. A receiving connection reads the rxm
// header first, matches it against the posted receives (tag and ignore
// mask, FI_DIRECTED_RECV by the connection's peer address, looked up in
// the AV), and places the payload straight into the matched buffer. A
// message no receive matches is kept, an eager one copied into one of up
// to 256 pooled 16 KiB buffers (more wait in their socket until a receive
// is posted), a rendezvous one as its descriptor, until a receive takes
// it. Completions carry FI_SOURCE addresses (CompletionQueue.ReadFrom)
// and remote CQ data.
//
// FI_DELIVERY_COMPLETE and FI_TRANSMIT_COMPLETE (on the call, or in
// tx_attr.op_flags) complete a send only once the peer has the message:
// an eager one carries tcp's delivery-complete flag and completes on the
// peer's ACK, which comes once the payload is in the matched receive
// buffer, or in the peer's own buffer when no receive was posted yet
// (fi_cq(3)); a rendezvous one completes on read-done, after the peer
// read the data into its buffer, whatever the flags. The receiving side
// ACKs every message that carries the flag once it has consumed it. C's
// rxm honours the flag on receipt, so this holds towards C peers; as a
// sender, C 1.17's rxm carries only FI_TRANSMIT_COMPLETE (every message
// of its connections asks for an ACK) and completes eager sends with
// FI_DELIVERY_COMPLETE once written (docs/wire-tcp.md, §3.10). Receives are matched in the order they were posted
// and messages of one peer in the order they were sent; completions of
// different messages may come in another order (a rendezvous receive
// completes when its reads do). RMA goes over the peer's connection as on
// MSG endpoints.
//
// Not implemented: SAR (rxm's segmentation, which C uses only with
// FI_OFI_RXM_ENABLE_DYN_RBUF=0), the write-based rendezvous
// (FI_OFI_RXM_USE_RNDV_WRITE=1), atomics, credits and FI_MULTI_RECV. A C
// peer configured for one of them gets its connection dropped at the first
// such packet; a peer whose eager limit (FI_OFI_RXM_BUFFER_SIZE) is not
// 16384 is refused at connection time, as C refuses it.
//
// A peer that breaks the protocol (a bad rxm header, a conn_id that is not
// ours, lengths that do not add up, a read-done for nothing we sent, a read
// or write outside what we registered) loses its connection and nothing
// else.
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
//     which says where the rest goes (placed straight from the socket,
//     as the RDM connections place a matched message), discards it, or
//     holds the connection with fi.EAGAIN until Resume. Each message
//     completes on the endpoint's receive CQ with the handler's context
//     (an error entry when the connection loses it half way); a
//     delivery-complete message is acknowledged once placed; the stall
//     watch (FI_TCP_STALL_TIMEOUT) and the manual data progress of the
//     RDM connections apply.
//   - Tagged sends: an endpoint whose Info has FI_TAGGED (which no entry
//     offers: the layer asks for it) implements ep.Tagged's sends in
//     rxm's raw tagged form (op 0 with the tag flag, docs/wire-tcp.md
//     §3.4), and in dynamic receive mode receives that form; tagged
//     receives are fi.ENOSYS.
//   - ConnTimeout on the fabric: FI_TCP_CONN_TIMEOUT, which bounds the
//     retries of refused connections.
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
//     queue, and that an accepted socket has to deliver its request; how
//     long an RDM endpoint retries a refused connection before a send
//     reports it; default 30000, at least 1.
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
//   - FI_TCP_STALL_TIMEOUT: gofabric's own: the milliseconds a peer of an
//     RDM endpoint may hold one of its posted receives without delivering
//     a byte of it (see RDM endpoints above); default 30000, 0 waits for
//     ever.
package tcp
