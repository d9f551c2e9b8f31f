package fabtests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file holds the groups that test the ways an application waits
// (busy polling with Read, fi_cq_sread, fi_cntr_wait) the way they break
// for users: close-while-waiting (an endpoint closed under a goroutine
// blocked on its queues), wait-sizes (every message size with every wait
// style on both sides at once) and peer-killed (a peer process killed
// while the survivor blocks).

// waitStyle is how a side waits for its completions.
type waitStyle int

const (
	waitBusy  waitStyle = iota // CQ.Read in a loop (busy polling)
	waitSRead                  // CQ.SRead (fi_cq_sread)
	waitCntr                   // Counter.Wait (fi_cntr_wait), then CQ.Read
)

func (w waitStyle) String() string {
	return [...]string{"busy", "sread", "cntr-wait"}[w]
}

// waitKinds are the endpoint types the waiting groups run over, as
// subtest names.
var waitKinds = map[string]fi.EPType{"msg": fi.EPTypeMsg, "rdm": fi.EPTypeRDM, "dgram": fi.EPTypeDgram}

// eachKind runs f as a subtest for each endpoint type of waitKinds, in a
// fixed order, skipping the types the provider does not offer once.
func (s *suite) eachKind(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range []string{"msg", "rdm", "dgram"} {
		s.run(t, kind, func(t *testing.T) {
			h := s.hints(waitKinds[kind])
			h.Caps |= fi.CapMsg
			_, err := fi.GetInfo(s.ctx(t), "", "", 0, h)
			skipIfAbsent(t, err, kind+" endpoints with FI_MSG")
			f(t, kind)
		})
	}
}

// waiter is one endpoint of a waiting test: a peer (with counters when
// the style needs them) and where its sends go.
type waiter struct {
	*peer
	dest fi.Addr
	// done counts the completions the counter of each direction has
	// reached so far (the next Wait's threshold is one more).
	txDone, rxDone uint64
	// early holds entries read while a send drove progress after
	// fi.EAGAIN, for the next wait to take first.
	early []cqEntry
}

// progress reads what w's CQ holds without blocking, into w.early: what
// an application does when a post returns fi.EAGAIN.
func (w *waiter) progress() error {
	var buf [8]eq.Completion
	for {
		k, err := w.cq.Read(buf[:])
		for _, c := range buf[:k] {
			w.early = append(w.early, cqEntry{c: c})
		}
		switch {
		case err == nil:
		case errors.Is(err, fi.EAGAIN):
			return nil
		case errors.Is(err, fi.EAVAIL):
			e, rerr := w.cq.ReadErr()
			if rerr != nil {
				return fmt.Errorf("%s: ReadErr after EAVAIL: %w", w.role, rerr)
			}
			w.early = append(w.early, cqEntry{err: e})
		default:
			return fmt.Errorf("%s: cq read: %w", w.role, err)
		}
	}
}

// openWaitPair opens two connected endpoints of kind ("msg", "rdm",
// "dgram") with counters when counters is set, a sending to b; it skips
// when the provider lacks the kind or counters. Everything is closed at
// the test's cleanup.
func (s *suite) openWaitPair(t testing.TB, kind string, counters bool) (a, b *waiter) {
	t.Helper()
	switch kind {
	case "msg":
		p := s.pair(t, epOpts{counters: counters})
		return &waiter{peer: p.client, dest: fi.AddrUnspec}, &waiter{peer: p.server, dest: fi.AddrUnspec}
	case "rdm":
		// No warm-up: the first message of the test finds no
		// connection (a lazily connecting provider makes it while both
		// sides wait their way).
		m := s.rdm(t, rdmOpts{counters: counters}, "a", "b")
		m.connect(t)
		return &waiter{peer: m.peers[0].peer, dest: m.addr[0][1]}, &waiter{peer: m.peers[1].peer, dest: m.addr[1][0]}
	case "dgram":
		m := s.dgram(t, s.dgramInfo(t, 0), dgramOpts{counters: counters}, "a", "b")
		m.connect(t)
		return &waiter{peer: m.peers[0].peer, dest: m.addr[0][1]}, &waiter{peer: m.peers[1].peer, dest: m.addr[1][0]}
	}
	panic("fabtests: unknown endpoint kind " + kind)
}

