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
//
// Later groups (rdm, tagged, multicast) join as providers offer them.
package fabtests
