//go:build linux

package shm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atomicDone reads one completion or error entry from n, progressing the
// others meanwhile.
func atomicDone(t testing.TB, n *node, all ...*node) (eq.Completion, *eq.CQError) {
	t.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, o := range all {
			if o != n {
				_, _ = o.cq.Read(nil)
			}
		}
		k, err := n.cq.Read(c[:])
		if k == 1 {
			return c[0], nil
		}
		if err == fi.EAVAIL {
			e, err := n.cq.ReadErr()
			require.NoError(t, err)
			return eq.Completion{}, e
		}
	}
	t.Fatal("no completion within 10 s")
	return eq.Completion{}, nil
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestAtomicOps: fetch-add, compare-swap, min, write and read of several
// datatypes between two endpoints, in the single-buffer, vector and
// message forms, with the completion flags of fi_cq(3).
func TestAtomicOps(t *testing.T) {
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	mem := make([]byte, 64)
	mr, err := fi.RegisterMR(b.domain, &fi.MRAttr{Buf: mem, Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: 9}, 0)
	require.NoError(t, err)
	defer mr.Close()
	at := a.ep.(ep.Atomic)
	wait := func(ctx any, flags fi.Flags) {
		t.Helper()
		c, e := atomicDone(t, a, a, b)
		require.Nil(t, e)
		require.Equal(t, ctx, c.Context)
		require.Equal(t, flags, c.Flags)
	}

	// uint64 fetch-add, two elements.
	binary.LittleEndian.PutUint64(mem[0:], 40)
	binary.LittleEndian.PutUint64(mem[8:], 1<<40)
	res := make([]byte, 16)
	require.NoError(t, at.FetchAtomic(append(le64(2), le64(5)...), 2, nil, res, nil, toB, 0, 9, ep.Uint64, ep.OpSum, "fadd"))
	wait("fadd", fi.FlagAtomic|fi.FlagRead)
	assert.Equal(t, uint64(40), binary.LittleEndian.Uint64(res))
	assert.Equal(t, uint64(1<<40), binary.LittleEndian.Uint64(res[8:]))
	assert.Equal(t, uint64(42), binary.LittleEndian.Uint64(mem))
	assert.Equal(t, uint64(1<<40+5), binary.LittleEndian.Uint64(mem[8:]))

	// double compare-swap: the first element matches, the second not.
	binary.LittleEndian.PutUint64(mem[16:], math.Float64bits(1.5))
	binary.LittleEndian.PutUint64(mem[24:], math.Float64bits(2.5))
	buf := append(le64(math.Float64bits(9)), le64(math.Float64bits(8))...)
	cmp := append(le64(math.Float64bits(1.5)), le64(math.Float64bits(7))...)
	res = make([]byte, 16)
	require.NoError(t, at.CompareAtomic(buf, 2, nil, cmp, nil, res, nil, toB, 16, 9, ep.Double, ep.OpCSwap, "cswap"))
	wait("cswap", fi.FlagAtomic|fi.FlagRead)
	assert.Equal(t, 1.5, math.Float64frombits(binary.LittleEndian.Uint64(res)))
	assert.Equal(t, 2.5, math.Float64frombits(binary.LittleEndian.Uint64(res[8:])))
	assert.Equal(t, 9.0, math.Float64frombits(binary.LittleEndian.Uint64(mem[16:])))
	assert.Equal(t, 2.5, math.Float64frombits(binary.LittleEndian.Uint64(mem[24:])))

	// int32 min, vector form over two local segments.
	for k, v := range []int32{10, -3, 7} {
		binary.LittleEndian.PutUint32(mem[32+4*k:], uint32(v))
	}
	iov := []ep.IOC{{Buf: binary.LittleEndian.AppendUint32(nil, uint32(4)), Count: 1},
		{Buf: binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 5), uint32(0xffffff00)), Count: 2}}
	require.NoError(t, at.AtomicV(iov, nil, toB, 32, 9, ep.Int32, ep.OpMin, "min"))
	wait("min", fi.FlagAtomic|fi.FlagWrite)
	for k, want := range []int32{4, -3, -256} {
		assert.Equal(t, want, int32(binary.LittleEndian.Uint32(mem[32+4*k:])), "element %d", k)
	}

	// uint8 write (message form) and float read (fetch message form).
	msg := &ep.AtomicMessage{IOV: []ep.IOC{{Buf: []byte{1, 2, 3}, Count: 3}}, Addr: toB,
		RMAIOV: []ep.RMAIOC{{Addr: 48, Count: 3, Key: 9}}, Datatype: ep.Uint8, Op: ep.OpAtomicWrite, Context: "write"}
	require.NoError(t, at.AtomicMsg(msg, fi.FlagCompletion))
	wait("write", fi.FlagAtomic|fi.FlagWrite)
	assert.Equal(t, []byte{1, 2, 3}, mem[48:51])
	binary.LittleEndian.PutUint32(mem[52:], math.Float32bits(-0.75))
	fres := make([]byte, 4)
	msg = &ep.AtomicMessage{IOV: []ep.IOC{{Count: 1}}, Addr: toB,
		RMAIOV: []ep.RMAIOC{{Addr: 52, Count: 1, Key: 9}}, Datatype: ep.Float, Op: ep.OpAtomicRead, Context: "read"}
	require.NoError(t, at.FetchAtomicMsg(msg, []ep.IOC{{Buf: fres, Count: 1}}, nil, 0))
	wait("read", fi.FlagAtomic|fi.FlagRead)
	assert.Equal(t, float32(-0.75), math.Float32frombits(binary.LittleEndian.Uint32(fres)))

	// An injected add completes without an entry, once answered.
	require.NoError(t, at.InjectAtomic(le64(8), 1, toB, 0, 9, ep.Uint64, ep.OpSum))
	require.NoError(t, at.FetchAtomic(nil, 1, nil, res[:8], nil, toB, 0, 9, ep.Uint64, ep.OpAtomicRead, "after"))
	wait("after", fi.FlagAtomic|fi.FlagRead)
	assert.Equal(t, uint64(50), binary.LittleEndian.Uint64(res))
}