// wait collects n entries from w's CQ waiting the given way, within ctx.
// tx says whether the entries are w's sends (the counter waited on is
// then the send counter). It never fails the test itself, so that it can
// run in any goroutine: it returns what it got and the error that ended
// it early.
func (w *waiter) wait(ctx context.Context, how waitStyle, tx bool, n int) ([]cqEntry, error) {
	k := min(n, len(w.early))
	out := append([]cqEntry(nil), w.early[:k]...)
	w.early = w.early[k:]
	if how == waitCntr {
		// The counter counted these already.
		done := &w.rxDone
		if tx {
			done = &w.txDone
		}
		for _, e := range out {
			if e.err == nil {
				*done++
			}
		}
	}
	var buf [8]eq.Completion
	// drain reads what the CQ holds without blocking.
	drain := func() error {
		for len(out) < n {
			k, err := w.cq.Read(buf[:min(n-len(out), len(buf))])
			for _, c := range buf[:k] {
				out = append(out, cqEntry{c: c})
			}
			switch {
			case err == nil:
			case errors.Is(err, fi.EAGAIN):
				return nil
			case errors.Is(err, fi.EAVAIL):
				e, rerr := w.cq.ReadErr()
				if rerr != nil {
					return fmt.Errorf("%s: ReadErr after EAVAIL: %w", w.role, rerr)
				}
				out = append(out, cqEntry{err: e})
			default:
				return fmt.Errorf("%s: cq read: %w", w.role, err)
			}
		}
		return nil
	}
	for len(out) < n {
		switch how {
		case waitBusy:
			if err := drain(); err != nil {
				return out, err
			}
			if len(out) < n {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				runtime.Gosched()
			}
		case waitSRead:
			k, err := w.cq.SRead(ctx, buf[:min(n-len(out), len(buf))])
			for _, c := range buf[:k] {
				out = append(out, cqEntry{c: c})
			}
			switch {
			case err == nil, errors.Is(err, fi.EAGAIN):
			case errors.Is(err, fi.EAVAIL):
				e, rerr := w.cq.ReadErr()
				if rerr != nil {
					return out, fmt.Errorf("%s: ReadErr after EAVAIL: %w", w.role, rerr)
				}
				out = append(out, cqEntry{err: e})
			default:
				return out, fmt.Errorf("%s: cq sread: %w", w.role, err)
			}
		case waitCntr:
			c, done := w.rxCntr, &w.rxDone
			if tx {
				c, done = w.txCntr, &w.txDone
			}
			err := c.Wait(ctx, *done+1)
			if err != nil && !errors.Is(err, fi.EAVAIL) {
				return out, fmt.Errorf("%s: counter wait for %d: %w", w.role, *done+1, err)
			}
			// The counter moved (or its error count did): the entry
			// is in the CQ, or about to be.
			before := len(out)
			for len(out) == before {
				if err := drain(); err != nil {
					return out, err
				}
				if len(out) == before {
					if err := ctx.Err(); err != nil {
						return out, fmt.Errorf("%s: the counter reached %d but the CQ holds no entry: %w", w.role, *done+1, err)
					}
					runtime.Gosched()
				}
			}
			for _, e := range out[before:] {
				if e.err == nil {
					*done++
				}
			}
		}
	}
	return out, nil
}

