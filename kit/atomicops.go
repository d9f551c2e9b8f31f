package kit

import (
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// The atomic part of the data-operation adapter: what kit/ops.go does for
// fi_msg(3), fi_tagged(3) and fi_rma(3), done for fi_atomic(3). A
// provider implements one narrow operation ([AtomicPoster]) and embeds
// [AtomicOps], which gives its endpoint the whole ep.Atomic surface,
// vets every call's arguments as libfabric's inline wrappers and ofi_rxm
// do, and answers the valid queries.

// AtomicKind is the family of fi_atomic(3) calls an atomic operation came
// from, which decides the operations it may carry and the buffers it has.
type AtomicKind uint8

// Atomic operation kinds.
const (
	// AtomicBase is fi_atomic, fi_atomicv, fi_atomicmsg and
	// fi_inject_atomic: FI_MIN to FI_BXOR and FI_ATOMIC_WRITE, with an
	// operand and no result.
	AtomicBase AtomicKind = iota
	// AtomicFetch is fi_fetch_atomic and its forms: the base operations
	// and FI_ATOMIC_READ, with a result.
	AtomicFetch
	// AtomicCompare is fi_compare_atomic and its forms: FI_CSWAP to
	// FI_MSWAP, with a compare operand and a result.
	AtomicCompare
)

var atomicKindNames = [...]string{"atomic", "fetch_atomic", "compare_atomic"}

// String returns the single-buffer call's name without the fi_ prefix
// ("fetch_atomic").
func (k AtomicKind) String() string {
	if int(k) < len(atomicKindNames) {
		return atomicKindNames[k]
	}
	return "atomic?"
}

// takes reports whether calls of kind k carry op: the operation lists of
// fi_atomic(3), as ofi_atomic_valid applies them (ofi_atomic_iswrite_op,
// ofi_atomic_isreadwrite_op, ofi_atomic_isswap_op).
func (k AtomicKind) takes(op ep.AtomicOp) bool {
	switch k {
	case AtomicBase:
		return op >= ep.OpMin && op <= ep.OpAtomicWrite && op != ep.OpAtomicRead
	case AtomicFetch:
		return op >= ep.OpMin && op <= ep.OpAtomicWrite
	case AtomicCompare:
		return atomicIsCompare(op)
	}
	return false
}

// AtomicOp is one atomic operation in its general form, as the adapter
// ([AtomicOps]) hands it to a provider's [AtomicPoster], its arguments
// already vetted: Op is one Kind carries and is supported on Datatype,
// Count is between 1 and the most the kind's valid call reports, and
// every buffer holds the elements it should.
//
// The single-buffer calls (fi_atomic, fi_inject_atomic, fi_fetch_atomic,
// fi_compare_atomic) set Buf, Compare and Result with their descriptors;
// the vector and message calls IOV, CompareIOV and ResultIOV with theirs
// (never both; [AtomicOp.Vector] tells which). Compare and CompareIOV are
// set for AtomicCompare only, Result and ResultIOV for AtomicFetch and
// AtomicCompare. The operand (Buf or IOV's buffers) of FI_ATOMIC_READ is
// ignored and may be nil, as fi_atomic(3) allows; its counts still give
// Count in the vector forms. An AtomicOp is passed by value so that
// posting allocates nothing; the slices in it are the caller's.
type AtomicOp struct {
	// Kind is the family of the call.
	Kind AtomicKind
	// Inject is set for fi_inject_atomic: the buffer is the caller's again
	// when the call returns and the operation has no completion. A
	// message call with fi.FlagInject in Flags has the first property but
	// not the second.
	Inject bool
	// Op is the operation and Datatype the elements' type.
	Op       ep.AtomicOp
	Datatype ep.Datatype
	// Count is the number of elements: the single-buffer call's count, or
	// the sum of IOV's counts.
	Count int
	// Buf, Compare and Result are the operand, compare and result buffers
	// of a single-buffer call, each of Count elements, with their
	// descriptors.
	Buf         []byte
	Desc        any
	Compare     []byte
	CompareDesc any
	Result      []byte
	ResultDesc  any
	// IOV, CompareIOV and ResultIOV are the vectors of a vector or
	// message call, each of Count elements in all, with their
	// descriptors (nil where the domain needs none).
	IOV          []ep.IOC
	Descs        []any
	CompareIOV   []ep.IOC
	CompareDescs []any
	ResultIOV    []ep.IOC
	ResultDescs  []any
	// Addr is the peer, or fi.AddrUnspec on connected endpoints.
	Addr fi.Addr
	// RAddr and Key are the remote address and key of the target, Count
	// elements long; RMAIOV is the remote vector of the message calls,
	// whose counts add up to Count (nil otherwise; RAddr and Key then
	// mirror its first segment).
	RAddr, Key uint64
	RMAIOV     []ep.RMAIOC
	// Context is the operation context reported in its completion.
	Context any
	// Data is the remote CQ data, meaningful with fi.FlagRemoteCQData.
	Data uint64
	// Flags are the operation flags: the caller's for the message calls,
	// else the endpoint's default transmit flags ([Ops].TxFlags), with,
	// for fi_inject_atomic, fi.FlagInject added and fi.FlagCompletion
	// removed.
	Flags fi.Flags
}

// Vector reports whether the operation came with vectors (IOV,
// CompareIOV, ResultIOV) rather than single buffers.
func (o *AtomicOp) Vector() bool { return o.IOV != nil }

// Bytes returns the size of the target in bytes: Count elements of
// Datatype (AtomicSize), which is also the size of the operand, of the
// compare operand and of the result where the operation has them.
func (o *AtomicOp) Bytes() int {
	if o.Datatype < 0 || int(o.Datatype) >= len(atomicSizes) {
		return 0
	}
	return o.Count * atomicSizes[o.Datatype]
}

// AtomicPoster is what a provider's endpoint implements for the atomic
// adapter: every fi_atomic(3) data call, vetted and reduced to an
// [AtomicOp], arrives at PostAtomic. It must not block or allocate, and
// returns bare fi.EAGAIN when the operation cannot be queued now (the
// adapter returns what it returns).
type AtomicPoster interface {
	PostAtomic(op AtomicOp) error
}

// AtomicTypes is a set of atomic datatypes: bit dt stands for
// ep.Datatype dt.
type AtomicTypes uint32

// BuiltinAtomicsExclude is what libfabric built with compiler atomics
// (HAVE_BUILTIN_MM_ATOMICS, the usual GCC build, in which ofi_rxm and shm
// ship) lacks: its dispatch tables have no handlers for double complex,
// long double and long double complex. A provider that answers the valid
// queries as such a build does sets it as [Atomics].Exclude.
const BuiltinAtomicsExclude AtomicTypes = 1<<ep.DoubleComplex | 1<<ep.LongDouble | 1<<ep.LongDoubleComplex

// AtomicTypesOf returns the set of the datatypes dts; values outside the
// set's range are left out.
func AtomicTypesOf(dts ...ep.Datatype) AtomicTypes {
	var s AtomicTypes
	for _, dt := range dts {
		if dt >= 0 && dt < 32 {
			s |= 1 << dt
		}
	}
	return s
}

// Has reports whether dt is in the set.
func (s AtomicTypes) Has(dt ep.Datatype) bool { return dt >= 0 && dt < 32 && s&(1<<dt) != 0 }

// Atomics is the atomic adapter's state for one endpoint: its poster and
// limits, and the [Ops] it shares with the endpoint's other abilities. A
// provider sets it up once per endpoint and embeds an [AtomicOps] pointing
// at it, so that its endpoint implements ep.Atomic.
type Atomics struct {
	// Ops gives the provider's name for errors (Prov) and the endpoint's
	// default transmit flags (TxFlags), the ones its MsgOps and RMAOps
	// use, so that fi_control(FI_SETOPSFLAG) changes them for every
	// ability at once. Its Poster is not used.
	Ops *Ops
	// Poster receives the operations.
	Poster AtomicPoster
	// MaxSize is the most operand bytes one operation carries: a base or
	// fetch call at most MaxSize / AtomicSize(dt) elements, a compare
	// call, which carries a compare operand as well, half as many (as
	// ofi_rxm's max_atomic_size). The valid calls report these counts. A
	// datatype whose element is larger than the limit is unsupported; 0
	// supports nothing.
	MaxSize int
	// InjectSize is the most bytes fi_inject_atomic, or a call with
	// fi.FlagInject, may carry: its operand and, for a compare call, its
	// compare operand.
	InjectSize int
	// Exclude narrows the software atomics' matrix ([AtomicSupported]) by
	// datatypes the provider does not offer, such as
	// [BuiltinAtomicsExclude].
	Exclude AtomicTypes
	// Off, when not empty, says why the endpoint has no atomics at all
	// (ofi_rxm's endpoints opened without FI_ATOMIC): every call and
	// valid query then gives fi.ENOSYS with it, as libfabric's
	// fi_no_atomic operations answer -FI_ENOSYS.
	Off string
	// MaxCount, when positive, bounds the elements of one operation
	// whatever their size: the valid calls report at most MaxCount. A
	// provider whose device works on one element at a time (verbs: one
	// 64-bit word) sets 1, with MaxSize covering an element and, for
	// the compare calls, its compare operand.
	MaxCount int
	// Refuse, when set, narrows the matrix by (family, datatype,
	// operation): for a pair it returns a reason for, the family's calls
	// and its valid call give fi.EOPNOTSUPP with that reason, as for a
	// pair outside the matrix. It serves providers whose hardware offers
	// a few operations (verbs: FI_ATOMIC_WRITE, FI_ATOMIC_READ, FI_SUM as
	// a fetch, FI_CSWAP). It is called for every operation, so it must
	// not allocate (return strings made beforehand), and its answers
	// must not change while the endpoint is open.
	Refuse func(kind AtomicKind, dt ep.Datatype, op ep.AtomicOp) string
}

// NewAtomics returns the atomic adapter's state for p, sharing ops, with
// at most maxSize operand bytes per operation (Atomics.MaxSize) and the
// inject size of info's transmit attributes.
func NewAtomics(ops *Ops, p AtomicPoster, info *fi.Info, maxSize int) *Atomics {
	a := &Atomics{Ops: ops, Poster: p, MaxSize: maxSize}
	if info != nil && info.TxAttr != nil {
		a.InjectSize = info.TxAttr.InjectSize
	}
	return a
}

// maxCount returns how many elements of dt one call of kind carries for
// op, or 0 when the pair is unsupported for the kind.
func (a *Atomics) maxCount(kind AtomicKind, dt ep.Datatype, op ep.AtomicOp) int {
	if !kind.takes(op) || !AtomicSupported(op, dt) || a.Exclude.Has(dt) || a.Refuse != nil && a.Refuse(kind, dt, op) != "" {
		return 0
	}
	limit := a.MaxSize
	if kind == AtomicCompare {
		limit /= 2
	}
	n := limit / atomicSizes[dt]
	if a.MaxCount > 0 && n > a.MaxCount {
		n = a.MaxCount
	}
	return n
}

// Valid reports how many elements of dt one call of kind may carry for op,
// or fi.EOPNOTSUPP when the endpoint does not support the pair for the
// kind: what fi_atomicvalid, fi_fetch_atomicvalid and
// fi_compare_atomicvalid answer, and fi_query_atomic with no flag,
// FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC. An operation of another family
// (FI_CSWAP for the base calls, FI_ATOMIC_READ outside the fetch calls)
// is unsupported, as in ofi_atomic_valid.
func (a *Atomics) Valid(kind AtomicKind, dt ep.Datatype, op ep.AtomicOp) (int, error) {
	if a.Off != "" {
		return 0, a.off(kind.String() + "valid")
	}
	if n := a.maxCount(kind, dt, op); n > 0 {
		return n, nil
	}
	return 0, a.unsupported(kind.String()+"valid", kind, dt, op)
}

// unsupported is the fi.EOPNOTSUPP of call for op on dt, with the reason.
func (a *Atomics) unsupported(call string, kind AtomicKind, dt ep.Datatype, op ep.AtomicOp) error {
	var why string
	switch {
	case !AtomicSupported(op, dt):
	case !kind.takes(op) && op == ep.OpAtomicRead:
		why = ": FI_ATOMIC_READ is a fetch operation"
	case !kind.takes(op) && atomicIsCompare(op):
		why = ": " + atomicOpName(op) + " is a compare operation"
	case !kind.takes(op):
		why = ": " + atomicOpName(op) + " is not a compare operation"
	case a.Exclude.Has(dt):
		why = ": the endpoint offers no " + atomicTypeName(dt) + " atomics"
	case a.Refuse != nil && a.Refuse(kind, dt, op) != "":
		why = ": " + a.Refuse(kind, dt, op)
	default:
		size, limit := atomicSizes[dt], a.MaxSize
		if kind == AtomicCompare {
			size *= 2
		}
		return errors.Wrapf(fi.EOPNOTSUPP, "%s: %s: %s on %s not supported: an element takes %d operand bytes, the limit is %d",
			a.Ops.Prov, call, atomicOpName(op), atomicTypeName(dt), size, limit)
	}
	return errors.Wrapf(fi.EOPNOTSUPP, "%s: %s: %s on %s not supported%s",
		a.Ops.Prov, call, atomicOpName(op), atomicTypeName(dt), why)
}

// iocFault is what sumIOC found wrong with a vector.
type iocFault uint8

const (
	iocOK       iocFault = iota
	iocNegative          // an entry's count is negative
	iocOver              // the counts add up to more than the limit
	iocLength            // an entry's buffer does not hold its count
)

// sumIOC adds up the counts of iov, up to limit, checking each entry's
// buffer length against its count when checkLen is set. On a fault it
// returns the entry's index.
func sumIOC(iov []ep.IOC, size, limit int, checkLen bool) (total, at int, fault iocFault) {
	for i := range iov {
		c := iov[i].Count
		if c < 0 {
			return total, i, iocNegative
		}
		if c > limit-total {
			return total, i, iocOver
		}
		total += c
		if checkLen && len(iov[i].Buf) != c*size {
			return total, i, iocLength
		}
	}
	return total, 0, iocOK
}

// check vets op for call, the way libfabric's inline wrappers, ofi_rxm
// and fi_atomic(3) want it, and sets op.Count for the vector forms.
func (a *Atomics) check(op *AtomicOp, call string) error {
	if op.Op >= ep.OpMin && op.Op <= ep.OpMSwap && atomicIsCompare(op.Op) != (op.Kind == AtomicCompare) {
		return a.wrongFamily(op, call)
	}
	limit := a.maxCount(op.Kind, op.Datatype, op.Op)
	if limit == 0 {
		return a.unsupported(call, op.Kind, op.Datatype, op.Op)
	}
	size := atomicSizes[op.Datatype]
	if op.IOV == nil {
		if op.Count <= 0 || op.Count > limit {
			return a.badCount(op, call, limit)
		}
		n := op.Count * size
		if op.Op != ep.OpAtomicRead && len(op.Buf) != n {
			return a.badLength(op, call, "operand", len(op.Buf), op.Count)
		}
		if op.Kind == AtomicCompare && len(op.Compare) != n {
			return a.badLength(op, call, "compare", len(op.Compare), op.Count)
		}
		if op.Kind != AtomicBase && len(op.Result) != n {
			return a.badLength(op, call, "result", len(op.Result), op.Count)
		}
	} else {
		total, at, fault := sumIOC(op.IOV, size, limit, op.Op != ep.OpAtomicRead)
		if fault != iocOK {
			return a.badVector(op, call, "operand", fault, at, limit)
		}
		if total == 0 {
			op.Count = 0
			return a.badCount(op, call, limit)
		}
		op.Count = total
		if op.Kind == AtomicCompare {
			if err := a.checkMore(op, call, "compare", op.CompareIOV, size); err != nil {
				return err
			}
		}
		if op.Kind != AtomicBase {
			if err := a.checkMore(op, call, "result", op.ResultIOV, size); err != nil {
				return err
			}
		}
		if op.RMAIOV != nil {
			if err := a.checkRMA(op, call); err != nil {
				return err
			}
		}
	}
	if op.Flags&fi.FlagInject != 0 {
		n := 0
		if op.Op != ep.OpAtomicRead {
			n = op.Count * size
		}
		if op.Kind == AtomicCompare {
			n += op.Count * size
		}
		if n > a.InjectSize {
			return errors.Wrapf(fi.EINVAL, "%s: %s: inject of %d bytes, the inject size is %d", a.Ops.Prov, call, n, a.InjectSize)
		}
	}
	return nil
}

// checkMore vets a compare or result vector: op.Count elements in all.
func (a *Atomics) checkMore(op *AtomicOp, call, what string, iov []ep.IOC, size int) error {
	total, at, fault := sumIOC(iov, size, op.Count, true)
	if fault == iocOK && total == op.Count {
		return nil
	}
	if fault == iocOver {
		total = op.Count // sumIOC stopped short of it
	}
	if fault == iocOK || fault == iocOver {
		return errors.Wrapf(fi.EINVAL, "%s: %s: %s vector holds %s elements, the operand %d",
			a.Ops.Prov, call, what, atLeast(fault == iocOver, total), op.Count)
	}
	return a.badVector(op, call, what, fault, at, op.Count)
}

// checkRMA vets a message's remote vector: op.Count elements in all.
func (a *Atomics) checkRMA(op *AtomicOp, call string) error {
	total := 0
	for i := range op.RMAIOV {
		c := op.RMAIOV[i].Count
		if c < 0 {
			return errors.Wrapf(fi.EINVAL, "%s: %s: remote vector [%d]: count %d is negative", a.Ops.Prov, call, i, c)
		}
		if c > op.Count-total {
			return errors.Wrapf(fi.EINVAL, "%s: %s: remote vector holds more than %d elements, the operand %d",
				a.Ops.Prov, call, op.Count, op.Count)
		}
		total += c
	}
	if total != op.Count {
		return errors.Wrapf(fi.EINVAL, "%s: %s: remote vector holds %d elements, the operand %d", a.Ops.Prov, call, total, op.Count)
	}
	return nil
}

// atLeast formats a count that may have been cut short at the limit.
func atLeast(over bool, n int) string {
	if over {
		return "more than " + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// wrongFamily is the fi.EINVAL of a compare operation outside the
// compare calls, or another operation in them (fi_atomic(3) gives each
// family its operations; libfabric's sockets provider refuses the others
// with -FI_EINVAL).
func (a *Atomics) wrongFamily(op *AtomicOp, call string) error {
	if atomicIsCompare(op.Op) {
		return errors.Wrapf(fi.EINVAL, "%s: %s: %s is a compare operation (fi_compare_atomic)",
			a.Ops.Prov, call, atomicOpName(op.Op))
	}
	return errors.Wrapf(fi.EINVAL, "%s: %s: %s is not a compare operation (fi_atomic, fi_fetch_atomic)",
		a.Ops.Prov, call, atomicOpName(op.Op))
}

// badCount is the error of a count outside 1 to limit: fi.EINVAL below,
// fi.EMSGSIZE above (fi_atomic(3) ERRORS).
func (a *Atomics) badCount(op *AtomicOp, call string, limit int) error {
	if op.Count > limit {
		return errors.Wrapf(fi.EMSGSIZE, "%s: %s: %d elements of %s, at most %d", a.Ops.Prov, call, op.Count, atomicTypeName(op.Datatype), limit)
	}
	return errors.Wrapf(fi.EINVAL, "%s: %s: count %d of %s, at least 1", a.Ops.Prov, call, op.Count, atomicTypeName(op.Datatype))
}

// badLength is the fi.EINVAL of a single buffer that does not hold count
// elements.
func (a *Atomics) badLength(op *AtomicOp, call, what string, n, count int) error {
	return errors.Wrapf(fi.EINVAL, "%s: %s: %s of %d bytes for %d %s elements of %d bytes",
		a.Ops.Prov, call, what, n, count, atomicTypeName(op.Datatype), atomicSizes[op.Datatype])
}

// badVector is the error of a vector entry.
func (a *Atomics) badVector(op *AtomicOp, call, what string, fault iocFault, at, limit int) error {
	var v []ep.IOC
	switch what {
	case "operand":
		v = op.IOV
	case "compare":
		v = op.CompareIOV
	default:
		v = op.ResultIOV
	}
	switch fault {
	case iocNegative:
		return errors.Wrapf(fi.EINVAL, "%s: %s: %s vector [%d]: count %d is negative", a.Ops.Prov, call, what, at, v[at].Count)
	case iocOver:
		return errors.Wrapf(fi.EMSGSIZE, "%s: %s: more than %d elements of %s, at most %d",
			a.Ops.Prov, call, limit, atomicTypeName(op.Datatype), limit)
	}
	return errors.Wrapf(fi.EINVAL, "%s: %s: %s vector [%d]: %d bytes for %d %s elements of %d bytes",
		a.Ops.Prov, call, what, at, len(v[at].Buf), v[at].Count, atomicTypeName(op.Datatype), atomicSizes[op.Datatype])
}

// AtomicOps implements ep.Atomic (fi_atomic(3)) over an [Atomics]: embed
// it in an endpoint that offers FI_ATOMIC. Every call is vetted before it
// reaches the provider's AtomicPoster:
//
//   - the operation belongs to the call's family (ep.Atomic), else
//     fi.EINVAL (a compare operation outside the compare calls, another
//     one in them); FI_ATOMIC_READ, a fetch operation, gives
//     fi.EOPNOTSUPP outside the fetch calls, as ofi_atomic_valid does;
//   - the pair is supported ([AtomicSupported], less [Atomics].Exclude
//     and what [Atomics].Refuse refuses), else fi.EOPNOTSUPP;
//   - the count is at least 1 (fi.EINVAL) and at most what the family's
//     valid call reports (fi.EMSGSIZE);
//   - each buffer holds its elements: len(buf) == count *
//     AtomicSize(dt), each IOC's buffer its Count, the compare and result
//     vectors and a message's remote vector as many elements as the
//     operand, else fi.EINVAL (the operand of FI_ATOMIC_READ is ignored);
//   - fi_inject_atomic, and any call with fi.FlagInject, carries at most
//     [Atomics].InjectSize bytes, else fi.EINVAL; there is no fetch or
//     compare inject call.
//
// The message calls take nil messages as fi.EINVAL. Errors name the
// provider and the call ("tcp: compare_atomicv: ..."). On success the
// adapter allocates nothing and returns what PostAtomic returns.
type AtomicOps struct{ *Atomics }

var _ ep.Atomic = AtomicOps{}

// off is the fi.ENOSYS of call on an endpoint without atomics.
func (a *Atomics) off(call string) error {
	return errors.Wrapf(fi.ENOSYS, "%s: %s: %s", a.Ops.Prov, call, a.Off)
}

// post vets op and hands it to the provider.
func (a *Atomics) post(op AtomicOp, call string) error {
	if a.Off != "" {
		return a.off(call)
	}
	if err := a.check(&op, call); err != nil {
		return err
	}
	return a.Poster.PostAtomic(op)
}

// emptyIOC and emptyRMAIOC stand for a vector call's nil vectors, so that
// AtomicOp.Vector tells the call's form and a message always has its
// remote vector checked.
var (
	emptyIOC    = []ep.IOC{}
	emptyRMAIOC = []ep.RMAIOC{}
)

func nonNilIOC(iov []ep.IOC) []ep.IOC {
	if iov == nil {
		return emptyIOC
	}
	return iov
}

// Atomic performs op on remote memory (fi_atomic).
func (a AtomicOps) Atomic(buf []byte, count int, desc any, dest fi.Addr, addr, key uint64,
	dt ep.Datatype, op ep.AtomicOp, ctx any) error {
	return a.post(AtomicOp{Kind: AtomicBase, Op: op, Datatype: dt, Count: count, Buf: buf, Desc: desc,
		Addr: dest, RAddr: addr, Key: key, Context: ctx, Flags: a.Ops.TxFlags}, "atomic")
}

// AtomicV is the vectored Atomic (fi_atomicv).
func (a AtomicOps) AtomicV(iov []ep.IOC, desc []any, dest fi.Addr, addr, key uint64,
	dt ep.Datatype, op ep.AtomicOp, ctx any) error {
	return a.post(AtomicOp{Kind: AtomicBase, Op: op, Datatype: dt, IOV: nonNilIOC(iov), Descs: desc,
		Addr: dest, RAddr: addr, Key: key, Context: ctx, Flags: a.Ops.TxFlags}, "atomicv")
}

// AtomicMsg performs msg's operation with flags (fi_atomicmsg).
func (a AtomicOps) AtomicMsg(msg *ep.AtomicMessage, flags fi.Flags) error {
	return a.msg(AtomicBase, "atomicmsg", msg, nil, nil, nil, nil, flags)
}

// InjectAtomic performs op with no completion (fi_inject_atomic).
func (a AtomicOps) InjectAtomic(buf []byte, count int, dest fi.Addr, addr, key uint64,
	dt ep.Datatype, op ep.AtomicOp) error {
	return a.post(AtomicOp{Kind: AtomicBase, Inject: true, Op: op, Datatype: dt, Count: count, Buf: buf,
		Addr: dest, RAddr: addr, Key: key, Flags: a.Ops.injectFlags()}, "inject_atomic")
}

// FetchAtomic performs op and returns the previous contents in result
// (fi_fetch_atomic).
func (a AtomicOps) FetchAtomic(buf []byte, count int, desc any, result []byte, resultDesc any,
	dest fi.Addr, addr, key uint64, dt ep.Datatype, op ep.AtomicOp, ctx any) error {
	return a.post(AtomicOp{Kind: AtomicFetch, Op: op, Datatype: dt, Count: count, Buf: buf, Desc: desc,
		Result: result, ResultDesc: resultDesc, Addr: dest, RAddr: addr, Key: key, Context: ctx,
		Flags: a.Ops.TxFlags}, "fetch_atomic")
}

// FetchAtomicV is the vectored FetchAtomic (fi_fetch_atomicv).
func (a AtomicOps) FetchAtomicV(iov []ep.IOC, desc []any, resultv []ep.IOC, resultDesc []any,
	dest fi.Addr, addr, key uint64, dt ep.Datatype, op ep.AtomicOp, ctx any) error {
	return a.post(AtomicOp{Kind: AtomicFetch, Op: op, Datatype: dt, IOV: nonNilIOC(iov), Descs: desc,
		ResultIOV: resultv, ResultDescs: resultDesc, Addr: dest, RAddr: addr, Key: key, Context: ctx,
		Flags: a.Ops.TxFlags}, "fetch_atomicv")
}

// FetchAtomicMsg performs msg's operation with flags, returning the
// previous contents in resultv (fi_fetch_atomicmsg).
func (a AtomicOps) FetchAtomicMsg(msg *ep.AtomicMessage, resultv []ep.IOC, resultDesc []any, flags fi.Flags) error {
	return a.msg(AtomicFetch, "fetch_atomicmsg", msg, nil, nil, resultv, resultDesc, flags)
}

// CompareAtomic performs a compare operation (fi_compare_atomic).
func (a AtomicOps) CompareAtomic(buf []byte, count int, desc any, compare []byte, compareDesc any,
	result []byte, resultDesc any, dest fi.Addr, addr, key uint64,
	dt ep.Datatype, op ep.AtomicOp, ctx any) error {
	return a.post(AtomicOp{Kind: AtomicCompare, Op: op, Datatype: dt, Count: count, Buf: buf, Desc: desc,
		Compare: compare, CompareDesc: compareDesc, Result: result, ResultDesc: resultDesc,
		Addr: dest, RAddr: addr, Key: key, Context: ctx, Flags: a.Ops.TxFlags}, "compare_atomic")
}

// CompareAtomicV is the vectored CompareAtomic (fi_compare_atomicv).
func (a AtomicOps) CompareAtomicV(iov []ep.IOC, desc []any, comparev []ep.IOC, compareDesc []any,
	resultv []ep.IOC, resultDesc []any, dest fi.Addr, addr, key uint64,
	dt ep.Datatype, op ep.AtomicOp, ctx any) error {
	return a.post(AtomicOp{Kind: AtomicCompare, Op: op, Datatype: dt, IOV: nonNilIOC(iov), Descs: desc,
		CompareIOV: comparev, CompareDescs: compareDesc, ResultIOV: resultv, ResultDescs: resultDesc,
		Addr: dest, RAddr: addr, Key: key, Context: ctx, Flags: a.Ops.TxFlags}, "compare_atomicv")
}

// CompareAtomicMsg performs msg's compare operation with flags
// (fi_compare_atomicmsg).
func (a AtomicOps) CompareAtomicMsg(msg *ep.AtomicMessage, comparev []ep.IOC, compareDesc []any,
	resultv []ep.IOC, resultDesc []any, flags fi.Flags) error {
	return a.msg(AtomicCompare, "compare_atomicmsg", msg, comparev, compareDesc, resultv, resultDesc, flags)
}

// msg posts a message call. RAddr and Key mirror the first remote
// segment, for providers that take one.
func (a AtomicOps) msg(kind AtomicKind, call string, msg *ep.AtomicMessage, comparev []ep.IOC, compareDesc []any,
	resultv []ep.IOC, resultDesc []any, flags fi.Flags) error {
	if msg == nil {
		return a.Ops.nilMsg(call)
	}
	op := AtomicOp{Kind: kind, Op: msg.Op, Datatype: msg.Datatype, IOV: nonNilIOC(msg.IOV), Descs: msg.Desc,
		CompareIOV: comparev, CompareDescs: compareDesc, ResultIOV: resultv, ResultDescs: resultDesc,
		Addr: msg.Addr, RMAIOV: msg.RMAIOV, Context: msg.Context, Data: msg.Data, Flags: flags}
	if len(msg.RMAIOV) > 0 {
		op.RAddr, op.Key = msg.RMAIOV[0].Addr, msg.RMAIOV[0].Key
	} else if msg.RMAIOV == nil {
		op.RMAIOV = emptyRMAIOC
	}
	return a.post(op, call)
}

// AtomicValid reports how many elements of dt one base call may carry
// for op (fi_atomicvalid).
func (a AtomicOps) AtomicValid(dt ep.Datatype, op ep.AtomicOp) (int, error) {
	return a.Valid(AtomicBase, dt, op)
}

// FetchAtomicValid reports how many elements of dt one fetch call may
// carry for op (fi_fetch_atomicvalid).
func (a AtomicOps) FetchAtomicValid(dt ep.Datatype, op ep.AtomicOp) (int, error) {
	return a.Valid(AtomicFetch, dt, op)
}

// CompareAtomicValid reports how many elements of dt one compare call
// may carry for op (fi_compare_atomicvalid).
func (a AtomicOps) CompareAtomicValid(dt ep.Datatype, op ep.AtomicOp) (int, error) {
	return a.Valid(AtomicCompare, dt, op)
}
