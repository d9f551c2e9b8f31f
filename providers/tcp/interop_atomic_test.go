//go:build linux

package tcp_test

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The atomic interop test runs testdata/cpeer/cpeer_atomic.c, a C
// libfabric 1.17 tcp;ofi_rxm peer, against a Go RDM endpoint on the
// public API: C initiator and Go target, then Go initiator and C target.
// Every (kind, datatype, op) that both sides report valid is done twice on
// a slot of its own; each side checks what it sees (the initiator the
// completions and old values, the target its memory) against
// expectations of its own: the C peer's in plain C, this file's in plain
// Go (atomExpect), never gofabric's kit.ApplyAtomic, the engine under
// test. The layout and tables below are cpeer_atomic's; its header
// comment describes the frame.
const (
	atomNElem    = 6
	atomSeg      = 3 // elements in each remote segment of the msg calls
	atomSlot     = 64
	atomNKind    = 3
	atomNDT      = 16 // FI_INT8..FI_UINT128
	atomNOp      = 19 // FI_MIN..FI_MSWAP
	atomInjOff   = atomNKind * atomNDT * atomNOp * atomSlot
	atomGuardOff = atomInjOff + atomSlot
	atomMRSize   = atomGuardOff + 16
	atomKey      = 0xa70c // the requested key of both sides' regions
	atomBadKey   = 0x5a5a0000
)

// The kinds: the base calls (fi_atomic...), fetch and compare.
const (
	atomBase = iota
	atomFetch
	atomCompare
)

var atomKindName = [atomNKind]string{"a", "f", "c"}

// The integer tables, truncated to each integer type.
var (
	atomIntOld = [atomNElem]uint64{0, 0, 9, 0xfffffffffffffffd, 100, 0x7a5c3e1f6b2d4935}
	atomIntOpd = [atomNElem]uint64{0, 7, 0, 5, 120, 0xfe2d3c4bda69f8a4}
	atomIntCmp = [atomNElem]uint64{1, 0, 12, 0xfffffffffffffffd, 20, 0xffffffffffffffff}
)

// The floating-point tables (exact in float32).
var (
	atomFltOld = [atomNElem]float64{0, 0, -1.25, 3.5, 1000, -7.5}
	atomFltOpd = [atomNElem]float64{0, 2.5, 0, -0.75, 0.5, -8}
	atomFltCmp = [atomNElem]float64{1.5, 0, -3, 3.5, 2000, -8}
)

// The FI_FLOAT_COMPLEX tables.
var (
	atomCpxOld = [atomNElem]complex64{0, 0, 2i, -1 + 0.5i, 3 - 1i, 2 + 2i}
	atomCpxOpd = [atomNElem]complex64{0, 1.5 - 2i, 0, 2 + 3i, -0.5 + 0.25i, 4 - 4i}
	atomCpxCmp = [atomNElem]complex64{1, 0, 2.5i, -1 + 0.5i, 3 + 1i, 2 + 2i}
)

// The inject's target elements and operands (FI_INT32, FI_SUM).
var (
	atomInjOld = [2]int32{1000, -5}
	atomInjOpd = [2]int32{7, -9}
)

// atomDTName and atomOpName are libfabric's names, for the summary.
var atomDTName = [atomNDT]string{"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64",
	"FLOAT", "DOUBLE", "FLOAT_COMPLEX", "DOUBLE_COMPLEX", "LONG_DOUBLE", "LONG_DOUBLE_COMPLEX", "INT128", "UINT128"}

var atomOpName = [atomNOp]string{"MIN", "MAX", "SUM", "PROD", "LOR", "LAND", "BOR", "BAND", "LXOR", "BXOR",
	"ATOMIC_READ", "ATOMIC_WRITE", "CSWAP", "CSWAP_NE", "CSWAP_LE", "CSWAP_LT", "CSWAP_GE", "CSWAP_GT", "MSWAP"}

