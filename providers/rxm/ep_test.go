//go:build linux

package rxm_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// side is one rxm RDM endpoint over tcp with its CQ and AV.
type side struct {
	e  ep.Endpoint
	cq eq.CompletionQueue
	av fi.AV
}

func (s *side) msg() ep.Msg       { return s.e.(ep.Msg) }
func (s *side) tagged() ep.Tagged { return s.e.(ep.Tagged) }

func (s *side) name(t testing.TB) []byte {
	b := make([]byte, 128)
	n, err := s.e.(ep.Namer).Name(b)
	require.NoError(t, err)
	return b[:n]
}

// openSide opens an rxm RDM endpoint on 127.0.0.1 with FI_SOURCE and
// FI_DIRECTED_RECV.
func openSide(t testing.TB) *side { return openSideAt(t, nil) }

// openSideAt is openSide at the address of name, a sockaddr (a port of
// the system's choosing for nil).
func openSideAt(t testing.TB, name []byte) *side { return openSideWith(t, name, 0, nil) }

// openSideWith is openSideAt with more caps asked, and setup, when not
// nil, run before Enable with the domain and endpoint; what setup opens
// it closes in the function it returns, which runs after the endpoint
// closes.
func openSideWith(t testing.TB, name []byte, caps fi.Caps, setup func(dom fi.Domain, e ep.Endpoint) (closeAll func())) *side {
	return openSideOf(t, testName, name, caps, setup)
}

// openSideOf is openSideWith over the RDM provider prov.
func openSideOf(t testing.TB, prov string, name []byte, caps fi.Caps, setup func(dom fi.Domain, e ep.Endpoint) (closeAll func())) *side {
	hints := &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}, Caps: fi.CapMsg | fi.CapTagged | fi.CapSource | fi.CapDirectedRecv | caps,
		FabricAttr: &fi.FabricAttr{ProvName: prov}}
	service := "0"
	if name != nil {
		ap, _, err := fi.AddrPortFromSockaddr(name)
		require.NoError(t, err)
		service = strconv.Itoa(int(ap.Port()))
	}
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", service, fi.FlagSource, hints)
	require.NoError(t, err)
	info := infos[0]
	require.Equal(t, prov, info.FabricAttr.ProvName)
	fab, err := fi.OpenFabric(info)
	require.NoError(t, err)
	dom, err := fab.OpenDomain(info)
	require.NoError(t, err)
	cq, err := eq.OpenCQ(dom, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	av, err := fi.OpenAV(dom, &fi.AVAttr{})
	require.NoError(t, err)
	e, err := ep.Open(dom, info)
	require.NoError(t, err)
	require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, e.Bind(av, 0))
	closeAll := func() {}
	if setup != nil {
		closeAll = setup(dom, e)
	}
	require.NoError(t, e.Enable())
	t.Cleanup(func() {
		if err := e.Close(); err != fi.EBADF { // a test may have closed it
			require.NoError(t, err)
		}
		closeAll()
		require.NoError(t, av.Close())
		require.NoError(t, cq.Close())
		require.NoError(t, dom.Close())
		require.NoError(t, fab.Close())
	})
	return &side{e: e, cq: cq, av: av}
}

// insert puts the names of sides into s's AV and returns their addresses.
func (s *side) insert(t testing.TB, peers ...*side) []fi.Addr {
	names := make([][]byte, len(peers))
	for i, p := range peers {
		names[i] = p.name(t)
	}
	fa, err := s.av.Insert(names, 0)
	require.NoError(t, err)
	return fa
}

// entry is one completion read, or an error one.
type entry struct {
	c   eq.Completion
	src fi.Addr
	err *eq.CQError
}

// next reads s's CQ until an entry comes, driving the others' progress
// meanwhile (their CQ reads run it).
// nextTimeout bounds how long next waits for a completion that should
// come (every one here comes within milliseconds).
const nextTimeout = 30 * time.Second

func next(t testing.TB, s *side, others ...*side) entry {
	t.Helper()
	comps, srcs := make([]eq.Completion, 1), make([]fi.Addr, 1)
	// A lost message fails the test instead of hanging the package.
	deadline := time.Now().Add(nextTimeout)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", nextTimeout)
		}
		n, err := s.cq.ReadFrom(comps, srcs)
		if n == 1 {
			return entry{c: comps[0], src: srcs[0]}
		}
		if err == fi.EAVAIL {
			ce, rerr := s.cq.ReadErr()
			require.NoError(t, rerr)
			return entry{err: ce}
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		for _, o := range others {
			_, _ = o.cq.Read(nil)
		}
		runtime.Gosched()
	}
}

// sendRetry calls send until it returns other than fi.EAGAIN, driving
// progress of s and others between tries; it returns how many EAGAINs
// came first.
func sendRetry(s *side, send func() error, others ...*side) (int, error) {
	for n := 0; ; n++ {
		err := send()
		if err != fi.EAGAIN {
			return n, err
		}
		_, _ = s.cq.Read(nil)
		for _, o := range others {
			_, _ = o.cq.Read(nil)
		}
		runtime.Gosched()
	}
}

