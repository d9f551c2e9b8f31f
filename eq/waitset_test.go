//go:build linux

package eq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/exampletest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// noLeaks checks, after everything else the test registered for its
// cleanup, that the test left no goroutine behind.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// rig is a domain of one provider with an event queue, a completion
// queue and a counter that have wait descriptors, and two endpoints: a
// sends to b, whose receives complete on cq. Counter is nil where the
// domain has none (udp).
type rig struct {
	info   *fi.Info
	fabric fi.Fabric
	domain fi.Domain
	evq    eq.EventQueue
	cq     eq.CompletionQueue // b's
	acq    eq.CompletionQueue // a's, not a member
	cntr   eq.Counter
	av     fi.AV
	a, b   ep.Endpoint
	toB    fi.Addr
	mrs    []fi.MR
}

// waitProviders are the providers the wait set tests run on, with the
// endpoint type each offers for a message from one endpoint to another
// without a connection.
var waitProviders = []struct {
	name string
	typ  fi.EPType
}{
	{"tcp;ofi_rxm", fi.EPTypeRDM}, // rxm over tcp
	{"shm", fi.EPTypeRDM},
	{"udp", fi.EPTypeDgram},
}

// openRig opens a rig of provider prov, closing everything at cleanup.
func openRig(t *testing.T, prov string, typ fi.EPType) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hints := &fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: typ}, FabricAttr: &fi.FabricAttr{ProvName: prov}}
	infos, err := fi.GetInfo(ctx, "", "", 0, hints)
	require.NoError(t, err, "getinfo %s", prov)
	r := &rig{info: infos[0]}
	closeAt := func(f fi.Fid) { t.Cleanup(func() { _ = f.Close() }) }
	r.fabric, err = fi.OpenFabric(r.info)
	require.NoError(t, err)
	closeAt(r.fabric)
	r.domain, err = r.fabric.OpenDomain(r.info)
	require.NoError(t, err)
	closeAt(r.domain)
	r.evq, err = eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitFD, Flags: fi.FlagWrite})
	require.NoError(t, err)
	closeAt(r.evq)
	r.cq, err = eq.OpenCQ(r.domain, &eq.CQAttr{Format: eq.FormatData, WaitObj: fi.WaitUnspec})
	require.NoError(t, err)
	closeAt(r.cq)
	r.acq, err = eq.OpenCQ(r.domain, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	closeAt(r.acq)
	r.cntr, err = eq.OpenCounter(r.domain, &eq.CounterAttr{WaitObj: fi.WaitFD})
	if fi.Code(err) == fi.ENOSYS {
		r.cntr = nil
	} else {
		require.NoError(t, err)
		closeAt(r.cntr)
	}
	r.av, err = fi.OpenAV(r.domain, &fi.AVAttr{Type: fi.AVMap})
	require.NoError(t, err)
	closeAt(r.av)
	open := func(cq eq.CompletionQueue) ep.Endpoint {
		x, err := ep.Open(r.domain, r.info)
		require.NoError(t, err)
		closeAt(x)
		require.NoError(t, x.Bind(r.av, 0))
		require.NoError(t, x.Bind(cq, fi.FlagSend|fi.FlagRecv))
		require.NoError(t, x.Enable())
		return x
	}
	r.a, r.b = open(r.acq), open(r.cq)
	buf := make([]byte, 256)
	n, err := r.b.(ep.Namer).Name(buf)
	require.NoError(t, err)
	addrs, err := r.av.Insert([][]byte{buf[:n]}, 0)
	require.NoError(t, err)
	r.toB = addrs[0]
	t.Cleanup(func() {
		for _, mr := range r.mrs {
			_ = mr.Close()
		}
	})
	return r
}

