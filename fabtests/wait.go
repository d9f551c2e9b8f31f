package fabtests

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// This file is the wait group: the wait objects of fi_poll(3) over the
// provider's queues, as an application uses them. fd: an FI_WAIT_FD
// descriptor becomes readable on an event, a counter's change and a
// completion (the unit/waitfd tests of each, run here too so that the
// group stands alone). set: an eq.WaitSet (fi_wait_open, fi_wait,
// fi_poll) of an event queue, a completion queue and a counter wakes a
// blocked Wait for the first of them to get something, and Ready names
// that one; a connection request and a counted receive wake it too, and
// no wake-up is lost over 500 messages;
// members join through the attributes (FI_WAIT_SET), closed members
// leave; Wait ends at its context's deadline or cancel, and Close wakes
// it. On Linux only, as FI_WAIT_FD.

// testWait is the wait group.
func testWait(t *testing.T, s *suite) {
	if !pollSupported {
		reftest.Missing(t, "wait objects are eventfds and epoll, on Linux only; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	s.run(t, "fd/event", s.waitFDEQ)
	s.run(t, "fd/count", s.waitFDCounter)
	s.eachKind(t, func(t *testing.T, kind string) {
		t.Run("fd/completion", func(t *testing.T) { s.waitFDMessage(t, kind) })
		t.Run("set/first/eq", func(t *testing.T) { s.waitSetFirst(t, kind, "eq") })
		t.Run("set/first/cq", func(t *testing.T) { s.waitSetFirst(t, kind, "cq") })
		t.Run("set/first/counter", func(t *testing.T) { s.waitSetFirst(t, kind, "counter") })
		t.Run("set/counted", func(t *testing.T) { s.waitSetCounted(t, kind) })
		t.Run("set/no-lost-wakeup", func(t *testing.T) { s.waitSetLoop(t, kind, 500) })
	})
	s.run(t, "set/connreq", s.waitSetConnReq)
	s.run(t, "set/deadline", s.waitSetDeadline)
	s.run(t, "set/close", s.waitSetClose)
	s.run(t, "set/attr", s.waitSetAttr)
	s.run(t, "set/member-closed", s.waitSetMemberClosed)
}

// newWaitSet opens a wait set of objs, closed at cleanup.
func newWaitSet(t testing.TB, objs ...fi.Fid) *eq.WaitSet {
	t.Helper()
	ws, err := eq.NewWaitSet(objs...)
	require.NoError(t, err, "NewWaitSet")
	keep(t, ws)
	return ws
}

// waitAsync runs ws.Wait(ctx) in a goroutine and delivers its result.
func waitAsync(ctx context.Context, ws *eq.WaitSet) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- ws.Wait(ctx) }()
	runtime.Gosched()
	return ch
}

// waitDone requires that done delivers Wait's nil within the suite's
// timeout.
func (s *suite) waitDone(t testing.TB, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err, "Wait, %s", what)
	case <-time.After(s.cfg.Timeout + time.Second):
		t.Fatalf("Wait still blocked %v after %s", s.cfg.Timeout, what)
	}
}

// writableEQ opens an event queue with a wait descriptor that the
// application writes to, on fabric f.
func writableEQ(t testing.TB, f fi.Fabric) eq.EventQueue {
	t.Helper()
	q, err := eq.OpenEQ(f, &eq.Attr{WaitObj: fi.WaitFD, Flags: fi.FlagWrite})
	skipIfAbsent(t, err, "event queues with FI_WAIT_FD")
	keep(t, q)
	return q
}

// waitSetFirst: a set of an event queue, the receiver's completion
// queue and a counter wakes a Wait blocked before anything happened for
// first, the one that gets something (an application event, a received
// message, an application count), and Ready names that one alone; after
// it was read, Ready names none.
func (s *suite) waitSetFirst(t *testing.T, kind, first string) {
	a, b := s.openFDSides(t, kind, false)
	t.Cleanup(func() { closeMRs(a, b) })
	q := writableEQ(t, b.fabric)
	c, err := eq.OpenCounter(b.domain, &eq.CounterAttr{WaitObj: fi.WaitFD})
	if fi.Code(err) == fi.ENOSYS {
		if first == "counter" {
			skipIfAbsent(t, err, "counters")
		}
		c = nil
	} else {
		require.NoError(t, err, "open counter")
		keep(t, c)
	}
	members := []fi.Fid{q, b.cq}
	if c != nil {
		members = append(members, c)
	}
	ws := newWaitSet(t, members...)
	rctx := &opCtx{"recv"}
	if first == "cq" {
		b.postRecv(t, 64, rctx)
	}
	require.Empty(t, ws.Ready(nil), "Ready before anything happened")

	done := waitAsync(s.ctx(t), ws)
	var want fi.Fid
	switch first {
	case "eq":
		require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Fid: q, Data: 1}))
		want = q
	case "cq":
		require.NoError(t, s.sendFD(a, pattern(64, 1), &opCtx{"send"}))
		want = b.cq
	case "counter":
		require.NoError(t, c.Add(1))
		want = c
	}
	s.waitDone(t, done, "the "+first+" got something")
	require.Equal(t, []fi.Fid{want}, ws.Ready(nil), "Ready after the %s's wakeup", first)

	switch first {
	case "eq":
		ev, err := q.Read()
		require.NoError(t, err)
		require.Equal(t, eq.EventNotify, ev.Type())
	case "cq":
		got, err := s.waitEntries(b, 1)
		require.NoError(t, err)
		require.Nil(t, got[0].err, "receive completed with an error entry")
		requireRecv(t, got[0].c, rctx, 64, recvFlags)
	case "counter":
		require.Equal(t, uint64(1), c.Read())
	}
	require.Empty(t, ws.Ready(nil), "Ready once everything was read")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, ws.Wait(ctx), fi.ETIMEDOUT, "Wait once everything was read")
}

