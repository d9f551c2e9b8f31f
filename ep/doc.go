// Package ep mirrors libfabric's fi_endpoint.h and fi_cm.h: active and
// passive endpoints (fi_endpoint(3)), their data-transfer abilities
// (fi_msg(3), fi_tagged(3), fi_rma(3), fi_atomic(3)), connection management
// and multicast (fi_cm(3)), and the connection-management state machine
// that every provider shares.
//
// # Abilities
//
// An Endpoint's required methods are Bind, Enable, Cancel, Info and Close.
// Everything else is an optional interface (Msg, Tagged, RMA, Atomic, CM,
// Joiner) found by type assertion; a provider implements one only if it can
// ever support it.
package ep