// atomTriple is one (kind, datatype, op).
type atomTriple struct {
	kind int
	dt   ep.Datatype
	op   ep.AtomicOp
}

func (x atomTriple) key() string { return fmt.Sprintf("%s_%d_%d", atomKindName[x.kind], x.dt, x.op) }

// atomTriples lists every triple in cpeer_atomic's order.
func atomTriples() []atomTriple {
	var ts []atomTriple
	for k := range atomNKind {
		for d := range atomNDT {
			for o := range atomNOp {
				ts = append(ts, atomTriple{k, ep.Datatype(d), ep.AtomicOp(o)})
			}
		}
	}
	return ts
}

func (x atomTriple) off() int {
	return ((x.kind*atomNDT+int(x.dt))*atomNOp + int(x.op)) * atomSlot
}

// atomSize is the element size of the datatypes with tables.
func atomSize(dt ep.Datatype) int {
	switch dt {
	case ep.Int8, ep.Uint8:
		return 1
	case ep.Int16, ep.Uint16:
		return 2
	case ep.Int32, ep.Uint32, ep.Float:
		return 4
	case ep.Int64, ep.Uint64, ep.Double, ep.FloatComplex:
		return 8
	}
	return 0 // no table: C's rxm offers nothing on it
}

type atomInt interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

func intsOf[T atomInt](t [atomNElem]uint64) []T {
	v := make([]T, atomNElem)
	for i, x := range t {
		v[i] = T(x)
	}
	return v
}

func floatsOf[T float32 | float64](t [atomNElem]float64) []T {
	v := make([]T, atomNElem)
	for i, x := range t {
		v[i] = T(x)
	}
	return v
}

// le encodes v (a slice of fixed-size values) in little-endian order.
func le(v any) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		panic(err)
	}
	return b
}

// atomTable returns the datatype's old (0), operand (1) or compare (2)
// table, nil for a datatype without tables.
func atomTable(dt ep.Datatype, which int) []byte {
	it := [3][atomNElem]uint64{atomIntOld, atomIntOpd, atomIntCmp}[which]
	ft := [3][atomNElem]float64{atomFltOld, atomFltOpd, atomFltCmp}[which]
	ct := [3][atomNElem]complex64{atomCpxOld, atomCpxOpd, atomCpxCmp}[which]
	switch dt {
	case ep.Int8:
		return le(intsOf[int8](it))
	case ep.Uint8:
		return le(intsOf[uint8](it))
	case ep.Int16:
		return le(intsOf[int16](it))
	case ep.Uint16:
		return le(intsOf[uint16](it))
	case ep.Int32:
		return le(intsOf[int32](it))
	case ep.Uint32:
		return le(intsOf[uint32](it))
	case ep.Int64:
		return le(intsOf[int64](it))
	case ep.Uint64:
		return le(intsOf[uint64](it))
	case ep.Float:
		return le(floatsOf[float32](ft))
	case ep.Double:
		return le(floatsOf[float64](ft))
	case ep.FloatComplex:
		return le(ct[:])
	}
	return nil
}

func b2n[T atomInt | float32 | float64](b bool) T {
	if b {
		return 1
	}
	return 0
}

// The expectations: what op makes of element a with operand v and compare
// value c (fi_atomic(3): the compare ops test "c <op> a"), in plain Go.
// atomInts adds the bitwise ops to atomReals' arithmetic, logic and
// compare-and-swap ops.
func atomInts[T atomInt](op ep.AtomicOp, a, v, c T) T {
	switch op {
	case ep.OpBOr:
		return a | v
	case ep.OpBAnd:
		return a & v
	case ep.OpBXor:
		return a ^ v
	case ep.OpMSwap:
		return v&c | a&^c
	}
	return atomReals(op, a, v, c)
}