// waitSetCounted: a set of an event queue and the receiver's receive
// counter wakes when a message is counted; with manual progress the
// provider moved it while the set waited.
func (s *suite) waitSetCounted(t *testing.T, kind string) {
	a, b := s.openFDSides(t, kind, true)
	t.Cleanup(func() { closeMRs(a, b) })
	q := writableEQ(t, b.fabric)
	ws := newWaitSet(t, q, b.rxCntr)
	b.postRecv(t, 64, &opCtx{"recv"})
	require.Empty(t, ws.Ready(nil), "Ready before anything happened")
	done := waitAsync(s.ctx(t), ws)
	require.NoError(t, s.sendFD(a, pattern(64, 2), &opCtx{"send"}))
	s.waitDone(t, done, "a message was counted")
	require.Equal(t, []fi.Fid{b.rxCntr}, ws.Ready(nil))
	require.Equal(t, uint64(1), b.rxCntr.Read())
	require.Empty(t, ws.Ready(nil), "Ready lists a counter once per change")
}

// waitSetConnReq: a wait set with the listener's event queue (opened
// with fi.WaitFD) wakes when a connection request arrives.
func (s *suite) waitSetConnReq(t *testing.T) {
	infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, "", fi.FlagSource, s.hints(fi.EPTypeMsg))
	skipIfAbsent(t, err, "connected (FI_EP_MSG) endpoints")
	l := &listener{info: infos[0]}
	l.fabric, err = fi.OpenFabric(l.info)
	require.NoError(t, err, "open fabric")
	keep(t, l.fabric)
	l.eq, err = eq.OpenEQ(l.fabric, &eq.Attr{WaitObj: fi.WaitFD})
	skipIfAbsent(t, err, "event queues with FI_WAIT_FD")
	keep(t, l.eq)
	l.pep, err = ep.OpenPassive(l.fabric, l.info)
	skipIfAbsent(t, err, "passive endpoints")
	keep(t, l.pep)
	require.NoError(t, l.pep.Bind(l.eq, 0))
	require.NoError(t, l.pep.Listen())
	l.name = name(t, l.pep)
	ws := newWaitSet(t, l.eq)

	done := waitAsync(s.ctx(t), ws)
	c := s.client(t, l, epOpts{})
	require.NoError(t, c.cm.Connect(c.info.DestAddr, []byte("hello")))
	s.waitDone(t, done, "a connection request")
	require.Equal(t, []fi.Fid{l.eq}, ws.Ready(nil))
	ev, err := l.eq.Read()
	require.NoError(t, err, "read the request the set woke for")
	req, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "event %v, want FI_CONNREQ", ev.Type())
	require.Equal(t, []byte("hello"), req.Data)
	require.NoError(t, l.pep.Reject(req.Info.Handle, nil))
}

// waitSetDeadline: Wait on a quiet set ends at its context's deadline
// with fi.ETIMEDOUT (and context.DeadlineExceeded), and at a cancel with
// fi.ECANCELED (and context.Canceled): fi_wait's timeout.
func (s *suite) waitSetDeadline(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	ws := newWaitSet(t, writableEQ(t, e.fabric))
	cq, err := eq.OpenCQ(e.domain, &eq.CQAttr{WaitObj: fi.WaitFD})
	skipIfAbsent(t, err, "completion queues with FI_WAIT_FD")
	keep(t, cq)
	require.NoError(t, ws.Add(cq))

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = ws.Wait(ctx)
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	done := waitAsync(ctx, ws)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, fi.ECANCELED)
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(s.cfg.Timeout):
		t.Fatalf("Wait still blocked %v after its context was cancelled", s.cfg.Timeout)
	}
}