// TestAtomicAccessFaults: a wrong key, a range past the MR and a missing
// right each give an fi.EACCES error entry and leave the memory as it
// was.
func TestAtomicAccessFaults(t *testing.T) {
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	wr := make([]byte, 16)
	rd := make([]byte, 16)
	for i := range wr {
		wr[i], rd[i] = byte(i+1), byte(i+100)
	}
	wrCopy, rdCopy := append([]byte(nil), wr...), append([]byte(nil), rd...)
	mr1, err := fi.RegisterMR(b.domain, &fi.MRAttr{Buf: wr, Access: fi.AccessRemoteWrite, RequestedKey: 1}, 0)
	require.NoError(t, err)
	defer mr1.Close()
	mr2, err := fi.RegisterMR(b.domain, &fi.MRAttr{Buf: rd, Access: fi.AccessRemoteRead, RequestedKey: 2}, 0)
	require.NoError(t, err)
	defer mr2.Close()
	at := a.ep.(ep.Atomic)
	res := make([]byte, 16)
	for _, c := range []struct {
		name string
		post func() error
	}{
		{"wrong key", func() error { return at.Atomic(le64(1), 1, nil, toB, 0, 3, ep.Uint64, ep.OpSum, "x") }},
		{"past the end", func() error {
			return at.Atomic(append(le64(1), le64(1)...), 2, nil, toB, 8, 1, ep.Uint64, ep.OpSum, "x")
		}},
		{"write to a read-only MR", func() error { return at.Atomic(le64(1), 1, nil, toB, 0, 2, ep.Uint64, ep.OpAtomicWrite, "x") }},
		{"fetch-add on a read-only MR", func() error {
			return at.FetchAtomic(le64(1), 1, nil, res[:8], nil, toB, 0, 2, ep.Uint64, ep.OpSum, "x")
		}},
		{"fetch-add on a write-only MR", func() error {
			return at.FetchAtomic(le64(1), 1, nil, res[:8], nil, toB, 0, 1, ep.Uint64, ep.OpSum, "x")
		}},
		{"read of a write-only MR", func() error {
			return at.FetchAtomic(nil, 1, nil, res[:8], nil, toB, 0, 1, ep.Uint64, ep.OpAtomicRead, "x")
		}},
		{"cswap on a write-only MR", func() error {
			return at.CompareAtomic(le64(1), 1, nil, le64(0x0807060504030201), nil, res[:8], nil, toB, 0, 1, ep.Uint64, ep.OpCSwap, "x")
		}},
	} {
		require.NoError(t, c.post(), c.name)
		_, e := atomicDone(t, a, a, b)
		require.NotNil(t, e, c.name)
		assert.Equal(t, fi.EACCES, e.Err, c.name)
		assert.Equal(t, "x", e.Context, c.name)
		assert.Equal(t, wrCopy, wr, c.name)
		assert.Equal(t, rdCopy, rd, c.name)
	}
}

