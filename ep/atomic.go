package ep

import "github.com/gofabric/gofabric/fi"

// AtomicOp mirrors enum fi_op.
type AtomicOp int

// Atomic operations, libfabric 1.17 values.
const (
	OpMin         AtomicOp = iota // FI_MIN
	OpMax                         // FI_MAX
	OpSum                         // FI_SUM
	OpProd                        // FI_PROD
	OpLOr                         // FI_LOR
	OpLAnd                        // FI_LAND
	OpBOr                         // FI_BOR
	OpBAnd                        // FI_BAND
	OpLXor                        // FI_LXOR
	OpBXor                        // FI_BXOR
	OpAtomicRead                  // FI_ATOMIC_READ
	OpAtomicWrite                 // FI_ATOMIC_WRITE
	OpCSwap                       // FI_CSWAP
	OpCSwapNE                     // FI_CSWAP_NE
	OpCSwapLE                     // FI_CSWAP_LE
	OpCSwapLT                     // FI_CSWAP_LT
	OpCSwapGE                     // FI_CSWAP_GE
	OpCSwapGT                     // FI_CSWAP_GT
	OpMSwap                       // FI_MSWAP
)

// Datatype mirrors enum fi_datatype.
type Datatype int

// Atomic datatypes, libfabric 1.17 values.
const (
	Int8              Datatype = iota // FI_INT8
	Uint8                             // FI_UINT8
	Int16                             // FI_INT16
	Uint16                            // FI_UINT16
	Int32                             // FI_INT32
	Uint32                            // FI_UINT32
	Int64                             // FI_INT64
	Uint64                            // FI_UINT64
	Float                             // FI_FLOAT
	Double                            // FI_DOUBLE
	FloatComplex                      // FI_FLOAT_COMPLEX
	DoubleComplex                     // FI_DOUBLE_COMPLEX
	LongDouble                        // FI_LONG_DOUBLE
	LongDoubleComplex                 // FI_LONG_DOUBLE_COMPLEX
	Int128                            // FI_INT128
	Uint128                           // FI_UINT128
)

// IOC is a local buffer of atomic operands (struct fi_ioc): Buf holds
// Count elements of the operation's datatype, so len(Buf) is Count times
// the element size (kit.AtomicSize: 4 for FI_INT32, 16 for FI_LONG_DOUBLE
// on x86-64). The count is explicit, as in C, rather than derived from
// len(Buf): it says how many elements an FI_ATOMIC_READ fetches, whose
// operand buffer is ignored and may be nil, and a length that disagrees
// with it is an error (fi.EINVAL) instead of a silently shorter operation.
type IOC struct {
	Buf   []byte
	Count int
}

// RMAIOC is a remote segment of atomic operands (struct fi_rma_ioc):
// Count elements at Addr (an offset, or a virtual address under
// fi.MRModeVirtAddr) in the memory region with key Key.
type RMAIOC struct {
	Addr  uint64
	Count int
	Key   uint64
}

// AtomicMessage describes an atomic operation (struct fi_msg_atomic), for
// AtomicMsg, FetchAtomicMsg and CompareAtomicMsg. IOV holds the operands
// (msg_iov; iov_count is its length) with their descriptors Desc, RMAIOV
// the target (rma_iov; its counts add up to the operands'). Reuse
// AtomicMessage values: building one per call on the stack and passing it
// through an interface allocates.
type AtomicMessage struct {
	IOV      []IOC
	Desc     []any
	Addr     fi.Addr
	RMAIOV   []RMAIOC
	Datatype Datatype
	Op       AtomicOp
	Context  any
	Data     uint64
}

