// Package fabtests is gofabric's provider conformance suite: the Go form of
// libfabric's fabtests (unit, functional and close-ordering tests), shaped
// like testing/fstest.TestFS and x/net/nettest.TestConn. Every provider,
// ours or a third party's, runs it from its own go test:
//
//	func TestConformance(t *testing.T) {
//		fabtests.Run(t, fabtests.Config{Provider: "tcp"})
//	}
//
// Run runs each group as a subtest (t.Run("unit/eq", ...)). What a provider
// does not offer is detected from its Info or from fi.ENOSYS / fi.ENODATA
// returned by an opener, and skipped with the reason, as fabtests'
// TEST_RET_VAL maps -FI_ENOSYS and -FI_ENODATA to SKIPPED. Nothing else is
// skipped.
//
// # Groups
//
//   - unit/getinfo: GetInfo results, hint round trips, ENODATA reasons.
//   - unit/eq: event queue open, write, read, peek, error entries, blocking
//     reads, close rules, allocation-free reads.
//   - unit/cq: completion queue open in every format, empty reads, blocking
//     reads, close rules, allocation-free reads.
//   - unit/cntr: counter add, set, errors, waits.
//   - unit/av: address vector insert, lookup, remove, straddr, close rules.
//   - unit/mr: memory registration keys, descriptors, access checks, close.
//   - unit/waitfd: FI_WAIT_FD wait descriptors (eq.FDWaiter) with poll(2),
//     on Linux: event queues, counters and the CQs of each endpoint type,
//     quiet after TryWait, readable when a message arrives while the
//     application sleeps in poll, fi.EAGAIN while entries wait, no wake-up
//     lost over 1000 messages, Close waking a blocked poll.
//   - wait: wait objects (fi_poll(3)) on Linux: an FI_WAIT_FD descriptor
//     readable on an event, a count and each endpoint type's completion;
//     an eq.WaitSet (fi_wait_open, fi_wait, fi_poll) of an event queue, a
//     completion queue and a counter waking a blocked Wait for the first
//     of them to get something, with Ready naming that one, for each
//     endpoint type, and for a counted receive and a connection request;
//     members joining through WaitObj fi.WaitSet (FI_WAIT_SET), closed
//     members leaving; Wait ending at its context's deadline and cancel,
//     and at Close.
//   - cm: connection management over FI_EP_MSG (fi_cm(3)): connect and
//     accept with private data, reject, shutdown from either or both
//     sides and abrupt close (one eq.Shutdown per endpoint), names and
//     ETOOSMALL, CM data size limits, backlog, refused connects, the
//     state errors of ep.ConnState, close ordering.
//   - msg: data transfer over a connected pair (fi_msg(3)): send and
//     receive in every form, remote CQ data, inject, iovecs, flags,
//     truncation (ETRUNC), order with many in flight, EAGAIN when queues
//     fill, 1 MiB messages, selective completion, counters.
//   - rdm: messages over reliable unconnected endpoints (FI_EP_RDM,
//     fi_msg(3), fi_av(3)): send, inject and senddata both ways with
//     FI_AV_MAP and FI_AV_TABLE, FI_SOURCE (the sender's fi.Addr, or
//     fi.AddrUnspec for a sender not in the AV), order, truncation,
//     sizes 0 B to 1 MiB, EAGAIN, three senders to one receiver, sends to
//     an address whose endpoint does not exist yet, and a peer that goes
//     away with operations in flight.
//   - tagged: tagged messages over FI_EP_RDM (fi_tagged(3)): tags and
//     ignore masks, tinject, tsenddata, wildcards, unexpected messages,
//     same-tag order, FI_DIRECTED_RECV.
//   - multi-recv: receive buffers posted with FI_MULTI_RECV over
//     FI_EP_RDM (fi_msg(3)), where the Info offers it: one buffer takes
//     many messages from a peer, each completion giving the buffer's
//     context, its length and where it landed (eq.Completion.Buf), in
//     order without overlap; the buffer is released once the space left
//     falls below FI_OPT_MIN_MULTI_RECV set with ep.SetOpt (64 B and
//     1000 B), not before, exactly once (an entry of its own flagged
//     FI_MULTI_RECV, as C's shm, or the flag on the last message's
//     completion, as C's rxm); then the next message goes to the next
//     receive, and the buffer posted again fills again.
//   - rma/msg: RMA over a connected pair (fi_rma(3)), where the Info
//     offers FI_RMA: write, read, a read after a write (FI_ORDER_RAW),
//     writedata, and refused accesses (wrong key, out of range, missing
//     FI_REMOTE_READ/FI_REMOTE_WRITE) as error entries.
//   - rma/rdm: RMA over FI_EP_RDM (fi_rma(3)): write, read and writedata
//     of 8 B to 1 MiB, and the refused accesses. Both address the target
//     by offset, or by virtual address where the domain's MR mode has
//     FI_MR_VIRT_ADDR (fi_mr(3)).
//   - atomic: atomic operations over FI_EP_RDM (fi_atomic(3)), where the
//     Info offers FI_ATOMIC (asked for in the hints, as ofi_rxm wants):
//     every operation and datatype of libfabric 1.17 with each valid call
//     (a count of at least 1 for a pair of the call's family, else
//     fi.EOPNOTSUPP, from the call too); every pair the endpoint reports
//     valid, in every form of its family (fi_atomic, fi_atomicv,
//     fi_atomicmsg, fi_inject_atomic, and the fetch and compare calls in
//     their three forms), on up to 8 elements of a cell of its own in
//     memory a target endpoint registered: values that make min, max and
//     the compares come out both ways, negative values, sums and
//     products that wrap around or overflow, -0; the target's memory,
//     the fetched values and the completions (FI_ATOMIC with FI_WRITE or
//     FI_READ, the context) are checked against the group's own
//     arithmetic per datatype, not the kit's engine; the counters
//     (FI_WRITE, FI_READ, and with FI_RMA_EVENT the target's
//     FI_REMOTE_WRITE and FI_REMOTE_READ), errors included; a wrong key,
//     an address past the region's end and a region without the access
//     the call needs give fi.EACCES error entries, and an address a byte
//     past an element's an fi.EINVAL one, and leave the memory as it
//     was; the largest count works, one more is refused
//     (fi.EMSGSIZE, or fi.EINVAL) and so is 0 (fi.EINVAL). Long double
//     is checked as x87 extended precision on amd64 only.
//   - dgram: messages over unreliable datagram endpoints (FI_EP_DGRAM,
//     fi_msg(3)): send, inject and senddata both ways, FI_SOURCE (the
//     sender's fi.Addr, or fi.AddrUnspec for a sender not in the AV),
//     sizes from 0 B to the Info's max_msg_size, sends above it and
//     injects above inject_size refused with fi.EMSGSIZE or fi.EINVAL,
//     truncation (ETRUNC with OLen). The suite assumes neither order nor
//     reliability: every receive is posted before the datagram it
//     expects, nothing is retried, and it relies only on loopback
//     delivering what was sent.
//   - multicast (where the Info offers FI_MULTICAST; fi_cm(3) fi_join,
//     fi_mc_addr, FI_JOIN_COMPLETE): joins refused without a bound event
//     queue, for a non-multicast address (fi.EINVAL), twice, with
//     reserved flags, or with FI_SEND/FI_RECV on an endpoint that cannot
//     send/receive; no sends to the group from a member joined with
//     FI_RECV; eq.JoinComplete with the join's context and group;
//     leave (Close) and join again; and a sender joined with FI_SEND and
//     three members in their own processes joined with 0, FI_RECV and
//     FI_SEND: each member receives exactly what its flags allow (a
//     send-only member, the sender too, nothing), and a member that
//     closed its group receives nothing more. Group addresses are random
//     239.255.x.y with random ports, sent to with fi_sendmsg and
//     FI_MULTICAST.
//   - close: close ordering (fi_close(3)): fi.EBUSY while a domain has an
//     endpoint or a CQ is bound, fi.EBADF for a second Close and for
//     calls on a closed endpoint, and every receive still posted at Close
//     completing with an fi.ECANCELED error entry; for FI_EP_MSG and
//     FI_EP_RDM, whichever the provider offers.
//   - concurrency: FI_THREAD_SAFE: eight goroutines sending on one
//     endpoint (every message arrives, each sender's in order), and Close
//     racing four posting goroutines (no panic, no error without an
//     fi.Errno, no leak).
//   - badinput: nil and zero-length messages are valid; iov_limit+1
//     segments and inject_size+1 bytes give fi.EINVAL; an fi.Addr the AV
//     never gave and an empty address are errors, not retries.
//   - faults: the robustness contract of a provider wrapped in a
//     fault-injecting hook, over FI_EP_MSG and FI_EP_RDM: 200 messages of
//     8 B to 64 KiB (a sequence number, then a pattern derived from it)
//     with receives re-posted as they end; every send and receive ends
//     in a completion or an error entry within Config.Timeout (receives
//     still posted when the receiver closes, with an error entry), and
//     no message is delivered corrupted. Without Config.Faults every
//     message arrives once, intact and in order, and every operation
//     succeeds; with it, lost, failed and duplicated (at most twice)
//     messages are tolerated, reordering is not.
//   - close-while-waiting: for FI_EP_MSG, FI_EP_RDM (also named by node
//     and service with FI_SOURCE) and FI_EP_DGRAM, a goroutine blocks in
//     CQ.SRead or Counter.Wait with a receive posted while another
//     closes the endpoint, at several moments: the blocked call returns
//     (fi.EAVAIL, the cancelled receive's error entry, or fi.ECANCELED;
//     a cancelled receive counts as an error on the receive counter),
//     Close returns, nothing crashes.
//   - wait-sizes: for each endpoint type and each wait style (busy
//     polling with Read, CQ.SRead, Counter.Wait), sizes from 1 byte
//     around the inject size and the 16 and 64 KiB bounce-buffer sizes
//     to 1 MiB: a receiver goroutine and the sender wait at the same
//     time, three messages each, every byte checked; a provider whose
//     progress on one side must wake the other hangs here.
//   - peer-killed: a peer process is killed (SIGKILL) while the
//     survivor blocks in CQ.SRead with operations in flight to it: the
//     blocked read returns with those operations' entries within
//     Config.Timeout, an FI_EP_MSG survivor gets its eq.Shutdown, and an
//     FI_EP_RDM survivor goes on with another peer.
//   - burst: Config.Burst (100) clients connect to one passive endpoint
//     at once and all are accepted, and as many RDM peers send their
//     first message to one endpoint at once with no error but
//     fi.EAGAIN reaching them.
//   - context: the calls of package fabnet that take a context. Over
//     FI_EP_MSG, where offered: Dial, Listen and Accept with private data
//     both ways; a Dial nobody answers ends at its deadline
//     (context.DeadlineExceeded and fi.ETIMEDOUT), a cancelled one at
//     once; rejects with and without data arrive as
//     *fabnet.RejectedError; an error from ListenConfig.OnRequest
//     rejects and Accept goes on; Accept ends at its deadline and when
//     the listener closes (net.ErrClosed). On every endpoint type
//     offered (FI_EP_MSG, FI_EP_RDM, FI_EP_DGRAM): blocking Send and
//     Recv with a deadline that passes (the receive's buffer given back
//     untouched, a send with an ended context posting nothing) and one
//     that does not, and Close waking a waiting Recv.
//
// # Two processes
//
// The tests of these groups that cross a process boundary (rdm/send-recv,
// rdm/peer-gone, tagged/tsend-trecv, rma/rdm/write-read, atomic/ops) run
// twice: as the subtest "1proc", every endpoint in the test's process,
// and as "2proc", with the peer in a separate OS process. That one
// re-executes the test binary with -test.run anchored to the current
// top-level test and GOFABRIC_FABTESTS_PEER naming the test; the child's
// Run sees the variable and runs only the peer side of that test. The two
// sides exchange names and steps over pipes, every wait bounded by
// Config.Timeout, and the child is killed at cleanup at the latest. In
// rdm/peer-gone/2proc the parent kills the child with SIGKILL while both
// have sends in flight and requires every send of its own to complete or
// fail, and its endpoint to go on working with another peer. In
// atomic/ops/2proc the target is the child (every valid pair once, in one
// form each, the family's forms in turn, where 1proc runs every form): it
// registers the memory image
// the parent sends, polls while the parent's calls run, and sends its
// memory back once it holds what the parent computed (or after half the
// timeout). Set Config.SingleProcess to skip the "2proc" subtests.
//
// dgram/send-recv runs the same way; multicast/members runs only as
// "2proc", and starts three peer processes (its members).
//
// # Network namespace
//
// The multicast group sends IP multicast, which needs a route and must
// reach no real network: it runs inside a network namespace that the
// test creates with ip-netns(8) (named gofabric-fabtests-PID-N), its
// loopback up with the route 224.0.0.0/4. The test process stays
// outside: it re-executes the test binary under "ip netns exec" with
// -test.run anchored to the group (plus the deeper levels of its own
// -test.run) and GOFABRIC_FABTESTS_NETNS set, reports each test that
// process ran as a subtest of the same name, with that test's output for
// a failure or skip, and deletes the namespace at cleanup; namespaces
// left by a killed run are deleted by the next. The member processes
// start from inside, so they share the namespace. Creating a namespace
// needs root and ip(8): without them the group is skipped with the
// reason, except when GOFABRIC_STRICT=1 is set, where it fails. Config.SingleProcess skips the group.
package fabtests