// TestRDMFirstSendEAGAIN: the first send to a peer opens the connection
// and returns bare fi.EAGAIN until it is up; messages then go both ways,
// over the connection each side opened or accepted, with FI_SOURCE.
func TestRDMFirstSendEAGAIN(t *testing.T) {
	a, b := openSide(t), openSide(t)
	toB, toA := a.insert(t, b)[0], b.insert(t, a)[0]
	rbuf := make([]byte, 16)
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "r"))
	err := a.msg().Send([]byte("hello"), nil, toB, "s")
	require.Equal(t, fi.EAGAIN, err, "the first send to a peer opens the connection: bare fi.EAGAIN")
	_, err = sendRetry(a, func() error { return a.msg().Send([]byte("hello"), nil, toB, "s") }, b)
	require.NoError(t, err)
	got := next(t, b, a)
	require.Nil(t, got.err)
	require.Equal(t, "r", got.c.Context)
	require.Equal(t, 5, got.c.Len)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, got.c.Flags)
	require.Equal(t, toA, got.src, "FI_SOURCE")
	require.Equal(t, "hello", string(rbuf[:5]))
	s := next(t, a, b)
	require.Nil(t, s.err)
	require.Equal(t, "s", s.c.Context)
	require.Equal(t, fi.FlagSend|fi.FlagMsg, s.c.Flags)

	// The connection stays: the next send goes at once.
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "r2"))
	require.NoError(t, a.msg().Send([]byte("again"), nil, toB, "s2"))
	require.Equal(t, "r2", next(t, b, a).c.Context)
	require.Equal(t, "s2", next(t, a, b).c.Context)

	// The other way, with remote CQ data; b's first send may wait for
	// its own connection or use the accepted one.
	abuf := make([]byte, 16)
	require.NoError(t, a.msg().Recv(abuf, nil, fi.AddrUnspec, "ra"))
	_, err = sendRetry(b, func() error { return b.msg().SendData([]byte("back"), nil, 0xd1, toA, "sb") }, a)
	require.NoError(t, err)
	got = next(t, a, b)
	require.Nil(t, got.err)
	require.Equal(t, "ra", got.c.Context)
	require.Equal(t, toB, got.src)
	require.Equal(t, uint64(0xd1), got.c.Data)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagRemoteCQData, got.c.Flags)
	require.Equal(t, "back", string(abuf[:4]))
	require.Equal(t, "sb", next(t, b, a).c.Context)

	// Inject: no completion at the sender, the buffer is its own again.
	ibuf := []byte("inj")
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "ri"))
	_, err = sendRetry(a, func() error { return a.msg().Inject(ibuf, toB) }, b)
	require.NoError(t, err)
	ibuf[0] = 'X'
	got = next(t, b, a)
	require.Equal(t, "ri", got.c.Context)
	require.Equal(t, "inj", string(rbuf[:3]))
	n, err := a.cq.Read(make([]eq.Completion, 1))
	require.Zero(t, n)
	require.ErrorIs(t, err, fi.EAGAIN)
}

// TestRDMSimultaneousFirstSends: both sides send first at once; each
// message arrives, whichever connection carries it.
func TestRDMSimultaneousFirstSends(t *testing.T) {
	for iter := 0; iter < 20; iter++ {
		a, b := openSide(t), openSide(t)
		sides := []*side{a, b}
		dests := []fi.Addr{a.insert(t, b)[0], b.insert(t, a)[0]}
		bufs := [][]byte{make([]byte, 8), make([]byte, 8)}
		for i, s := range sides {
			require.NoError(t, s.msg().Recv(bufs[i], nil, fi.AddrUnspec, "r"))
		}
		sent := []bool{false, false}
		got := []int{0, 0}
		comps := make([]eq.Completion, 4)
		for got[0] < 2 || got[1] < 2 {
			for i, s := range sides {
				if !sent[i] {
					err := s.msg().Send([]byte("fin\x00"), nil, dests[i], "s")
					if err == nil {
						sent[i] = true
					} else {
						require.ErrorIs(t, err, fi.EAGAIN, "iter %d side %d", iter, i)
					}
				}
				k, err := s.cq.Read(comps)
				if err == fi.EAVAIL {
					ce, _ := s.cq.ReadErr()
					t.Fatalf("iter %d side %d: %v", iter, i, ce)
				}
				got[i] += max(k, 0)
			}
			runtime.Gosched()
		}
		require.Equal(t, "fin\x00", string(bufs[0][:4]))
		require.Equal(t, "fin\x00", string(bufs[1][:4]))
	}
}

