package fabtests

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file is the atomic group: fi_atomic(3) over FI_EP_RDM endpoints
// of a provider that offers FI_ATOMIC. Every operation and datatype pair
// the initiator's valid calls report is run in every form of its family
// against memory a target endpoint registered, each in a cell of its own,
// with values from the group's model (atomicmodel.go); the target's
// memory, the fetched values and the completions are checked against the
// model's arithmetic.

// atomicFamily is one of fi_atomic(3)'s three families of calls.
type atomicFamily int

const (
	famBase    atomicFamily = iota // fi_atomic, fi_atomicv, fi_atomicmsg, fi_inject_atomic
	famFetch                       // fi_fetch_atomic, fi_fetch_atomicv, fi_fetch_atomicmsg
	famCompare                     // fi_compare_atomic, fi_compare_atomicv, fi_compare_atomicmsg
)

var atomicFamilies = []atomicFamily{famBase, famFetch, famCompare}

func (f atomicFamily) String() string {
	return [...]string{"atomic", "fetch_atomic", "compare_atomic"}[f]
}

// takes reports whether fi_atomic(3) gives op to the family: FI_MIN to
// FI_BXOR and FI_ATOMIC_WRITE to the base calls, those and
// FI_ATOMIC_READ to the fetch calls, FI_CSWAP to FI_MSWAP to the compare
// calls.
func (f atomicFamily) takes(op ep.AtomicOp) bool {
	switch f {
	case famBase:
		return op >= ep.OpMin && op <= ep.OpBXor || op == ep.OpAtomicWrite
	case famFetch:
		return op >= ep.OpMin && op <= ep.OpAtomicWrite
	}
	return op >= ep.OpCSwap && op <= ep.OpMSwap
}

// valid asks a the family's valid call (fi_atomicvalid,
// fi_fetch_atomicvalid, fi_compare_atomicvalid).
func (f atomicFamily) valid(a ep.Atomic, dt ep.Datatype, op ep.AtomicOp) (int, error) {
	switch f {
	case famBase:
		return a.AtomicValid(dt, op)
	case famFetch:
		return a.FetchAtomicValid(dt, op)
	}
	return a.CompareAtomicValid(dt, op)
}

// flags are the flags of the family's completions (fi_cq(3)): FI_ATOMIC
// with FI_WRITE for the base calls, with FI_READ for the fetch and
// compare calls.
func (f atomicFamily) flags() fi.Flags {
	if f == famBase {
		return fi.FlagAtomic | fi.FlagWrite
	}
	return fi.FlagAtomic | fi.FlagRead
}

// forms are the family's calls.
func (f atomicFamily) forms() []atomicForm {
	if f == famBase {
		return []atomicForm{formSingle, formVector, formMsg, formInject}
	}
	return []atomicForm{formSingle, formVector, formMsg}
}

// atomicForm is the form of a call: single buffers, vectors, a message,
// or fi_inject_atomic.
type atomicForm int

const (
	formSingle atomicForm = iota
	formVector
	formMsg
	formInject
)

// callName is the C name of family f's call in form.
func callName(f atomicFamily, form atomicForm) string {
	if form == formInject {
		return "fi_inject_atomic"
	}
	return "fi_" + f.String() + [...]string{"", "v", "msg"}[form]
}

// atomicCase is one call of the plan, on a cell of its own in the
// target: n elements of dt.
type atomicCase struct {
	fam  atomicFamily
	form atomicForm
	op   ep.AtomicOp
	dt   ep.Datatype
	m    atomicModel
	n    int
	// refused says the call must be refused (when posted, or as an error
	// entry): its cell must stay as it was.
	refused bool
	// off is the cell's offset in the target; opOff, cmpOff and resOff
	// are the offsets of the operand, compare and result buffers in the
	// plan's arenas, -1 where the call has none.
	off, opOff, cmpOff, resOff int
	// buf, cmp and res are the operand (nil for FI_ATOMIC_READ), the
	// compare operand (compare calls) and the result buffer (fetch and
	// compare calls), with their descriptors; old is what res must
	// receive: the cell as it was.
	buf, cmp, res             []byte
	bufDesc, cmpDesc, resDesc any
	old                       []byte
}

func (c *atomicCase) String() string {
	return fmt.Sprintf("%s %s on %d %s", callName(c.fam, c.form), opName(c.op), c.n, typeName(c.dt))
}

// atomicPlan is a set of calls and the target memory they act on: each
// call has a cell of the target, 16-byte aligned, between cells the
// bytes of a pattern that no call may touch.
type atomicPlan struct {
	cases []*atomicCase
	// init is the target's initial image, want what it must hold once
	// every call is done, and ignore is 1 for the bytes of want that are
	// not compared (the padding of long doubles), 0 for the others.
	init, want, ignore []byte
	// operands, compares and results are the local arenas the cases'
	// buffers are cut from.
	operands, compares, results    []byte
	size, opSize, cmpSize, resSize int
}

