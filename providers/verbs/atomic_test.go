//go:build verbs && cgo

package verbs

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// u64 is v as the 8 host-order bytes of an FI_UINT64 or FI_INT64 operand.
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

// at is the word at byte off of b.
func at(b []byte, off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }

func put(b []byte, off int, v uint64) { binary.NativeEndian.PutUint64(b[off:], v) }

// atomicSupported is what the verbs endpoint offers (atomic.go): the pairs
// of C 1.17's vrb_query_atomic on the 64-bit datatypes, without FI_SUM
// and FI_CSWAP on FI_DOUBLE.
func atomicSupported(kind kit.AtomicKind, dt ep.Datatype, op ep.AtomicOp) bool {
	ints := dt == ep.Int64 || dt == ep.Uint64
	switch kind {
	case kit.AtomicBase:
		return op == ep.OpAtomicWrite && (ints || dt == ep.Double)
	case kit.AtomicFetch:
		return op == ep.OpAtomicRead && (ints || dt == ep.Double) || op == ep.OpSum && ints
	}
	return op == ep.OpCSwap && ints
}

// The device's atomics on a registered word of the peer, through every
// call form: fetch-add (FI_SUM, also negative as FI_INT64), compare-swap
// that hits and that misses, FI_ATOMIC_WRITE (an RDMA write; with remote
// CQ data it consumes a receive at the target; injected without a
// completion) and FI_ATOMIC_READ (an RDMA read), on FI_UINT64, FI_INT64
// and FI_DOUBLE where offered. Each checks the target memory, the
// fetched value, the context and the completion's flags (FI_ATOMIC with
// FI_READ or FI_WRITE). Faults the provider sees itself are refused at
// the call: a result without its desc, a misaligned remote address,
// remote CQ data on a fetch, two elements.
func TestAtomicDeviceOps(t *testing.T) {
	c, s := testPair(t)
	target := make([]byte, 64)
	tmr := register(t, s, target, fi.AccessRemoteRead|fi.AccessRemoteWrite)
	base, key := uint64(bufAddr(target)), tmr.Key()
	res := make([]byte, 64)
	rd := register(t, c, res, fi.AccessRead|fi.AccessWrite).Desc()
	a := c.ep.(ep.Atomic)
	const none = fi.AddrUnspec
	ctx := &struct{ n int }{1}
	done := func(flags fi.Flags) {
		t.Helper()
		got, e := c.next(t)
		require.Nil(t, e, "error entry %+v", e)
		require.Same(t, ctx, got.Context)
		require.Equal(t, flags, got.Flags)
		require.Zero(t, got.Len)
	}
	fetched, written := fi.FlagAtomic|fi.FlagRead, fi.FlagAtomic|fi.FlagWrite

	put(target, 8, 100)
	require.NoError(t, a.FetchAtomic(u64(5), 1, nil, res[:8], rd, none, base+8, key, ep.Uint64, ep.OpSum, ctx))
	done(fetched)
	require.EqualValues(t, 100, at(res, 0), "fetched")
	require.EqualValues(t, 105, at(target, 8), "added")

	minus7 := int64(-7)
	iov := []ep.IOC{{Buf: nil, Count: 0}, {Buf: u64(uint64(minus7)), Count: 1}}
	resv := []ep.IOC{{Buf: res[8:16], Count: 1}}
	require.NoError(t, a.FetchAtomicV(iov, nil, resv, []any{rd}, none, base+8, key, ep.Int64, ep.OpSum, ctx))
	done(fetched)
	require.EqualValues(t, 105, at(res, 8))
	require.EqualValues(t, 98, at(target, 8), "-7 as FI_INT64")

	msg := &ep.AtomicMessage{IOV: []ep.IOC{{Buf: u64(2), Count: 1}}, Addr: none,
		RMAIOV: []ep.RMAIOC{{Addr: base + 8, Count: 1, Key: key}}, Datatype: ep.Uint64, Op: ep.OpSum, Context: ctx}
	require.NoError(t, a.FetchAtomicMsg(msg, []ep.IOC{{Buf: res[16:24], Count: 1}}, []any{rd}, fi.FlagCompletion))
	done(fetched)
	require.EqualValues(t, 98, at(res, 16))
	require.EqualValues(t, 100, at(target, 8))

	// Compare-and-swap: it swaps where the compare value equals the
	// target, and returns the previous value either way.
	require.NoError(t, a.CompareAtomic(u64(7), 1, nil, u64(100), nil, res[24:32], rd, none, base+8, key, ep.Uint64, ep.OpCSwap, ctx))
	done(fetched)
	require.EqualValues(t, 100, at(res, 24))
	require.EqualValues(t, 7, at(target, 8), "swapped")
	require.NoError(t, a.CompareAtomic(u64(9), 1, nil, u64(100), nil, res[24:32], rd, none, base+8, key, ep.Int64, ep.OpCSwap, ctx))
	done(fetched)
	require.EqualValues(t, 7, at(res, 24))
	require.EqualValues(t, 7, at(target, 8), "no swap: 100 != 7")
	cmsg := &ep.AtomicMessage{IOV: []ep.IOC{{Buf: u64(11), Count: 1}}, Addr: none,
		RMAIOV: []ep.RMAIOC{{Addr: base + 8, Count: 1, Key: key}}, Datatype: ep.Uint64, Op: ep.OpCSwap, Context: ctx}
	require.NoError(t, a.CompareAtomicMsg(cmsg, []ep.IOC{{Buf: u64(7), Count: 1}}, nil, []ep.IOC{{Buf: res[32:40], Count: 1}}, []any{rd}, 0))
	done(fetched)
	require.EqualValues(t, 7, at(res, 32))
	require.EqualValues(t, 11, at(target, 8))

	// FI_ATOMIC_WRITE and FI_ATOMIC_READ: an RDMA write and read of the
	// word, also for doubles.
	require.NoError(t, a.Atomic(u64(0x1122334455667788), 1, nil, none, base+16, key, ep.Uint64, ep.OpAtomicWrite, ctx))
	done(written)
	require.EqualValues(t, uint64(0x1122334455667788), at(target, 16))
	require.NoError(t, a.FetchAtomic(nil, 1, nil, res[40:48], rd, none, base+16, key, ep.Uint64, ep.OpAtomicRead, ctx))
	done(fetched)
	require.EqualValues(t, uint64(0x1122334455667788), at(res, 40))
	require.NoError(t, a.Atomic(u64(math.Float64bits(2.5)), 1, nil, none, base+24, key, ep.Double, ep.OpAtomicWrite, ctx))
	done(written)
	require.Equal(t, 2.5, math.Float64frombits(at(target, 24)))
	require.NoError(t, a.FetchAtomic(nil, 1, nil, res[48:56], rd, none, base+24, key, ep.Double, ep.OpAtomicRead, ctx))
	done(fetched)
	require.Equal(t, 2.5, math.Float64frombits(at(res, 48)))

	// With remote CQ data the write consumes a receive at the target, as
	// fi_writedata does; injected, it completes nothing here.
	rbuf := make([]byte, 8)
	rctx := &struct{ n int }{2}
	require.NoError(t, s.ep.(ep.Msg).Recv(rbuf, register(t, s, rbuf, fi.AccessRecv).Desc(), none, rctx))
	wmsg := &ep.AtomicMessage{IOV: []ep.IOC{{Buf: u64(42), Count: 1}}, Addr: none,
		RMAIOV: []ep.RMAIOC{{Addr: base + 32, Count: 1, Key: key}}, Datatype: ep.Int64, Op: ep.OpAtomicWrite, Context: ctx, Data: 0xbeef}
	require.NoError(t, a.AtomicMsg(wmsg, fi.FlagRemoteCQData))
	done(written)
	got, e := s.next(t)
	require.Nil(t, e)
	require.Same(t, rctx, got.Context)
	require.Equal(t, fi.FlagRMA|fi.FlagRemoteWrite|fi.FlagRemoteCQData, got.Flags)
	require.EqualValues(t, 0xbeef, got.Data)
	require.EqualValues(t, 42, at(target, 32))
	require.NoError(t, a.InjectAtomic(u64(43), 1, none, base+40, key, ep.Uint64, ep.OpAtomicWrite))
	require.NoError(t, a.FetchAtomic(nil, 1, nil, res[56:64], rd, none, base+40, key, ep.Uint64, ep.OpAtomicRead, ctx))
	done(fetched) // the injected write gave no entry: this is the read's
	require.EqualValues(t, 43, at(res, 56), "the read, fenced, sees the injected write")

	// Refused at the call; nothing is posted, and the connection is fine.
	err := a.FetchAtomic(u64(1), 1, nil, res[:8], nil, none, base+8, key, ep.Uint64, ep.OpSum, ctx)
	require.ErrorIs(t, err, fi.EINVAL)
	require.ErrorContains(t, err, "verbs: fetch_atomic: result buffer without the desc")
	err = a.FetchAtomic(u64(1), 1, nil, make([]byte, 8), rd, none, base+8, key, ep.Uint64, ep.OpSum, ctx)
	require.ErrorIs(t, err, fi.EINVAL, "a result outside the desc's region")
	err = a.CompareAtomic(u64(1), 1, nil, u64(1), nil, res[:8], rd, none, base+4, key, ep.Uint64, ep.OpCSwap, ctx)
	require.ErrorIs(t, err, fi.EINVAL)
	require.ErrorContains(t, err, "not 8-byte aligned")
	msg.Context = ctx
	err = a.FetchAtomicMsg(msg, []ep.IOC{{Buf: res[:8], Count: 1}}, []any{rd}, fi.FlagRemoteCQData)
	require.ErrorIs(t, err, fi.EBADFLAGS)
	require.ErrorContains(t, err, "FI_REMOTE_CQ_DATA")
	require.ErrorIs(t, a.FetchAtomic(make([]byte, 16), 2, nil, res[:16], rd, none, base+8, key, ep.Uint64, ep.OpSum, ctx), fi.EMSGSIZE)
	require.ErrorIs(t, a.FetchAtomic(u64(1)[:4], 1, nil, res[:4], rd, none, base+8, key, ep.Float, ep.OpSum, ctx), fi.EOPNOTSUPP)
	require.NoError(t, a.FetchAtomic(u64(1), 1, nil, res[:8], rd, none, base+8, key, ep.Uint64, ep.OpSum, ctx))
	done(fetched)
	require.EqualValues(t, 11, at(res, 0))
	require.EqualValues(t, 12, at(target, 8))
	var empty [1]eq.Completion
	_, err = c.cq.Read(empty[:])
	require.ErrorIs(t, err, fi.EAGAIN, "one entry per operation")
}

