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
//   - cm: connection management over FI_EP_MSG (fi_cm(3)): connect and
//     accept with private data, reject, shutdown from either or both
//     sides and abrupt close (one eq.Shutdown per endpoint), names and
//     ETOOSMALL, CM data size limits, backlog, refused connects, the
//     state errors of ep.ConnState, close ordering.
//   - msg: data transfer over a connected pair (fi_msg(3), fi_rma(3)):
//     send and receive in every form, remote CQ data, inject, iovecs,
//     flags, truncation (ETRUNC), order with many in flight, EAGAIN when
//     queues fill, 1 MiB messages, selective completion, counters, and
//     RMA read, write and error cases where the Info offers FI_RMA.
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
//   - rma: RMA over FI_EP_RDM (fi_rma(3)): write, read and writedata of
//     8 B to 1 MiB, and refused accesses (wrong key, out of range,
//     missing FI_REMOTE_READ/FI_REMOTE_WRITE).
//
// # Two processes
//
// The tests of these groups that cross a process boundary (rdm/send-recv,
// rdm/peer-gone, tagged/tsend-trecv, rma/write-read) run twice: as the
// subtest "1proc", every endpoint in the test's process, and as "2proc",
// with the peer in a separate OS process. That one re-executes the test
// binary with -test.run anchored to the current top-level test and
// GOFABRIC_FABTESTS_PEER naming the test; the child's Run sees the
// variable and runs only the peer side of that test. The two sides
// exchange names and steps over pipes, every wait bounded by
// Config.Timeout, and the child is killed at cleanup at the latest. In
// rdm/peer-gone/2proc the parent kills the child with SIGKILL while both
// have sends in flight and requires every send of its own to complete or
// fail, and its endpoint to go on working with another peer. Set
// Config.SingleProcess to skip the "2proc" subtests.
//
// Later groups (multicast) join as providers offer them.
package fabtests
