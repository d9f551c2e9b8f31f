//go:build linux

package rxm_test

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// atomicSide is an rxm endpoint with FI_ATOMIC and a registered target
// region.
type atomicSide struct {
	*side
	mem  []byte
	mr   fi.MR
	base uint64 // the remote address of mem[0]
	wcnt eq.Counter
	rcnt eq.Counter
	rw   eq.Counter // remote writes
	rr   eq.Counter // remote reads
}

// openAtomicSide opens an rxm endpoint with FI_ATOMIC, its write, read,
// remote-write and remote-read counters, and a size-byte region
// registered with access.
func openAtomicSide(t testing.TB, size int, access fi.Access) *atomicSide {
	s := &atomicSide{mem: make([]byte, size)}
	s.side = openSideWith(t, nil, fi.CapAtomic|fi.CapRMA, func(dom fi.Domain, e ep.Endpoint) func() {
		var err error
		s.mr, err = fi.RegisterMR(dom, &fi.MRAttr{Buf: s.mem, Access: access}, 0)
		require.NoError(t, err)
		if dom.Info().DomainAttr.MRMode&fi.MRModeVirtAddr != 0 {
			s.base = uint64(uintptr(unsafe.Pointer(&s.mem[0])))
		}
		cntrs := []*eq.Counter{&s.wcnt, &s.rcnt, &s.rw, &s.rr}
		for i, f := range []fi.Flags{fi.FlagWrite, fi.FlagRead, fi.FlagRemoteWrite, fi.FlagRemoteRead} {
			*cntrs[i], err = eq.OpenCounter(dom, &eq.CounterAttr{})
			require.NoError(t, err)
			require.NoError(t, e.Bind(*cntrs[i], f))
		}
		return func() {
			require.NoError(t, s.mr.Close())
			for _, c := range cntrs {
				require.NoError(t, (*c).Close())
			}
		}
	})
	require.NotZero(t, s.e.Info().Caps&fi.CapAtomic, "the endpoint has FI_ATOMIC")
	return s
}

