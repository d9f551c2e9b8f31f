package ft

import (
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
	"github.com/gofabric/gofabric/kit"
)

// rdm_atomic (functional/rdm_atomic.c): the latency of fi_atomic(3)
// operations between RDM endpoints. After the address and key exchange
// each side runs, for every operation (-o all, the default) or the one -o
// names, an ft_sync and then, for every datatype (-z all, the default) or
// the one -z names, -I operations (1000) of one element each on the
// peer's receive buffer, each waited for before the next: FI_MIN to
// FI_BXOR and FI_ATOMIC_WRITE with fi_atomic, FI_ATOMIC_READ with
// fi_fetch_atomic into a result buffer, FI_CSWAP to FI_MSWAP with
// fi_compare_atomic from a compare buffer into the result buffer (both
// registered beside the data buffers, with the next keys). Both sides run
// at once, each the target of the other's operations, and serve them while
// they wait. Each operation and datatype gives a show_perf row named
// <datatype>_<op>_<kind>_lat (FI_INT8_FI_MIN_base_lat, kind base, fetch or
// compare); a pair the endpoint does not support (its valid query answers
// FI_ENOSYS or FI_EOPNOTSUPP) gives "Provider doesn't support ..." on
// stderr instead and is skipped. With -o all an unsupported pair does not
// fail the run, which ends with an ft_sync and ft_finalize (whose result
// C ignores); -U asks for FI_DELIVERY_COMPLETE.
//
// Where ft parts from C:
//   - C checks a pair with fi_atomicvalid (or its fetch and compare forms)
//     and then fi_query_atomic on the domain, whose element size must be
//     datatype_to_size's. gofabric's domains have no fi_query_atomic: ft
//     asks the endpoint's valid queries only (ep.Atomic's AtomicValid,
//     FetchAtomicValid, CompareAtomicValid, which answer for the same
//     pairs as the domain query does in C's rxm), and an element's size is
//     kit.AtomicSize's, the table C's datatype_to_size holds;
//   - a failed ft_sync fails the run, where C ignores ft_sync's result;
//   - the result and compare buffers are as long as the data buffers, not
//     C's window of them.
//
// As in C, a run with one operation and every datatype (-o min) returns
// what the last datatype gave: FI_EOPNOTSUPP (95) for FI_UINT128, which
// no provider supports, and then skips the last ft_sync and ft_finalize.
// The side that ends first then closes while the other may still wait
// for its last operations: C's waits forever (C against C hangs), ft's
// sees them canceled (125) when the connection goes, or gives up after
// its timeout. runfabtests.sh runs -o all only.
func init() {
	register(&program{
		name:      "rdm_atomic",
		desc:      "Latency of every atomic operation and datatype (fi_atomic) between RDM endpoints.",
		optstring: "ho:Uz:" + optsCS + optsInfo,
		usage: functionalUsage(true, func(w io.Writer) {
			opt(w, "-o <op>", "atomic operation: all, or one of "+atomicArgList(atomicOpNames[:]))
			opt(w, "-z <datatype>", "atomic datatype: all, or one of "+atomicArgList(atomicTypeNames[:]))
			usageDeliveryComplete(w)
		}),
		init: func(s *Session) {
			s.local = &atomicOpts{allOps: true, allTypes: true}
		},
		parse: parseAtomic,
		setup: func(s *Session) error {
			s.hints.EPAttr.Type = fi.EPTypeRDM
			s.hints.Caps = fi.CapMsg | fi.CapAtomic
			s.hints.Mode = fi.ModeContext
			s.hints.DomainAttr.MRMode = s.opts.MRMode
			return nil
		},
		run: func(s *Session) error { return s.rdmAtomic(s.local.(*atomicOpts)) },
	})
}

// atomicOpts are rdm_atomic's own options and state.
type atomicOpts struct {
	// allOps and allTypes are -o all and -z all (the defaults); op and dt
	// the operation and datatype -o and -z name otherwise.
	allOps, allTypes bool
	op               ep.AtomicOp
	dt               ep.Datatype

	// ctx is the context of every operation (fi_ctx_atomic).
	ctx opContext
	// result and compare are the result and compare buffers, with their
	// MRs (nil where the domain needs none) and descriptors; nextKey
	// counts the keys asked for them after FT_MR_KEY.
	result, compare      []byte
	resultMR, compareMR  fi.MR
	resultDesc, compDesc any
	nextKey              uint64
	// atomic is the endpoint's atomics, nil when it has none; remote is
	// the peer's window (ft_exchange_keys).
	atomic ep.Atomic
	remote remoteMR
}