// openPeerEP opens one more endpoint in n's domain, with its own CQ and
// AV.
func openPeerEP(t testing.TB, n *node) *node {
	t.Helper()
	infos, err := fi.GetInfo(context.Background(), "", "", 0, shmHints())
	require.NoError(t, err)
	m := &node{fabric: n.fabric, domain: n.domain}
	openEndpoint(t, m, infos[0])
	return m
}

// TestAtomicConcurrentAdds: initiators in goroutines, each with its own
// endpoint, add to one uint64 through two target endpoints of one domain
// (each served by its own progress goroutine, so the two apply at the
// same time but for the provider's lock); the sum is exact.
func TestAtomicConcurrentAdds(t *testing.T) {
	tg := openNode(t)
	defer tg.close(t)
	tg2 := openPeerEP(t, tg)
	defer func() {
		require.NoError(t, tg2.ep.Close())
		require.NoError(t, tg2.cq.Close())
		require.NoError(t, tg2.av.Close())
	}()
	mem := make([]byte, 8)
	mr, err := fi.RegisterMR(tg.domain, &fi.MRAttr{Buf: mem, Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: 5}, 0)
	require.NoError(t, err)
	defer mr.Close()
	stop := make(chan struct{})
	var progress sync.WaitGroup
	for _, n := range []*node{tg, tg2} {
		progress.Add(1)
		go func() {
			defer progress.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_, _ = n.cq.Read(nil)
				}
			}
		}()
	}
	const initiators, adds = 4, 2000
	var wg sync.WaitGroup
	errs := make(chan error, initiators)
	for i := range initiators {
		n := openNode(t)
		defer n.close(t)
		dests := []fi.Addr{n.insert(t, tg.name), n.insert(t, tg2.name)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := n.ep.(ep.Atomic)
			operand := le64(uint64(i + 1))
			var c [16]eq.Completion
			posted, done := 0, 0
			deadline := time.Now().Add(60 * time.Second)
			for done < adds {
				if time.Now().After(deadline) {
					errs <- fi.ETIMEDOUT
					return
				}
				if posted < adds {
					err := at.Atomic(operand, 1, nil, dests[posted%2], 0, 5, ep.Uint64, ep.OpSum, nil)
					if err == nil {
						posted++
					} else if err != fi.EAGAIN {
						errs <- err
						return
					}
				}
				k, err := n.cq.Read(c[:])
				if err == fi.EAVAIL {
					e, _ := n.cq.ReadErr()
					errs <- e.Err
					return
				}
				done += k
			}
		}()
	}
	wg.Wait()
	close(stop)
	progress.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	want := uint64(0)
	for i := range initiators {
		want += uint64(i+1) * adds
	}
	require.Equal(t, want, binary.LittleEndian.Uint64(mem))
}