func (s *atomicSide) atomic() ep.Atomic { return s.e.(ep.Atomic) }

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestRDMAtomics: over tcp, each form of fi_atomic(3) reaches the
// target's registered memory through rxm's atomic protocol: the memory
// afterwards, the old values returned, the completion's flags and
// context, and the counters of both sides.
func TestRDMAtomics(t *testing.T) {
	a := openAtomicSide(t, 64, 0)
	b := openAtomicSide(t, 64, fi.AccessRemoteRead|fi.AccessRemoteWrite)
	toB := a.insert(t, b.side)[0]
	b.insert(t, a.side)
	key := b.mr.Key()
	binary.LittleEndian.PutUint64(b.mem, 41)
	at := a.atomic()

	// fetch-add of one uint64 (§3.11.6), retried while the connection
	// opens.
	res := make([]byte, 8)
	_, err := sendRetry(a.side, func() error {
		return at.FetchAtomic(u64(1), 1, nil, res, nil, toB, b.base, key, ep.Uint64, ep.OpSum, "fadd")
	}, b.side)
	require.NoError(t, err)
	got := next(t, a.side, b.side)
	require.Nil(t, got.err)
	require.Equal(t, "fadd", got.c.Context)
	require.Equal(t, fi.FlagAtomic|fi.FlagRead, got.c.Flags)
	require.Equal(t, uint64(41), binary.LittleEndian.Uint64(res))
	require.Equal(t, uint64(42), binary.LittleEndian.Uint64(b.mem))

	// compare-and-swap: a match swaps, a mismatch does not.
	require.NoError(t, at.CompareAtomic(u64(7), 1, nil, u64(42), nil, res, nil, toB, b.base, key, ep.Uint64, ep.OpCSwap, "cswap"))
	got = next(t, a.side, b.side)
	require.Nil(t, got.err)
	require.Equal(t, fi.FlagAtomic|fi.FlagRead, got.c.Flags)
	require.Equal(t, uint64(42), binary.LittleEndian.Uint64(res))
	require.Equal(t, uint64(7), binary.LittleEndian.Uint64(b.mem))
	require.NoError(t, at.CompareAtomic(u64(9), 1, nil, u64(42), nil, res, nil, toB, b.base, key, ep.Uint64, ep.OpCSwap, "cswap2"))
	require.Nil(t, next(t, a.side, b.side).err)
	require.Equal(t, uint64(7), binary.LittleEndian.Uint64(res))
	require.Equal(t, uint64(7), binary.LittleEndian.Uint64(b.mem))

	// A base operation over two remote segments of int32 (fi_atomicmsg):
	// min of elements 4..5 and 8..9.
	for i, v := range []int32{10, -5, 3, 100} {
		binary.LittleEndian.PutUint32(b.mem[16+4*i:], uint32(v))
	}
	ops := make([]byte, 16)
	for i, v := range []int32{2, 2, 50, -100} {
		binary.LittleEndian.PutUint32(ops[4*i:], uint32(v))
	}
	msg := &ep.AtomicMessage{
		IOV:      []ep.IOC{{Buf: ops[:4], Count: 1}, {Buf: ops[4:], Count: 3}},
		Addr:     toB,
		RMAIOV:   []ep.RMAIOC{{Addr: b.base + 16, Count: 2, Key: key}, {Addr: b.base + 24, Count: 2, Key: key}},
		Datatype: ep.Int32, Op: ep.OpMin, Context: "min",
	}
	require.NoError(t, at.AtomicMsg(msg, fi.FlagCompletion))
	got = next(t, a.side, b.side)
	require.Nil(t, got.err)
	require.Equal(t, "min", got.c.Context)
	require.Equal(t, fi.FlagAtomic|fi.FlagWrite, got.c.Flags)
	for i, want := range []int32{2, -5, 3, -100} {
		require.Equal(t, want, int32(binary.LittleEndian.Uint32(b.mem[16+4*i:])), "element %d", i)
	}

	// FI_ATOMIC_READ of three uint16, into two result buffers.
	binary.LittleEndian.PutUint16(b.mem[32:], 0xaaaa)
	binary.LittleEndian.PutUint16(b.mem[34:], 0xbbbb)
	binary.LittleEndian.PutUint16(b.mem[36:], 0xcccc)
	r1, r2 := make([]byte, 2), make([]byte, 4)
	require.NoError(t, at.FetchAtomicV([]ep.IOC{{Count: 3}}, nil, []ep.IOC{{Buf: r1, Count: 1}, {Buf: r2, Count: 2}}, nil,
		toB, b.base+32, key, ep.Uint16, ep.OpAtomicRead, "read"))
	require.Nil(t, next(t, a.side, b.side).err)
	require.Equal(t, []byte{0xaa, 0xaa}, r1)
	require.Equal(t, []byte{0xbb, 0xbb, 0xcc, 0xcc}, r2)

	// An inject completes without an entry; a fetch after it sees it.
	require.NoError(t, at.InjectAtomic(u64(100), 1, toB, b.base+40, key, ep.Uint64, ep.OpAtomicWrite))
	require.NoError(t, at.FetchAtomic(u64(0), 1, nil, res, nil, toB, b.base+40, key, ep.Uint64, ep.OpSum, "after inject"))
	got = next(t, a.side, b.side)
	require.Equal(t, "after inject", got.c.Context)
	require.Equal(t, uint64(100), binary.LittleEndian.Uint64(res))

	// The initiator counts writes (base ops, inject included) and reads
	// (fetch and compare); the target remote writes and remote reads.
	require.Equal(t, uint64(2), a.wcnt.Read())
	require.Equal(t, uint64(5), a.rcnt.Read())
	require.Equal(t, uint64(2), b.rw.Read())
	require.Equal(t, uint64(5), b.rr.Read())
}

// TestRDMAtomicRefused: a wrong key, a range past the region, and a
// region without the right fail at the initiator with an fi.EACCES error
// entry, counted as an error, and change nothing at the target; the
// connection survives them.
func TestRDMAtomicRefused(t *testing.T) {
	a := openAtomicSide(t, 16, 0)
	b := openAtomicSide(t, 16, fi.AccessRemoteRead) // no remote write
	toB := a.insert(t, b.side)[0]
	b.insert(t, a.side)
	copy(b.mem, "0123456789abcdef")
	at := a.atomic()
	res := make([]byte, 8)
	cases := []struct {
		name string
		post func() error
	}{
		{"wrong key", func() error {
			return at.FetchAtomic(u64(0), 1, nil, res, nil, toB, b.base, b.mr.Key()+1, ep.Uint64, ep.OpAtomicRead, "wrong key")
		}},
		{"past the end", func() error {
			return at.FetchAtomic(u64(0), 1, nil, res, nil, toB, b.base+9, b.mr.Key(), ep.Uint64, ep.OpAtomicRead, "past the end")
		}},
		{"no remote write", func() error {
			return at.Atomic(u64(1), 1, nil, toB, b.base, b.mr.Key(), ep.Uint64, ep.OpSum, "no remote write")
		}},
	}
	for i, c := range cases {
		_, err := sendRetry(a.side, c.post, b.side)
		require.NoError(t, err, c.name)
		got := next(t, a.side, b.side)
		require.NotNil(t, got.err, c.name)
		require.Equal(t, fi.EACCES, got.err.Err, c.name)
		require.Equal(t, c.name, got.err.Context, c.name)
		require.Equal(t, "0123456789abcdef", string(b.mem), c.name)
		require.Equal(t, uint64(i+1), a.wcnt.ReadErr()+a.rcnt.ReadErr(), c.name)
	}
	// Still connected: a permitted read works.
	require.NoError(t, at.FetchAtomic(nil, 1, nil, res, nil, toB, b.base+8, b.mr.Key(), ep.Uint64, ep.OpAtomicRead, "read"))
	got := next(t, a.side, b.side)
	require.Nil(t, got.err)
	require.Equal(t, "89abcdef", string(res))
}

