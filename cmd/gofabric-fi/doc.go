// Command gofabric-fi is gofabric's providers as a C libfabric provider
// library: built with -buildmode=c-shared, it is a libfabric 1.17 "DL
// provider" (fi_provider(7)) that C libfabric loads at run time, so that
// every C libfabric application (the fabtests, MPI libraries, storage
// stacks) runs on gofabric's tcp, shm and udp providers, and verbs when
// built with the build tag verbs.
//
// Build and install it into a directory C libfabric searches:
//
//	go build -buildmode=c-shared -o DIR/libgofabric-fi.so ./cmd/gofabric-fi
//	ln -s libgofabric-fi.so DIR/libgoshm-fi.so
//	ln -s libgofabric-fi.so DIR/libgoudp-fi.so
//	FI_PROVIDER_PATH=DIR fi_info -l
//
// or run install.sh DIR, which does the same. The providers are named
// gotcp, goshm, goudp and goverbs, beside C's own tcp, shm, udp and verbs.
//
// # One library, several providers
//
// C libfabric 1.17 dlopens every file whose name ends in "fi.so" in the
// directories of FI_PROVIDER_PATH (or its built-in directory) and calls the
// file's fi_prov_ini, which returns one struct fi_provider. Names that
// lead to one file (symbolic links) load the library once, and the core
// calls fi_prov_ini once per name: each call registers the next provider,
// and calls after the last return NULL, which the core ignores. So the
// library registers as many providers as it has names: one name gives
// gotcp, three give gotcp, goshm and goudp. A name of the form
// lib<provider>-fi.so (libgoshm-fi.so) asks for that provider first; the
// other names take the remaining providers in the order gotcp, goshm,
// goudp, goverbs.
//
// # Standing in for a built-in provider
//
// GOFABRIC_FI_BUILTIN names gofabric providers (comma-separated: tcp,
// shm, udp, verbs) that register under C's name instead of the go-prefixed
// one, with version 117.999, so that they replace C's built-in provider of
// that name (the core keeps the higher version) and C's utility providers
// layer over them as over C's own: GOFABRIC_FI_BUILTIN=tcp makes C's
// ofi_rxm run over gofabric's tcp ("tcp;ofi_rxm"). A provider standing in
// offers only its core entries (gofabric's tcp without its own FI_EP_RDM
// entries, which C's ofi_rxm then provides), as C's does.
//
// C's ofi_rxm asks every core provider whose name contains "tcp" for
// shared receive contexts, which gofabric's providers do not have: with
// GOFABRIC_FI_BUILTIN=tcp the library sets FI_OFI_RXM_USE_SRX=0 when it is
// unset; for gotcp;ofi_rxm set it yourself.
//
// # The object model
//
// Every object the application sees (fabric, domain, event and completion
// queues, counters, address vectors, memory regions, passive and active
// endpoints, multicast groups, connection requests) is C memory that
// starts with libfabric's struct and holds the cgo.Handle of the Go object
// behind it; C never holds a Go pointer. Application buffers are C memory
// that Go reads and writes through unsafe.Slice views; contexts travel
// through Go as unsafe.Pointer values. Data-transfer calls and queue reads
// make no allocation (the blocking calls, fi_cq_sread, fi_eq_sread and
// fi_cntr_wait, make a context for their timeout). Every exported entry
// point recovers from panics, reports them with their stack on stderr,
// and returns -FI_EOTHER; invalid arguments give the -FI_E* codes C
// providers return. Application versions before 1.5 and the
// FI_MR_BASIC/FI_MR_SCALABLE registration modes are answered as C's
// providers answer them.
//
// What is not there: wait sets, poll sets and FI_WAIT_FD wait objects
// (-FI_ENOSYS, and FI_GETWAIT too: use the blocking sread calls), scalable
// endpoints and shared contexts, atomics (-FI_ENOSYS), and collectives.
//
// For tests, the library exports gofabricAllocs and gofabricGoroutines:
// the Go runtime's heap allocation count and number of goroutines.
//
// Environment: GOFABRIC_FI_BUILTIN (above); the providers' own variables
// (FI_TCP_IFACE, FI_SHM_DISABLE_CMA...) and FI_LOG_LEVEL/FI_LOG_PROV,
// which gofabric reads as C does (log records name the provider as C
// sees it, e.g. gotcp).
package main

// main is required by -buildmode=c-shared and never runs.
func main() {}