// waitSizes are the message sizes of wait-sizes: around the inject size,
// the bounce-buffer sizes of shared-memory providers (16 and 64 KiB) and
// 1 MiB, up to the Info's maximum.
func waitSizes(info *fi.Info) []int {
	sizes := []int{1, info.TxAttr.InjectSize, info.TxAttr.InjectSize + 1, 16 << 10, 64 << 10, 64<<10 + 1, 1 << 20}
	var out []int
	for _, n := range sizes {
		if n > 0 && n <= info.EPAttr.MaxMsgSize {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if m := info.EPAttr.MaxMsgSize; len(out) == 0 || out[len(out)-1] < min(m, 1<<20) {
		out = append(out, min(m, 1<<20))
	}
	return out
}

// testWaitSizes is the wait-sizes group: for each endpoint kind, wait
// style and size, a receiver goroutine posts three receives and waits
// for them while the sender sends three messages one by one, waiting for
// each send's completion the same way. Both sides wait at once, as two
// threads of an application do: a provider whose progress on one side
// must wake the other (a freed bounce buffer, a rendezvous answer) hangs
// here.
func testWaitSizes(t *testing.T, s *suite) {
	s.eachKind(t, func(t *testing.T, kind string) {
		for _, how := range []waitStyle{waitBusy, waitSRead, waitCntr} {
			t.Run(how.String(), func(t *testing.T) {
				a, b := s.openWaitPair(t, kind, how == waitCntr)
				for _, size := range waitSizes(a.info) {
					ok := t.Run(sizeName(size), func(t *testing.T) {
						s.exchangeWaiting(t, a, b, how, size)
					})
					if !ok {
						// What the failed size left posted or queued
						// would make every later size fail too.
						break
					}
				}
			})
		}
	})
}

// exchangeWaiting sends three messages of size from a to b, both sides
// waiting with how, and checks every byte.
func (s *suite) exchangeWaiting(t *testing.T, a, b *waiter, how waitStyle, size int) {
	const k = 3
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	rbufs := make([][]byte, k)
	rctx := make([]*opCtx, k)
	for i := range rbufs {
		rbufs[i] = make([]byte, size)
		rctx[i] = &opCtx{fmt.Sprintf("recv %d", i)}
		require.NoError(t, msgOf(t, b.peer).Recv(rbufs[i], b.desc(t, rbufs[i]), fi.AddrUnspec, rctx[i]), "post receive %d", i)
	}
	type result struct {
		got []cqEntry
		err error
	}
	recvd := make(chan result, 1)
	go func() {
		got, err := b.wait(ctx, how, false, k)
		recvd <- result{got, err}
	}()
	m := msgOf(t, a.peer)
	for i := range k {
		data := pattern(size, byte(i+1))
		sctx := &opCtx{fmt.Sprintf("send %d", i)}
		desc := a.desc(t, data)
		for {
			err := m.Send(data, desc, a.dest, sctx)
			if !errors.Is(err, fi.EAGAIN) {
				require.NoError(t, err, "send %d of %d bytes", i, size)
				break
			}
			require.NoError(t, ctx.Err(), "send %d of %d bytes: still fi.EAGAIN", i, size)
			require.NoError(t, a.progress())
			runtime.Gosched()
		}
		got, err := a.wait(ctx, how, true, 1)
		require.NoError(t, err, "sender waiting (%v) for send %d of %d bytes; the receiver is waiting too", how, i, size)
		require.Nil(t, got[0].err, "send %d: error entry %v", i, got[0].err)
		requireSend(t, got[0].c, sctx)
	}
	var r result
	select {
	case r = <-recvd:
	case <-time.After(s.cfg.Timeout + time.Second):
		t.Fatalf("the receiver goroutine waiting (%v) did not return", how)
	}
	require.NoError(t, r.err, "receiver waiting (%v) for %d messages of %d bytes", how, k, size)
	for i, e := range r.got {
		require.Nil(t, e.err, "receive %d: error entry %v", i, e.err)
		j := slices.Index(rctx, e.c.Context.(*opCtx))
		require.GreaterOrEqual(t, j, 0, "receive completion with an unknown context")
		require.Equal(t, size, e.c.Len, "receive %d's length", j)
		require.True(t, bytes.Equal(pattern(size, byte(j+1)), rbufs[j]), "receive %d of %d bytes arrived corrupted", j, size)
	}
}

// testCloseWhileWaiting is the close-while-waiting group: a goroutine
// blocks in CQ.SRead or Counter.Wait on a queue bound to an endpoint
// with a receive posted, and another closes the endpoint. The blocked
// call must return (fi.EAVAIL for the cancelled receive's error entry,
// or fi.ECANCELED), Close must return, and nothing may crash. A
// cancelled receive counts as an error on the endpoint's receive
// counter, so a Counter.Wait blocked on it returns fi.EAVAIL. It runs a
// few times per style with the close at different moments: before the
// waiter blocks, as it blocks, and well after.
func testCloseWhileWaiting(t *testing.T, s *suite) {
	s.eachKind(t, func(t *testing.T, kind string) {
		for _, how := range []waitStyle{waitSRead, waitCntr} {
			t.Run(how.String(), func(t *testing.T) {
				for i, delay := range []time.Duration{0, 0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
					t.Run(fmt.Sprintf("after-%v-%d", delay, i), func(t *testing.T) {
						s.closeUnderWaiter(t, kind, how, delay)
					})
				}
			})
		}
	})
	// The same for RDM endpoints named by node and service with
	// FI_SOURCE, the way servers open them.
	s.run(t, "rdm-named", func(t *testing.T) {
		for _, how := range []waitStyle{waitSRead, waitCntr} {
			t.Run(how.String(), func(t *testing.T) {
				for i, delay := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
					t.Run(fmt.Sprintf("after-%v-%d", delay, i), func(t *testing.T) {
						s.closeUnderWaiter(t, "rdm-named", how, delay)
					})
				}
			})
		}
	})
}

// closeUnderWaiter runs one close-while-waiting case.
func (s *suite) closeUnderWaiter(t *testing.T, kind string, how waitStyle, delay time.Duration) {
	var b *waiter
	if kind == "rdm-named" {
		b = s.openNamedWaiter(t, how == waitCntr)
	} else {
		_, b = s.openWaitPair(t, kind, how == waitCntr)
	}
	rbuf := make([]byte, 64)
	rctx := &opCtx{"recv pending at close"}
	require.NoError(t, msgOf(t, b.peer).Recv(rbuf, b.desc(t, rbuf), fi.AddrUnspec, rctx))
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	returned := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		close(ready)
		var err error
		switch how {
		case waitSRead:
			var buf [4]eq.Completion
			var n int
			n, err = b.cq.SRead(ctx, buf[:])
			if err == nil && n > 0 {
				err = fmt.Errorf("SRead returned %d completions (%+v) for a receive nobody sent to", n, buf[0])
			}
		case waitCntr:
			err = b.rxCntr.Wait(ctx, b.rxDone+1)
			if err == nil {
				err = errors.New("Counter.Wait reached its threshold for a receive nobody sent to")
			}
		}
		returned <- err
	}()
	<-ready
	if how == waitCntr {
		// fi_cntr_wait reports an error count that changes while it
		// waits: a Close that cancels the receive before Wait began
		// leaves nothing to end it. Give the goroutine time to block.
		delay = max(delay, 2*time.Millisecond)
	}
	time.Sleep(delay)
	closed := make(chan error, 1)
	go func() { closed <- b.ep.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err, "Close with a goroutine blocked in %v", how)
	case <-time.After(s.cfg.Timeout):
		t.Fatalf("Close did not return within %v while a goroutine was blocked in %v", s.cfg.Timeout, how)
	}
	var err error
	select {
	case err = <-returned:
	case <-time.After(s.cfg.Timeout + time.Second):
		t.Fatalf("the goroutine blocked in %v did not return after Close", how)
	}
	require.Error(t, err, "the blocked %v after Close", how)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the blocked %v only returned at its deadline: Close did not end it", how)
	if !errors.Is(err, fi.EAVAIL) {
		require.ErrorIs(t, err, fi.ECANCELED, "the blocked %v after Close: want fi.EAVAIL or fi.ECANCELED", how)
	}
	// The receive posted at Close ends as an error entry with
	// fi.ECANCELED (the close group's rule), unless the blocked SRead
	// returned it as a completion, which the check above refused.
	e := alone(b.peer).cqError(t, s, b.peer)
	require.Equal(t, fi.ECANCELED, e.Err, "the receive posted at Close")
	require.Same(t, rctx, e.Context, "the error entry's context")
}