// atomicName is an operation's or datatype's -o or -z word and its C name
// (fi_tostr's).
type atomicName struct{ arg, name string }

// atomicOpNames are the operations in enum fi_op's order.
var atomicOpNames = [...]atomicName{
	ep.OpMin:         {"min", "FI_MIN"},
	ep.OpMax:         {"max", "FI_MAX"},
	ep.OpSum:         {"sum", "FI_SUM"},
	ep.OpProd:        {"prod", "FI_PROD"},
	ep.OpLOr:         {"lor", "FI_LOR"},
	ep.OpLAnd:        {"land", "FI_LAND"},
	ep.OpBOr:         {"bor", "FI_BOR"},
	ep.OpBAnd:        {"band", "FI_BAND"},
	ep.OpLXor:        {"lxor", "FI_LXOR"},
	ep.OpBXor:        {"bxor", "FI_BXOR"},
	ep.OpAtomicRead:  {"read", "FI_ATOMIC_READ"},
	ep.OpAtomicWrite: {"write", "FI_ATOMIC_WRITE"},
	ep.OpCSwap:       {"cswap", "FI_CSWAP"},
	ep.OpCSwapNE:     {"cswap_ne", "FI_CSWAP_NE"},
	ep.OpCSwapLE:     {"cswap_le", "FI_CSWAP_LE"},
	ep.OpCSwapLT:     {"cswap_lt", "FI_CSWAP_LT"},
	ep.OpCSwapGE:     {"cswap_ge", "FI_CSWAP_GE"},
	ep.OpCSwapGT:     {"cswap_gt", "FI_CSWAP_GT"},
	ep.OpMSwap:       {"mswap", "FI_MSWAP"},
}

// atomicTypeNames are the datatypes in enum fi_datatype's order, up to
// FI_UINT128 (the last C's loop runs).
var atomicTypeNames = [...]atomicName{
	ep.Int8:              {"int8", "FI_INT8"},
	ep.Uint8:             {"uint8", "FI_UINT8"},
	ep.Int16:             {"int16", "FI_INT16"},
	ep.Uint16:            {"uint16", "FI_UINT16"},
	ep.Int32:             {"int32", "FI_INT32"},
	ep.Uint32:            {"uint32", "FI_UINT32"},
	ep.Int64:             {"int64", "FI_INT64"},
	ep.Uint64:            {"uint64", "FI_UINT64"},
	ep.Float:             {"float", "FI_FLOAT"},
	ep.Double:            {"double", "FI_DOUBLE"},
	ep.FloatComplex:      {"float_complex", "FI_FLOAT_COMPLEX"},
	ep.DoubleComplex:     {"double_complex", "FI_DOUBLE_COMPLEX"},
	ep.LongDouble:        {"long_double", "FI_LONG_DOUBLE"},
	ep.LongDoubleComplex: {"long_double_complex", "FI_LONG_DOUBLE_COMPLEX"},
	ep.Int128:            {"int128", "FI_INT128"},
	ep.Uint128:           {"uint128", "FI_UINT128"},
}

// atomicArgList joins the -o or -z words of names with "|".
func atomicArgList(names []atomicName) string {
	words := make([]string, len(names))
	for i, n := range names {
		words[i] = n.arg
	}
	return strings.Join(words, "|")
}

// atomicLookup returns the index of the word arg in names (C compares
// the whole word, case included), or -1.
func atomicLookup(names []atomicName, arg string) int {
	for i, n := range names {
		if n.arg == arg {
			return i
		}
	}
	return -1
}

// parseAtomic handles -o, -z and -U. As in C, a word that begins with
// "all" (in any case) means all, and another word must name an operation
// or datatype exactly, or the usage is printed and the status is 1.
func parseAtomic(s *Session, o getopt.Option) (bool, error) {
	a := s.local.(*atomicOpts)
	switch o.Short {
	case 'o':
		if hasPrefixFold(o.Arg, "all") {
			a.allOps = true
			break
		}
		i := atomicLookup(atomicOpNames[:], o.Arg)
		if i < 0 {
			return true, &usageError{err: errors.Newf("-o %s: not an atomic operation", o.Arg)}
		}
		a.allOps, a.op = false, ep.AtomicOp(i)
	case 'z':
		if hasPrefixFold(o.Arg, "all") {
			a.allTypes = true
			break
		}
		i := atomicLookup(atomicTypeNames[:], o.Arg)
		if i < 0 {
			return true, &usageError{err: errors.Newf("-z %s: not an atomic datatype", o.Arg)}
		}
		a.allTypes, a.dt = false, ep.Datatype(i)
	default:
		return parseDeliveryComplete(s, o)
	}
	return true, nil
}