// add adds a call of n elements to the plan, which finish then lays out.
func (p *atomicPlan) add(fam atomicFamily, form atomicForm, op ep.AtomicOp, dt ep.Datatype, m atomicModel, n int) *atomicCase {
	c := &atomicCase{fam: fam, form: form, op: op, dt: dt, m: m, n: n, opOff: -1, cmpOff: -1, resOff: -1}
	sz := n * m.size()
	c.off = p.size
	p.size += (sz + 15) &^ 15
	if p.size == c.off {
		p.size += 16 // a cell of its own even without elements
	}
	if op != ep.OpAtomicRead {
		c.opOff, p.opSize = p.opSize, p.opSize+sz
	}
	if fam == famCompare {
		c.cmpOff, p.cmpSize = p.cmpSize, p.cmpSize+sz
	}
	if fam != famBase {
		c.resOff, p.resSize = p.resSize, p.resSize+sz
	}
	p.cases = append(p.cases, c)
	return c
}

// finish lays the plan out: it fills the target's initial image with the
// model's rows (rotated from one cell to the next, so that neighbours
// differ), the operands and compare operands, and computes what the
// target must hold afterwards.
func (p *atomicPlan) finish() {
	p.init = pattern(p.size, 0x3c)
	p.ignore = make([]byte, p.size)
	p.operands = make([]byte, p.opSize)
	p.compares = make([]byte, p.cmpSize)
	p.results = bytes.Repeat([]byte{0xa5}, p.resSize) // what no fetch may leave
	var scratch [2][32]byte
	for k, c := range p.cases {
		sz := c.m.size()
		n := c.n * sz
		cell := p.init[c.off : c.off+n]
		c.old = cell
		if c.opOff >= 0 {
			c.buf = p.operands[c.opOff : c.opOff+n]
		}
		if c.cmpOff >= 0 {
			c.cmp = p.compares[c.cmpOff : c.cmpOff+n]
		}
		if c.resOff >= 0 {
			c.res = p.results[c.resOff : c.resOff+n]
		}
		for i := range c.n {
			e := i * sz
			s, cm := scratch[0][:sz], scratch[1][:sz]
			if c.buf != nil {
				s = c.buf[e : e+sz]
			}
			if c.cmp != nil {
				cm = c.cmp[e : e+sz]
			}
			c.m.put((i+k)%c.m.rows(), cell[e:e+sz], s, cm)
			c.m.ignore(p.ignore[c.off+e : c.off+e+sz])
		}
	}
	p.want = bytes.Clone(p.init)
	for _, c := range p.cases {
		if c.refused {
			continue
		}
		sz := c.m.size()
		for i := range c.n {
			e := i * sz
			var s, cm []byte
			if c.buf != nil {
				s = c.buf[e : e+sz]
			}
			if c.cmp != nil {
				cm = c.cmp[e : e+sz]
			}
			c.m.apply(c.op, c.old[e:e+sz], s, cm, p.want[c.off+e:c.off+e+sz])
		}
	}
}

// atomicDefined reports whether fi_atomic(3) defines op on m's datatype.
func atomicDefined(m atomicModel, op ep.AtomicOp) bool {
	z := make([]byte, 4*m.size())
	sz := m.size()
	return m.apply(op, z[:sz], z[sz:2*sz], z[2*sz:3*sz], z[3*sz:])
}

// sameElem reports whether elements a and b hold the same value, the
// bytes m ignores aside.
func sameElem(m atomicModel, a, b []byte) bool {
	ign := make([]byte, len(a))
	m.ignore(ign)
	return matches(a, b, ign)
}

// matches reports whether got equals want in every byte ignore does not
// mark.
func matches(got, want, ignore []byte) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] && ignore[i] == 0 {
			return false
		}
	}
	return true
}

// check compares got, the target's memory once the plan ran, with want,
// element by element, and fails with every difference (the first 20).
func (p *atomicPlan) check(t testing.TB, got []byte) {
	t.Helper()
	require.Len(t, got, len(p.want), "target image")
	var bad []string
	inCell := make([]bool, len(got))
	for _, c := range p.cases {
		sz := c.m.size()
		for i := range c.n {
			o := c.off + i*sz
			for j := o; j < o+sz; j++ {
				inCell[j] = true
			}
			if !matches(got[o:o+sz], p.want[o:o+sz], p.ignore[o:o+sz]) {
				why := "the model's result"
				if c.refused {
					why = "left as it was: the call was refused"
				}
				bad = append(bad, fmt.Sprintf("%s: element %d is %s, want %s (%s; it was %s)", c, i,
					c.m.format(got[o:o+sz]), c.m.format(p.want[o:o+sz]), why, c.m.format(p.init[o:o+sz])))
			}
		}
	}
	for i := range got {
		if !inCell[i] && got[i] != p.init[i] {
			bad = append(bad, fmt.Sprintf("byte %d, outside every call's elements, changed from %#x to %#x", i, p.init[i], got[i]))
		}
	}
	if len(bad) > 0 {
		n := len(bad)
		if n > 20 {
			bad = append(bad[:20], "...")
		}
		t.Fatalf("%d differences in the target's memory:\n%s", n, strings.Join(bad, "\n"))
	}
}