func atomReals[T atomInt | float32 | float64](op ep.AtomicOp, a, v, c T) T {
	switch op {
	case ep.OpMin:
		if v < a {
			return v
		}
		return a
	case ep.OpMax:
		if v > a {
			return v
		}
		return a
	case ep.OpSum:
		return a + v
	case ep.OpProd:
		return a * v
	case ep.OpLOr:
		return b2n[T](a != 0 || v != 0)
	case ep.OpLAnd:
		return b2n[T](a != 0 && v != 0)
	case ep.OpLXor:
		return b2n[T]((a != 0) != (v != 0))
	}
	return atomCmpSwap(op, a, v, c, c < a, c > a)
}

func atomComplex(op ep.AtomicOp, a, v, c complex64) complex64 {
	switch op {
	case ep.OpSum:
		return a + v
	case ep.OpProd:
		return a * v
	case ep.OpLOr:
		return complex(b2n[float32](a != 0 || v != 0), 0)
	case ep.OpLAnd:
		return complex(b2n[float32](a != 0 && v != 0), 0)
	case ep.OpLXor:
		return complex(b2n[float32]((a != 0) != (v != 0)), 0)
	case ep.OpCSwapLE, ep.OpCSwapLT, ep.OpCSwapGE, ep.OpCSwapGT:
		panic("complex values have no order")
	}
	return atomCmpSwap(op, a, v, c, false, false)
}

// atomCmpSwap is FI_ATOMIC_READ, FI_ATOMIC_WRITE and the compare-and-swap
// ops but FI_MSWAP, given whether c < a and c > a.
func atomCmpSwap[T comparable](op ep.AtomicOp, a, v, c T, lt, gt bool) T {
	var swap bool
	switch op {
	case ep.OpAtomicRead:
	case ep.OpAtomicWrite:
		swap = true
	case ep.OpCSwap:
		swap = c == a
	case ep.OpCSwapNE:
		swap = c != a
	case ep.OpCSwapLE:
		swap = lt || c == a
	case ep.OpCSwapLT:
		swap = lt
	case ep.OpCSwapGE:
		swap = gt || c == a
	case ep.OpCSwapGT:
		swap = gt
	default:
		panic(fmt.Sprintf("no expectation for op %d", op))
	}
	if swap {
		return v
	}
	return a
}

// atomApplyEach decodes the elements of mem, operand and compare as T,
// applies f to each and encodes the results into mem.
func atomApplyEach[T any](mem, opd, cmp []byte, f func(a, v, c T) T) {
	a, v, c := make([]T, atomNElem), make([]T, atomNElem), make([]T, atomNElem)
	for _, x := range []struct {
		b []byte
		t []T
	}{{mem, a}, {opd, v}, {cmp, c}} {
		if _, err := binary.Decode(x.b, binary.LittleEndian, x.t); err != nil {
			panic(err)
		}
	}
	for i := range a {
		a[i] = f(a[i], v[i], c[i])
	}
	if _, err := binary.Encode(mem, binary.LittleEndian, a); err != nil {
		panic(err)
	}
}

// atomExpect returns the slot's elements after n applications of x.
func atomExpect(x atomTriple, n int) []byte {
	mem := atomTable(x.dt, 0)
	opd, cmp := atomTable(x.dt, 1), atomTable(x.dt, 2)
	op := x.op
	for range n {
		switch x.dt {
		case ep.Int8:
			atomApplyEach(mem, opd, cmp, func(a, v, c int8) int8 { return atomInts(op, a, v, c) })
		case ep.Uint8:
			atomApplyEach(mem, opd, cmp, func(a, v, c uint8) uint8 { return atomInts(op, a, v, c) })
		case ep.Int16:
			atomApplyEach(mem, opd, cmp, func(a, v, c int16) int16 { return atomInts(op, a, v, c) })
		case ep.Uint16:
			atomApplyEach(mem, opd, cmp, func(a, v, c uint16) uint16 { return atomInts(op, a, v, c) })
		case ep.Int32:
			atomApplyEach(mem, opd, cmp, func(a, v, c int32) int32 { return atomInts(op, a, v, c) })
		case ep.Uint32:
			atomApplyEach(mem, opd, cmp, func(a, v, c uint32) uint32 { return atomInts(op, a, v, c) })
		case ep.Int64:
			atomApplyEach(mem, opd, cmp, func(a, v, c int64) int64 { return atomInts(op, a, v, c) })
		case ep.Uint64:
			atomApplyEach(mem, opd, cmp, func(a, v, c uint64) uint64 { return atomInts(op, a, v, c) })
		case ep.Float:
			atomApplyEach(mem, opd, cmp, func(a, v, c float32) float32 { return atomReals(op, a, v, c) })
		case ep.Double:
			atomApplyEach(mem, opd, cmp, func(a, v, c float64) float64 { return atomReals(op, a, v, c) })
		case ep.FloatComplex:
			atomApplyEach(mem, opd, cmp, func(a, v, c complex64) complex64 { return atomComplex(op, a, v, c) })
		default:
			panic(fmt.Sprintf("no expectation for datatype %d", x.dt))
		}
	}
	return mem
}

