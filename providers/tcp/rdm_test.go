//go:build linux

package tcp_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// rdmSide is an RDM endpoint (tcp;ofi_rxm) on loopback with its AV and
// one CQ (format tagged) for both directions, closed at cleanup.
type rdmSide struct {
	e   ep.Endpoint
	cq  eq.CompletionQueue
	av  fi.AV
	dom fi.Domain
}

func (s *rdmSide) msg() ep.Msg       { return s.e.(ep.Msg) }
func (s *rdmSide) tagged() ep.Tagged { return s.e.(ep.Tagged) }

// name returns the endpoint's address.
func (s *rdmSide) name(t testing.TB) []byte {
	b := make([]byte, 64)
	n, err := s.e.(ep.Namer).Name(b)
	require.NoError(t, err)
	return b[:n]
}

// openRDMSide opens an RDM endpoint on 127.0.0.1 with FI_SOURCE and
// FI_DIRECTED_RECV.
func openRDMSide(t testing.TB) *rdmSide { return openRDMSideAt(t, nil) }

// openRDMSideAt is openRDMSide with the endpoint bound to name (SetName
// before Enable) when name is not nil.
func openRDMSideAt(t testing.TB, name []byte) *rdmSide { return openRDMSideWith(t, name, nil, 0) }

// openRDMSideWith is openRDMSideAt with hints changed by modify (when not
// nil) and the CQ bound with bindFlags besides FI_SEND|FI_RECV (such as
// FI_SELECTIVE_COMPLETION).
func openRDMSideWith(t testing.TB, name []byte, modify func(*fi.Info), bindFlags fi.Flags) *rdmSide {
	hints := &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}, Caps: fi.CapMsg | fi.CapTagged | fi.CapSource | fi.CapDirectedRecv,
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"}}
	if modify != nil {
		modify(hints)
	}
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, hints)
	require.NoError(t, err)
	info := infos[0]
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
	if name != nil {
		require.NoError(t, e.(ep.Namer).SetName(name))
	}
	require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv|bindFlags))
	require.NoError(t, e.Bind(av, 0))
	require.NoError(t, e.Enable())
	t.Cleanup(func() { e.Close(); av.Close(); cq.Close(); dom.Close(); fab.Close() })
	return &rdmSide{e: e, cq: cq, av: av, dom: dom}
}

// rdmPair opens two RDM endpoints on loopback, each in the other's AV.
func rdmPair(t testing.TB) (x, y *rdmSide, toY, toX fi.Addr) {
	x, y = openRDMSide(t), openRDMSide(t)
	name := make([]byte, 64)
	n, err := y.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	fa, err := x.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	n, err = x.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	fb, err := y.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	return x, y, fa[0], fb[0]
}