// settle polls m until buf matches want outside ignore, or for half the
// suite's timeout: the target's memory as the initiator's calls leave
// it, fi_inject_atomic's included, which complete nowhere.
func settle(t testing.TB, m *mesh, buf, want, ignore []byte) {
	t.Helper()
	end := time.Now().Add(m.s.cfg.Timeout / 2)
	for {
		m.poll(t)
		if matches(buf, want, ignore) || time.Now().After(end) {
			return
		}
		runtime.Gosched()
	}
}

// atomicInit is the initiator of the group's tests: an RDM endpoint with
// its atomic ability, the target's address in its AV and the key and
// base address of the target's memory.
type atomicInit struct {
	m      *mesh
	x      *rdmPeer
	a      ep.Atomic
	dest   fi.Addr
	target *rdmPeer // in this process; nil in a two-process test
	key    uint64
	base   uint64
}

// atomicInfo returns the provider's first FI_EP_RDM Info with FI_ATOMIC
// and caps, skipping when there is none. FI_ATOMIC is asked for in the
// hints: ofi_rxm, for one, offers it only when asked.
func (s *suite) atomicInfo(t testing.TB, caps fi.Caps) *fi.Info {
	t.Helper()
	info := s.rdmInfo(t, fi.CapAtomic|caps)
	rmaSkips(t, info)
	return info
}

// newAtomicInit makes x of m the initiator, towards dest.
func newAtomicInit(t testing.TB, m *mesh, x *rdmPeer, dest fi.Addr) *atomicInit {
	t.Helper()
	if x.info.Caps&fi.CapAtomic == 0 {
		t.Skipf("provider's Info lacks FI_ATOMIC: %v", x.info.Caps)
	}
	a, ok := x.ep.(ep.Atomic)
	if !ok {
		t.Skipf("provider's endpoint %T has no atomic ability (ep.Atomic)", x.ep)
	}
	return &atomicInit{m: m, x: x, a: a, dest: dest}
}

// atomicPair opens an initiator and a target for info in this process,
// each in the other's AV.
func (s *suite) atomicPair(t testing.TB, info *fi.Info, o rdmOpts) *atomicInit {
	t.Helper()
	m := s.rdmOn(t, info, o, "initiator", "target")
	m.connect(t)
	x := newAtomicInit(t, m, m.peers[0], m.addr[0][1])
	x.target = m.peers[1]
	return x
}

// exposeAt registers buf at the target with access and aims x at it.
func (x *atomicInit) exposeAt(t testing.TB, buf []byte, access fi.Access) {
	t.Helper()
	x.key = expose(t, x.target, buf, access)
	x.base = rmaBase(x.target.info, buf)
}

// prepare gives the plan's cases the descriptors of its arenas, which it
// registers where the domain needs local descriptors (FI_MR_LOCAL).
func (x *atomicInit) prepare(t testing.TB, p *atomicPlan) {
	t.Helper()
	var opDesc, cmpDesc, resDesc any
	if len(p.operands) > 0 {
		opDesc = x.x.desc(t, p.operands)
	}
	if len(p.compares) > 0 {
		cmpDesc = x.x.desc(t, p.compares)
	}
	if len(p.results) > 0 {
		resDesc = x.x.desc(t, p.results)
	}
	for _, c := range p.cases {
		c.bufDesc, c.cmpDesc, c.resDesc = opDesc, cmpDesc, resDesc
	}
}

// split cuts buf, n elements of size bytes, into two segments at element
// at (one segment where at is 0 or n, or the endpoint takes one). A nil
// buf, the operand of FI_ATOMIC_READ, gives segments without buffers.
func (x *atomicInit) split(buf []byte, n, size, at int, desc any) ([]ep.IOC, []any) {
	if at <= 0 || at >= n || x.x.info.TxAttr.IOVLimit < 2 {
		return []ep.IOC{{Buf: buf, Count: n}}, []any{desc}
	}
	var a, b []byte
	if buf != nil {
		a, b = buf[:at*size], buf[at*size:]
	}
	return []ep.IOC{{Buf: a, Count: at}, {Buf: b, Count: n - at}}, []any{desc, desc}
}

