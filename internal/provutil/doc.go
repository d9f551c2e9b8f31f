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
// The package is internal: its API changes with the providers that use it.
// It reads no environment variables itself; MatchInfo logs through
// fi.Logger, which reads FI_LOG_LEVEL and FI_LOG_PROV.
package provutil