// TestRDMSizes sends eager (10 B), just-rendezvous (20000 B) and 1 MiB
// messages from a fresh endpoint: the first send opens the connection.
func TestRDMSizes(t *testing.T) {
	a, b := openRDMSide(t), openRDMSide(t)
	name := make([]byte, 64)
	n, err := b.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	fas, err := a.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	n, err = a.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	_, err = b.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	for _, size := range []int{10, 20000, 1 << 20} {
		rbuf := make([]byte, size)
		require.NoError(t, b.e.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
		sbuf := make([]byte, size)
		for i := range sbuf {
			sbuf[i] = byte(i)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := a.e.(ep.Msg).Send(sbuf, nil, fas[0], "s")
			if err != fi.EAGAIN {
				require.NoError(t, err)
				break
			}
			require.True(t, time.Now().Before(deadline))
			a.cq.Read(make([]eq.Completion, 1))
		}
		got := 0
		comps := make([]eq.Completion, 4)
		for got < 2 {
			require.True(t, time.Now().Before(deadline), "size %d got %d", size, got)
			for _, q := range []eq.CompletionQueue{a.cq, b.cq} {
				k, err := q.Read(comps)
				if err == fi.EAVAIL {
					e, _ := q.ReadErr()
					t.Fatalf("err %v", e)
				}
				if k > 0 {
					got += k
				}
			}
		}
		require.Equal(t, sbuf, rbuf)
	}
}

// TestRDMSimultaneousFirstSends has two endpoints send to each other at
// once as their first operation, many times: whichever way rxm's
// simultaneous-connect rule resolves it, both messages arrive.
func TestRDMSimultaneousFirstSends(t *testing.T) {
	for iter := 0; iter < 50; iter++ {
		a, b := openRDMSide(t), openRDMSide(t)
		name := make([]byte, 64)
		n, _ := b.e.(ep.Namer).Name(name)
		fa, err := a.av.Insert([][]byte{name[:n]}, 0)
		require.NoError(t, err)
		n, _ = a.e.(ep.Namer).Name(name)
		fb, err := b.av.Insert([][]byte{name[:n]}, 0)
		require.NoError(t, err)
		sides := []*rdmSide{a, b}
		dests := []fi.Addr{fa[0], fb[0]}
		for _, s := range sides {
			require.NoError(t, s.e.(ep.Msg).Recv(make([]byte, 8), nil, fi.AddrUnspec, "r"))
		}
		sent := []bool{false, false}
		got := []int{0, 0}
		deadline := time.Now().Add(5 * time.Second)
		comps := make([]eq.Completion, 4)
		for got[0] < 2 || got[1] < 2 {
			require.True(t, time.Now().Before(deadline), "iter %d sent %v got %v", iter, sent, got)
			for i, s := range sides {
				if !sent[i] {
					err := s.e.(ep.Msg).SendMsg(&ep.Message{IOV: [][]byte{[]byte("fin\x00")}, Addr: dests[i], Context: "s"}, fi.FlagTransmitComplete)
					if err == nil {
						sent[i] = true
					} else if err != fi.EAGAIN {
						t.Fatalf("iter %d side %d: %v", iter, i, err)
					}
				}
				k, err := s.cq.Read(comps)
				if err == fi.EAVAIL {
					e, _ := s.cq.ReadErr()
					t.Fatalf("iter %d side %d err %v", iter, i, e)
				}
				got[i] += max(k, 0)
			}
		}
	}
}

// sendRetry posts send until it returns something other than fi.EAGAIN,
// reading s's CQ meanwhile (the progress a manual-progress application
// gives), and returns how many times it saw fi.EAGAIN and the result; it fails
// the test after 5 s.
func sendRetry(t testing.TB, s *rdmSide, send func() error) (int, error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	again := 0
	for {
		err := send()
		if err != fi.EAGAIN {
			return again, err
		}
		again++
		require.True(t, time.Now().Before(deadline), "send still fi.EAGAIN after 5 s")
		_, _ = s.cq.Read(nil)
	}
}

// entry is a completion or an error entry.
type entry struct {
	c   eq.Completion
	src fi.Addr
	err *eq.CQError
}

// next reads the next entry of s, polling the other sides meanwhile.
func next(t testing.TB, s *rdmSide, others ...*rdmSide) entry {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var c [1]eq.Completion
	var src [1]fi.Addr
	for {
		n, err := s.cq.ReadFrom(c[:], src[:])
		if n == 1 {
			return entry{c: c[0], src: src[0]}
		}
		if err == fi.EAVAIL {
			e, err := s.cq.ReadErr()
			require.NoError(t, err)
			return entry{err: e}
		}
		for _, o := range others {
			_, _ = o.cq.Read(nil)
		}
		require.True(t, time.Now().Before(deadline), "no completion within 5 s")
	}
}

// A manual-progress application that retries a first send while reading
// its CQ gets fi.EAGAIN until the connection is up, then success: it
// never stalls, and nothing else needs calling.
func TestRDMFirstSendEAGAIN(t *testing.T) {
	cleanEnv(t)
	a, b, toB, _ := rdmPair(t)
	rbuf := make([]byte, 16)
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "r"))
	err := a.msg().Send([]byte("hello"), nil, toB, "s")
	require.Equal(t, fi.EAGAIN, err, "the first send to a peer opens the connection: bare fi.EAGAIN")
	_, err = sendRetry(t, a, func() error { return a.msg().Send([]byte("hello"), nil, toB, "s") })
	require.NoError(t, err)
	got := next(t, b, a)
	require.Nil(t, got.err)
	require.Equal(t, "r", got.c.Context)
	require.Equal(t, 5, got.c.Len)
	require.Equal(t, "hello", string(rbuf[:5]))
	require.Equal(t, "s", next(t, a, b).c.Context)
	// The connection stays: the next send goes at once.
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "r2"))
	require.NoError(t, a.msg().Send([]byte("again"), nil, toB, "s2"))
	require.Equal(t, "r2", next(t, b, a).c.Context)
}