// post makes c's call at addr with key and returns what it returns. The
// vector and message forms split the operand after its first element,
// the compare operand before its last and the result in the middle.
func (x *atomicInit) post(c *atomicCase, key, addr uint64, ctx any) error {
	a, n := x.a, c.n
	switch c.form {
	case formInject:
		return a.InjectAtomic(c.buf, n, x.dest, addr, key, c.dt, c.op)
	case formSingle:
		switch c.fam {
		case famBase:
			return a.Atomic(c.buf, n, c.bufDesc, x.dest, addr, key, c.dt, c.op, ctx)
		case famFetch:
			return a.FetchAtomic(c.buf, n, c.bufDesc, c.res, c.resDesc, x.dest, addr, key, c.dt, c.op, ctx)
		}
		return a.CompareAtomic(c.buf, n, c.bufDesc, c.cmp, c.cmpDesc, c.res, c.resDesc, x.dest, addr, key, c.dt, c.op, ctx)
	}
	size := atomicElemSize(c.dt)
	iov, desc := x.split(c.buf, n, size, 1, c.bufDesc)
	var cmpv, resv []ep.IOC
	var cmpd, resd []any
	if c.fam == famCompare {
		cmpv, cmpd = x.split(c.cmp, n, size, n-1, c.cmpDesc)
	}
	if c.fam != famBase {
		resv, resd = x.split(c.res, n, size, n/2, c.resDesc)
	}
	if c.form == formVector {
		switch c.fam {
		case famBase:
			return a.AtomicV(iov, desc, x.dest, addr, key, c.dt, c.op, ctx)
		case famFetch:
			return a.FetchAtomicV(iov, desc, resv, resd, x.dest, addr, key, c.dt, c.op, ctx)
		}
		return a.CompareAtomicV(iov, desc, cmpv, cmpd, resv, resd, x.dest, addr, key, c.dt, c.op, ctx)
	}
	msg := &ep.AtomicMessage{IOV: iov, Desc: desc, Addr: x.dest, RMAIOV: []ep.RMAIOC{{Addr: addr, Count: n, Key: key}},
		Datatype: c.dt, Op: c.op, Context: ctx}
	switch c.fam {
	case famBase:
		return a.AtomicMsg(msg, 0)
	case famFetch:
		return a.FetchAtomicMsg(msg, resv, resd, 0)
	}
	return a.CompareAtomicMsg(msg, cmpv, cmpd, resv, resd, 0)
}

// exec makes c's call on its cell and checks what follows: a completion
// with its context and the family's flags, and for the fetch and compare
// calls the cell's previous values in the result buffer. An injected
// call completes nowhere: its operand buffer is overwritten at once (it
// is the caller's again when the call returns), and the target's memory
// tells later whether it was carried out.
func (x *atomicInit) exec(t testing.TB, c *atomicCase) {
	t.Helper()
	ctx := &opCtx{c.String()}
	x.m.post(t, c.String(), func() error { return x.post(c, x.key, x.base+uint64(c.off), ctx) })
	if c.form == formInject {
		for i := range c.buf {
			c.buf[i] = 0xee
		}
		return
	}
	e := x.m.take(t, x.x, 1)[0]
	require.Nil(t, e.err, "%s: error entry %v", c, e.err)
	require.Same(t, ctx, e.c.Context, "%s: the completion's context", c)
	require.Equal(t, c.fam.flags(), e.c.Flags, "%s: the completion's flags: %v", c, e.c.Flags)
	if c.fam == famBase {
		return
	}
	sz := c.m.size()
	for i := range c.n {
		got, want := c.res[i*sz:(i+1)*sz], c.old[i*sz:(i+1)*sz]
		require.True(t, sameElem(c.m, got, want), "%s: fetched element %d is %s, want %s, the target's value before",
			c, i, c.m.format(got), c.m.format(want))
	}
}

// refuseAtPost requires c's call to fail when posted with an error whose
// code is one of codes, and to complete nowhere.
func (x *atomicInit) refuseAtPost(t testing.TB, c *atomicCase, why string, codes ...fi.Errno) {
	t.Helper()
	var err error
	for ctx := x.m.s.ctx(t); ; {
		if err = x.post(c, x.key, x.base+uint64(c.off), &opCtx{c.String()}); !errors.Is(err, fi.EAGAIN) || ctx.Err() != nil {
			break
		}
		x.m.poll(t)
	}
	require.Error(t, err, "%s: accepted (%s)", c, why)
	require.Contains(t, codes, fi.Code(err), "%s (%s): got %v", c, why, err)
}

// refuseEntry makes c's call with key at addr and requires an error
// entry with code and the call's context.
func (x *atomicInit) refuseEntry(t testing.TB, c *atomicCase, key, addr uint64, code fi.Errno, why string) {
	t.Helper()
	ctx := &opCtx{c.String()}
	x.m.post(t, c.String(), func() error { return x.post(c, key, addr, ctx) })
	e := x.m.cqError(t, x.x)
	require.Equal(t, code, e.Err, "%s (%s): error entry %v", c, why, e)
	require.ErrorIs(t, e, code)
	require.Same(t, ctx, e.Context, "%s: the error entry's context", c)
}

// settleCheck waits for the target (in this process) to hold what the
// plan wants, then checks it and that neither side has an entry left.
func (x *atomicInit) settleCheck(t testing.TB, p *atomicPlan, buf []byte) {
	t.Helper()
	settle(t, x.m, buf, p.want, p.ignore)
	p.check(t, buf)
	x.x.requireCQEmpty(t)
	x.target.requireCQEmpty(t)
}