// atomRegion returns the region's initial contents.
func atomRegion() []byte {
	b := make([]byte, atomMRSize)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	for _, x := range atomTriples() {
		copy(b[x.off():], atomTable(x.dt, 0))
	}
	copy(b[atomInjOff:], le(atomInjOld[:]))
	return b
}

// atomWant returns the region as it must end once every triple of valid
// has run twice and the inject added its operands.
func atomWant(valid map[string]string) []byte {
	b := atomRegion()
	for _, x := range atomTriples() {
		if atomValid(valid, x) {
			copy(b[x.off():], atomExpect(x, 2))
		}
	}
	var sum [2]int32
	for i := range sum {
		sum[i] = atomInjOld[i] + atomInjOpd[i]
	}
	copy(b[atomInjOff:], le(sum[:]))
	return b
}

// atomValid reports whether the matrix (the values of q_ lines) offers x.
func atomValid(q map[string]string, x atomTriple) bool {
	n, err := strconv.Atoi(q[x.key()])
	return err == nil && n > 0
}

// atomPeer is the Go side: an RDM endpoint with FI_ATOMIC (the frame of
// the RDM interop tests) and, as target, a registered region.
type atomPeer struct {
	*rdmPeer
	at  ep.Atomic
	mr  fi.MR
	mem []byte
}

func openAtomPeer(tb testing.TB, target bool) *atomPeer {
	tb.Helper()
	p := &atomPeer{rdmPeer: openRDMPeer(tb, rdmScenario{name: "atomic", caps: fi.CapAtomic}, target, 0)}
	require.NotZero(tb, p.info.Caps&fi.CapAtomic, "FI_ATOMIC asked for")
	require.Zero(tb, p.info.DomainAttr.MRMode&(fi.MRModeVirtAddr|fi.MRModeBasic), "addresses are offsets, as cpeer_atomic's")
	var ok bool
	p.at, ok = p.ep.(ep.Atomic)
	require.True(tb, ok, "%T is no ep.Atomic", p.ep)
	if target {
		p.mem = atomRegion()
		var err error
		p.mr, err = fi.RegisterMR(p.domain, &fi.MRAttr{Buf: p.mem, Access: fi.AccessRemoteRead | fi.AccessRemoteWrite,
			RequestedKey: atomKey}, 0)
		require.NoError(tb, err)
		tb.Cleanup(func() { require.NoError(tb, p.mr.Close()) })
	}
	return p
}

// query returns the endpoint's valid matrix in cpeer_atomic's q_ form:
// the count, or the negative errno.
func (p *atomPeer) query() map[string]string {
	q := map[string]string{}
	valid := [atomNKind]func(ep.Datatype, ep.AtomicOp) (int, error){p.at.AtomicValid, p.at.FetchAtomicValid,
		p.at.CompareAtomicValid}
	for _, x := range atomTriples() {
		n, err := valid[x.kind](x.dt, x.op)
		if err != nil {
			n = -int(fi.Code(err))
		}
		q[x.key()] = strconv.Itoa(n)
	}
	return q
}