// Atomic is the atomic ability of an endpoint (fi_atomic(3)): operations
// on arrays of count elements of a datatype in remote memory, each element
// updated atomically. addr is the remote address (an offset, or a virtual
// address under fi.MRModeVirtAddr) and key the remote MR key; the desc
// arguments are MR descriptors where the domain requires them, else nil.
// Buffers hold count elements of the datatype (see IOC); count is at
// least 1 and at most what the matching Valid call reports.
//
// The calls come in three families, each taking its own operations:
//
//   - the base calls (Atomic, AtomicV, AtomicMsg, InjectAtomic): FI_MIN
//     to FI_BXOR and FI_ATOMIC_WRITE;
//   - the fetch calls (FetchAtomic, FetchAtomicV, FetchAtomicMsg), which
//     also return the target's previous contents in result: the same and
//     FI_ATOMIC_READ, whose operand is ignored and may be nil;
//   - the compare calls (CompareAtomic, CompareAtomicV,
//     CompareAtomicMsg), which take a compare operand and return the
//     previous contents: FI_CSWAP to FI_MSWAP.
//
// An operation or datatype the endpoint does not support gives
// fi.EOPNOTSUPP; a compare operation outside the compare calls, or
// another operation in them, fi.EINVAL; more elements than the Valid call
// allows, fi.EMSGSIZE. Like every data-transfer call, these never block
// and return bare fi.EAGAIN when the operation cannot be queued now.
type Atomic interface {
	// Atomic performs op on count elements of remote memory with the
	// operands in buf (fi_atomic).
	Atomic(buf []byte, count int, desc any, dest fi.Addr, addr, key uint64,
		dt Datatype, op AtomicOp, ctx any) error
	// AtomicV is the vectored Atomic (fi_atomicv): the operands are the
	// concatenation of iov, and so many elements are updated at addr.
	AtomicV(iov []IOC, desc []any, dest fi.Addr, addr, key uint64,
		dt Datatype, op AtomicOp, ctx any) error
	// AtomicMsg performs msg's operation with flags (fi_atomicmsg).
	AtomicMsg(msg *AtomicMessage, flags fi.Flags) error
	// InjectAtomic performs op with buf, which may be reused at once, and
	// no completion (fi_inject_atomic); buf holds at most the inject size.
	InjectAtomic(buf []byte, count int, dest fi.Addr, addr, key uint64,
		dt Datatype, op AtomicOp) error

	// FetchAtomic performs op and returns the previous contents of the
	// remote elements in result (fi_fetch_atomic).
	FetchAtomic(buf []byte, count int, desc any, result []byte, resultDesc any,
		dest fi.Addr, addr, key uint64, dt Datatype, op AtomicOp, ctx any) error
	// FetchAtomicV is the vectored FetchAtomic (fi_fetch_atomicv); resultv
	// holds as many elements as iov.
	FetchAtomicV(iov []IOC, desc []any, resultv []IOC, resultDesc []any,
		dest fi.Addr, addr, key uint64, dt Datatype, op AtomicOp, ctx any) error
	// FetchAtomicMsg performs msg's operation with flags, returning the
	// previous contents in resultv (fi_fetch_atomicmsg).
	FetchAtomicMsg(msg *AtomicMessage, resultv []IOC, resultDesc []any, flags fi.Flags) error

	// CompareAtomic performs a compare operation: each remote element is
	// compared with the one in compare and, where op's test holds,
	// replaced by the one in buf; result gets the previous contents
	// (fi_compare_atomic).
	CompareAtomic(buf []byte, count int, desc any, compare []byte, compareDesc any,
		result []byte, resultDesc any, dest fi.Addr, addr, key uint64,
		dt Datatype, op AtomicOp, ctx any) error
	// CompareAtomicV is the vectored CompareAtomic (fi_compare_atomicv);
	// comparev and resultv hold as many elements as iov.
	CompareAtomicV(iov []IOC, desc []any, comparev []IOC, compareDesc []any,
		resultv []IOC, resultDesc []any, dest fi.Addr, addr, key uint64,
		dt Datatype, op AtomicOp, ctx any) error
	// CompareAtomicMsg performs msg's compare operation with flags
	// (fi_compare_atomicmsg).
	CompareAtomicMsg(msg *AtomicMessage, comparev []IOC, compareDesc []any,
		resultv []IOC, resultDesc []any, flags fi.Flags) error

	// AtomicValid reports how many elements of dt one base call (Atomic,
	// AtomicV, AtomicMsg, InjectAtomic) may carry for op (fi_atomicvalid);
	// fi.EOPNOTSUPP when the base calls do not support the pair.
	AtomicValid(dt Datatype, op AtomicOp) (int, error)
	// FetchAtomicValid is AtomicValid for the fetch calls
	// (fi_fetch_atomicvalid).
	FetchAtomicValid(dt Datatype, op AtomicOp) (int, error)
	// CompareAtomicValid is AtomicValid for the compare calls
	// (fi_compare_atomicvalid).
	CompareAtomicValid(dt Datatype, op AtomicOp) (int, error)
}
