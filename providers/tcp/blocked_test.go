//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The tests of this file are applications that only ever wait in
// CQ.SRead, Counter.Wait or EQ.SRead: an RDM endpoint's data progress is
// manual, so such an application moves data only through what its
// blocked reads hand to the background progress. Every socket of the
// endpoint must be handed over, the connections a peer opened to it after
// the reader blocked included.

// blockedTimeout bounds every wait of these tests: a provider that never
// wakes the reader fails rather than hangs.
const blockedTimeout = 20 * time.Second

// waitSide is an RDM endpoint on loopback with one CQ for both
// directions (cq) or one for each (cq for receives, txCQ for sends) and,
// when asked for, a receive counter.
type waitSide struct {
	*rdmSide
	txCQ   eq.CompletionQueue
	rxCntr eq.Counter
}

// waitOpts say what an openWaitSide endpoint has besides its CQ.
type waitOpts struct {
	counter bool // a receive counter
	txCQ    bool // a CQ of its own for the sends
}

// openWaitSide opens an RDM endpoint on 127.0.0.1, as openRDMSide does,
// with what o asks for.
func openWaitSide(t *testing.T, o waitOpts) *waitSide {
	t.Helper()
	hints := &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}, Caps: fi.CapMsg | fi.CapTagged,
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"}}
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
	s := &waitSide{rdmSide: &rdmSide{e: e, cq: cq, av: av, dom: dom}}
	if o.txCQ {
		s.txCQ, err = eq.OpenCQ(dom, &eq.CQAttr{Format: eq.FormatTagged})
		require.NoError(t, err)
		require.NoError(t, e.Bind(s.txCQ, fi.FlagSend))
		require.NoError(t, e.Bind(cq, fi.FlagRecv))
	} else {
		require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
	}
	require.NoError(t, e.Bind(av, 0))
	if o.counter {
		s.rxCntr, err = eq.OpenCounter(dom, nil)
		require.NoError(t, err)
		require.NoError(t, e.Bind(s.rxCntr, fi.FlagRecv))
	}
	require.NoError(t, e.Enable())
	t.Cleanup(func() {
		require.NoError(t, e.Close())
		if s.rxCntr != nil {
			require.NoError(t, s.rxCntr.Close())
		}
		require.NoError(t, av.Close())
		if s.txCQ != nil {
			require.NoError(t, s.txCQ.Close())
		}
		require.NoError(t, cq.Close())
		require.NoError(t, dom.Close())
		require.NoError(t, fab.Close())
	})
	return s
}

// untilBlocked returns once a reader blocks on q (a CQ, counter or EQ).
// The provider counts the readers blocked on its own queues; for a queue
// of tcp;ofi_rxm (rxm's, which this package cannot see into) it waits
// until a goroutine of the running test sleeps in the kit's wait, where
// SRead and Wait block once a read found nothing.
func untilBlocked(t *testing.T, q any) {
	t.Helper()
	deadline := time.Now().Add(blockedTimeout)
	for {
		n, ok := tcp.BlockedReaders(q)
		if n > 0 || !ok && testSleepsInKit(t) {
			return
		}
		require.True(t, time.Now().Before(deadline), "the reader never blocked")
		runtime.Gosched()
	}
}

// testSleepsInKit reports whether a goroutine started by the running test
// (its stack has a frame of the test's function) sleeps in the kit's wait
// (kit's hooks.sleep, under CQ.SRead, Counter.Wait and EQ.SRead).
func testSleepsInKit(t *testing.T) bool {
	test := "providers/tcp_test." + strings.SplitN(t.Name(), "/", 2)[0] + "."
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, test) && strings.Contains(g, "kit.(*hooks).sleep") {
			return true
		}
	}
	return false
}

// sendBlocking sends buf to dest as an application that waits only in
// SRead does: on fi.EAGAIN (the connection opens) it reads its CQ without
// blocking and tries again, and then it waits in SRead for the send's
// completion.
func sendBlocking(ctx context.Context, t *testing.T, s *rdmSide, buf []byte, dest fi.Addr, sctx any) {
	t.Helper()
	for {
		err := s.msg().Send(buf, nil, dest, sctx)
		if !errors.Is(err, fi.EAGAIN) {
			require.NoError(t, err)
			break
		}
		require.NoError(t, ctx.Err(), "send still fi.EAGAIN")
		_, _ = s.cq.Read(nil)
		runtime.Gosched()
	}
	var c [1]eq.Completion
	n, err := s.cq.SRead(ctx, c[:])
	require.NoError(t, err, "sender blocked in SRead for its send of %d bytes", len(buf))
	require.Equal(t, 1, n)
	require.Equal(t, sctx, c[0].Context, "the send's completion")
}