// waitSetClose: closing the set wakes a blocked Wait, which returns
// fi.EBADF; the members stay open (the group checks that nothing the
// set started is left).
func (s *suite) waitSetClose(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	q := writableEQ(t, e.fabric)
	ws, err := eq.NewWaitSet(q)
	require.NoError(t, err)
	done := waitAsync(s.ctx(t), ws)
	time.Sleep(10 * time.Millisecond) // most likely blocked by now; either order must work
	require.NoError(t, ws.Close())
	select {
	case err := <-done:
		require.Equal(t, fi.EBADF, err, "Wait under Close")
	case <-time.After(s.cfg.Timeout):
		t.Fatalf("Wait still blocked %v after Close", s.cfg.Timeout)
	}
	require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Fid: q}), "the member outlives the set")
}

// waitSetAttr: objects opened with WaitObj fi.WaitSet and the set in
// their attributes (fi_eq_attr, fi_cq_attr and fi_cntr_attr's
// wait_set) are its members; FI_WAIT_SET without a set is fi.EINVAL.
func (s *suite) waitSetAttr(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	ws := newWaitSet(t)
	q, err := eq.OpenEQ(e.fabric, &eq.Attr{WaitObj: fi.WaitSet, WaitSet: ws, Flags: fi.FlagWrite})
	skipIfAbsent(t, err, "event queues with FI_WAIT_FD")
	keep(t, q)
	cq, err := eq.OpenCQ(e.domain, &eq.CQAttr{WaitObj: fi.WaitSet, WaitSet: ws})
	skipIfAbsent(t, err, "completion queues with FI_WAIT_FD")
	keep(t, cq)
	n := 2
	c, err := eq.OpenCounter(e.domain, &eq.CounterAttr{WaitObj: fi.WaitSet, WaitSet: ws})
	if fi.Code(err) != fi.ENOSYS {
		require.NoError(t, err, "open counter in the set")
		keep(t, c)
		n++
	}
	require.Equal(t, n, ws.Len(), "members joined at open")
	done := waitAsync(s.ctx(t), ws)
	require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Fid: q}))
	s.waitDone(t, done, "an event written")
	require.Equal(t, []fi.Fid{q}, ws.Ready(nil))

	_, err = eq.OpenCQ(e.domain, &eq.CQAttr{WaitObj: fi.WaitSet})
	require.ErrorIs(t, err, fi.EINVAL, "FI_WAIT_SET without a wait set")
}

// waitSetMemberClosed: a member closed while in the set leaves it (as
// closing a CQ takes it out of its wait set in C): Wait goes on with
// the others.
func (s *suite) waitSetMemberClosed(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	q := writableEQ(t, e.fabric)
	cq, err := eq.OpenCQ(e.domain, &eq.CQAttr{WaitObj: fi.WaitFD})
	skipIfAbsent(t, err, "completion queues with FI_WAIT_FD")
	closeOnce(t, cq)
	ws := newWaitSet(t, q, cq)
	done := waitAsync(s.ctx(t), ws)
	require.NoError(t, cq.Close(), "close a member under a blocked Wait")
	runtime.Gosched()
	require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Fid: q}))
	s.waitDone(t, done, "an event after another member closed")
	require.Equal(t, []fi.Fid{q}, ws.Ready(nil))
	require.Equal(t, 1, ws.Len(), "the closed member left the set")
}

// waitSetLoop sends n messages one at a time, each racing the
// receiver's Wait on a set of an event queue and its completion queue;
// the receiver blocks only in Wait. A lost wake-up leaves Wait blocked
// until the suite's timeout.
func (s *suite) waitSetLoop(t *testing.T, kind string, n int) {
	a, b := s.openFDSides(t, kind, false)
	t.Cleanup(func() { closeMRs(a, b) })
	ws := newWaitSet(t, writableEQ(t, b.fabric), b.cq)
	m := s.startMessenger(t, a)
	for i := range n {
		rctx := &opCtx{fmt.Sprintf("recv %d", i)}
		rbuf := b.postRecv(t, 16, rctx)
		m.next <- i
		for len(b.early) == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
			err := ws.Wait(ctx)
			cancel()
			require.NoError(t, err, "message %d of %d: Wait (a lost wake-up ends at the suite's timeout)", i, n)
			_, err = b.read()
			require.NoError(t, err)
		}
		got := b.early[0]
		b.early = b.early[1:]
		require.Nil(t, got.err, "receive %d completed with an error entry", i)
		requireRecv(t, got.c, rctx, 16, recvFlags)
		require.True(t, bytes.Equal(pattern(16, byte(i)), rbuf), "message %d arrived corrupted", i)
	}
	require.NoError(t, m.stop(), "sender")
}