// atomicPlanAll is the plan of the ops test: every pair the initiator's
// valid calls report, on up to 8 elements (the model's rows; inject
// within the inject size), in every form of the family, or, without
// allForms, in one form each, the family's forms taken in turn (the
// two-process run: its target answers from another process, which
// costs each call a round trip between two busy-polling processes on
// shared cores). Each valid call's answer is checked on the way: a count
// of at least 1 for a pair of the family that fi_atomic(3) defines,
// fi.EOPNOTSUPP otherwise.
func (x *atomicInit) atomicPlanAll(t testing.TB, allForms bool) (*atomicPlan, [3]int) {
	t.Helper()
	p := &atomicPlan{}
	var pairs [3]int
	inject := x.x.info.TxAttr.InjectSize
	for _, f := range atomicFamilies {
		for _, op := range atomicOps {
			for _, dt := range atomicTypes {
				limit, err := f.valid(x.a, dt, op)
				if err != nil {
					require.ErrorIs(t, err, fi.EOPNOTSUPP, "%svalid(%s, %s)", f, typeName(dt), opName(op))
					continue
				}
				m := x.requireValid(t, f, op, dt, limit)
				if m == nil {
					continue
				}
				pairs[f]++
				n := min(limit, m.rows())
				forms := f.forms()
				if !allForms {
					k := (pairs[f] - 1) % len(forms)
					forms = forms[k : k+1]
				}
				for _, form := range forms {
					k := n
					if form == formInject {
						if k = min(n, inject/m.size()); k == 0 {
							t.Logf("%s %s on %s: one element exceeds the inject size %d", callName(f, form), opName(op), typeName(dt), inject)
							continue
						}
					}
					p.add(f, form, op, dt, m, k)
				}
			}
		}
	}
	if len(p.cases) == 0 {
		t.Skip("the endpoint's valid calls report no atomic operation")
	}
	p.finish()
	return p, pairs
}

// requireValid checks a pair the family's valid call reported with count
// limit: at least 1, an operation of the family that fi_atomic(3) defines
// on the datatype. It returns the datatype's model, or nil where the
// group cannot model it here (logged).
func (x *atomicInit) requireValid(t testing.TB, f atomicFamily, op ep.AtomicOp, dt ep.Datatype, limit int) atomicModel {
	t.Helper()
	what := fmt.Sprintf("%svalid(%s, %s)", f, typeName(dt), opName(op))
	require.GreaterOrEqual(t, limit, 1, "%s: count", what)
	require.True(t, f.takes(op), "%s: valid, but fi_atomic(3) gives %s to other calls", what, opName(op))
	m, why := atomicModelOf(dt)
	if m == nil {
		t.Logf("%s: valid, not checked: %s", what, why)
		return nil
	}
	require.True(t, atomicDefined(m, op), "%s: valid, but fi_atomic(3) defines no %s on %s", what, opName(op), typeName(dt))
	return m
}

// pick returns a pair the family supports with a model: among ops (or any
// operation of the family when none is given) and the datatypes in the
// order uint64, int32, then libfabric's, the first supported; false when
// there is none.
func (x *atomicInit) pick(t testing.TB, f atomicFamily, ops ...ep.AtomicOp) (ep.AtomicOp, ep.Datatype, atomicModel, int, bool) {
	t.Helper()
	if len(ops) == 0 {
		ops = atomicOps
	}
	types := append([]ep.Datatype{ep.Uint64, ep.Int32}, atomicTypes...)
	for _, op := range ops {
		if !f.takes(op) {
			continue
		}
		for _, dt := range types {
			if limit, err := f.valid(x.a, dt, op); err == nil {
				if m := x.requireValid(t, f, op, dt, limit); m != nil {
					return op, dt, m, limit, true
				}
			}
		}
	}
	return 0, 0, nil, 0, false
}

// atomicDefaultOps are the operations pick prefers for each family.
var atomicDefaultOps = [3][]ep.AtomicOp{
	famBase:    {ep.OpSum, ep.OpAtomicWrite},
	famFetch:   {ep.OpSum, ep.OpAtomicWrite, ep.OpAtomicRead},
	famCompare: {ep.OpCSwap, ep.OpCSwapNE, ep.OpMSwap},
}