// atomicKind is the family of calls an operation runs with, which names
// its rows: base (fi_atomic), fetch (fi_fetch_atomic) or compare
// (fi_compare_atomic).
type atomicKind int

const (
	atomicBase atomicKind = iota
	atomicFetch
	atomicCompare
)

func (k atomicKind) String() string {
	return [...]string{"base", "fetch", "compare"}[k]
}

// call is the libfabric call of the kind, for errors.
func (k atomicKind) call() string {
	return [...]string{"fi_atomic", "fi_fetch_atomic", "fi_compare_atomic"}[k]
}

// kindOf returns the kind C's run_op runs op with: FI_ATOMIC_READ as a
// fetch, FI_CSWAP to FI_MSWAP as compares, the others as base
// operations.
func kindOf(op ep.AtomicOp) atomicKind {
	switch {
	case op == ep.OpAtomicRead:
		return atomicFetch
	case op >= ep.OpCSwap:
		return atomicCompare
	}
	return atomicBase
}

// rdmAtomic is rdm_atomic's run(): the fabric, the result and compare
// buffers, the key exchange, the operations, and the closing ft_sync and
// ft_finalize.
func (s *Session) rdmAtomic(a *atomicOpts) (err error) {
	if err := s.initFabric(); err != nil {
		return err
	}
	// C's free_res closes the two MRs before ft_free_res closes the rest.
	defer func() {
		if cerr := a.free(); cerr != nil {
			fmt.Fprintf(s.stderr, "%s: [warn] close: %v\n", s.prog.name, cerr)
		}
	}()
	if err := s.allocAtomicRes(a); err != nil {
		return err
	}
	if a.remote, err = s.exchangeKeys(); err != nil {
		return err
	}
	a.atomic, _ = s.ep.(ep.Atomic)
	if a.allOps {
		for op := ep.OpMin; op <= ep.OpMSwap; op++ {
			if err := s.atomicRunOp(a, op); err != nil && !atomicUnsupported(err) {
				return errors.Wrap(err, "run_op")
			}
		}
	} else if err := s.atomicRunOp(a, a.op); err != nil {
		return err
	}
	if err := s.sync(); err != nil {
		return err
	}
	s.ignoredFinalize(s.finalize())
	return nil
}

// allocAtomicRes allocates and registers the result and compare buffers
// (alloc_ep_res): the result buffer for remote writes (and local reads
// with FI_MR_LOCAL), the compare buffer for remote reads (and local
// writes), with the keys after the data buffers' unless the provider
// picks them.
func (s *Session) allocAtomicRes(a *atomicOpts) error {
	n := len(s.buf)
	a.result, a.compare = make([]byte, n), make([]byte, n)
	mode := s.info.DomainAttr.MRMode
	local := mode&fi.MRModeLocal != 0
	key := func() uint64 {
		if mode == fi.MRModeBasic || mode&fi.MRModeProvKey != 0 {
			return 0
		}
		a.nextKey++
		return mrKey + a.nextKey
	}
	access := fi.AccessRemoteWrite
	if local {
		access |= fi.AccessRead
	}
	var err error
	if a.resultMR, a.resultDesc, err = s.regMR(a.result, access, key()); err != nil {
		return errors.Wrap(err, "the result buffer")
	}
	access = fi.AccessRemoteRead
	if local {
		access |= fi.AccessWrite
	}
	if a.compareMR, a.compDesc, err = s.regMR(a.compare, access, key()); err != nil {
		return errors.Wrap(err, "the compare buffer")
	}
	return nil
}

// free closes the result and compare buffers' MRs.
func (a *atomicOpts) free() error {
	var first error
	for _, mr := range []*fi.MR{&a.resultMR, &a.compareMR} {
		if *mr == nil {
			continue
		}
		if err := (*mr).Close(); err != nil && first == nil {
			first = err
		}
		*mr = nil
	}
	return first
}

// atomicUnsupported reports whether err says the endpoint does not
// support a pair: FI_ENOSYS or FI_EOPNOTSUPP, which C skips.
func atomicUnsupported(err error) bool {
	c := fi.Code(err)
	return c == fi.ENOSYS || c == fi.EOPNOTSUPP
}

