// Command gofabric-fi is gofabric's providers as a C libfabric provider
// library: built with -buildmode=c-shared, it is a libfabric 1.17 "DL
// provider" (fi_provider(7)) that C libfabric loads at run time, so that
// every C libfabric application (the fabtests, MPI libraries, storage
// stacks) runs on gofabric's tcp, shm and udp providers, and verbs when
// built with the build tag verbs.
//
// Build and install it into a directory C libfabric searches with
// install.sh DIR, which runs
//
//	go build -buildmode=c-shared -ldflags=-X=runtime.godebugDefault=asyncpreemptoff=1 \
//		-o DIR/libgofabric-fi.so ./cmd/gofabric-fi
//	ln -s libgofabric-fi.so DIR/libgoshm-fi.so
//	ln -s libgofabric-fi.so DIR/libgoudp-fi.so
//	ln -s libgofabric-fi.so DIR/libofi_gorxm-fi.so
//
// (on the -ldflags, see Wait objects below); then FI_PROVIDER_PATH=DIR
// fi_info -l lists the providers. The core providers are named gotcp,
// goshm, goudp and goverbs, beside C's own tcp, shm, udp and verbs.
//
// # FI_EP_RDM over gotcp and goverbs: ofi_gorxm
//
// gofabric's tcp and verbs offer FI_EP_MSG; FI_EP_RDM over them is
// gofabric's rxm (providers/rxm), registered in Go as "tcp;ofi_rxm" and
// "verbs;ofi_rxm". The library offers it to C as a utility provider of
// its own, ofi_gorxm (C takes a name starting "ofi_" for one), so that C
// lists and opens its entries as "gotcp;ofi_gorxm" and "goverbs;ofi_gorxm"
// beside C's own ofi_rxm over the same cores ("gotcp;ofi_rxm").
// FI_PROVIDER=^ofi_rxm leaves C's out; -p "gotcp;ofi_gorxm" names the
// layering outright. ofi_gorxm layers only over the library's cores, in
// Go, and not over a provider standing in for C's (below), which C's
// ofi_rxm serves.
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
// offers only its core entries (FI_EP_RDM comes from C's ofi_rxm), as
// C's does.
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
// # Wait objects
//
// Event queues, completion queues and counters opened with FI_WAIT_FD
// have a descriptor: fi_control with FI_GETWAIT returns it (an eventfd;
// FI_GETWAITOBJ says FI_WAIT_FD), and fi_trywait on the fabric tells when
// the application may block on it with poll, select or epoll, as
// fi_poll(3) describes (fabtests' -c fd, C's ofi_rxm over a core
// provider). Under the providers' manual progress, data moves while the
// application sleeps on the descriptor. Objects opened with FI_WAIT_UNSPEC
// get one too, at the first FI_GETWAIT or fi_trywait, as in C (C's
// ofi_rxm asks its core provider's FI_WAIT_UNSPEC event queue for it);
// those opened with FI_WAIT_NONE have none (-FI_ENODATA), and fi_trywait
// refuses them (-FI_EINVAL). The blocking calls work with every wait
// object.
// fi_trywait allocates nothing.
//
// The Go runtime stops goroutines for its garbage collector with a signal
// (SIGURG, asynchronous preemption), which now and then lands on an
// application thread that has just called into the library and
// interrupts its next system call: poll, select or epoll_wait on these
// descriptors would fail with EINTR, which C's fabtests and libfabric's
// own wait code (C's ofi_rxm waiting on a Go core provider) take for an
// error. install.sh therefore builds the library with asynchronous
// preemption off (-ldflags=-X=runtime.godebugDefault=asyncpreemptoff=1,
// after the module's default GODEBUG settings), and the runtime preempts
// cooperatively only; a library built with a plain go build needs
// GODEBUG=asyncpreemptoff=1 in the application's environment, or an
// application that retries on EINTR.
//
// What is not there: wait sets and poll sets (-FI_ENOSYS; FI_WAIT_SET and
// FI_WAIT_MUTEX_COND objects are refused), scalable endpoints and shared
// contexts, atomics (every atomic entry point returns -FI_ENOSYS; the
// library removes FI_ATOMIC from the entries of providers that have it,
// gofabric's shm, and hints asking for it get -FI_ENODATA), and
// collectives.
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
