// Package shm is gofabric's shared-memory provider: reliable unconnected
// endpoints (FI_EP_RDM; fi_endpoint(3), fi_msg(3) with FI_MULTI_RECV,
// fi_tagged(3), fi_rma(3), fi_atomic(3)) between processes of one host and one user. Importing the
// package registers it with fi.Register under libfabric's name, "shm";
// providers/all imports it. Its memory layout is its own: it does not
// talk to C libfabric's shm provider.
//
// # Addresses
//
// Addresses are FI_ADDR_STR names, "fi_shm://" and 1 to 55 letters,
// digits or ".:_-". GetInfo's source address is "fi_shm://<pid>"; with
// FI_SOURCE, node and service name it instead ("fi_shm://node:service"),
// and without FI_SOURCE they name the destination; hints' SrcAddr and
// DestAddr are taken as they are. An endpoint opened with the default
// name gets "_1", "_2"... after the first one in a process; names are
// never reused within a process, so an address left in some AV never
// reaches a later endpoint. Name gives the name; SetName renames the
// endpoint before Enable. AV.Insert accepts the name of an endpoint that
// does not exist yet: sending to it returns fi.EAGAIN until it exists,
// then works. What a peer's closing, death or breakage does is in
// "Failures" below.
//
// # Regions
//
// Each endpoint owns an inbox, the file <name>.inbox (the name without
// its prefix), created with mode 0600 and O_EXCL and mapped shared, and
// a doorbell, the unix datagram socket <name>.bell beside it, both in
// the user's directory /dev/shm/gofabric-shm.<uid>. A peer that sends to
// it claims one of its 32 entries (compare-and-swap on a claim word) and
// owns that entry's ring of 256 slots of 256 bytes and four 16 KiB bounce
// chunks; the owner consumes. Everything a peer writes is validated
// before use (slot fields, lengths, chunk indexes, sequence): a peer that
// writes a malformed slot is cut off (its entry released, logged), never
// trusted, and the owner goes on. The owner removes its files when the
// endpoint closes; the files of an owner that died are removed by the
// next endpoint of that name and, once per process, when the first
// endpoint opens. Taking a name happens under a lock of the user's
// directory (flock), so that processes racing for a dead owner's name do
// not remove each other's files. An endpoint name held by a live process
// is refused with fi.EADDRINUSE, and so is one whose file belongs to
// another user, saying so.
//
// # Other users
//
// The user's directory has mode 0700 and belongs to the user, so no
// other user (root aside) can create, take or squat a name in it, map an
// inbox, or send to a doorbell: the kernel refuses another user's
// datagrams before they reach the endpoint, which spends nothing on
// them. The provider creates the directory when it is missing, makes it
// 0700 if it is not, and refuses to work in one that another user made
// first (fi.EADDRINUSE naming the directory and its owner; remove it as
// root): that user can keep this user's shm endpoints from opening, not
// reach them. Processes of the same user are trusted with each other's
// memory (they may read it with process_vm_readv anyway); what one of
// them writes into an inbox is still checked (see "Failures").
//
// # Protocols
//
// Up to 192 bytes (the inject size) a message travels inline in one slot
// and completes at once. From 193 bytes to 4 KiB (C 1.17's inject
// buffers) the sender copies it into a free bounce chunk of its entry,
// which the slot names, and it completes at once too; the receiver
// copies it out, or, with no receive posted, keeps it in the chunk
// (held) until one is, so that it waits aside like a small message. When
// no chunk is free (four held or streaming) such a message goes the way
// larger ones do. Larger messages are read by the receiver from
// the sender's memory with process_vm_readv (cross-memory attach: one
// copy) and complete when the receiver answers, which it does once the
// message is in a receive buffer. From 32 KiB on, a message that finds
// its receive posted (one segment, large enough; not a multi-receive
// buffer) is copied by both sides at once: the receiver grants the
// sender the second half of that buffer, and reads the first half while
// the sender writes the second with process_vm_writev (into that range
// only); a receiver that meets a later message from the sender before
// the sender started takes the grant back and reads all of it itself,
// so neither side ever waits for the other's progress. The receiver probes, when
// a peer first claims an entry, whether it may read that peer's memory;
// where it may not (ptrace rights missing, as in many containers, or
// FI_SHM_DISABLE_CMA set) messages are streamed instead through the
// bounce chunks of the entry (two copies), which never fails. RMA writes
// and reads are carried out by the target after it checked the key, the
// range and the right (FI_REMOTE_WRITE, FI_REMOTE_READ) against its
// registrations: with CMA above 192 bytes, else in inline pieces; a
// refused access completes at the initiator with an fi.EACCES error entry
// and touches nothing. Writes and reads complete when the target
// answers. Atomic operations (fi_atomic(3)) travel inline, one slot
// each, with at most 192 operand bytes (96 plus 96 compare bytes for the
// compare calls; the valid queries report the element counts, and the
// pairs C's shm lacks when built with compiler atomics, long double and
// double and long double complex, as unsupported); the target checks key,
// range and rights as for RMA (FI_REMOTE_READ for FI_ATOMIC_READ, both
// for the fetch and compare operations that write), applies them under
// one lock of the process, so atomics reaching different endpoints of a
// process are atomic with each other, and answers with the old values;
// they complete, fi_inject_atomic included, when the answer arrives,
// a refused access with fi.EACCES. FI_DELIVERY_COMPLETE, on a send call or as a default op
// flag, makes every message complete only once the receiver has it in a
// receive buffer (fi_cq(3)), as C's shm does: inline and bounce-buffer
// messages then ask the receiver for an answer too, which it sends when
// it placed them, not when it merely took them in while no receive was
// posted. The fi_inject calls ignore it (they have no completion), and
// FI_TRANSMIT_COMPLETE and FI_INJECT_COMPLETE change nothing: a message
// in the receiver's ring or bounce chunks no longer depends on the
// sender. Message order per peer is kept (FI_ORDER_SAS); tagged receives
// match tag under the ignore mask, and with FI_DIRECTED_RECV a receive's
// source address. CQ entries read with ReadFrom carry the sender's
// fi.Addr in the receiver's AV (FI_SOURCE), or fi.AddrUnspec
// (FI_ADDR_NOTAVAIL) when it is not there.
//
// # Multi-receive buffers
//
// An untagged receive of one segment posted with FI_MULTI_RECV
// (fi_recvmsg's flags, or FI_MULTI_RECV in rx_attr.op_flags, which the
// untagged calls then take; fi_msg(3)) takes message after message, as
// in C 1.17's shm: each goes at the next free offset, with no
// alignment, and completes on its own with the buffer's context,
// FI_RECV|FI_MSG, its length and eq.Completion.Buf, the part of the
// buffer it landed in (its offset is cap(buffer)-cap(Buf)). Once the
// space left is below the endpoint's FI_OPT_MIN_MULTI_RECV (SetOpt and
// GetOpt, fi_setopt(3); 4096 bytes unless set, C's value, taken by the
// buffers posted after it is set) or none is left, the buffer takes no
// more messages, and once the last message placed in it completed, an
// entry of its own releases it, as C's does: the buffer's context,
// FI_MULTI_RECV alone, length 0, no Buf; it is written even when the
// receive asked for no completion (FI_SELECTIVE_COMPLETION), and moves
// no counter. A message larger than the space left takes that space
// and completes with fi.ETRUNC (as in C; OLen is what did not fit),
// and the buffer is released after it. Messages that arrived before
// the buffer was posted go into it at once, in order. fi_cancel (and
// Close) releases a posted buffer with an fi.ECANCELED entry flagged
// FI_RECV|FI_MSG|FI_MULTI_RECV, once a message streaming into it
// (bounce chunks) completed. Tagged receives have no multi-receive form,
// as in C: fi_trecvmsg with FI_MULTI_RECV is fi.EINVAL, and the tagged
// calls ignore it as a default op flag; so is a buffer smaller than the
// minimum, an empty one, or one of several segments.
//
// # Progress and waiting
//
// Data progress is manual, as in C's shm: reading a CQ or counter moves
// the data of its endpoints (sending, receiving, answering RMA). A read
// that finds nothing pending costs a few atomic loads and takes no lock,
// so busy polling is cheap. SRead and counter waits sleep without
// spinning: the endpoint marks its inbox sleeping and waits on its
// doorbell through the Go netpoller; a sender that publishes to a
// sleeping inbox rings it. A sleeping sender whose messages wait for
// room (ring slots, bounce chunks) or for the receiver's first answer
// asks the receiver, in its entry, to ring it when it made some, so
// every message size completes whichever way either side waits. Several
// goroutines may wait on one endpoint's queues at once, and a reader
// already blocked on a queue also waits for endpoints enabled later. A
// blocked reader wakes at least once per FI_SHM_CHECK_INTERVAL (1 s) to
// check the endpoint's peers as a polling one does; idle, that is all
// the CPU it uses.
//
// Queues and counters opened with WaitObj fi.WaitFD (FI_WAIT_FD) have a
// descriptor to poll beside the application's own (eq.FDWaiter): after a
// successful TryWait (fi_trywait) the queue's watcher does what a blocked
// SRead does, on the doorbells, so data moves while the application
// sleeps in poll(2), and the descriptor becomes readable when an entry
// arrives.
//
// An endpoint may be closed while other goroutines wait on or read its
// queues: Close fails what is pending with fi.ECANCELED error entries,
// which a blocked SRead returns (fi.EAVAIL, then ReadErr) and which move
// a waiting counter's error count (Wait returns fi.EAVAIL); a reader with
// nothing to report waits on until its context ends, as with tcp and
// udp. Close never unmaps memory another goroutine may still look at:
// it retires the inbox (the mapping becomes private zero pages, the file
// goes away) and the garbage collector unmaps it once the endpoint is
// unreachable.
//
// # Failures
//
// Every endpoint checks its peers while the application reads its
// queues, at most every 100 ms (reading the clock every 256 polls that
// find nothing), and at least once per FI_SHM_CHECK_INTERVAL while a
// reader is blocked: a survivor sees a killed peer within about 100 ms
// when busy polling and within about one interval (1 s by default) when
// blocked in SRead or a counter Wait.
//
//   - A peer whose endpoint closed or whose process died: the operations
//     in flight to it (large messages, RMA) complete with fi.ECONNRESET
//     error entries, a receive it was streaming into fails with
//     fi.ECONNRESET, its entry in our inbox is freed, and the next send
//     to it returns fi.ECONNRESET when something may have been lost: an
//     operation in flight, or messages still in its ring (small messages
//     completed before the death may be lost: a send completes when it
//     is in the peer's ring, unless it asked for FI_DELIVERY_COMPLETE).
//     A peer that took everything sent to it before it closed lost
//     nothing, and that send goes to a new endpoint of the name, if any.
//     Later sends connect to a new endpoint of that name as soon as one
//     exists (fi.ECONNRESET while none does).
//   - Checked state: the owner of an inbox checks, besides every slot,
//     the words of each entry that the claimer writes once (claim, pid,
//     incarnation, ready) and its own words there (ring head, the
//     sequence word at the head, the CMA answer, the bounce chunks' busy
//     words, the active-peer bitmap, the header); a claimer checks the
//     words the owner writes in its entry (the head moves between what it
//     saw and its tail; a chunk is busy only while the slot naming it
//     waits in the ring). State that no correct side leaves there, as a
//     same-user process that scribbles over an inbox leaves it, ends in
//     an error on that peer within one check: the owner cuts the
//     claimer off and logs why (warn; a receive the claimer was streaming
//     into fails with fi.EIO), the claimer gives its entry up
//     (logged), and the claimer's operations in flight fail with
//     fi.ECONNRESET, its next send returns fi.ECONNRESET and the one
//     after connects afresh. An overwritten header is written again and
//     every claimer is cut off. Other peers are not affected. Garbage
//     that a correct side overwrites before anyone reads it (ring slots
//     ahead of the producer) does no harm and is not reported. Message
//     payload is not checksummed.
//
// # Attributes
//
// GetInfo takes in hints what C 1.17's shm takes in its transmit and
// receive attributes: the default op flags FI_COMPLETION,
// FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE
// (tx_attr.op_flags; FI_INJECT is declined, as in C), FI_COMPLETION and
// FI_MULTI_RECV (rx_attr.op_flags), and queues of 1 to 1024 entries, which the entry
// then reports as C's does (none and 1024 without hints). They are the
// defaults of the calls that take no flags (fi_endpoint(3)). tx_attr.size
// bounds the sends in flight that hold a transmit entry (those waiting
// for an answer, streaming, or queued behind one; an inline send that
// goes out at once holds none), rx_attr.size the posted receives of each
// kind (tagged and untagged): one more gets fi.EAGAIN. FI_MULTI_RECV is
// offered in caps and rx caps, as C's shm offers it. FI_HMEM, which C's
// shm offers, is declined with that reason; FI_ATOMIC is offered, as
// C's shm does, but not C's atomic ordering bits (the RMA ones of its
// msg_order are not advertised either).
//
// # Environment
//
//   - FI_SHM_DISABLE_CMA: as in C, never use cross-memory attach; copy
//     through the bounce chunks instead.
//   - FI_SHM_CHECK_INTERVAL (gofabric only): milliseconds a blocked
//     reader sleeps at most before it checks the endpoint's peers
//     (default 1000, at least 10). Shorter finds dead peers sooner and
//     wakes idle readers more often.
//
// # Limits
//
// One remote segment per RMA or atomic operation (rma_iov_limit 1), four
// local segments per operation; untagged multi-receive buffers only (as
// in C); at most 32
// peers send to one endpoint at a time (the 33rd gets fi.EAGAIN until one
// leaves; the entry of a claimer that was cut off stays unusable until
// the owner's next check, 100 ms or more later). A message streamed through the bounce chunks (no CMA) that
// finds no posted receive waits at the head of its sender's ring, holding
// back that sender's later messages until a receive matches it; with CMA
// it waits aside like small messages do. RMA without CMA above 192 bytes
// goes in 192-byte pieces: correct, not fast. An entry whose claimer
// left while messages of it held bounce chunks (unexpected, no receive
// posted yet) is kept from new claimers until they are received.
package shm