// Readers blocked in SRead on both sides move a rendezvous message. RDM
// data progress is manual: the connections' background progress takes
// their sockets only when a reader is about to block, and here nothing
// else runs progress. The receiver blocks for its receive; the sender for
// its send, which completes when the receiver's RMA reads, served by the
// sender's connection while it blocks, are answered with read-done.
func TestRDMBlockedReaders(t *testing.T) {
	cleanEnv(t)
	a, b, toB, _ := rdmPair(t)
	small := make([]byte, 16)
	require.NoError(t, b.msg().Recv(small, nil, fi.AddrUnspec, "r0"))
	_, err := sendRetry(t, a, func() error { return a.msg().Send([]byte("hello"), nil, toB, "s0") })
	require.NoError(t, err)
	require.Equal(t, "r0", next(t, b, a).c.Context)
	require.Equal(t, "s0", next(t, a, b).c.Context)

	const size = 1 << 20
	rbuf, sbuf := make([]byte, size), make([]byte, size)
	for i := range sbuf {
		sbuf[i] = byte(i * 7)
	}
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "r1"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		c   eq.Completion
		err error
	}
	recvd := make(chan result, 1)
	go func() {
		var c [1]eq.Completion
		_, err := b.cq.SRead(ctx, c[:])
		recvd <- result{c[0], err}
	}()
	require.NoError(t, a.msg().Send(sbuf, nil, toB, "s1"))
	var c [1]eq.Completion
	n, err := a.cq.SRead(ctx, c[:])
	require.NoError(t, err, "the sender blocked in SRead: its rendezvous send never completed")
	require.Equal(t, 1, n)
	require.Equal(t, "s1", c[0].Context)
	r := <-recvd
	require.NoError(t, r.err, "the receiver blocked in SRead: its receive never completed")
	require.Equal(t, "r1", r.c.Context)
	require.Equal(t, size, r.c.Len)
	require.Equal(t, sbuf, rbuf)
}

// A send to an address where nothing listens returns fi.EAGAIN while the
// provider tries the refused connection again, then fi.ECONNREFUSED once,
// when FI_TCP_CONN_TIMEOUT has passed; the send after starts over.
func TestRDMConnectRefused(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_CONN_TIMEOUT", "300")
	a := openRDMSide(t)
	fas, err := a.av.Insert([][]byte{unusedName(t)}, 0)
	require.NoError(t, err)
	again, err := sendRetry(t, a, func() error { return a.msg().Send([]byte("x"), nil, fas[0], nil) })
	require.ErrorIs(t, err, fi.ECONNREFUSED)
	require.Positive(t, again)
	require.Equal(t, fi.EAGAIN, a.msg().Send([]byte("x"), nil, fas[0], nil), "the next send tries again")
}

// unusedName returns the sockaddr of a loopback port nothing listens on.
func unusedName(t testing.TB) []byte {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	ap := l.Addr().(*net.TCPAddr).AddrPort()
	require.NoError(t, l.Close())
	_, name, err := fi.SockaddrFromAddrPort(ap)
	require.NoError(t, err)
	return name
}

// A peer that starts listening after the first sends to it were refused is
// reached without the application seeing the refusals: the sends return
// fi.EAGAIN meanwhile (as C's rxm does while it connects), and the
// message arrives.
func TestRDMConnectRetriesRefused(t *testing.T) {
	cleanEnv(t)
	a := openRDMSide(t)
	name := unusedName(t)
	fas, err := a.av.Insert([][]byte{name}, 0)
	require.NoError(t, err)
	// Sends for a while: the attempts are refused (loopback answers a
	// connect to a closed port at once).
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		require.Equal(t, fi.EAGAIN, a.msg().Send([]byte("early"), nil, fas[0], nil), "a refused attempt is retried, not reported")
		_, _ = a.cq.Read(nil)
	}
	b := openRDMSideAt(t, name)
	rbuf := make([]byte, 16)
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "r"))
	_, err = sendRetry(t, a, func() error { return a.msg().Send([]byte("late"), nil, fas[0], "s") })
	require.NoError(t, err)
	require.Equal(t, "r", next(t, b, a).c.Context)
	require.Equal(t, "late", string(rbuf[:4]))
	require.Equal(t, "s", next(t, a, b).c.Context)
}