// desc registers buf where the domain needs local descriptors.
func (r *rig) desc(t *testing.T, buf []byte) any {
	if r.info.DomainAttr.MRMode&fi.MRModeLocal == 0 {
		return nil
	}
	mr, err := fi.RegisterMR(r.domain, &fi.MRAttr{Buf: buf, Access: fi.AccessSend | fi.AccessRecv}, 0)
	require.NoError(t, err)
	r.mrs = append(r.mrs, mr)
	return mr.Desc()
}

// members are the rig's wait set members: the event queue, b's CQ and
// the counter, where there is one.
func (r *rig) members() []fi.Fid {
	m := []fi.Fid{r.evq, r.cq}
	if r.cntr != nil {
		m = append(m, r.cntr)
	}
	return m
}

// message posts a receive on b and sends it a message from a, driving
// a's progress until the send is taken.
func (r *rig) message(t *testing.T) {
	rbuf, sbuf := make([]byte, 64), []byte("wake up")
	require.NoError(t, r.b.(ep.Msg).Recv(rbuf, r.desc(t, rbuf), fi.AddrUnspec, nil))
	for {
		err := r.a.(ep.Msg).Send(sbuf, r.desc(t, sbuf), r.toB, nil)
		if err == nil {
			return
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		var c [4]eq.Completion
		_, _ = r.acq.Read(c[:])
	}
}

// waitAsync runs ws.Wait in a goroutine and delivers its result.
func waitAsync(ctx context.Context, ws *eq.WaitSet) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- ws.Wait(ctx) }()
	runtime.Gosched()
	return ch
}

// TestWaitSetFirstOf: a set of an event queue, a completion queue and a
// counter wakes a blocked Wait for whichever of them gets something
// first, on every provider, and Ready names that one alone.
func TestWaitSetFirstOf(t *testing.T) {
	noLeaks(t)
	for _, p := range waitProviders {
		for _, first := range []string{"eq", "cq", "counter"} {
			t.Run(p.name+"/"+first, func(t *testing.T) {
				r := openRig(t, p.name, p.typ)
				ws, err := eq.NewWaitSet(r.members()...)
				require.NoError(t, err)
				defer ws.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				// Nothing yet: Wait runs until a short deadline.
				short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
				require.ErrorIs(t, ws.Wait(short), context.DeadlineExceeded)
				cancelShort()
				require.Empty(t, ws.Ready(nil))

				done := waitAsync(ctx, ws)
				var want fi.Fid
				switch first {
				case "eq":
					require.NoError(t, r.evq.Write(&eq.Notify{Kind: eq.EventNotify, Fid: r.evq}))
					want = r.evq
				case "cq":
					r.message(t)
					want = r.cq
				case "counter":
					if r.cntr == nil {
						cancel()
						<-done
						t.Skipf("%s has no counters", p.name)
					}
					require.NoError(t, r.cntr.Add(1))
					want = r.cntr
				}
				require.NoError(t, <-done, "Wait")
				require.Equal(t, []fi.Fid{want}, ws.Ready(nil), "Ready after the %s's wakeup", first)
				switch first {
				case "eq":
					ev, err := r.evq.Read()
					require.NoError(t, err)
					require.Equal(t, eq.EventNotify, ev.Type())
				case "cq":
					var c [1]eq.Completion
					n, err := r.cq.Read(c[:])
					require.NoError(t, err)
					require.Equal(t, 1, n)
					require.Equal(t, len("wake up"), c[0].Len)
				case "counter":
					require.Equal(t, uint64(1), r.cntr.Read())
				}
				require.Empty(t, ws.Ready(nil), "Ready once everything was read")
			})
		}
	}
}

// TestWaitSetContext: Wait ends at the context's deadline with
// ETIMEDOUT and at its cancel with ECANCELED, in both Go's and
// libfabric's names.
func TestWaitSetContext(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ws, err := eq.NewWaitSet(r.members()...)
	require.NoError(t, err)
	defer ws.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err = ws.Wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.Equal(t, fi.ETIMEDOUT, fi.Code(err))

	ctx, cancel = context.WithCancel(context.Background())
	done := waitAsync(ctx, ws)
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, fi.ECANCELED)

	// A set without members waits for its context too.
	empty, err := eq.NewWaitSet()
	require.NoError(t, err)
	defer empty.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, empty.Wait(ctx), fi.ETIMEDOUT)
}

