// Package rxm is gofabric's ofi_rxm: the utility provider that gives
// reliable datagram endpoints (FI_EP_RDM) over a core provider's
// connected ones (FI_EP_MSG), as C libfabric's prov/rxm does, reaching
// the core only through the public API (fi, eq, ep) and building its own
// objects from the provider kit (kit). It speaks C ofi_rxm 1.17's wire
// protocol (internal/rxmwire; docs/wire-tcp.md, §3), so that Go and C
// peers interoperate.
//
// It mirrors fi_getinfo(3), fi_fabric(3), fi_domain(3), fi_av(3),
// fi_cq(3), fi_cntr(3), fi_mr(3), fi_endpoint(3), fi_msg(3), fi_tagged(3),
// fi_rma(3) and fi_atomic(3) for its layering. Its FI_EP_RDM endpoints open a
// connection to a peer on the first send (which returns fi.EAGAIN until
// it is up) and accept the peers' with C's connect and accept records.
// Messages up to the eager limit go eager, behind the 64-byte rxm header;
// longer ones up to the SAR limit in segments of eager-limit bytes (C's
// SAR: each segment an rxm packet with the message's header, reassembled
// in order into the matched receive, or kept as unexpected until one
// matches); longer ones still by C's read-based rendezvous: the sender
// registers its buffers with the core domain under rxm's keys
// (0x80000000 | n) and sends their descriptor, the receiver reads them
// into the matched receive with the core's RMA reads and answers
// read-done, on which the send completes; the receive completes when
// read-done is sent. A receive
// too small for its message completes with an fi.ETRUNC error entry
// (Len placed, OLen lost), eager, SAR and rendezvous alike. RMA passes
// through to the peer's connection with the application's keys. Atomics
// (FI_ATOMIC, granted only when hints ask for it, as C) go as C's atomic
// request and response (docs/wire-tcp.md, §3.11): the target checks the
// key, range and rights against the registrations its domain recorded,
// applies the operation in software (kit.ApplyAtomicExclusive, over
// verbs too: device and CPU atomics are never mixed) and answers, and the
// initiator completes when the answer comes, so every atomic is delivery
// complete; the valid queries answer as C's rxm built with compiler
// atomics (no double complex, long double, int128). rxm's
// own operations that the core refuses for now (fi.EAGAIN) wait in
// their connection's deferred queue and go, in order, on a later
// progress. Reading an rxm completion queue or counter reads the core's
// completion queue (manual progress), and its connections' event queue
// at every read while a connection is being set up, else every 10 ms
// (C's FI_OFI_RXM_CM_PROGRESS_INTERVAL); a goroutine per endpoint waits
// for the peers' connection requests on the listener's own event queue
// and accepts them at once. A blocked reader waits on the core
// completion queue when the queue drives one endpoint (waking every
// 10 ms for the connections' events), and runs progress every
// millisecond when it drives several.
//
// Over a core whose FI_EP_MSG endpoints offer dynamic receive buffers
// (kit.DynRecv: tcp) and need no registered buffers, rxm posts no bounce
// receives: the core reads each message's rxm header, rxm matches it and
// says where the payload goes (the matched receive, or a pooled buffer
// while unexpected: at most 256 of them, then the connection waits),
// tagged messages up to the eager limit go in the core's raw tagged form
// without an rxm header, and there is no SAR; this is C's rxm over tcp
// (docs/wire-tcp.md §3). Over other cores each connection keeps bounce
// receives posted.
//
// Over a core that needs registered buffers (FI_MR_LOCAL, as verbs), rxm
// registers its bounce receives and transmit buffers once, in slabs, and
// copies eager messages and segments through them (the application's
// buffers go directly only when it gave descriptors for them all); the
// rendezvous and RMA use the application's descriptors when given, and
// register its buffers for the one operation otherwise. Addresses in
// rendezvous descriptors are virtual when the core has FI_MR_VIRT_ADDR,
// and keys are the core's (verbs: rkeys). A peer's write with remote CQ
// data that consumes a bounce receive (verbs' write with immediate
// data) completes on the receive queue. The inject size is the core's
// less the header (192 over Soft-RoCE, as C's), emulated by a copy.
//
// A refused connection attempt is tried again (the sends return
// fi.EAGAIN) with a pause that doubles from 1 ms to 1 s, for as long as
// the core fabric's ConnTimeout method says (tcp: FI_TCP_CONN_TIMEOUT),
// or 30 seconds over a core fabric without one; then the next send
// returns the error, once.
//
// # Layering
//
// [Over] makes rxm over one core provider, under the name applications
// select it by ("tcp;ofi_rxm" in libfabric's naming). The package
// registers nothing itself: a program or test registers what it wants,
//
//	tcp, _ := fi.LookupProvider("tcp")
//	fi.Register(rxm.Over(tcp, "tcp;ofi_gorxm"))
//
// For each FI_EP_MSG entry the core offers under the hints rxm derives
// from the application's (C's rxm_info_to_core), rxm offers one FI_EP_RDM
// entry (C's rxm_info_to_rxm): rxm's capabilities, queue depths and
// protocol, and the core's addresses, fabric and domain, message orders
// and limits. A fabric, domain or memory region of rxm opens the core's
// beneath it; rxm's event queues, completion queues, counters and
// address vectors are its own.
//
// Multi-receive buffers (FI_MULTI_RECV) are C's too: multirecv.go.
//
// gofabric's rxm differs from C's in what it lacks (FI_HMEM,
// collectives, the write-based rendezvous,
// the pass-through path, automatic data progress, remote-read counts of
// the peers' RMA reads: only their atomics count there)
// and in granting FI_SOURCE and FI_DIRECTED_RECV without being asked.
//
// # Environment
//
// rxm reads C's variables, when GetInfo runs and when a fabric opens:
//
//   - FI_OFI_RXM_BUFFER_SIZE: the eager limit, 16384 by default (104 to
//     2^31-1); both sides of a connection must agree (the connect record
//     says it), and each connection keeps receives of 64 bytes more
//     posted: 8, or FI_OFI_RXM_MSG_RX_SIZE over FI_MR_LOCAL cores.
//   - FI_OFI_RXM_TX_SIZE, FI_OFI_RXM_RX_SIZE: the queue depths of RDM
//     endpoints when hints ask none (2048), and, when set, the deepest
//     they may ask for (16384 and 65536 otherwise).
//   - FI_OFI_RXM_MSG_TX_SIZE, FI_OFI_RXM_MSG_RX_SIZE: the depths asked of
//     the core's endpoints (128); over FI_MR_LOCAL cores each connection
//     keeps MSG_RX_SIZE bounce receives posted, as C's rxm does.
//   - FI_OFI_RXM_SAR_LIMIT: the largest message sent in segments, 8
//     times the eager limit by default (none when the eager limit is
//     above 65535, which a segment's size field cannot carry).
//   - FI_OFI_RXM_USE_RNDV_WRITE, FI_OFI_RXM_ENABLE_PASSTHRU: set to a
//     true value, rxm offers nothing and says why (not implemented).
//   - FI_OFI_RXM_EAGER_LIMIT, _COMP_PER_PROGRESS, _USE_SRX,
//     _CM_PROGRESS_INTERVAL, _CQ_EQ_FAIRNESS, _DATA_AUTO_PROGRESS,
//     _ENABLE_DYN_RBUF, _ENABLE_DIRECT_SEND, _DEF_WAIT_OBJ,
//     _DEF_TCP_WAIT_OBJ: defined for fi_info -e, and without effect.
//
// A value that is not a number, or out of range, makes GetInfo and
// OpenFabric fail with fi.EINVAL naming the variable.
package rxm