// cQuery returns the C side's matrix from its q_ lines.
func cQuery(tb testing.TB, lines []string) map[string]string {
	q := map[string]string{}
	for _, l := range lines {
		if k, ok := strings.CutPrefix(l, "q_"); ok {
			k, v, _ := strings.Cut(k, "=")
			q[k] = v
		}
	}
	require.Len(tb, q, atomNKind*atomNDT*atomNOp, "cpeer_atomic's matrix")
	return q
}

// requireSameMatrix: gofabric's rxm advertises C's matrix, triple for
// triple, counts and refusals.
func requireSameMatrix(tb testing.TB, c, goq map[string]string) {
	tb.Helper()
	n := 0
	for _, x := range atomTriples() {
		require.Equal(tb, c[x.key()], goq[x.key()], "%s FI_%s FI_%s: C's valid query against Go's (count, or -errno)",
			atomKindName[x.kind], atomDTName[x.dt], atomOpName[x.op])
		if atomValid(c, x) {
			n++
		}
	}
	tb.Logf("valid matrix: C and Go agree on all %d queries, %d valid triples", len(c), n)
}

// waitAtomic waits for the next transmit completion: one entry, or one
// error entry.
func (p *atomPeer) waitAtomic(what string) (eq.Completion, *eq.CQError) {
	p.tb.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(ioTimeout)
	for {
		n, err := p.txcq.Read(c[:])
		if n == 1 {
			return c[0], nil
		}
		if errors.Is(err, fi.EAVAIL) {
			e, rerr := p.txcq.ReadErr()
			require.NoError(p.tb, rerr, what)
			return eq.Completion{}, e
		}
		require.ErrorIs(p.tb, err, fi.EAGAIN, what)
		require.True(p.tb, time.Now().Before(deadline), "%s: no completion in %v", what, ioTimeout)
		time.Sleep(50 * time.Microsecond)
	}
}

// requireQuiet reads both CQs for a while: nothing may come.
func (p *atomPeer) requireQuiet(what string) {
	p.tb.Helper()
	var c [1]eq.Completion
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for _, q := range []eq.CompletionQueue{p.txcq, p.rxcq} {
			n, err := q.Read(c[:])
			require.Zero(p.tb, n, "%s: a completion %+v", what, c[0])
			require.ErrorIs(p.tb, err, fi.EAGAIN, what)
		}
	}
}

// completed checks the completion of one call of triple x: "" when good.
func (p *atomPeer) completed(x atomTriple, call int) string {
	c, e := p.waitAtomic("atomic")
	switch {
	case e != nil:
		return fmt.Sprintf("call %d: error entry %v (prov_errno %d)", call, e.Err, e.ProvErrno)
	case c.Context != &p.txCtx:
		return fmt.Sprintf("call %d: context %v", call, c.Context)
	}
	want := fi.FlagAtomic | fi.FlagRead
	if x.kind == atomBase {
		want = fi.FlagAtomic | fi.FlagWrite
	}
	if c.Flags != want {
		return fmt.Sprintf("call %d: flags %v, want %v", call, c.Flags, want)
	}
	return ""
}