// TestWaitSetCloseWakesWait: Close while Wait blocks makes it return
// fi.EBADF at once, and leaves no goroutine and no descriptor behind.
func TestWaitSetCloseWakesWait(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ws, err := eq.NewWaitSet(r.members()...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := waitAsync(ctx, ws)
	// Let Wait block in the watcher before closing; either order must work.
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, ws.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, fi.EBADF)
		require.Equal(t, fi.EBADF, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait still blocked 5s after Close")
	}
	require.Equal(t, fi.EBADF, ws.Wait(ctx), "Wait after Close")
	require.ErrorIs(t, ws.Close(), fi.EBADF, "second Close")
	require.ErrorIs(t, ws.Add(r.evq), fi.EBADF, "Add after Close")
	_, err = ws.WaitFD()
	require.ErrorIs(t, err, fi.EBADF)
}

// TestWaitSetMembers: what may join, duplicates, Remove, and a member
// closed while in the set.
func TestWaitSetMembers(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)

	_, err := eq.NewWaitSet(r.av)
	require.ErrorIs(t, err, fi.ENOSYS, "an AV has no wait descriptor")
	none, err := eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitNone})
	require.NoError(t, err)
	defer none.Close()
	_, err = eq.NewWaitSet(none)
	require.ErrorIs(t, err, fi.ENODATA, "an FI_WAIT_NONE queue: FI_GETWAIT's answer")

	ws, err := eq.NewWaitSet(r.evq, r.cq)
	require.NoError(t, err)
	defer ws.Close()
	require.ErrorIs(t, ws.Add(r.evq), fi.EALREADY)
	require.ErrorIs(t, ws.Remove(r.cntr), fi.ENOENT)
	require.NoError(t, ws.Add(r.cntr))
	require.Equal(t, 3, ws.Len())
	require.NoError(t, ws.Remove(r.cq))
	require.Equal(t, 2, ws.Len())

	// A removed member no longer wakes the set.
	require.NoError(t, r.cq.(eq.FDWaiter).TryWait())
	r.message(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, ws.Wait(ctx), context.DeadlineExceeded)

	// A closed member leaves the set at the next look.
	q, err := eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitFD})
	require.NoError(t, err)
	require.NoError(t, ws.Add(q))
	require.Equal(t, 3, ws.Len())
	require.NoError(t, q.Close())
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, ws.Wait(ctx), context.DeadlineExceeded, "a closed member is no error")
	require.Equal(t, 2, ws.Len())
	require.ErrorIs(t, ws.Remove(q), fi.ENOENT)
}

// TestWaitSetAttr: an object opened with WaitObj fi.WaitSet joins the
// set in its attributes (fi_cq_attr.wait_set); without a set it is
// refused with fi.EINVAL, as C's providers refuse it.
func TestWaitSetAttr(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ws, err := eq.NewWaitSet()
	require.NoError(t, err)
	defer ws.Close()

	q, err := eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitSet, WaitSet: ws, Flags: fi.FlagWrite})
	require.NoError(t, err)
	defer q.Close()
	cq, err := eq.OpenCQ(r.domain, &eq.CQAttr{WaitObj: fi.WaitSet, WaitSet: ws})
	require.NoError(t, err)
	defer cq.Close()
	c, err := eq.OpenCounter(r.domain, &eq.CounterAttr{WaitObj: fi.WaitSet, WaitSet: ws})
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, 3, ws.Len())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := waitAsync(ctx, ws)
	require.NoError(t, c.Add(2))
	require.NoError(t, <-done)
	require.Equal(t, []fi.Fid{c}, ws.Ready(nil))

	_, err = eq.OpenCQ(r.domain, &eq.CQAttr{WaitObj: fi.WaitSet})
	require.ErrorIs(t, err, fi.EINVAL)
	_, err = eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitSet})
	require.ErrorIs(t, err, fi.EINVAL)
	_, err = eq.OpenCounter(r.domain, &eq.CounterAttr{WaitObj: fi.WaitSet})
	require.ErrorIs(t, err, fi.EINVAL)
}