// TestRDMWaitingServer: an RDM server whose only calls after posting its
// receives are blocking waits gets every message of a peer that connects
// to it after it blocked, eager and rendezvous, with the peer also
// waiting in SRead for its sends. (Before, the accepted connection was
// never handed to the background progress: the server's SRead or Wait
// slept until its deadline, and so did the sender of a rendezvous, whose
// reads the server never issued.)
func TestRDMWaitingServer(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		wait  string // "sread" or "cntr-wait"
		sizes []int
	}{
		{"sread", []int{1}},
		{"cntr-wait", []int{1}},
		{"sread", []int{64 << 10}},
		{"sread", []int{1, 64 << 10, 1 << 20}},
		{"cntr-wait", []int{64 << 10, 1 << 20}},
	} {
		t.Run(fmt.Sprintf("%s-%v", tc.wait, tc.sizes), func(t *testing.T) {
			srv := openWaitSide(t, waitOpts{counter: tc.wait == "cntr-wait"})
			cli := openWaitSide(t, waitOpts{})
			dests, err := cli.av.Insert([][]byte{srv.name(t)}, 0)
			require.NoError(t, err)
			_, err = srv.av.Insert([][]byte{cli.name(t)}, 0)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), blockedTimeout)
			defer cancel()

			bufs := make([][]byte, len(tc.sizes))
			for i, n := range tc.sizes {
				bufs[i] = make([]byte, n)
				require.NoError(t, srv.msg().Recv(bufs[i], nil, fi.AddrUnspec, i))
			}
			type result struct {
				got []eq.Completion
				err error
			}
			done := make(chan result, 1)
			go func() {
				var r result
				var c [4]eq.Completion
				for len(r.got) < len(tc.sizes) && r.err == nil {
					if tc.wait == "cntr-wait" {
						if r.err = srv.rxCntr.Wait(ctx, uint64(len(r.got)+1)); r.err != nil {
							break
						}
					}
					var n int
					n, r.err = srv.cq.SRead(ctx, c[:])
					r.got = append(r.got, c[:n]...)
				}
				done <- r
			}()
			if tc.wait == "cntr-wait" {
				untilBlocked(t, srv.rxCntr)
			} else {
				untilBlocked(t, srv.cq)
			}

			for i, n := range tc.sizes {
				sendBlocking(ctx, t, cli.rdmSide, bytes.Repeat([]byte{byte(i + 1)}, n), dests[0], fmt.Sprintf("send %d", i))
			}
			r := <-done
			require.NoError(t, r.err, "server blocked in %s for %d messages", tc.wait, len(tc.sizes))
			require.Len(t, r.got, len(tc.sizes))
			for _, c := range r.got {
				i := c.Context.(int)
				require.Equal(t, tc.sizes[i], c.Len, "message %d's length", i)
				require.True(t, bytes.Equal(bytes.Repeat([]byte{byte(i + 1)}, tc.sizes[i]), bufs[i]), "message %d's bytes", i)
			}
		})
	}
}

