// Package provutil is gofabric's counterpart of libfabric's prov/util: the
// parts every provider shares, so that each provider package holds only
// its transport.
//
// It holds the hint matcher providers build GetInfo on ([MatchInfo], after
// util_attr.c and fi_getinfo(3)), the software address vector ([AV],
// fi_av(3)), completion queue ([CQ], fi_cq(3)), event queue (fi_eq(3)) and
// counter ([Counter], fi_cntr(3)) with their progress and wait hooks,
// memory region tables (fi_mr(3)), and the reference counting that gives
// Close its EBUSY-while-bound rule (fi_close(3)).
//
// Queues and counters opened with fi.WaitFD have a wait descriptor, an
// eventfd (eq.FDWaiter: WaitFD, TryWait; fi_trywait(3)). A provider gets
// it for nothing: the queue makes the descriptor readable when an entry
// arrives after a successful TryWait, and while it is armed a per-queue
// watcher goroutine drives the provider's progress and sleeps in its
// wait hook (WaitFunc), as a blocked SRead does, so that manual progress
// goes on while the application sleeps in poll(2).
//
// Errors never name this package: applications get its objects from
// providers, so every message names the provider that made the object
// ("tcp: open cq: size -1 is negative", "tcp: close domain: 2 endpoints
// and 1 cq still open"), given to OpenChildCQ and friends, or, for objects
// made without one (NewCQ, NewEQ, NewCounter, NewAV), the public package
// whose interface they implement ("eq: open cq: ..."). The hint matcher's
// messages name the provider it matches for, and the endpoint bindings'
// messages the ep package ("ep: bind cq: ..."). Advice goes in
// cockroachdb/errors hints (errors.WithHint, ProviderReason.Hint), not in
// the message.
//
// The package is internal: its API changes with the providers that use it.
// It reads no environment variables itself; MatchInfo logs through
// fi.Logger, which reads FI_LOG_LEVEL and FI_LOG_PROV.
package provutil