// TestWaitSetFD: the set is an FDWaiter itself (fi_trywait and
// FI_GETWAIT on a wait set): its descriptor is quiet after a TryWait
// with nothing to read and becomes readable when a member gets an entry.
func TestWaitSetFD(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ws, err := eq.NewWaitSet(r.members()...)
	require.NoError(t, err)
	defer ws.Close()
	fd, err := eq.WaitFD(ws)
	require.NoError(t, err)
	require.NoError(t, eq.TryWait(ws))
	require.False(t, readable(t, fd, 0), "the set's descriptor with nothing to read")
	require.NoError(t, r.evq.Write(&eq.Notify{Kind: eq.EventNotify, Fid: r.evq}))
	require.True(t, readable(t, fd, 5000), "the set's descriptor after an event")
	require.Equal(t, fi.EAGAIN, ws.TryWait())
	require.Equal(t, []fi.Fid{r.evq}, ws.Ready(nil))
}

// readable polls fd for up to ms milliseconds.
func readable(t *testing.T, fd, ms int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err)
		return n > 0 && fds[0].Revents&unix.POLLIN != 0
	}
}

// TestWaitSetNoAllocs: in steady state neither a Wait that returns at
// once nor Ready allocates, and neither does a Wait that blocks until
// another goroutine writes an event. (A member whose provider must run
// progress while the application waits, an shm or tcp completion queue
// or counter, arms its FI_WAIT_FD watcher at each TryWait that finds
// nothing, and that watcher allocates its wait's context, as a blocked
// SRead does: the set adds nothing to it.)
func TestWaitSetNoAllocs(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dst := make([]fi.Fid, 0, 4)

	ws, err := eq.NewWaitSet(r.members()...)
	require.NoError(t, err)
	defer ws.Close()
	ready := func() {
		require.NoError(t, r.cntr.Add(1))
		require.NoError(t, ws.Wait(ctx))
		dst = ws.Ready(dst[:0])
		if len(dst) != 1 {
			t.Fatalf("Ready: %v", dst)
		}
	}
	ready()
	require.Zero(t, testing.AllocsPerRun(200, ready), "Wait and Ready with a member ready")

	// Blocking: a helper goroutine writes an event while Wait blocks.
	evs, err := eq.NewWaitSet(r.evq)
	require.NoError(t, err)
	defer evs.Close()
	ev := &eq.Notify{Kind: eq.EventNotify, Fid: r.evq}
	next, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-next:
				runtime.Gosched()
				_ = r.evq.Write(ev)
			case <-stop:
				return
			}
		}
	}()
	blocked := func() {
		next <- struct{}{}
		require.NoError(t, evs.Wait(ctx))
		dst = evs.Ready(dst[:0])
		if _, err := r.evq.Read(); err != nil {
			t.Fatalf("read the event: %v", err)
		}
	}
	blocked()
	require.Zero(t, testing.AllocsPerRun(200, blocked), "Wait that blocks, and Ready")
}

// TestWaitSetExampleLeaksNothing runs ExampleWaitSet again and requires
// that it closes everything it opens.
func TestWaitSetExampleLeaksNothing(t *testing.T) {
	exampletest.NoLeaks(t, ExampleWaitSet)
}