// TestRDMBlockedReaderWhileOtherPolls: a receive thread blocked in SRead
// on an RDM endpoint's receive CQ keeps getting messages after a send
// thread busy-polled the endpoint's send CQ (a rendezvous send, whose
// traffic woke the background progress while the send thread polled) and
// then stopped polling. (Before, the background progress took the
// polling for the application's and left the sockets until the next
// blocking read: the blocked receiver waited for as long as the send
// thread did not poll.)
func TestRDMBlockedReaderWhileOtherPolls(t *testing.T) {
	cleanEnv(t)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the endpoints close
	x := openWaitSide(t, waitOpts{txCQ: true})
	y := openWaitSide(t, waitOpts{})
	toY, err := x.av.Insert([][]byte{y.name(t)}, 0)
	require.NoError(t, err)
	toX, err := y.av.Insert([][]byte{x.name(t)}, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), blockedTimeout)
	defer cancel()

	// Connect with both sides polling; y's CQ gets its send's entry.
	small := make([]byte, 16)
	require.NoError(t, x.msg().Recv(small, nil, fi.AddrUnspec, "first"))
	_, err = sendRetry(t, y.rdmSide, func() error { return y.msg().Send([]byte("hello"), nil, toX[0], "y0") })
	require.NoError(t, err)
	require.Equal(t, "first", next(t, x.rdmSide, y.rdmSide).c.Context)
	require.Equal(t, "y0", next(t, y.rdmSide, x.rdmSide).c.Context)

	// The receive thread blocks for the next message.
	last := make([]byte, 16)
	require.NoError(t, x.msg().Recv(last, nil, fi.AddrUnspec, "last"))
	type result struct {
		c   eq.Completion
		err error
	}
	done := make(chan result, 1)
	go func() {
		var c [1]eq.Completion
		_, err := x.cq.SRead(ctx, c[:])
		done <- result{c[0], err}
	}()
	untilBlocked(t, x.cq)

	// The send thread sends rendezvous messages, busy-polling its send CQ
	// while y serves the reads, then stops polling (y polls meanwhile).
	const size = 1 << 20
	big := make([]byte, size)
	for i := range 4 {
		require.NoError(t, y.msg().Recv(big, nil, fi.AddrUnspec, fmt.Sprintf("big %d", i)))
		_, err = sendRetry(t, &rdmSide{e: x.e, cq: x.txCQ}, func() error { return x.msg().Send(big, nil, toY[0], "x big") })
		require.NoError(t, err)
		var c, yc [1]eq.Completion
		var got []any
		for sent := false; !sent || len(got) == 0; {
			n, err := x.txCQ.Read(c[:])
			if n == 1 {
				require.Equal(t, "x big", c[0].Context)
				sent = true
			} else {
				require.ErrorIs(t, err, fi.EAGAIN)
			}
			require.NoError(t, ctx.Err(), "rendezvous %d never completed (sent: %v)", i, sent)
			if n, _ := y.cq.Read(yc[:]); n == 1 {
				got = append(got, yc[0].Context)
			}
		}
		require.Equal(t, []any{fmt.Sprintf("big %d", i)}, got)
	}
	// It goes on polling a little while y sends tagged messages nobody
	// receives yet (no entry for the blocked thread), long enough for
	// the background progress, which their arrival wakes, to see it poll.
	// (Fewer than the 256 buffers an endpoint keeps unexpected messages
	// in: more would wait in the socket, the last message behind them.)
	sent, due := 0, time.Now()
	for end := due.Add(50 * time.Millisecond); time.Now().Before(end); {
		if now := time.Now(); sent < 128 && now.After(due) {
			if err := y.tagged().TInject([]byte("unexpected"), toX[0], 7); err == nil {
				sent++
				due = now.Add(300 * time.Microsecond)
			} else {
				require.ErrorIs(t, err, fi.EAGAIN)
			}
			_, _ = y.cq.Read(nil)
		}
		_, _ = x.txCQ.Read(nil)
	}

	// Now only the receive thread waits, in SRead: y's message must
	// reach it.
	_, err = sendRetry(t, y.rdmSide, func() error { return y.msg().Send([]byte("bye"), nil, toX[0], "y1") })
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err, "the receive thread blocked in SRead after the send thread stopped polling")
	require.Equal(t, "last", r.c.Context)
	require.Equal(t, "bye", string(last[:r.c.Len]))
	require.Equal(t, "y1", next(t, y.rdmSide).c.Context)
}

// TestMsgWaitingInEQ: a server whose only call is EQ.SRead learns of its
// peer's shutdown: the connection's background progress serves a reader
// blocked on the event queue as it does one blocked on a CQ. (FI_EP_MSG
// progress is automatic: this held before, by the millisecond look.)
func TestMsgWaitingInEQ(t *testing.T) {
	cleanEnv(t)
	ignore := goleak.IgnoreCurrent()
	p := connectPair(t)
	t.Cleanup(func() { p.close(t); goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithTimeout(context.Background(), blockedTimeout)
	defer cancel()
	type result struct {
		ev  eq.Event
		err error
	}
	done := make(chan result, 1)
	go func() {
		ev, err := p.srvEQ.SRead(ctx)
		done <- result{ev, err}
	}()
	untilBlocked(t, p.srvEQ)
	require.NoError(t, p.client.cm().Shutdown(0))
	r := <-done
	require.NoError(t, r.err, "the server blocked in EQ.SRead for its peer's shutdown")
	require.IsType(t, &eq.Shutdown{}, r.ev)
}