// atomicRunOp is run_op: an ft_sync, then op on every datatype (-z all)
// or on -z's. With every datatype it returns what the last one gave, an
// unsupported pair's error included, as C does.
func (s *Session) atomicRunOp(a *atomicOpts, op ep.AtomicOp) error {
	if err := s.sync(); err != nil {
		return err
	}
	if !a.allTypes {
		return s.atomicHandle(a, op, a.dt)
	}
	var err error
	for dt := ep.Int8; dt <= ep.Uint128; dt++ {
		if err = s.atomicHandle(a, op, dt); err != nil && !atomicUnsupported(err) {
			return err
		}
	}
	return err
}

// atomicHandle checks op on dt with the endpoint's valid query and, when
// the endpoint supports it, runs it; an unsupported pair is reported on
// stderr and its error returned.
func (s *Session) atomicHandle(a *atomicOpts, op ep.AtomicOp, dt ep.Datatype) error {
	kind := kindOf(op)
	err := a.valid(kind, op, dt)
	if atomicUnsupported(err) {
		fmt.Fprintf(s.stderr, "Provider doesn't support %s %s atomic operation on %s\n",
			atomicOpNames[op].name, kind, atomicTypeNames[dt].name)
		return err
	}
	if err != nil {
		return err
	}
	return s.atomicExecute(a, kind, op, dt)
}

// valid asks the endpoint whether it supports op on dt for calls of kind
// (fi_atomicvalid, fi_fetch_atomicvalid, fi_compare_atomicvalid); an
// endpoint without atomics answers FI_ENOSYS, as libfabric's
// fi_no_atomic operations do.
func (a *atomicOpts) valid(kind atomicKind, op ep.AtomicOp, dt ep.Datatype) error {
	if a.atomic == nil {
		return errors.Wrap(fi.ENOSYS, "the endpoint has no atomic operations")
	}
	var n int
	var err error
	switch kind {
	case atomicBase:
		n, err = a.atomic.AtomicValid(dt, op)
	case atomicFetch:
		n, err = a.atomic.FetchAtomicValid(dt, op)
	default:
		n, err = a.atomic.CompareAtomicValid(dt, op)
	}
	if err != nil {
		return err
	}
	if n < 1 {
		// An answer without an error carries at least one element; one
		// that does not cannot carry the test's.
		return errors.Wrapf(fi.EOPNOTSUPP, "%s valid: %d elements of %s", kind.call(), n, atomicTypeNames[dt].name)
	}
	return nil
}

// atomicExecute runs -I operations of op on one element of dt, each
// waited for, timed, and prints the row (execute_atomic_*_op, report_perf).
// As in C, the row is printed when an operation fails too.
func (s *Session) atomicExecute(a *atomicOpts, kind atomicKind, op ep.AtomicOp, dt ep.Datatype) error {
	size, err := kit.AtomicSize(dt)
	if err != nil {
		return err
	}
	name := atomicTypeNames[dt].name + "_" + atomicOpNames[op].name + "_" + kind.String() + "_lat"
	s.opts.TransferSize = size
	s.start()
	for i := 0; i < s.opts.Iterations; i++ {
		if err = s.postAtomic(a, kind, op, dt, size); err != nil {
			break
		}
		if err = s.getTxComp(s.txSeq); err != nil {
			break
		}
	}
	s.stop()
	s.showPerf(name, size, s.opts.Iterations, 1)
	return err
}

// postAtomic posts one operation of one element of dt on the peer's
// window (ft_post_atomic): the operand from the start of the data
// buffers, the compare operand from the compare buffer and the result
// into the result buffer. A refused post (FI_EAGAIN) is retried after
// reading a transmit completion.
func (s *Session) postAtomic(a *atomicOpts, kind atomicKind, op ep.AtomicOp, dt ep.Datatype, size int) error {
	at, buf, peer := a.atomic, s.buf[:size], a.remote
	var rt retry
	for {
		var err error
		switch kind {
		case atomicBase:
			err = at.Atomic(buf, 1, s.mrDesc, s.remote, peer.addr, peer.key, dt, op, &a.ctx)
		case atomicFetch:
			err = at.FetchAtomic(buf, 1, s.mrDesc, a.result[:size], a.resultDesc,
				s.remote, peer.addr, peer.key, dt, op, &a.ctx)
		default:
			err = at.CompareAtomic(buf, 1, s.mrDesc, a.compare[:size], a.compDesc, a.result[:size], a.resultDesc,
				s.remote, peer.addr, peer.key, dt, op, &a.ctx)
		}
		if err == nil {
			s.txSeq++
			return nil
		}
		if err != fi.EAGAIN {
			return callErr(kind.call(), err)
		}
		if err := rt.again(s, s.txcq, &s.txCQCntr, kind.call()); err != nil {
			return err
		}
	}
}