// This example waits on an event queue and a counter of the shm
// provider at once. Both join the set at open (FI_WAIT_SET with the set
// in their attributes); another goroutine's count change ends the wait,
// Ready names the counter, and a second Wait, with nothing left to
// read, ends at its deadline.
func ExampleWaitSet() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "", "", 0, &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM},
		FabricAttr: &fi.FabricAttr{ProvName: "shm"}})
	check(err)
	fabric, err := fi.OpenFabric(infos[0])
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(infos[0])
	check(err)
	defer domain.Close()

	ws, err := eq.NewWaitSet()
	check(err)
	defer ws.Close()
	q, err := eq.OpenEQ(fabric, &eq.Attr{WaitObj: fi.WaitSet, WaitSet: ws})
	check(err)
	defer q.Close()
	c, err := eq.OpenCounter(domain, &eq.CounterAttr{WaitObj: fi.WaitSet, WaitSet: ws})
	check(err)
	defer c.Close()

	go func() { _ = c.Add(1) }()
	check(ws.Wait(ctx))
	for _, obj := range ws.Ready(nil) {
		switch obj {
		case q:
			fmt.Println("event queue")
		case c:
			fmt.Println("counter:", c.Read())
		}
	}

	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	err = ws.Wait(short)
	fmt.Println(errors.Is(err, fi.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// counter: 1
	// true true
}

// TestWaitSetConcurrentWaits: two goroutines blocked in Wait on one set
// both return when a member gets an event that neither has read.
func TestWaitSetConcurrentWaits(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ws, err := eq.NewWaitSet(r.members()...)
	require.NoError(t, err)
	defer ws.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	one, two := waitAsync(ctx, ws), waitAsync(ctx, ws)
	require.NoError(t, r.evq.Write(&eq.Notify{Kind: eq.EventNotify, Fid: r.evq}))
	require.NoError(t, <-one)
	require.NoError(t, <-two)
}

// TestWaitSetNested: a wait set is an FDWaiter, so it can be a member of
// another set, whose Wait then wakes for the inner set's members.
func TestWaitSetNested(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	inner, err := eq.NewWaitSet(r.evq, r.cntr)
	require.NoError(t, err)
	defer inner.Close()
	outer, err := eq.NewWaitSet(inner, r.cq)
	require.NoError(t, err)
	defer outer.Close()
	require.Error(t, outer.Add(outer), "a set cannot be its own member")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := waitAsync(ctx, outer)
	require.NoError(t, r.cntr.Add(1))
	require.NoError(t, <-done)
	require.Equal(t, []fi.Fid{inner}, outer.Ready(nil))
	require.Equal(t, []fi.Fid{r.cntr}, inner.Ready(nil))
}

// TestWaitSetReusedDescriptor: a queue opened after a member closed may
// get the closed member's descriptor number; it joins the set and wakes
// it all the same.
func TestWaitSetReusedDescriptor(t *testing.T) {
	noLeaks(t)
	r := openRig(t, "shm", fi.EPTypeRDM)
	ws, err := eq.NewWaitSet()
	require.NoError(t, err)
	defer ws.Close()
	old, err := eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitFD})
	require.NoError(t, err)
	oldFD, err := eq.WaitFD(old)
	require.NoError(t, err)
	require.NoError(t, ws.Add(old))
	require.NoError(t, old.Close())
	q, err := eq.OpenEQ(r.fabric, &eq.Attr{WaitObj: fi.WaitFD, Flags: fi.FlagWrite})
	require.NoError(t, err)
	defer q.Close()
	fd, err := eq.WaitFD(q)
	require.NoError(t, err)
	if fd != oldFD {
		t.Logf("the new queue got descriptor %d, not the closed one's %d", fd, oldFD)
	}
	require.NoError(t, ws.Add(q))
	require.Equal(t, 1, ws.Len())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := waitAsync(ctx, ws)
	require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Fid: q}))
	require.NoError(t, <-done)
	require.Equal(t, []fi.Fid{q}, ws.Ready(nil))
}