// runOne performs triple x's two calls against the target to, whose region
// has key key, and checks them: "" when good, else what went wrong.
func (p *atomPeer) runOne(to fi.Addr, key uint64, x atomTriple) string {
	sz, off := atomSize(x.dt), uint64(x.off())
	opd, cmp := atomTable(x.dt, 1), atomTable(x.dt, 2)
	res := make([]byte, atomNElem*sz)
	dt, op, ctx := x.dt, x.op, &p.txCtx
	// Call 1: the plain form.
	p.send("atomic", func() error {
		switch x.kind {
		case atomBase:
			return p.at.Atomic(opd, atomNElem, nil, to, off, key, dt, op, ctx)
		case atomFetch:
			return p.at.FetchAtomic(opd, atomNElem, nil, res, nil, to, off, key, dt, op, ctx)
		}
		return p.at.CompareAtomic(opd, atomNElem, nil, cmp, nil, res, nil, to, off, key, dt, op, ctx)
	})
	if why := p.completed(x, 1); why != "" {
		return why
	}
	if want := atomExpect(x, 0); x.kind != atomBase && string(res) != string(want) {
		return fmt.Sprintf("call 1: old values %x, want %x", res, want)
	}
	// Call 2: the msg form, two remote segments in reverse order.
	clear(res)
	seg := atomSeg * sz
	halves := func(b []byte) []ep.IOC {
		return []ep.IOC{{Buf: b[seg:], Count: atomSeg}, {Buf: b[:seg], Count: atomSeg}}
	}
	msg := &ep.AtomicMessage{IOV: halves(opd), Addr: to,
		RMAIOV:   []ep.RMAIOC{{Addr: off + uint64(seg), Count: atomSeg, Key: key}, {Addr: off, Count: atomSeg, Key: key}},
		Datatype: dt, Op: op, Context: ctx}
	p.send("atomic msg", func() error {
		switch x.kind {
		case atomBase:
			return p.at.AtomicMsg(msg, 0)
		case atomFetch:
			return p.at.FetchAtomicMsg(msg, halves(res), nil, 0)
		}
		return p.at.CompareAtomicMsg(msg, halves(cmp), nil, halves(res), nil, 0)
	})
	if why := p.completed(x, 2); why != "" {
		return why
	}
	if want := atomExpect(x, 1); x.kind != atomBase && string(res) != string(want) {
		return fmt.Sprintf("call 2: old values %x, want %x", res, want)
	}
	return ""
}

// inject does fi_inject_atomic and a read-back of its two int32: "" when
// the read shows the sum and is the only completion.
func (p *atomPeer) inject(to fi.Addr, key uint64) string {
	p.send("inject", func() error {
		return p.at.InjectAtomic(le(atomInjOpd[:]), 2, to, atomInjOff, key, ep.Int32, ep.OpSum)
	})
	res := make([]byte, 8)
	p.send("read-back", func() error {
		return p.at.FetchAtomic(nil, 2, nil, res, nil, to, atomInjOff, key, ep.Int32, ep.OpAtomicRead, &p.txCtx)
	})
	if why := p.completed(atomTriple{atomFetch, ep.Int32, ep.OpAtomicRead}, 1); why != "" {
		return "read-back: " + why
	}
	var got [2]int32
	_, err := binary.Decode(res, binary.LittleEndian, got[:])
	require.NoError(p.tb, err)
	if got != [2]int32{atomInjOld[0] + atomInjOpd[0], atomInjOld[1] + atomInjOpd[1]} {
		return fmt.Sprintf("read-back %v", got)
	}
	p.requireQuiet("after the inject")
	return ""
}

// bad sends the two bad requests: a fetch with a wrong key and a write
// past the end of the region; each fails with fi.EACCES, alone on the
// CQs, and leaves the result buffer as it was.
func (p *atomPeer) bad(to fi.Addr, key uint64) {
	const sentinel = 0xabababababababab
	res := le([]uint64{sentinel})
	p.send("wrong key", func() error {
		return p.at.FetchAtomic(le([]uint64{1}), 1, nil, res, nil, to, atomGuardOff, key^atomBadKey, ep.Uint64, ep.OpSum, &p.txCtx)
	})
	p.requireEACCES("wrong key")
	require.Equal(p.tb, le([]uint64{sentinel}), res, "wrong key: the result buffer changed")
	p.send("out of range", func() error {
		return p.at.Atomic(le([]uint64{0x1111, 0x2222}), 2, nil, to, atomMRSize-8, key, ep.Uint64, ep.OpAtomicWrite, &p.txCtx)
	})
	p.requireEACCES("out of range")
}