// TestRDMMatching: directed receives, tags with ignore masks, unexpected
// messages kept until a receive matches, truncation and cancel.
func TestRDMMatching(t *testing.T) {
	r, s1, s2 := openSide(t), openSide(t), openSide(t)
	fas := r.insert(t, s1, s2)
	from1, from2 := fas[0], fas[1]
	to1, to2 := s1.insert(t, r)[0], s2.insert(t, r)[0]

	// Directed: a receive for s2 posted first does not take s1's message.
	b2, b1 := make([]byte, 64), make([]byte, 64)
	require.NoError(t, r.msg().Recv(b2, nil, from2, "for s2"))
	require.NoError(t, r.msg().Recv(b1, nil, from1, "for s1"))
	_, err := sendRetry(s1, func() error { return s1.msg().Send([]byte("one"), nil, to1, nil) }, r)
	require.NoError(t, err)
	got := next(t, r, s1, s2)
	require.Equal(t, "for s1", got.c.Context)
	require.Equal(t, from1, got.src, "FI_SOURCE")
	_, err = sendRetry(s2, func() error { return s2.msg().Send([]byte("two"), nil, to2, nil) }, r)
	require.NoError(t, err)
	got = next(t, r, s1, s2)
	require.Equal(t, "for s2", got.c.Context)
	require.Equal(t, from2, got.src)
	require.Equal(t, "two", string(b2[:3]))

	// Tagged: unexpected messages wait; the ignore mask selects.
	for _, tag := range []uint64{0x105, 0x200, 0x106} {
		_, err = sendRetry(s1, func() error { return s1.tagged().TSend([]byte{byte(tag)}, nil, to1, tag, nil) }, r)
		require.NoError(t, err)
	}
	// Drive until the three sends completed: all three wait at r.
	for done := 0; done < 3; {
		e := next(t, s1, r)
		require.Nil(t, e.err)
		done++
	}
	tb := make([]byte, 8)
	require.NoError(t, r.tagged().TRecv(tb, nil, fi.AddrUnspec, 0x200, 0, "exact"))
	got = next(t, r)
	require.Equal(t, "exact", got.c.Context)
	require.Equal(t, uint64(0x200), got.c.Tag)
	require.Equal(t, fi.FlagRecv|fi.FlagTagged, got.c.Flags)
	require.NoError(t, r.tagged().TRecv(tb, nil, fi.AddrUnspec, 0x100, 0xff, "masked"))
	got = next(t, r)
	require.Equal(t, "masked", got.c.Context)
	require.Equal(t, uint64(0x105), got.c.Tag, "the first of the matching ones")
	require.NoError(t, r.tagged().TRecv(tb, nil, from2, 0x106, 0, "wrong source"))
	require.NoError(t, r.tagged().TRecv(tb, nil, from1, 0x106, 0, "right source"))
	got = next(t, r)
	require.Equal(t, "right source", got.c.Context)
	require.Equal(t, byte(0x06), tb[0])
	// Posted first: the arriving message goes to the receive whose tag
	// matches under its mask, not to the first posted.
	tx, ty := make([]byte, 8), make([]byte, 8)
	require.NoError(t, r.tagged().TRecv(tx, nil, fi.AddrUnspec, 0x300, 0, "0x300"))
	require.NoError(t, r.tagged().TRecv(ty, nil, fi.AddrUnspec, 0x4f0, 0x0f, "0x4f0/0x0f"))
	_, err = sendRetry(s1, func() error { return s1.tagged().TSend([]byte{0x42}, nil, to1, 0x4f2, nil) }, r)
	require.NoError(t, err)
	got = next(t, r, s1)
	require.Equal(t, "0x4f0/0x0f", got.c.Context)
	require.Equal(t, uint64(0x4f2), got.c.Tag)
	require.Equal(t, byte(0x42), ty[0])
	_, err = sendRetry(s1, func() error { return s1.msg().Send([]byte{0x43}, nil, to1, nil) }, r)
	require.NoError(t, err)
	require.NoError(t, r.msg().Recv(tx, nil, fi.AddrUnspec, "untagged"))
	got = next(t, r, s1)
	require.Equal(t, "untagged", got.c.Context, "an untagged message goes to no tagged receive")
	require.NoError(t, r.e.Cancel("0x300"))
	got = next(t, r)
	require.ErrorIs(t, got.err, fi.ECANCELED)

	require.NoError(t, r.e.Cancel("wrong source"))
	got = next(t, r)
	require.NotNil(t, got.err)
	require.Equal(t, "wrong source", got.err.Context)
	require.ErrorIs(t, got.err, fi.ECANCELED)
	require.ErrorIs(t, r.e.Cancel("wrong source"), fi.ENOENT)

	// Truncation: the part that fits, and the rest's length.
	small := make([]byte, 2)
	require.NoError(t, r.msg().Recv(small, nil, fi.AddrUnspec, "small"))
	_, err = sendRetry(s2, func() error { return s2.msg().Send([]byte("toolong"), nil, to2, nil) }, r)
	require.NoError(t, err)
	got = next(t, r, s2)
	require.NotNil(t, got.err)
	require.ErrorIs(t, got.err, fi.ETRUNC)
	require.Equal(t, 2, got.err.Len)
	require.Equal(t, 5, got.err.OLen)
	require.Equal(t, "to", string(small))
}
