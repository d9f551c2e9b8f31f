// Package shm is gofabric's shared-memory provider: reliable unconnected
// endpoints (FI_EP_RDM; fi_endpoint(3), fi_msg(3), fi_tagged(3),
// fi_rma(3)) between processes of one host and one user. Importing the
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
// then works. A peer that closed its endpoint or died fails the
// operations in flight to it (error entries with fi.ECONNRESET) and
// further sends with fi.ECONNRESET until an endpoint of that name exists
// again.
//
// # Regions
//
// Each endpoint owns an inbox: a file /dev/shm/gofabric-shm.<uid>.<name>,
// created with mode 0600 and O_EXCL, mapped shared. A peer that sends to
// it claims one of its 32 entries (compare-and-swap on a claim word) and
// owns that entry's ring of 256 slots of 256 bytes and four 16 KiB bounce
// chunks; the owner consumes. Everything a peer writes is validated
// before use (slot fields, lengths, chunk indexes, sequence): a peer that
// writes a malformed slot is cut off (its entry released, logged), never
// trusted, and the owner goes on. The owner removes its file when the
// endpoint closes; a file whose owner died is removed by the next
// endpoint of that name and, once per process, when the first endpoint
// opens. An endpoint name held by a live process is refused with
// fi.EADDRINUSE.
//
// # Protocols
//
// Up to 192 bytes (the inject size) a message travels inline in one slot
// and completes at once. Larger messages are read by the receiver from
// the sender's memory with process_vm_readv (cross-memory attach: one
// copy) and complete when the receiver answers. The receiver probes, when
// a peer first claims an entry, whether it may read that peer's memory;
// where it may not (ptrace rights missing, as in many containers, or
// FI_SHM_DISABLE_CMA set) messages are streamed instead through the
// bounce chunks of the entry (two copies), which never fails. RMA writes
// and reads are carried out by the target after it checked the key, the
// range and the right (FI_REMOTE_WRITE, FI_REMOTE_READ) against its
// registrations: with CMA above 192 bytes, else in inline pieces; a
// refused access completes at the initiator with an fi.EACCES error entry
// and touches nothing. Writes and reads complete when the target
// answers. Message order per peer is kept (FI_ORDER_SAS); tagged receives
// match tag under the ignore mask, and with FI_DIRECTED_RECV a receive's
// source address. CQ entries read with ReadFrom carry the sender's
// fi.Addr in the receiver's AV (FI_SOURCE), or fi.AddrUnspec
// (FI_ADDR_NOTAVAIL) when it is not there.
//
// # Progress and waiting
//
// Data progress is manual, as in C's shm: reading a CQ or counter moves
// the data of its endpoints (sending, receiving, answering RMA). A read
// that finds nothing pending costs a few atomic loads and takes no lock,
// so busy polling is cheap. SRead and counter waits sleep without
// spinning: the endpoint marks its inbox sleeping and waits on a doorbell,
// an abstract unix datagram socket named after the endpoint (no file to
// leave behind), through the Go netpoller; a sender that publishes to a
// sleeping inbox rings it.
//
// # Environment
//
//   - FI_SHM_DISABLE_CMA: as in C, never use cross-memory attach; copy
//     through the bounce chunks instead.
//
// # Limits
//
// One remote segment per RMA operation (rma_iov_limit 1), four local
// segments per operation; no atomics and no FI_MULTI_RECV; at most 32
// peers send to one endpoint at a time (the 33rd gets fi.EAGAIN until one
// leaves). A message streamed through the bounce chunks (no CMA) that
// finds no posted receive waits at the head of its sender's ring, holding
// back that sender's later messages until a receive matches it; with CMA
// it waits aside like small messages do. RMA without CMA above 192 bytes
// goes in 192-byte pieces: correct, not fast.
package shm