func (p *atomPeer) requireEACCES(what string) {
	p.tb.Helper()
	c, e := p.waitAtomic(what)
	require.NotNil(p.tb, e, "%s: completed (%v) instead of failing", what, c.Flags)
	require.Equal(p.tb, fi.EACCES, e.Err, what)
	require.Same(p.tb, &p.txCtx, e.Context, what)
	p.requireQuiet(what)
}

// atomRole is one run's per-triple outcome: the initiator's and the
// target's findings ("" for good), in triple order.
type atomRole struct {
	name       string
	triples    []atomTriple
	init, targ map[string]string
}

// summary logs the per-op table (rows kind and op, columns datatypes:
// ok, FAIL, or "." where the pair is not valid) and fails the test for
// each bad outcome.
func (r *atomRole) summary(t *testing.T) {
	valid := map[atomTriple]bool{}
	dts := map[ep.Datatype]bool{}
	for _, x := range r.triples {
		valid[x], dts[x.dt] = true, true
	}
	var cols []ep.Datatype
	for d := range ep.Datatype(atomNDT) {
		if dts[d] {
			cols = append(cols, d)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: per-op results (i: initiator's check, t: target's)\n%-4s %-13s", r.name, "kind", "op")
	width := func(d ep.Datatype) int { return max(len(atomDTName[d]), len("FAIL(it)")) }
	for _, d := range cols {
		fmt.Fprintf(&sb, " %-*s", width(d), atomDTName[d])
	}
	pass := 0
	for k := range atomNKind {
		for o := range ep.AtomicOp(atomNOp) {
			row := false
			for _, d := range cols {
				row = row || valid[atomTriple{k, d, o}]
			}
			if !row {
				continue
			}
			fmt.Fprintf(&sb, "\n%-4s %-13s", atomKindName[k], atomOpName[o])
			for _, d := range cols {
				x := atomTriple{k, d, o}
				cell := "."
				if valid[x] {
					cell = "ok"
					switch bi, bt := r.init[x.key()] != "", r.targ[x.key()] != ""; {
					case bi && bt:
						cell = "FAIL(it)"
					case bi:
						cell = "FAIL(i)"
					case bt:
						cell = "FAIL(t)"
					default:
						pass++
					}
				}
				fmt.Fprintf(&sb, " %-*s", width(d), cell)
			}
		}
	}
	fmt.Fprintf(&sb, "\n%s: %d of %d triples pass", r.name, pass, len(r.triples))
	t.Log(sb.String())
	for _, x := range r.triples {
		name := fmt.Sprintf("%s FI_%s FI_%s", atomKindName[x.kind], atomDTName[x.dt], atomOpName[x.op])
		if why := r.init[x.key()]; why != "" {
			t.Errorf("%s: %s: initiator: %s", r.name, name, why)
		}
		if why := r.targ[x.key()]; why != "" {
			t.Errorf("%s: %s: target: %s", r.name, name, why)
		}
	}
}

// cOutcome turns cpeer_atomic's ok / fail:<why> into "" / <why>.
func cOutcome(v string) string {
	if v == "ok" {
		return ""
	}
	if v == "" {
		return "no line"
	}
	return v
}

// TestInteropCAtomic runs cpeer_atomic as initiator against a Go target,
// then a Go initiator against cpeer_atomic as target.
func TestInteropCAtomic(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	requireTCPRDM(t)
	bin := buildC(t, "cpeer_atomic")
	t.Run("c-initiator", func(t *testing.T) { atomCInitiator(t, bin) })
	t.Run("go-initiator", func(t *testing.T) { atomGoInitiator(t, bin) })
}

func atomCInitiator(t *testing.T, bin string) {
	p := openAtomPeer(t, true)
	c := startCPeer(t, bin, "initiator", hex.EncodeToString(p.name()), strconv.FormatUint(p.mr.Key(), 16))
	// rxm's progress is manual: the target reads its CQs, where nothing
	// may come, until the initiator is done.
	var e [1]eq.Completion
	for deadline := time.Now().Add(4 * ioTimeout); !c.exited(); time.Sleep(50 * time.Microsecond) {
		require.True(t, time.Now().Before(deadline), "cpeer_atomic initiator still runs after %v", 4*ioTimeout)
		for _, q := range []eq.CompletionQueue{p.txcq, p.rxcq} {
			n, err := q.Read(e[:])
			require.Zero(t, n, "the target got a completion: %+v", e[0])
			require.ErrorIs(t, err, fi.EAGAIN)
		}
	}
	kv := c.result(t)
	require.Equal(t, rdmProvName, kv["prov_name"])
	require.Equal(t, "1", kv["done"])
	cq := cQuery(t, c.stdout())
	requireSameMatrix(t, cq, p.query())

	r := &atomRole{name: "C initiator, Go target", init: map[string]string{}, targ: map[string]string{}}
	want := atomWant(cq)
	for _, x := range atomTriples() {
		if !atomValid(cq, x) {
			continue
		}
		r.triples = append(r.triples, x)
		r.init[x.key()] = cOutcome(kv["r_"+x.key()])
		n := atomNElem * atomSize(x.dt)
		if got, w := p.mem[x.off():x.off()+n], want[x.off():x.off()+n]; string(got) != string(w) {
			r.targ[x.key()] = fmt.Sprintf("memory %x, want %x", got, w)
		}
	}
	r.summary(t)
	require.Equal(t, "ok", kv["inject"], "C's fi_inject_atomic and its read-back")
	require.Equal(t, want[atomInjOff:atomInjOff+8], p.mem[atomInjOff:atomInjOff+8], "the inject's elements")
	for _, bad := range []string{"bad_key", "bad_range"} {
		require.Equal(t, strconv.Itoa(int(fi.EACCES)), kv[bad+"_err"], "%s: C's error entry", bad)
		require.Equal(t, strconv.Itoa(-int(fi.EACCES)), kv[bad+"_prov_errno"], bad)
		t.Logf("%s: C's context-less error entries after its own (transmit, receive CQ): %s", bad, kv[bad+"_stray"])
	}
	require.Equal(t, "ok", kv["bad_key_res"], "C's result buffer after the wrong key")
	require.Equal(t, want[atomGuardOff:], p.mem[atomGuardOff:], "the guard after the bad requests")
	require.Equal(t, want, p.mem, "the Go target's whole region")
	require.Equal(t, "0", kv["fails"])
}

func atomGoInitiator(t *testing.T, bin string) {
	nameFile := filepath.Join(t.TempDir(), "name")
	c := startCPeer(t, bin, "target", nameFile)
	name := c.nameFile(t, nameFile)
	key, err := strconv.ParseUint(strings.TrimPrefix(c.waitLine(t, "mr_key"), "0x"), 16, 64)
	require.NoError(t, err)
	// The matrix is printed before mr_key: compare it before sending C
	// anything, as a C target crashes on a pair it has no handler for.
	cq := cQuery(t, c.stdout())
	p := openAtomPeer(t, false)
	requireSameMatrix(t, cq, p.query())
	to := p.insert(mustHex(t, name))

	r := &atomRole{name: "Go initiator, C target", init: map[string]string{}, targ: map[string]string{}}
	for _, x := range atomTriples() {
		if atomValid(cq, x) {
			r.triples = append(r.triples, x)
			r.init[x.key()] = p.runOne(to, key, x)
		}
	}
	injected := p.inject(to, key)
	p.bad(to, key)
	c.writeLine(t, "check")
	kv := c.result(t)
	for _, x := range r.triples {
		r.targ[x.key()] = cOutcome(kv["m_"+x.key()])
	}
	r.summary(t)
	require.Empty(t, injected, "Go's InjectAtomic and its read-back")
	require.Equal(t, "ok", kv["mem_inject"], "C's inject elements")
	require.Equal(t, "ok", kv["mem_guard"], "C's guard after the bad requests")
	require.Equal(t, "ok", kv["mem_all"], "C's whole region")
	require.Equal(t, "0", kv["fails"])
}

func mustHex(tb testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(tb, err)
	return b
}