// testAtomic is the atomic group: fi_atomic(3) over FI_EP_RDM endpoints.
func testAtomic(t *testing.T, s *suite) {
	s.run(t, "valid", func(t *testing.T) {
		// Every operation and datatype of libfabric 1.17 with each valid
		// call: a supported pair has a count of at least 1 and belongs to
		// the family; an unsupported one gives fi.EOPNOTSUPP, and so does
		// the call itself (fi.EINVAL or fi.EOPNOTSUPP for an operation of
		// another family), without a completion and without touching the
		// target.
		x := s.atomicPair(t, s.atomicInfo(t, 0), rdmOpts{})
		buf := pattern(4096, 0x3c)
		before := bytes.Clone(buf)
		x.exposeAt(t, buf, remoteRW)
		var pairs [3]int
		refused := 0
		for _, f := range atomicFamilies {
			for _, op := range atomicOps {
				for _, dt := range atomicTypes {
					limit, err := f.valid(x.a, dt, op)
					if err == nil {
						x.requireValid(t, f, op, dt, limit)
						pairs[f]++
						continue
					}
					require.ErrorIs(t, err, fi.EOPNOTSUPP, "%svalid(%s, %s)", f, typeName(dt), opName(op))
					c := &atomicCase{fam: f, op: op, dt: dt, n: 1}
					one := make([]byte, atomicElemSize(dt))
					if op != ep.OpAtomicRead {
						c.buf, c.bufDesc = one, x.x.desc(t, one)
					}
					if f == famCompare {
						c.cmp = bytes.Clone(one)
						c.cmpDesc = x.x.desc(t, c.cmp)
					}
					if f != famBase {
						c.res = bytes.Clone(one)
						c.resDesc = x.x.desc(t, c.res)
					}
					if f.takes(op) {
						x.refuseAtPost(t, c, "an unsupported pair", fi.EOPNOTSUPP)
					} else {
						x.refuseAtPost(t, c, "an operation of another family", fi.EINVAL, fi.EOPNOTSUPP)
					}
					refused++
				}
			}
		}
		x.target.poll(t)
		require.Equal(t, before, buf, "target memory after refused calls")
		x.x.requireCQEmpty(t)
		x.target.requireCQEmpty(t)
		t.Logf("valid pairs: %d base, %d fetch, %d compare; %d unsupported pairs refused by the calls",
			pairs[famBase], pairs[famFetch], pairs[famCompare], refused)
	})

	s.run2(t, "ops", func(t *testing.T) {
		// Every valid pair in every form of its family, from one endpoint
		// on memory another endpoint of this process registered.
		x := s.atomicPair(t, s.atomicInfo(t, 0), rdmOpts{})
		p, pairs := x.atomicPlanAll(t, true)
		buf := bytes.Clone(p.init)
		x.exposeAt(t, buf, remoteRW)
		x.prepare(t, p)
		for _, c := range p.cases {
			x.exec(t, c)
		}
		x.settleCheck(t, p, buf)
		t.Logf("%d calls: %d base, %d fetch and %d compare pairs, each in every form", len(p.cases),
			pairs[famBase], pairs[famFetch], pairs[famCompare])
	}, func(t *testing.T) {
		// Every pair again, in one form each, with the target in the
		// peer process, which registers the image it is sent, keeps
		// polling while the calls run, waits for its memory to hold what
		// this side computed and sends it back.
		m := s.rdmOn(t, s.atomicInfo(t, 0), rdmOpts{}, "initiator")
		x := newAtomicInit(t, m, m.peers[0], fi.AddrUnspec)
		p, pairs := x.atomicPlanAll(t, false)
		l := s.spawn(t, m.poll)
		x.dest = exchangeNames(t, l, x.x)
		l.send(t, "image", p.init)
		x.key = l.recvU64(t, "key")
		x.base = l.recvU64(t, "base")
		x.prepare(t, p)
		for _, c := range p.cases {
			x.exec(t, c)
		}
		l.send(t, "want", p.want)
		l.send(t, "ignore", p.ignore)
		p.check(t, l.recv(t, "memory"))
		x.x.requireCQEmpty(t)
		l.finish(t)
		t.Logf("%d calls: %d base, %d fetch and %d compare pairs, each in one form", len(p.cases),
			pairs[famBase], pairs[famFetch], pairs[famCompare])
	}, func(t *testing.T, l *link) {
		m := s.rdmOn(t, s.atomicInfo(t, 0), rdmOpts{}, "target")
		x := m.peers[0]
		l.poll = m.poll
		exchangeNames(t, l, x)
		buf := bytes.Clone(l.recv(t, "image"))
		l.sendU64(t, "key", expose(t, x, buf, remoteRW))
		l.sendU64(t, "base", rmaBase(x.info, buf))
		want := l.recv(t, "want")
		ignore := l.recv(t, "ignore")
		settle(t, m, buf, want, ignore)
		l.send(t, "memory", buf)
		x.requireCQEmpty(t)
	})

	s.run(t, "counters", func(t *testing.T) {
		// Counters bound to the initiator count its base calls
		// (FI_WRITE) and its fetch and compare calls (FI_READ), those
		// that failed as errors (fi_endpoint(3)); with FI_RMA_EVENT,
		// counters bound to the target count the base calls that reached
		// it (FI_REMOTE_WRITE) and the fetch and compare calls
		// (FI_REMOTE_READ).
		info := s.atomicInfo(t, 0)
		if infos, err := fi.GetInfo(s.ctx(t), "", "", 0, withCaps(s.hints(fi.EPTypeRDM), fi.CapAtomic|fi.CapRMAEvent)); err == nil {
			info = infos[0]
		}
		remote := info.Caps&fi.CapRMAEvent != 0
		cntr := map[fi.Flags]eq.Counter{}
		bind := func(t testing.TB, x *rdmPeer) {
			flags := []fi.Flags{fi.FlagWrite, fi.FlagRead}
			if x.role == "target" {
				if !remote {
					return
				}
				flags = []fi.Flags{fi.FlagRemoteWrite, fi.FlagRemoteRead}
			}
			for _, f := range flags {
				c, err := eq.OpenCounter(x.domain, &eq.CounterAttr{})
				skipIfAbsent(t, err, "counters")
				keep(t, c)
				require.NoError(t, x.ep.Bind(c, f), "%s: bind a %v counter", x.role, f)
				cntr[f] = c
			}
			keep(t, x.ep) // cleanups run in reverse: the endpoint closes before its counters
		}
		x := s.atomicPair(t, info, rdmOpts{bind: bind})
		p := &atomicPlan{}
		var writes, reads uint64
		var bad []*atomicCase
		for _, f := range atomicFamilies {
			op, dt, m, limit, ok := x.pick(t, f, atomicDefaultOps[f]...)
			if !ok {
				t.Logf("no %s pair to count", f)
				continue
			}
			for _, form := range f.forms() {
				p.add(f, form, op, dt, m, min(2, limit))
				if f == famBase {
					writes++
				} else {
					reads++
				}
			}
			c := p.add(f, formSingle, op, dt, m, 1)
			c.refused = true
			bad = append(bad, c)
		}
		p.finish()
		buf := bytes.Clone(p.init)
		x.exposeAt(t, buf, remoteRW)
		x.prepare(t, p)
		for _, c := range p.cases {
			if !c.refused {
				x.exec(t, c)
			}
		}
		w, r := cntr[fi.FlagWrite], cntr[fi.FlagRead]
		rw, rr := cntr[fi.FlagRemoteWrite], cntr[fi.FlagRemoteRead]
		counts := func() string {
			c := fmt.Sprintf("FI_WRITE %d (errors %d), FI_READ %d (errors %d)", w.Read(), w.ReadErr(), r.Read(), r.ReadErr())
			if remote {
				c += fmt.Sprintf(", FI_REMOTE_WRITE %d, FI_REMOTE_READ %d", rw.Read(), rr.Read())
			}
			return c
		}
		wait := func(what string, cond func() bool) {
			for ctx := s.ctx(t); !cond(); runtime.Gosched() {
				if ctx.Err() != nil {
					t.Fatalf("timed out after %v waiting for %s: %s", s.cfg.Timeout, what, counts())
				}
				x.m.poll(t)
			}
		}
		wait(fmt.Sprintf("FI_WRITE %d, FI_READ %d (remote: as many)", writes, reads), func() bool {
			return w.Read() >= writes && r.Read() >= reads && (!remote || rw.Read() >= writes && rr.Read() >= reads)
		})
		settle(t, x.m, buf, p.want, p.ignore)
		require.Equal(t, writes, w.Read(), "initiator's FI_WRITE counter: the base calls, fi_inject_atomic included")
		require.Equal(t, reads, r.Read(), "initiator's FI_READ counter: the fetch and compare calls")
		require.Zero(t, w.ReadErr()+r.ReadErr(), "initiator's counters' errors")
		if remote {
			require.Equal(t, writes, rw.Read(), "target's FI_REMOTE_WRITE counter: the base calls")
			require.Equal(t, reads, rr.Read(), "target's FI_REMOTE_READ counter: the fetch and compare calls")
		} else {
			t.Logf("provider's Info lacks FI_RMA_EVENT: the target's counters are not checked")
		}
		for _, c := range bad {
			x.refuseEntry(t, c, x.key+1, x.base+uint64(c.off), fi.EACCES, "a wrong key")
		}
		var writeErrs, readErrs uint64
		for _, c := range bad {
			if c.fam == famBase {
				writeErrs++
			} else {
				readErrs++
			}
		}
		wait(fmt.Sprintf("errors FI_WRITE %d, FI_READ %d", writeErrs, readErrs), func() bool {
			return w.ReadErr() >= writeErrs && r.ReadErr() >= readErrs
		})
		require.Equal(t, writeErrs, w.ReadErr(), "initiator's FI_WRITE counter's errors")
		require.Equal(t, readErrs, r.ReadErr(), "initiator's FI_READ counter's errors")
		require.Equal(t, writes, w.Read(), "initiator's FI_WRITE counter after the failed calls")
		require.Equal(t, reads, r.Read(), "initiator's FI_READ counter after the failed calls")
		x.settleCheck(t, p, buf)
	})

	for _, tc := range []struct {
		name   string
		access fi.Access
		// key and addr alter the call: a wrong key, an address where
		// the call's second element is past the region's end, or one a
		// byte past the element's (misaligned for every datatype pick
		// prefers: fi.EINVAL instead of fi.EACCES).
		badKey, outside, misaligned bool
		// try are the refused calls, by family and preferred operations;
		// after is a call the region allows, which must succeed next.
		try   [3][]ep.AtomicOp
		after []ep.AtomicOp
		// afterFam is after's family.
		afterFam atomicFamily
	}{
		{"bad-key", remoteRW, true, false, false, atomicDefaultOps, atomicDefaultOps[famBase], famBase},
		{"out-of-range", remoteRW, false, true, false, atomicDefaultOps, atomicDefaultOps[famBase], famBase},
		{"misaligned", remoteRW, false, false, true, atomicDefaultOps, atomicDefaultOps[famBase], famBase},
		{"write-no-access", fi.AccessRemoteRead, false, false, false,
			[3][]ep.AtomicOp{atomicDefaultOps[famBase], {ep.OpSum, ep.OpAtomicWrite}, atomicDefaultOps[famCompare]},
			[]ep.AtomicOp{ep.OpAtomicRead}, famFetch},
		{"read-no-access", fi.AccessRemoteWrite, false, false, false,
			[3][]ep.AtomicOp{nil, {ep.OpAtomicRead}, nil}, atomicDefaultOps[famBase], famBase},
	} {
		s.run(t, tc.name, func(t *testing.T) {
			// A call the target refuses completes as an fi.EACCES error
			// entry (fi.EINVAL for a misaligned address) with its context
			// and leaves the target's memory as it was; the endpoints
			// carry on.
			x := s.atomicPair(t, s.atomicInfo(t, 0), rdmOpts{})
			p := &atomicPlan{}
			var refused []*atomicCase
			for _, f := range atomicFamilies {
				if tc.try[f] == nil {
					continue
				}
				op, dt, m, limit, ok := x.pick(t, f, tc.try[f]...)
				if !ok {
					t.Logf("no %s pair among %v", f, tc.try[f])
					continue
				}
				c := p.add(f, formSingle, op, dt, m, min(2, limit))
				c.refused = true
				refused = append(refused, c)
			}
			var after *atomicCase
			if op, dt, m, limit, ok := x.pick(t, tc.afterFam, tc.after...); ok {
				after = p.add(tc.afterFam, formSingle, op, dt, m, min(2, limit))
			}
			if len(refused) == 0 {
				t.Skip("the endpoint supports none of the calls this test refuses")
			}
			p.finish()
			buf := bytes.Clone(p.init)
			x.exposeAt(t, buf, tc.access)
			x.prepare(t, p)
			for _, c := range refused {
				key, addr := x.key, x.base+uint64(c.off)
				why, code := "access "+tc.access.String(), fi.EACCES
				switch {
				case tc.misaligned:
					if c.m.size() < 2 {
						t.Logf("%s: one-byte elements are never misaligned", c)
						continue
					}
					addr++
					why, code = "a misaligned address", fi.EINVAL
				case tc.badKey:
					key++
					why = "a wrong key"
				case tc.outside:
					addr = x.base + uint64(len(buf)-c.m.size()) // the last element, and beyond
					why = "past the region's end"
				}
				if tc.outside && c.n < 2 {
					t.Logf("%s: one element only, placed at the region's end is inside", c)
					continue
				}
				x.refuseEntry(t, c, key, addr, code, why)
			}
			x.m.poll(t)
			if after != nil {
				x.exec(t, after)
			}
			x.settleCheck(t, p, buf)
		})
	}

	s.run(t, "count-limits", func(t *testing.T) {
		// Each family's largest count works; one element more is refused
		// when posted (fi.EMSGSIZE, fi_atomic(3) ERRORS; fi.EINVAL is
		// taken too, as C's ofi_rxm answers), in the single and the
		// vector form, and so is a count of 0 (fi.EINVAL).
		x := s.atomicPair(t, s.atomicInfo(t, 0), rdmOpts{})
		p := &atomicPlan{}
		type bound struct{ most, over, overV, zero *atomicCase }
		var bounds []bound
		for _, f := range atomicFamilies {
			op, dt, m, most, ok := x.pick(t, f, atomicDefaultOps[f]...)
			if !ok {
				t.Logf("no %s pair", f)
				continue
			}
			b := bound{most: p.add(f, formSingle, op, dt, m, most), over: p.add(f, formSingle, op, dt, m, most+1),
				overV: p.add(f, formVector, op, dt, m, most+1), zero: p.add(f, formSingle, op, dt, m, 0)}
			b.over.refused, b.overV.refused, b.zero.refused = true, true, true
			bounds = append(bounds, b)
		}
		if len(bounds) == 0 {
			t.Skip("the endpoint's valid calls report no atomic operation")
		}
		p.finish()
		buf := bytes.Clone(p.init)
		x.exposeAt(t, buf, remoteRW)
		x.prepare(t, p)
		for _, b := range bounds {
			x.refuseAtPost(t, b.over, "more elements than the valid call allows", fi.EMSGSIZE, fi.EINVAL)
			x.refuseAtPost(t, b.overV, "more elements than the valid call allows", fi.EMSGSIZE, fi.EINVAL)
			x.refuseAtPost(t, b.zero, "no element", fi.EINVAL)
			x.exec(t, b.most)
		}
		x.settleCheck(t, p, buf)
	})
}

// withCaps returns h with caps added.
func withCaps(h *fi.Info, caps fi.Caps) *fi.Info {
	h.Caps |= caps
	return h
}
