package fabtests

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// This file is the unit/waitfd group: FI_WAIT_FD wait objects (fi_eq(3),
// fi_cq(3), fi_cntr(3)) used the way fi_trywait(3) tells applications to
// use them, with poll(2) on the descriptor (waitfd_linux.go; elsewhere the
// group skips). A queue, event queue or counter opened with fi.WaitFD is
// an eq.FDWaiter; its descriptor is quiet after a successful TryWait with
// nothing to read, becomes readable when an entry arrives (with manual
// progress too: the provider moves data while the application sleeps in
// poll), TryWait says fi.EAGAIN while entries wait, no wake-up is lost
// over a thousand messages, and Close wakes a thread blocked in poll.

// testWaitFD is the unit/waitfd group.
func testWaitFD(t *testing.T, s *suite) {
	if !pollSupported {
		reftest.Missing(t, "FI_WAIT_FD descriptors are eventfds, tested with poll(2), on Linux only; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	s.run(t, "eq", s.waitFDEQ)
	s.run(t, "counter", s.waitFDCounter)
	s.run(t, "no-fd", s.waitFDNone)
	s.eachKind(t, func(t *testing.T, kind string) {
		t.Run("message", func(t *testing.T) { s.waitFDMessage(t, kind) })
		t.Run("pending", func(t *testing.T) { s.waitFDPending(t, kind) })
		t.Run("counter", func(t *testing.T) { s.waitFDMessageCounter(t, kind) })
		t.Run("no-lost-wakeup", func(t *testing.T) { s.waitFDLoop(t, kind, 1000) })
		t.Run("close", func(t *testing.T) { s.waitFDClose(t, kind) })
	})
}

// fdOf returns obj's wait descriptor and TryWait, failing when an object
// opened with fi.WaitFD has none.
func fdOf(t testing.TB, obj fi.Fid) (int, eq.FDWaiter) {
	t.Helper()
	w, ok := obj.(eq.FDWaiter)
	require.True(t, ok, "%T opened with fi.WaitFD is no eq.FDWaiter", obj)
	fd, err := w.WaitFD()
	require.NoError(t, err, "WaitFD (FI_GETWAIT)")
	require.GreaterOrEqual(t, fd, 0)
	fd2, err := eq.WaitFD(obj)
	require.NoError(t, err)
	require.Equal(t, fd, fd2, "eq.WaitFD and the method disagree")
	return fd, w
}

// pollAsync polls fd in a goroutine for up to the suite's timeout and
// delivers what poll reported.
func (s *suite) pollAsync(t testing.TB, fd int) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() { ch <- pollFD(fd, int(s.cfg.Timeout.Milliseconds())) }()
	return ch
}

// requireQuiet requires that fd is not readable now (poll with a zero
// timeout).
func requireQuiet(t testing.TB, fd int, what string) {
	t.Helper()
	r := pollFD(fd, 0)
	require.NoError(t, r.err, "poll")
	require.False(t, r.in, "%s: the descriptor is readable with nothing to read", what)
}

// requireWoken requires that a poll returned with the descriptor
// readable (or, where close may have come first, invalid).
func requireWoken(t testing.TB, r pollResult, what string, nvalOK bool) {
	t.Helper()
	require.NoError(t, r.err, "poll")
	if nvalOK && r.nval {
		return
	}
	require.True(t, r.in, "%s: poll returned without the descriptor readable (a lost wake-up, or the suite's timeout)", what)
}

// waitFDEQ is fi_eq_test's eq_wait_fd_poll, and more: an event queue
// with a wait descriptor, an event written while a thread blocks in poll,
// TryWait while it waits to be read, and Close under a blocked poll.
func (s *suite) waitFDEQ(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	q, err := eq.OpenEQ(e.fabric, &eq.Attr{WaitObj: fi.WaitFD, Flags: fi.FlagWrite})
	skipIfAbsent(t, err, "event queues with FI_WAIT_FD")
	keep(t, q)
	fd, w := fdOf(t, q)
	require.NoError(t, w.TryWait(), "TryWait on an empty event queue")
	requireQuiet(t, fd, "empty event queue after TryWait")

	polled := s.pollAsync(t, fd)
	runtime.Gosched()
	ev := &eq.Notify{Kind: eq.EventNotify, Fid: q, Data: 7}
	require.NoError(t, q.Write(ev))
	requireWoken(t, <-polled, "event written", false)
	require.Equal(t, fi.EAGAIN, w.TryWait(), "TryWait with an event queued")
	require.Equal(t, fi.EAGAIN, eq.TryWait(q), "TryWait again: the event is still queued")
	got, err := q.Read()
	require.NoError(t, err)
	require.Equal(t, eq.EventNotify, got.Type())
	require.NoError(t, w.TryWait(), "TryWait once the event was read")
	requireQuiet(t, fd, "event queue read empty, after TryWait")

	polled = s.pollAsync(t, fd)
	runtime.Gosched()
	require.NoError(t, q.Close())
	requireWoken(t, <-polled, "event queue closed", true)
	_, err = w.WaitFD()
	require.ErrorIs(t, err, fi.EBADF, "WaitFD after Close")
	require.Equal(t, fi.EBADF, w.TryWait(), "TryWait after Close")
}

// waitFDCounter: a counter's descriptor wakes a blocked poll when the
// count changes, and TryWait reports a change once.
func (s *suite) waitFDCounter(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	c, err := eq.OpenCounter(e.domain, &eq.CounterAttr{WaitObj: fi.WaitFD})
	skipIfAbsent(t, err, "counters with FI_WAIT_FD")
	keep(t, c)
	fd, w := fdOf(t, c)
	require.NoError(t, w.TryWait(), "TryWait on a counter that never changed")
	requireQuiet(t, fd, "unchanged counter after TryWait")
	polled := s.pollAsync(t, fd)
	runtime.Gosched()
	require.NoError(t, c.Add(1))
	requireWoken(t, <-polled, "counter added to", false)
	require.Equal(t, fi.EAGAIN, w.TryWait(), "TryWait after the count changed")
	require.Equal(t, uint64(1), c.Read())
	require.NoError(t, w.TryWait(), "TryWait with no change since the last one")
	requireQuiet(t, fd, "counter after TryWait")
	require.NoError(t, c.AddErr(1))
	requireWoken(t, pollFD(fd, 0), "error count added to", false)
	require.Equal(t, fi.EAGAIN, w.TryWait(), "TryWait after the error count changed")
}

// waitFDNone: objects opened with fi.WaitNone have no descriptor, and
// say so with fi.ENODATA as C's providers do (or are no FDWaiter at all);
// an event queue opened with fi.WaitUnspec has one when asked, as C's
// ofi_rxm expects of its core provider's.
func (s *suite) waitFDNone(t *testing.T) {
	e := s.open(t, fi.EPTypeUnspec)
	q, err := eq.OpenEQ(e.fabric, &eq.Attr{WaitObj: fi.WaitNone})
	require.NoError(t, err)
	keep(t, q)
	cq, err := eq.OpenCQ(e.domain, &eq.CQAttr{WaitObj: fi.WaitNone})
	skipIfAbsent(t, err, "completion queues")
	keep(t, cq)
	for _, o := range []fi.Fid{q, cq} {
		if _, ok := o.(eq.FDWaiter); !ok {
			continue
		}
		_, err := eq.WaitFD(o)
		require.ErrorIs(t, err, fi.ENODATA, "%T with FI_WAIT_NONE: FI_GETWAIT", o)
		require.Equal(t, fi.EINVAL, eq.TryWait(o), "%T with FI_WAIT_NONE: TryWait", o)
	}
	uq, err := eq.OpenEQ(e.fabric, &eq.Attr{WaitObj: fi.WaitUnspec, Flags: fi.FlagWrite})
	require.NoError(t, err)
	keep(t, uq)
	if _, ok := uq.(eq.FDWaiter); !ok {
		return
	}
	fd, w := fdOf(t, uq)
	require.NoError(t, w.TryWait())
	requireQuiet(t, fd, "FI_WAIT_UNSPEC event queue after TryWait")
	require.NoError(t, uq.Write(&eq.Notify{Kind: eq.EventNotify, Fid: uq}))
	requireWoken(t, pollFD(fd, 0), "event written to an FI_WAIT_UNSPEC event queue", false)
}

// openFDPair opens two endpoints of kind whose CQs (and counters, when
// counters is set) have wait descriptors, a sending to b.
func (s *suite) openFDPair(t testing.TB, kind string, counters bool) (a, b *waiter) {
	t.Helper()
	switch kind {
	case "msg":
		p := s.pair(t, epOpts{counters: counters, wait: fi.WaitFD})
		return &waiter{peer: p.client, dest: fi.AddrUnspec}, &waiter{peer: p.server, dest: fi.AddrUnspec}
	case "rdm":
		m := s.rdm(t, rdmOpts{counters: counters, wait: fi.WaitFD}, "a", "b")
		m.connect(t)
		return &waiter{peer: m.peers[0].peer, dest: m.addr[0][1]}, &waiter{peer: m.peers[1].peer, dest: m.addr[1][0]}
	case "dgram":
		m := s.dgram(t, s.dgramInfo(t, 0), dgramOpts{counters: counters, wait: fi.WaitFD}, "a", "b")
		m.connect(t)
		return &waiter{peer: m.peers[0].peer, dest: m.addr[0][1]}, &waiter{peer: m.peers[1].peer, dest: m.addr[1][0]}
	}
	panic("fabtests: unknown endpoint kind " + kind)
}

// fdSide is one endpoint of a wait-descriptor test with its CQ's
// descriptor.
type fdSide struct {
	*waiter
	fd int
	w  eq.FDWaiter
	// mrs are the regions descOf registered (FI_MR_LOCAL), closed at the
	// test's end.
	mrs []fi.MR
}

func (s *suite) openFDSides(t testing.TB, kind string, counters bool) (a, b *fdSide) {
	t.Helper()
	wa, wb := s.openFDPair(t, kind, counters)
	a, b = &fdSide{waiter: wa}, &fdSide{waiter: wb}
	a.fd, a.w = fdOf(t, a.cq)
	b.fd, b.w = fdOf(t, b.cq)
	return a, b
}

// read reads what x's CQ holds, without blocking, into x.early; it
// returns how many entries it read.
func (x *fdSide) read() (int, error) {
	before := len(x.early)
	err := x.progress()
	return len(x.early) - before, err
}

// waitEntries collects n entries from x's CQ the fi_trywait way:
// TryWait, poll(2) when it allows, read. A poll that returns without the
// descriptor readable, or after the suite's timeout, is an error: the
// wake-up was lost.
func (s *suite) waitEntries(x *fdSide, n int) ([]cqEntry, error) {
	for len(x.early) < n {
		switch err := x.w.TryWait(); {
		case err == nil:
			r := pollFD(x.fd, int(s.cfg.Timeout.Milliseconds()))
			if r.err != nil {
				return nil, r.err
			}
			if !r.in {
				return nil, fmt.Errorf("%s: poll returned without the descriptor readable after %v (%d of %d entries): a lost wake-up", x.role, s.cfg.Timeout, len(x.early), n)
			}
		case errors.Is(err, fi.EAGAIN):
		default:
			return nil, fmt.Errorf("%s: TryWait: %w", x.role, err)
		}
		if _, err := x.read(); err != nil {
			return nil, err
		}
	}
	out := x.early[:n:n]
	x.early = x.early[n:]
	return out, nil
}

// send posts a send of data from a, retrying while it returns fi.EAGAIN
// (reading a's CQ meanwhile), and waits for its completion on a's
// descriptor.
func (s *suite) sendFD(a *fdSide, data []byte, sctx *opCtx) error {
	m, ok := a.ep.(ep.Msg)
	if !ok {
		return fmt.Errorf("%s: endpoint %T cannot send", a.role, a.ep)
	}
	desc := a.descOf(data)
	for {
		err := m.Send(data, desc, a.dest, sctx)
		if err == nil {
			break
		}
		if !errors.Is(err, fi.EAGAIN) {
			return fmt.Errorf("%s: send: %w", a.role, err)
		}
		if err := a.progress(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	got, err := s.waitEntries(a, 1)
	if err != nil {
		return err
	}
	if got[0].err != nil {
		return fmt.Errorf("%s: send completed with an error entry: %w", a.role, got[0].err)
	}
	if got[0].c.Context != sctx {
		return fmt.Errorf("%s: send completion with context %v, want %v", a.role, got[0].c.Context, sctx)
	}
	return nil
}

// descOf is peer.desc for goroutines that cannot fail the test: the MR
// registered for FI_MR_LOCAL, nil when the domain needs none, and the
// registration stays until the test's cleanup.
func (x *fdSide) descOf(buf []byte) any {
	if !x.mrLocal {
		return nil
	}
	mr, err := fi.RegisterMR(x.domain, &fi.MRAttr{Buf: buf,
		Access: fi.AccessSend | fi.AccessRecv | fi.AccessRead | fi.AccessWrite}, 0)
	if err != nil {
		return nil // the send then fails with the provider's reason
	}
	x.mrs = append(x.mrs, mr)
	return mr.Desc()
}

// postRecv posts a receive of n bytes on b.
func (b *fdSide) postRecv(t testing.TB, n int, ctx *opCtx) []byte {
	t.Helper()
	buf := make([]byte, n)
	require.NoError(t, msgOf(t, b.peer).Recv(buf, b.desc(t, buf), fi.AddrUnspec, ctx), "%s: post receive", b.role)
	return buf
}

// waitFDMessage: a thread blocks in poll on the receiver's descriptor
// and wakes when the message arrives; nothing else reads the queue
// meanwhile, so under manual progress the provider moved the message
// on its own while the application slept.
func (s *suite) waitFDMessage(t *testing.T, kind string) {
	a, b := s.openFDSides(t, kind, false)
	t.Cleanup(func() { closeMRs(a, b) })
	rctx := &opCtx{"recv"}
	rbuf := b.postRecv(t, 64, rctx)
	require.NoError(t, b.w.TryWait(), "%s: TryWait with a receive posted and nothing sent", b.role)
	requireQuiet(t, b.fd, "receiver's CQ with nothing sent, after TryWait")
	polled := s.pollAsync(t, b.fd)
	runtime.Gosched()
	data := pattern(64, 3)
	require.NoError(t, s.sendFD(a, data, &opCtx{"send"}))
	requireWoken(t, <-polled, "message sent to the receiver", false)
	got, err := s.waitEntries(b, 1)
	require.NoError(t, err)
	require.Nil(t, got[0].err, "receive completed with an error entry")
	requireRecv(t, got[0].c, rctx, len(data), recvFlags)
	require.True(t, bytes.Equal(data, rbuf), "the message arrived corrupted")
	require.NoError(t, b.w.TryWait(), "TryWait once everything was read")
}

// waitFDPending: TryWait says fi.EAGAIN for as long as a completion waits
// to be read.
func (s *suite) waitFDPending(t *testing.T, kind string) {
	a, b := s.openFDSides(t, kind, false)
	t.Cleanup(func() { closeMRs(a, b) })
	rctx := &opCtx{"recv"}
	b.postRecv(t, 64, rctx)
	require.NoError(t, s.sendFD(a, pattern(64, 5), &opCtx{"send"}))
	// Block until TryWait finds the receive's completion.
	for {
		err := b.w.TryWait()
		if errors.Is(err, fi.EAGAIN) {
			break
		}
		require.NoError(t, err)
		r := pollFD(b.fd, int(s.cfg.Timeout.Milliseconds()))
		requireWoken(t, r, "message sent to the receiver", false)
	}
	for i := range 3 {
		require.Equal(t, fi.EAGAIN, b.w.TryWait(), "TryWait %d with the completion still queued", i)
	}
	n, err := b.read()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the queue held the receive's completion")
	requireRecv(t, b.early[0].c, rctx, 64, recvFlags)
	require.NoError(t, b.w.TryWait(), "TryWait once the completion was read")
}

// waitFDMessageCounter: a receive counter's descriptor wakes a blocked
// poll when a message arrives.
func (s *suite) waitFDMessageCounter(t *testing.T, kind string) {
	a, b := s.openFDSides(t, kind, true)
	t.Cleanup(func() { closeMRs(a, b) })
	fd, w := fdOf(t, b.rxCntr)
	b.postRecv(t, 64, &opCtx{"recv"})
	if err := w.TryWait(); err != nil {
		require.Equal(t, fi.EAGAIN, err, "TryWait on the receive counter")
		require.NoError(t, w.TryWait(), "TryWait on the receive counter, unchanged since the last one")
	}
	polled := s.pollAsync(t, fd)
	runtime.Gosched()
	require.NoError(t, s.sendFD(a, pattern(64, 9), &opCtx{"send"}))
	requireWoken(t, <-polled, "message counted by the receiver", false)
	for b.rxCntr.Read() < 1 {
		if err := w.TryWait(); err == nil {
			requireWoken(t, pollFD(fd, int(s.cfg.Timeout.Milliseconds())), "message counted", false)
		}
	}
	require.Equal(t, fi.EAGAIN, w.TryWait(), "TryWait after the count changed")
}

// waitFDLoop sends n messages one at a time, each racing the receiver's
// TryWait and poll; the receiver blocks only on its descriptor. A lost
// wake-up leaves its poll blocked until the suite's timeout.
func (s *suite) waitFDLoop(t *testing.T, kind string, n int) {
	a, b := s.openFDSides(t, kind, false)
	t.Cleanup(func() { closeMRs(a, b) })
	m := s.startMessenger(t, a)
	for i := range n {
		rctx := &opCtx{fmt.Sprintf("recv %d", i)}
		rbuf := b.postRecv(t, 16, rctx)
		m.next <- i
		got, err := s.waitEntries(b, 1)
		require.NoError(t, err, "message %d of %d", i, n)
		require.Nil(t, got[0].err, "receive %d completed with an error entry", i)
		requireRecv(t, got[0].c, rctx, 16, recvFlags)
		require.True(t, bytes.Equal(pattern(16, byte(i)), rbuf), "message %d arrived corrupted", i)
	}
	require.NoError(t, m.stop(), "sender")
}

// messenger is a goroutine that sends message i (pattern(16, i)) from
// one side each time i comes on next, waiting for each send's
// completion on the side's descriptor: the peer of the tests that race
// a receiver's wait against every message.
type messenger struct {
	next    chan int
	done    chan error
	stopped bool
}

// startMessenger starts a messenger sending from a; if the test ends
// before stop, it is stopped then, and its error logged.
func (s *suite) startMessenger(t testing.TB, a *fdSide) *messenger {
	m := &messenger{next: make(chan int), done: make(chan error, 1)}
	go func() {
		var err error
		for i := range m.next {
			if err == nil {
				err = s.sendFD(a, pattern(16, byte(i)), &opCtx{fmt.Sprintf("send %d", i)})
			}
		}
		m.done <- err
	}()
	t.Cleanup(func() {
		if err := m.stop(); err != nil && t.Failed() {
			t.Logf("sender: %v", err)
		}
	})
	return m
}

// stop ends the messenger and returns its first send error; later
// calls return nil.
func (m *messenger) stop() error {
	if m.stopped {
		return nil
	}
	m.stopped = true
	close(m.next)
	return <-m.done
}

// waitFDClose: closing the CQ (after its endpoint) wakes a thread blocked
// in poll on its descriptor, and ends everything the descriptor's wait
// started (the group checks for goroutines and descriptors left behind).
func (s *suite) waitFDClose(t *testing.T, kind string) {
	_, b := s.openFDSides(t, kind, false)
	require.NoError(t, b.w.TryWait())
	polled := s.pollAsync(t, b.fd)
	runtime.Gosched()
	require.NoError(t, b.ep.Close(), "close the receiver's endpoint")
	require.NoError(t, b.cq.Close(), "close the receiver's CQ under a blocked poll")
	requireWoken(t, <-polled, "CQ closed", true)
	require.Equal(t, fi.EBADF, b.w.TryWait(), "TryWait after Close")
}

// closeMRs closes the regions the sides' goroutines registered.
func closeMRs(sides ...*fdSide) {
	for _, x := range sides {
		for _, mr := range x.mrs {
			_ = mr.Close()
		}
	}
}