// TestAtomicDoesNotAllocate: a posted fetch-add, through to its
// completion, allocates nothing at the initiator (or the target).
func TestAtomicDoesNotAllocate(t *testing.T) {
	a, b := openNode(t), openNode(t)
	defer a.close(t)
	defer b.close(t)
	toB := a.insert(t, b.name)
	mem := make([]byte, 8)
	mr, err := fi.RegisterMR(b.domain, &fi.MRAttr{Buf: mem, Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: 3}, 0)
	require.NoError(t, err)
	defer mr.Close()
	at := a.ep.(ep.Atomic)
	operand, res := le64(1), make([]byte, 8)
	ctx := &struct{}{}
	comp := make([]eq.Completion, 1)
	round := func() {
		if err := at.FetchAtomic(operand, 1, nil, res, nil, toB, 0, 3, ep.Uint64, ep.OpSum, ctx); err != nil {
			panic(err)
		}
		for n := 0; n == 0; n, _ = a.cq.Read(comp) {
			_, _ = b.cq.Read(comp[:0])
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
	require.Equal(t, uint64(202), binary.LittleEndian.Uint64(mem))
}

// TestAtomicValid: the valid queries report the element counts of 192
// bytes (half for compare), and the pairs C's shm, built with compiler
// atomics, lacks as fi.EOPNOTSUPP.
func TestAtomicValid(t *testing.T) {
	a := openNode(t)
	defer a.close(t)
	at := a.ep.(ep.Atomic)
	n, err := at.AtomicValid(ep.Uint64, ep.OpSum)
	require.NoError(t, err)
	assert.Equal(t, 24, n)
	n, err = at.FetchAtomicValid(ep.Int8, ep.OpAtomicRead)
	require.NoError(t, err)
	assert.Equal(t, 192, n)
	n, err = at.CompareAtomicValid(ep.Double, ep.OpCSwap)
	require.NoError(t, err)
	assert.Equal(t, 12, n)
	n, err = at.AtomicValid(ep.FloatComplex, ep.OpProd)
	require.NoError(t, err)
	assert.Equal(t, 24, n)
	for _, c := range []struct {
		f  func(ep.Datatype, ep.AtomicOp) (int, error)
		dt ep.Datatype
		op ep.AtomicOp
	}{{at.AtomicValid, ep.LongDouble, ep.OpSum}, {at.AtomicValid, ep.DoubleComplex, ep.OpSum},
		{at.AtomicValid, ep.Uint64, ep.OpAtomicRead}, {at.AtomicValid, ep.Uint64, ep.OpCSwap},
		{at.CompareAtomicValid, ep.FloatComplex, ep.OpCSwapLT}, {at.FetchAtomicValid, ep.Double, ep.OpBOr}} {
		_, err := c.f(c.dt, c.op)
		assert.ErrorIs(t, err, fi.EOPNOTSUPP, "%v %v", c.dt, c.op)
	}
	// Over the limit: fi.EMSGSIZE from the adapter.
	require.ErrorIs(t, at.Atomic(make([]byte, 200), 25, nil, 0, 0, 1, ep.Uint64, ep.OpSum, nil), fi.EMSGSIZE)
}

// TestAtomicSlotBounds: a receiver refuses an atomic request whose
// operand and compare bytes would run past its slot, whatever its size
// field claims, and takes one that fills the slot exactly.
func TestAtomicSlotBounds(t *testing.T) {
	slot := func(inlineLen uint32, size uint64) []byte {
		b := make([]byte, shm.SlotSize)
		b[0] = 8 // opAtomic, inline
		binary.LittleEndian.PutUint32(b[4:], inlineLen)
		binary.LittleEndian.PutUint64(b[8:], size)
		binary.LittleEndian.PutUint64(b[16:], 12|7<<8|2<<16) // FI_CSWAP on uint64, a compare call
		return b
	}
	room := shm.SlotSize - 56
	require.True(t, shm.ParseSlot(slot(uint32(room), uint64(room/2))), "operand and compare fill the slot")
	require.False(t, shm.ParseSlot(slot(uint32(2*room), uint64(room))), "operand and compare past the slot")
	require.False(t, shm.ParseSlot(slot(uint32(room+8), uint64(room/2+4))), "inline bytes past the slot")
}

func init() {
	roles["atomicadd"] = roleAtomicAdd
}

// Environment of the atomicadd role.
const (
	envKey   = "GOFABRIC_SHM_KEY"   // the target region's key
	envCount = "GOFABRIC_SHM_COUNT" // how many fetch-adds of 1
)

// roleAtomicAdd opens an endpoint, fetch-adds 1 to the uint64 at offset 0
// of the parent's region, one at a time, envCount times, and says "done"
// with how many old values it saw (each must be new to it: values only
// grow), or "fail" with why.
func roleAtomicAdd(t *testing.T) {
	x := openNode(t)
	defer x.close(t)
	peer := x.insert(t, []byte(os.Getenv(envPeer)))
	key, err := strconv.ParseUint(os.Getenv(envKey), 10, 64)
	require.NoError(t, err)
	n, err := strconv.Atoi(os.Getenv(envCount))
	require.NoError(t, err)
	at := x.ep.(ep.Atomic)
	one, old := le64(1), make([]byte, 8)
	last := int64(-1)
	for i := range n {
		for {
			err := at.FetchAtomic(one, 1, nil, old, nil, peer, 0, key, ep.Uint64, ep.OpSum, i)
			if err == nil {
				break
			}
			if err != fi.EAGAIN {
				say("fail", err.Error())
				return
			}
			_, _ = x.cq.Read(nil)
		}
		c, e := atomicDone(t, x, x)
		if e != nil {
			say("fail", e.Error())
			return
		}
		v := int64(binary.LittleEndian.Uint64(old))
		if c.Context != i || v <= last {
			say("fail", fmt.Sprintf("add %d: context %v, old value %d after %d", i, c.Context, v, last))
			return
		}
		last = v
	}
	say("done", strconv.Itoa(n))
}

// TestAtomicAddsFromProcesses: fetch-adds from two other processes and
// from an endpoint of the target's own process, all on one uint64 of the
// target's region, end at the exact sum, and every adder saw its old
// values grow. The target serves them in its progress, which the test
// runs while it waits.
func TestAtomicAddsFromProcesses(t *testing.T) {
	const perChild, local = 400, 100
	b := openNode(t)
	defer b.close(t)
	mem := make([]byte, 8)
	mr, err := fi.RegisterMR(b.domain, &fi.MRAttr{Buf: mem, Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: 77}, 0)
	require.NoError(t, err)
	defer mr.Close()
	env := []string{envPeer + "=" + string(b.name), envKey + "=77", envCount + "=" + strconv.Itoa(perChild)}
	kids := []*child{startChild(t, "atomicadd", nil, env...), startChild(t, "atomicadd", nil, env...)}

	a := openNode(t)
	defer a.close(t)
	toB := a.insert(t, b.name)
	at := a.ep.(ep.Atomic)
	one, res := le64(1), make([]byte, 8)
	posted, done := 0, 0
	waiting := false
	finished, over := 0, make([]bool, len(kids))
	deadline := time.Now().Add(procWait)
	for finished < len(kids) || done < local {
		require.True(t, time.Now().Before(deadline), "adds not done within %v: local %d of %d, children done %d\n%s%s",
			procWait, done, local, finished, kids[0].output(), kids[1].output())
		if posted < local && !waiting {
			if err := at.FetchAtomic(one, 1, nil, res, nil, toB, 0, 77, ep.Uint64, ep.OpSum, posted); err == nil {
				posted++
				waiting = true
			} else {
				require.ErrorIs(t, err, fi.EAGAIN)
			}
		}
		var c [1]eq.Completion
		if k, err := a.cq.Read(c[:]); k == 1 {
			done++
			waiting = false
		} else if err == fi.EAVAIL {
			e, _ := a.cq.ReadErr()
			t.Fatalf("local add failed: %v", e)
		}
		_, _ = b.cq.Read(nil) // the target's progress serves the adds
		for i, k := range kids {
			if over[i] {
				continue
			}
			select {
			case l, ok := <-k.lines:
				require.True(t, ok, "child ended before it said done\n%s", k.output())
				require.Equal(t, "done", l[0], "child: %s %s\n%s", l[0], l[1], k.output())
				require.Equal(t, strconv.Itoa(perChild), l[1])
				over[i] = true
				finished++
			default:
			}
		}
	}
	require.Equal(t, uint64(2*perChild+local), binary.LittleEndian.Uint64(mem), "every add counted once")
}