// A peer that disappears fails what was pending with it (a rendezvous
// send waiting for the peer's read), other peers go on undisturbed, and a
// new endpoint at the same address is reached with a fresh connection.
func TestRDMPeerGoneAndBack(t *testing.T) {
	cleanEnv(t)
	a, b, toB, _ := rdmPair(t)
	c := openRDMSide(t)
	toC, err := a.av.Insert([][]byte{c.name(t)}, 0)
	require.NoError(t, err)
	_, err = c.av.Insert([][]byte{a.name(t)}, 0)
	require.NoError(t, err)

	// a's connection to b is up; then a 1 MiB send b never receives.
	rbuf := make([]byte, 8)
	require.NoError(t, b.msg().Recv(rbuf, nil, fi.AddrUnspec, "warm"))
	_, err = sendRetry(t, a, func() error { return a.msg().Send([]byte("warm"), nil, toB, "warm") })
	require.NoError(t, err)
	require.Equal(t, "warm", next(t, b, a).c.Context)
	require.Equal(t, "warm", next(t, a, b).c.Context)
	big := make([]byte, 1<<20)
	require.NoError(t, a.msg().Send(big, nil, toB, "big"))
	name := b.name(t)
	require.NoError(t, b.e.Close())

	got := next(t, a)
	require.NotNil(t, got.err, "the pending rendezvous send fails when its peer goes")
	require.Equal(t, "big", got.err.Context)
	require.ErrorIs(t, got.err, fi.ECANCELED)

	// c is not disturbed.
	cbuf := make([]byte, 8)
	require.NoError(t, c.msg().Recv(cbuf, nil, fi.AddrUnspec, "c"))
	_, err = sendRetry(t, a, func() error { return a.msg().Send([]byte("to c"), nil, toC[0], "to c") })
	require.NoError(t, err)
	require.Equal(t, "c", next(t, c, a).c.Context)
	require.Equal(t, "to c", next(t, a, c).c.Context)

	// b comes back at the same address: a reconnects.
	b2 := openRDMSideAt(t, name)
	_, err = b2.av.Insert([][]byte{a.name(t)}, 0)
	require.NoError(t, err)
	bbuf := make([]byte, 1<<20)
	require.NoError(t, b2.msg().Recv(bbuf, nil, fi.AddrUnspec, "b2"))
	big[0], big[len(big)-1] = 7, 9
	_, err = sendRetry(t, a, func() error { return a.msg().Send(big, nil, toB, "again") })
	require.NoError(t, err)
	got = next(t, b2, a)
	require.Nil(t, got.err)
	require.Equal(t, 1<<20, got.c.Len)
	require.Equal(t, big, bbuf)
	require.Equal(t, "again", next(t, a, b2).c.Context)
}