// Fetch-adds of 1 from two endpoints, each connected to its own peer
// whose domain registered the same target word, several in flight at a
// time: the word ends at the exact sum, the values fetched are every
// value from 0 to the sum less one exactly once, and each endpoint sees
// its own grow (its queue pair's atomics run in order, fenced).
func TestAtomicConcurrentAdds(t *testing.T) {
	const perEP, window = 150, 8
	target := make([]byte, 8)
	var clients []*tside
	var keys []uint64
	for range 2 {
		c, s := testPair(t)
		clients = append(clients, c)
		keys = append(keys, register(t, s, target, fi.AccessRemoteRead|fi.AccessRemoteWrite).Key())
	}
	base := uint64(bufAddr(target))
	results := make([][]uint64, len(clients))
	errs := make(chan error, len(clients))
	for i, c := range clients {
		res := make([]byte, 8*perEP)
		rd := register(t, c, res, fi.AccessRead).Desc()
		go func() {
			errs <- func() error {
				a := c.ep.(ep.Atomic)
				one := u64(1)
				var entries [window]eq.Completion
				deadline := time.Now().Add(2 * time.Minute)
				posted, completed := 0, 0
				for completed < perEP {
					if time.Now().After(deadline) {
						return errors.New("timed out")
					}
					for posted < perEP && posted-completed < window {
						err := a.FetchAtomic(one, 1, nil, res[8*posted:8*posted+8], rd, fi.AddrUnspec, base, keys[i], ep.Uint64, ep.OpSum, posted)
						if errors.Is(err, fi.EAGAIN) {
							break
						}
						if err != nil {
							return err
						}
						posted++
					}
					n, err := c.cq.Read(entries[:])
					switch {
					case errors.Is(err, fi.EAGAIN):
						continue
					case err != nil:
						e, _ := c.cq.ReadErr()
						return errors.Join(err, e)
					}
					for _, en := range entries[:n] {
						if en.Context != completed {
							return errors.New("completions out of order")
						}
						completed++
					}
				}
				for k := range perEP {
					results[i] = append(results[i], at(res, 8*k))
				}
				return nil
			}()
		}()
	}
	var failed []error
	for range clients {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	require.Empty(t, failed)
	require.EqualValues(t, 2*perEP, at(target, 0), "the exact sum")
	var all []uint64
	for i, r := range results {
		require.True(t, slices.IsSorted(r), "endpoint %d's values grow: %v", i, r)
		all = append(all, r...)
	}
	slices.Sort(all)
	for k, v := range all {
		require.EqualValues(t, k, v, "each value fetched once")
	}
}

// Remote faults come from the peer's device as error completions of the
// operation (fi.EACCES: IBV_WC_REM_ACCESS_ERR) and leave the target and
// the result buffer untouched: a wrong key (fetch-add, compare-swap), an
// address past the region, and a region registered without
// fi.AccessRemoteWrite, which is what grants the device's atomics (an
// FI_ATOMIC_READ of it, an RDMA read, passes). As for every error
// completion on an RC queue pair, the connection is then in the error
// state: the next operation is flushed (fi.ECANCELED).
func TestAtomicRemoteFaults(t *testing.T) {
	for _, c := range []struct {
		name   string
		access fi.Access
		post   func(a ep.Atomic, res []byte, rd any, base, key uint64, ctx any) error
	}{
		{"wrong key", fi.AccessRemoteRead | fi.AccessRemoteWrite, func(a ep.Atomic, res []byte, rd any, base, key uint64, ctx any) error {
			return a.FetchAtomic(u64(1), 1, nil, res, rd, fi.AddrUnspec, base, key^0x5a5a00, ep.Uint64, ep.OpSum, ctx)
		}},
		{"compare wrong key", fi.AccessRemoteRead | fi.AccessRemoteWrite, func(a ep.Atomic, res []byte, rd any, base, key uint64, ctx any) error {
			return a.CompareAtomic(u64(1), 1, nil, u64(77), nil, res, rd, fi.AddrUnspec, base, key+1, ep.Uint64, ep.OpCSwap, ctx)
		}},
		{"past the region", fi.AccessRemoteRead | fi.AccessRemoteWrite, func(a ep.Atomic, res []byte, rd any, base, key uint64, ctx any) error {
			return a.FetchAtomic(u64(1), 1, nil, res, rd, fi.AddrUnspec, base+64, key, ep.Uint64, ep.OpSum, ctx)
		}},
		{"read-only region", fi.AccessRemoteRead, func(a ep.Atomic, res []byte, rd any, base, key uint64, ctx any) error {
			return a.FetchAtomic(u64(1), 1, nil, res, rd, fi.AddrUnspec, base, key, ep.Int64, ep.OpSum, ctx)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, s := testPair(t)
			target := make([]byte, 64)
			put(target, 0, 77)
			tmr := register(t, s, target, c.access)
			base := uint64(bufAddr(target))
			res := make([]byte, 8)
			rd := register(t, cl, res, fi.AccessRead).Desc()
			a := cl.ep.(ep.Atomic)
			ctx := &struct{ n int }{3}
			if c.access&fi.AccessRemoteWrite == 0 {
				require.NoError(t, a.FetchAtomic(nil, 1, nil, res, rd, fi.AddrUnspec, base, tmr.Key(), ep.Int64, ep.OpAtomicRead, ctx))
				_, e := cl.next(t)
				require.Nil(t, e, "an RDMA read of a read-only region")
				require.EqualValues(t, 77, at(res, 0))
			}
			put(res, 0, 0xdeadbeef)
			require.NoError(t, c.post(a, res, rd, base, tmr.Key(), ctx))
			_, e := cl.next(t)
			require.NotNil(t, e, "the device refuses it")
			require.Same(t, ctx, e.Context)
			require.Equal(t, fi.EACCES, e.Err, "%v", e)
			require.Equal(t, fi.FlagAtomic|fi.FlagRead, e.Flags)
			require.Equal(t, wcRemAccessErr.String(), wcStatus(e.ProvErrno).String())
			require.EqualValues(t, 77, at(target, 0), "target untouched")
			require.EqualValues(t, 0xdeadbeef, at(res, 0), "result untouched")

			ctx2 := &struct{ n int }{4}
			require.NoError(t, a.FetchAtomic(u64(1), 1, nil, res, rd, fi.AddrUnspec, base, tmr.Key(), ep.Uint64, ep.OpSum, ctx2))
			_, e = cl.next(t)
			require.NotNil(t, e)
			require.Same(t, ctx2, e.Context)
			require.Equal(t, fi.ECANCELED, e.Err, "flushed: the queue pair is in the error state")
			require.EqualValues(t, 77, at(target, 0))
		})
	}
}

// The valid calls answer count 1 for exactly the pairs of the device
// (atomicSupported) and fi.EOPNOTSUPP for every other (operation,
// datatype) of each family, and the data calls agree: an offered pair
// reaches the provider (fi.ENOTCONN on an endpoint not connected), any
// other is refused before it (fi.EOPNOTSUPP; fi.EINVAL for an operation
// of another family, as for every provider). A device without atomics
// (atomic_cap IBV_ATOMIC_NONE) keeps FI_ATOMIC_READ and FI_ATOMIC_WRITE
// only.
func TestAtomicValid(t *testing.T) {
	ip := rdmaAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, ip.String(), "", fi.FlagSource, msgHints(true))
	require.NoError(t, err)
	require.NotZero(t, infos[0].Caps&fi.CapAtomic, "FI_ATOMIC, as C's entries")
	require.NotZero(t, infos[0].TxAttr.Caps&fi.CapAtomic)
	require.NotZero(t, infos[0].RxAttr.Caps&fi.CapAtomic)
	fab, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	closeAt(t, fab)
	dom, err := fab.OpenDomain(infos[0])
	require.NoError(t, err)
	closeAt(t, dom)
	require.Contains(t, []int{atomicCapHCA, atomicCapGlob}, dom.(*domain).atomicCap, "rxe has device atomics")
	e, err := ep.Open(dom, infos[0])
	require.NoError(t, err)
	closeAt(t, e)
	a := e.(ep.Atomic)

	buf := make([]byte, 32)
	valids := []func(ep.Datatype, ep.AtomicOp) (int, error){a.AtomicValid, a.FetchAtomicValid, a.CompareAtomicValid}
	offered := 0
	for kind := kit.AtomicBase; kind <= kit.AtomicCompare; kind++ {
		for op := ep.OpMin; op <= ep.OpMSwap; op++ {
			for dt := ep.Int8; dt <= ep.LongDoubleComplex; dt++ {
				size, err := kit.AtomicSize(dt)
				require.NoError(t, err)
				b := buf[:size]
				var call error
				switch kind {
				case kit.AtomicBase:
					call = a.Atomic(b, 1, nil, fi.AddrUnspec, 0, 1, dt, op, nil)
				case kit.AtomicFetch:
					call = a.FetchAtomic(b, 1, nil, b, nil, fi.AddrUnspec, 0, 1, dt, op, nil)
				default:
					call = a.CompareAtomic(b, 1, nil, b, nil, b, nil, fi.AddrUnspec, 0, 1, dt, op, nil)
				}
				n, err := valids[kind](dt, op)
				if atomicSupported(kind, dt, op) {
					offered++
					require.NoError(t, err, "%v %v %v", kind, op, dt)
					require.Equal(t, 1, n)
					require.ErrorIs(t, call, fi.ENOTCONN, "%v %v %v reaches PostAtomic", kind, op, dt)
					continue
				}
				require.ErrorIs(t, err, fi.EOPNOTSUPP, "%v %v %v", kind, op, dt)
				require.Zero(t, n)
				want := fi.EOPNOTSUPP
				if (kind == kit.AtomicCompare) != (op >= ep.OpCSwap) {
					want = fi.EINVAL
				}
				require.ErrorIs(t, call, want, "%v %v %v", kind, op, dt)
			}
		}
	}
	require.Equal(t, 3+3+2+2, offered, "FI_ATOMIC_WRITE and FI_ATOMIC_READ: 3 datatypes; FI_SUM and FI_CSWAP: 2")
	_, err = a.FetchAtomicValid(ep.Double, ep.OpSum)
	require.ErrorContains(t, err, "verbs: fetch_atomicvalid: FI_SUM on FI_DOUBLE not supported: "+whyDouble)
	_, err = a.AtomicValid(ep.Int64, ep.OpSum)
	require.ErrorContains(t, err, whyBase)
	_, err = a.FetchAtomicValid(ep.Int64, ep.OpMax)
	require.ErrorContains(t, err, whyFetch)
	_, err = a.CompareAtomicValid(ep.Int64, ep.OpMSwap)
	require.ErrorContains(t, err, whyCompare)
	_, err = a.FetchAtomicValid(ep.Float, ep.OpAtomicRead)
	require.ErrorContains(t, err, "the endpoint offers no FI_FLOAT atomics")

	for _, cap := range []int{atomicCapNone, atomicCapHCA, atomicCapGlob} {
		refuse := atomicRefuse("mlx9_0", cap)
		require.Empty(t, refuse(kit.AtomicBase, ep.Int64, ep.OpAtomicWrite))
		require.Empty(t, refuse(kit.AtomicFetch, ep.Uint64, ep.OpAtomicRead))
		for _, k := range []struct {
			kind kit.AtomicKind
			op   ep.AtomicOp
		}{{kit.AtomicFetch, ep.OpSum}, {kit.AtomicCompare, ep.OpCSwap}} {
			why := refuse(k.kind, ep.Int64, k.op)
			if cap == atomicCapNone {
				require.Contains(t, why, "device mlx9_0 has no atomics (atomic_cap IBV_ATOMIC_NONE)")
			} else {
				require.Empty(t, why)
			}
		}
	}
}