// openNamedWaiter opens an RDM endpoint from GetInfo with the suite's
// node, a service of its own and FI_SOURCE (the server's way), with its
// queues and counters when counters is set.
func (s *suite) openNamedWaiter(t testing.TB, counters bool) *waiter {
	t.Helper()
	h := s.hints(fi.EPTypeRDM)
	h.Caps |= fi.CapMsg
	// A random service below Linux's ephemeral port range: the suite may
	// run in several processes at once (go test ./...), and a name or
	// port one of them holds would make this open fail.
	service := strconv.Itoa(20000 + rand.IntN(12000))
	infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, service, fi.FlagSource, h)
	skipIfAbsent(t, err, "reliable unconnected (FI_EP_RDM) endpoints named by node and service")
	require.NotEmpty(t, infos)
	x := s.openRDM(t, "named", infos[0], rdmOpts{counters: counters})
	return &waiter{peer: x.peer, dest: fi.AddrUnspec}
}

// testPeerKilled is the peer-killed group: a peer process is killed
// (SIGKILL) while the survivor is blocked in CQ.SRead with operations to
// it in flight. The blocked read must return with those operations'
// entries (completions or error entries with a code) within
// Config.Timeout, and the survivor must go on working: with another peer
// (RDM), or with its event queue reporting the shutdown (MSG).
func testPeerKilled(t *testing.T, s *suite) {
	s.run2(t, "rdm", nil, func(t *testing.T) {
		m := s.rdm(t, rdmOpts{}, "survivor", "other")
		m.connect(t)
		x := m.peers[0]
		l := s.spawn(t, m.poll)
		doomed := exchangeNames(t, l, x)
		l.recv(t, "busy")
		sent := rdmFlood(t, m, x, doomed)
		// Everything read so far stays in x.in; the rest comes through
		// the blocked SRead below.
		have := len(x.in)
		w := &waiter{peer: x.peer}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		type result struct {
			got []cqEntry
			err error
		}
		done := make(chan result, 1)
		go func() {
			got, err := w.wait(ctx, waitSRead, true, sent-have)
			done <- result{got, err}
		}()
		l.kill(t)
		t.Logf("peer process killed with %d of the survivor's sends to it posted, %d already ended", sent, have)
		r := <-done
		require.NoError(t, r.err, "the survivor blocked in SRead: every send to the killed peer ends within %v", s.cfg.Timeout)
		for _, e := range r.got {
			x.in = append(x.in, rdmEntry{cqEntry: e, src: fi.AddrUnspec})
		}
		rdmSurvive(t, m, doomed, sent)
	}, func(t *testing.T, l *link) {
		m := s.rdm(t, rdmOpts{}, "doomed")
		x := m.peers[0]
		l.poll = m.poll
		survivor := exchangeNames(t, l, x)
		sent := rdmFlood(t, m, x, survivor)
		t.Logf("%d sends to the survivor posted", sent)
		l.send(t, "busy", nil)
		// The harness now polls until the parent kills this process.
	})

	s.run2(t, "msg", nil, func(t *testing.T) {
		l, lk := s.listen2(t)
		srv := s.accept2(t, l, lk, epOpts{}, noData)
		w := &waiter{peer: srv}
		rctx := &opCtx{"recv pending when the peer died"}
		rbuf := make([]byte, 64)
		require.NoError(t, msgOf(t, srv).Recv(rbuf, srv.desc(t, rbuf), fi.AddrUnspec, rctx))
		lk.recv(t, "connected")
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		type result struct {
			got []cqEntry
			err error
		}
		done := make(chan result, 1)
		go func() {
			got, err := w.wait(ctx, waitSRead, false, 1)
			done <- result{got, err}
		}()
		lk.kill(t)
		r := <-done
		require.NoError(t, r.err, "the server blocked in SRead: its posted receive ends within %v of the peer's death", s.cfg.Timeout)
		e := r.got[0]
		require.NotNil(t, e.err, "the receive pending when the peer died completed: %+v", e.c)
		requireCoded(t, e.err)
		require.Same(t, rctx, e.err.Context, "the error entry's context is the posted receive's")
		sd := expectEvent[*eq.Shutdown](t, s, srv.eq)
		requireSameFid(t, srv.ep, sd.Fid, "server's Shutdown names its endpoint")
		require.NoError(t, srv.ep.Close(), "server: close")
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		s.connect2(t, lk, c, dest, noData)
		lk.send(t, "connected", nil)
	})
}
