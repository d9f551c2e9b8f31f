// Package kit is gofabric's provider kit, its counterpart of libfabric's
// prov/util: the building blocks every provider needs, so that a provider
// package, in this module or in anyone else's, holds only its transport.
// docs/writing-a-provider.md walks through writing a provider with it, and
// examples/loopback is a complete one built only from this package and the
// public API.
//
// A provider registers an fi.Provider (fi.Register; [Provider] gives its
// name and version) whose GetInfo is [MatchInfo] over the Info entries it
// offers ([Declined], [AlterInfo]), and returns objects built from these
// pieces:
//
//   - Base objects, which a provider embeds and which do the binding,
//     reference counting and close rules of fi_close(3) once: [Fabric]
//     (util_fabric; it opens the event queues), [Domain] (util_domain; it
//     opens the completion queues, and counters, AVs and software MRs in
//     a line each) and [Passive] (fi_passive_ep: event queue binding,
//     backlog, listen, setname/getname, reject and close). Their type
//     parameter is the provider's set of driven endpoints ([Driver]), which
//     makes the queues they open ([FabricEQ], [DomainCQ], [DomainCounter],
//     [DomainAV]) the provider's own types and gives them its progress and
//     wait hooks.
//   - Fabric, domain and child objects underneath: [Ref] counts what is
//     open under an object and gives Close its fi.EBUSY-while-in-use rule
//     (fi_close(3)); [OpenChildEQ], [OpenChildCQ], [OpenChildCounter],
//     [OpenChildAV] and [RegisterChildMR] open the software objects below
//     as children that hold their parent until they close.
//   - Queues: the software event queue ([EQ], fi_eq(3)), completion queue
//     ([CQ], fi_cq(3)) and counter ([Counter], fi_cntr(3)), with the
//     progress and wait hooks through which reading or blocking on them
//     drives the provider's progress ([WaitFunc]); [Set] is the
//     lock-free set of endpoints a queue drives.
//   - Addressing and memory: the address vector ([AV], fi_av(3)) and the
//     memory region table ([MRTable], fi_mr(3)) with its key, range and
//     access checks for remote operations ([MRTable.Verify]).
//   - Endpoints: [Bindings], the bind and enable checks of fi_ep_bind and
//     fi_enable (fi_endpoint(3)), with [BindOwn] (only the provider's own
//     objects) and [BoundEQ]; [Completions], where an endpoint's
//     operations complete (its CQs, selective flags and counters by slot,
//     resolved once at Enable); and the data-operation adapter ([Ops],
//     [MsgOps], [TaggedOps], [RMAOps]) that turns a provider's two narrow
//     operations ([Poster]) into the whole ep.Msg, ep.Tagged and ep.RMA
//     surface without allocating. A provider may still write any of
//     those calls itself (a method of its endpoint wins over the embedded
//     one): handing an [Op] to the Poster costs about 18 ns, which shm
//     saves on its six single-buffer calls. For fi_atomic(3), [AtomicOps]
//     does the same over one narrow operation ([AtomicPoster]), with the
//     valid queries, and [ApplyAtomic] is the software engine a target
//     applies the operations with ([AtomicSupported], [AtomicSize]).
//     [MultiRecv] keeps the state of a receive buffer posted with
//     FI_MULTI_RECV (fi_msg(3)): where the next message goes, when the
//     buffer is released against FI_OPT_MIN_MULTI_RECV, and the flags
//     of its completions, told either way C's providers tell a release
//     ([ReleaseEntry] as shm, [ReleaseWithLast] as rxm).
//   - Connection management: the state machines are public in package ep
//     (ep.ConnState for active endpoints, ep.Backlog for passive ones,
//     ep.CheckCMData for private data), so that every provider reports
//     fi_cm(3)'s events and errors alike.
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
// The package reads no environment variables itself; MatchInfo logs
// through fi.Logger, which reads FI_LOG_LEVEL and FI_LOG_PROV. Its API
// follows the module's version: until gofabric's v1 it may change in a
// minor release, and the changes are named in the release notes.
package kit