// The valid answers against C libfabric 1.17's verbs provider on the same
// device (testdata/atomicquery/atomicquery.c, compiled at test time:
// fi_query_atomic on its FI_EP_MSG domain for every family, operation and
// datatype). Where C offers a pair gofabric offers it too, count 1 of the
// same element size, except FI_FLOAT everywhere and FI_SUM and FI_CSWAP
// on FI_DOUBLE, which C accepts and would get wrong (atomic.go); C's
// refusals (-FI_ENOSYS for an operation, -FI_EINVAL for a datatype) are
// fi.EOPNOTSUPP here. gofabric offers nothing C refuses.
func TestAtomicValidAgainstC(t *testing.T) {
	ip := rdmaAddr(t)
	if _, err := os.Stat("/usr/include/rdma/fi_atomic.h"); err != nil {
		reftest.Missing(t, "libfabric-dev not installed: %v", err)
	}
	gcc := reftest.Tool(t, "gcc", "gcc")
	bin := filepath.Join(t.TempDir(), "atomicquery")
	out, err := exec.Command(gcc, "-std=c11", "-O1", "-Wall", "-o", bin, filepath.Join("testdata", "atomicquery", "atomicquery.c"), "-lfabric").CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	cmd := exec.Command(bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	require.NoError(t, err, "atomicquery: %s", stderr.String())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, ip.String(), "", fi.FlagSource, msgHints(true))
	require.NoError(t, err)
	fab, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	closeAt(t, fab)
	dom, err := fab.OpenDomain(infos[0])
	require.NoError(t, err)
	closeAt(t, dom)
	e, err := ep.Open(dom, infos[0])
	require.NoError(t, err)
	closeAt(t, e)
	a := e.(ep.Atomic)
	valids := []func(ep.Datatype, ep.AtomicOp) (int, error){a.AtomicValid, a.FetchAtomicValid, a.CompareAtomicValid}

	lines, cOffers, parted := 0, 0, 0
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		require.Len(t, f, 6, "line %q", l)
		v := make([]int, 6)
		for i := range f {
			v[i], err = strconv.Atoi(f[i])
			require.NoError(t, err, "line %q", l)
		}
		kind, op, dt, ret, count, size := kit.AtomicKind(v[0]), ep.AtomicOp(v[1]), ep.Datatype(v[2]), v[3], v[4], v[5]
		lines++
		n, gerr := valids[kind](dt, op)
		if ret != 0 {
			require.Contains(t, []int{-int(fi.ENOSYS), -int(fi.EINVAL)}, ret, "C's refusal of %v %v %v", kind, op, dt)
			require.ErrorIs(t, gerr, fi.EOPNOTSUPP, "C refuses %v %v %v (%d)", kind, op, dt, ret)
			continue
		}
		cOffers++
		wantSize, _ := kit.AtomicSize(dt)
		require.Equal(t, wantSize, size, "C's size of %v", dt)
		require.Equal(t, 1, count, "C's count")
		if dt == ep.Float || dt == ep.Double && (op == ep.OpSum || op == ep.OpCSwap) {
			require.ErrorIs(t, gerr, fi.EOPNOTSUPP, "%v %v %v: C offers it, gofabric refuses it", kind, op, dt)
			t.Logf("C offers it (count %d, size %d), gofabric refuses it: %v", count, size, gerr)
			parted++
			continue
		}
		require.NoError(t, gerr, "C offers %v %v %v", kind, op, dt)
		require.Equal(t, count, n)
	}
	require.Equal(t, 3*19*14, lines)
	t.Logf("C offers %d pairs, gofabric %d of them", cOffers, cOffers-parted)
	require.Equal(t, 16, cOffers, "C 1.17 (Debian bookworm): 4 datatypes for FI_ATOMIC_WRITE, FI_ATOMIC_READ, FI_SUM, FI_CSWAP")
	require.Equal(t, 6, parted, "FI_FLOAT x 4, FI_DOUBLE x FI_SUM, FI_CSWAP")
}