// Receives see FI_SOURCE addresses, directed receives take only their
// sender's messages, tagged receives match tag under the ignore mask, and
// remote CQ data arrives with eager and rendezvous messages alike.
func TestRDMMatching(t *testing.T) {
	cleanEnv(t)
	r := openRDMSide(t)
	s1, s2 := openRDMSide(t), openRDMSide(t)
	fas, err := r.av.Insert([][]byte{s1.name(t), s2.name(t)}, 0)
	require.NoError(t, err)
	from1, from2 := fas[0], fas[1]
	to1, err := s1.av.Insert([][]byte{r.name(t)}, 0)
	require.NoError(t, err)
	to2, err := s2.av.Insert([][]byte{r.name(t)}, 0)
	require.NoError(t, err)

	// Directed: a receive for s2 posted first does not take s1's message.
	b2, b1 := make([]byte, 64<<10), make([]byte, 64<<10)
	require.NoError(t, r.msg().Recv(b2, nil, from2, "for s2"))
	require.NoError(t, r.msg().Recv(b1, nil, from1, "for s1"))
	_, err = sendRetry(t, s1, func() error { return s1.msg().SendData([]byte("one"), nil, 0xd1, to1[0], nil) })
	require.NoError(t, err)
	got := next(t, r, s1, s2)
	require.Equal(t, "for s1", got.c.Context)
	require.Equal(t, from1, got.src, "FI_SOURCE")
	require.Equal(t, uint64(0xd1), got.c.Data)
	require.NotZero(t, got.c.Flags&fi.FlagRemoteCQData)
	long := make([]byte, 40000) // rendezvous
	long[39999] = 0x5a
	_, err = sendRetry(t, s2, func() error { return s2.msg().SendData(long, nil, 0xd2, to2[0], nil) })
	require.NoError(t, err)
	got = next(t, r, s1, s2)
	require.Equal(t, "for s2", got.c.Context)
	require.Equal(t, from2, got.src)
	require.Equal(t, uint64(0xd2), got.c.Data)
	require.Equal(t, 40000, got.c.Len)
	require.Equal(t, byte(0x5a), b2[39999])

	// Tagged: the ignore mask, and unexpected messages kept until a
	// receive matches them.
	_, err = sendRetry(t, s1, func() error { return s1.tagged().TSend([]byte("t-0x105"), nil, to1[0], 0x105, nil) })
	require.NoError(t, err)
	_, err = sendRetry(t, s1, func() error { return s1.tagged().TSend(long, nil, to1[0], 0x200, nil) })
	require.NoError(t, err)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) { // both arrive unexpected
		_, _ = r.cq.Read(nil)
		_, _ = s1.cq.Read(nil)
	}
	tb := make([]byte, 64<<10)
	require.NoError(t, r.tagged().TRecv(tb, nil, fi.AddrUnspec, 0x200, 0, "0x200"))
	got = next(t, r, s1)
	require.Equal(t, "0x200", got.c.Context)
	require.Equal(t, uint64(0x200), got.c.Tag)
	require.Equal(t, 40000, got.c.Len)
	require.NoError(t, r.tagged().TRecv(tb, nil, fi.AddrUnspec, 0x100, 0xff, "0x1xx"))
	got = next(t, r, s1)
	require.Equal(t, "0x1xx", got.c.Context)
	require.Equal(t, uint64(0x105), got.c.Tag)
	require.Equal(t, "t-0x105", string(tb[:got.c.Len]))
	require.Equal(t, from1, got.src)
}

// A message longer than its receive fills it and completes with fi.ETRUNC,
// eager and rendezvous alike; the connection goes on.
func TestRDMTruncation(t *testing.T) {
	cleanEnv(t)
	a, b, toB, _ := rdmPair(t)
	for _, n := range []int{100, 50000} {
		small := make([]byte, 10)
		require.NoError(t, b.msg().Recv(small, nil, fi.AddrUnspec, "small"))
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(i)
		}
		_, err := sendRetry(t, a, func() error { return a.msg().Send(msg, nil, toB, nil) })
		require.NoError(t, err)
		got := next(t, b, a)
		require.NotNil(t, got.err, "%d bytes into 10", n)
		require.ErrorIs(t, got.err, fi.ETRUNC)
		require.Equal(t, n-10, got.err.OLen)
		require.Equal(t, msg[:10], small)
		next(t, a, b) // the send completes
	}
	ok := make([]byte, 8)
	require.NoError(t, b.msg().Recv(ok, nil, fi.AddrUnspec, "ok"))
	require.NoError(t, a.msg().Send([]byte("fine"), nil, toB, nil))
	require.Equal(t, "ok", next(t, b, a).c.Context)
}

// Eager sends and receives allocate nothing once the connection is up.
func TestRDMEagerAllocs(t *testing.T) {
	cleanEnv(t)
	a, b, toB, _ := rdmPair(t)
	buf, rbuf := make([]byte, 64), make([]byte, 64)
	var c [4]eq.Completion
	round := func() {
		_ = b.msg().Recv(rbuf, nil, fi.AddrUnspec, nil)
		for a.msg().Send(buf, nil, toB, nil) == fi.EAGAIN {
			_, _ = a.cq.Read(c[:])
		}
		for got := 0; got < 1; {
			n, _ := b.cq.Read(c[:])
			got += max(n, 0)
		}
		for got := 0; got < 1; {
			n, _ := a.cq.Read(c[:])
			got += max(n, 0)
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
}