// TestRDMAtomicValid: the valid queries answer as C's rxm built with
// compiler atomics (kit.BuiltinAtomicsExclude), with 16288 operand bytes
// an operation (the eager limit less the request's fixed part), half for
// compare; without FI_ATOMIC the data calls give fi.ENOSYS.
func TestRDMAtomicValid(t *testing.T) {
	a := openAtomicSide(t, 8, 0)
	at := a.atomic()
	n, err := at.AtomicValid(ep.Uint64, ep.OpSum)
	require.NoError(t, err)
	require.Equal(t, 2036, n)
	n, err = at.CompareAtomicValid(ep.Int8, ep.OpCSwap)
	require.NoError(t, err)
	require.Equal(t, 8144, n)
	n, err = at.FetchAtomicValid(ep.FloatComplex, ep.OpAtomicRead)
	require.NoError(t, err)
	require.Equal(t, 2036, n)
	for _, dt := range []ep.Datatype{ep.DoubleComplex, ep.LongDouble, ep.LongDoubleComplex, ep.Int128, ep.Uint128} {
		_, err = at.FetchAtomicValid(dt, ep.OpAtomicRead)
		require.ErrorIs(t, err, fi.EOPNOTSUPP, "%v", dt)
	}
	_, err = at.AtomicValid(ep.Float, ep.OpBOr)
	require.ErrorIs(t, err, fi.EOPNOTSUPP)

	plain := openSide(t)
	require.Zero(t, plain.e.Info().Caps&fi.CapAtomic, "FI_ATOMIC only when asked")
	err = plain.e.(ep.Atomic).Atomic(u64(1), 1, nil, 0, 0, 0, ep.Uint64, ep.OpSum, nil)
	require.ErrorIs(t, err, fi.ENOSYS)
	require.ErrorContains(t, err, "FI_ATOMIC")
	_, err = plain.e.(ep.Atomic).AtomicValid(ep.Uint64, ep.OpSum)
	require.ErrorIs(t, err, fi.ENOSYS)
}

// TestRDMAtomicAllocs: a fetch-add, initiator and target alike, allocates
// nothing once the pools are warm.
func TestRDMAtomicAllocs(t *testing.T) {
	a := openAtomicSide(t, 8, 0)
	b := openAtomicSide(t, 8, fi.AccessRemoteRead|fi.AccessRemoteWrite)
	toB := a.insert(t, b.side)[0]
	b.insert(t, a.side)
	at, key := a.atomic(), b.mr.Key()
	one, res := u64(1), make([]byte, 8)
	comps := make([]eq.Completion, 2)
	op := func() {
		for at.FetchAtomic(one, 1, nil, res, nil, toB, b.base, key, ep.Uint64, ep.OpSum, nil) == fi.EAGAIN {
			_, _ = b.cq.Read(comps[:0])
		}
		for {
			n, err := a.cq.Read(comps)
			if n > 0 {
				return
			}
			if err == fi.EAVAIL {
				panic("error completion")
			}
			_, _ = b.cq.Read(comps[:0])
		}
	}
	op()
	require.Zero(t, testing.AllocsPerRun(100, op))
	// One warm-up, AllocsPerRun's own warm-up and its 100 runs.
	require.Equal(t, uint64(102), binary.LittleEndian.Uint64(b.mem))
	require.Equal(t, uint64(101), binary.LittleEndian.Uint64(res))
}