// Posting the device's atomics allocates nothing: a fetch-add, a
// compare-swap and an FI_ATOMIC_WRITE per run, their completions read
// afterwards.
func TestAtomicPostAllocs(t *testing.T) {
	c, s := testPair(t)
	target := make([]byte, 24)
	tmr := register(t, s, target, fi.AccessRemoteRead|fi.AccessRemoteWrite)
	base, key := uint64(bufAddr(target)), tmr.Key()
	res := make([]byte, 16)
	rd := register(t, c, res, fi.AccessRead).Desc()
	a := c.ep.(ep.Atomic)
	one, zero, word := u64(1), u64(0), u64(0xfeed)
	var ctx any = &struct{ n int }{5}
	const runs = 50
	allocs := testing.AllocsPerRun(runs, func() {
		if err := a.FetchAtomic(one, 1, nil, res[:8], rd, fi.AddrUnspec, base, key, ep.Uint64, ep.OpSum, ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.CompareAtomic(zero, 1, nil, zero, nil, res[8:], rd, fi.AddrUnspec, base+8, key, ep.Uint64, ep.OpCSwap, ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Atomic(word, 1, nil, fi.AddrUnspec, base+16, key, ep.Uint64, ep.OpAtomicWrite, ctx); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "allocations per fetch-add, compare-swap and atomic write")
	for range 3 * (runs + 1) { // AllocsPerRun runs once more to warm up
		_, e := c.next(t)
		require.Nil(t, e)
	}
	require.EqualValues(t, runs+1, at(target, 0))
	require.EqualValues(t, 0, at(target, 8))
	require.EqualValues(t, 0xfeed, at(target, 16))
}
