//go:build linux

package shm_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/shm"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The tests of issue 16: what users rely on when things go wrong around
// a blocked waiter (closing, large messages, a peer that dies), with
// real processes and real shared memory.

func init() {
	roles["echo"] = roleEcho
}

// Environment of the echo role.
const (
	envName  = "GOFABRIC_SHM_NAME"  // the child's endpoint name
	envPeer  = "GOFABRIC_SHM_PEER"  // the parent's endpoint name
	envStyle = "GOFABRIC_SHM_STYLE" // how the child waits
	envSizes = "GOFABRIC_SHM_SIZES" // the messages it echoes, in order
	envHold  = "GOFABRIC_SHM_HOLD"  // "1": stop polling after the echoes and wait to be killed
)

// roleEcho opens an endpoint, says "ready", receives one message of each
// size (the parent's pattern), sends each back to the parent, waiting in
// the given style, and says "done".
func roleEcho(t *testing.T) {
	how := waitStyle(os.Getenv(envStyle))
	x := openX(t, os.Getenv(envName), how == cwait)
	peer := x.insert(t, []byte(os.Getenv(envPeer)))
	cpu0 := cpuTime()
	say("ready", string(x.name))
	for i, size := range parseSizes(os.Getenv(envSizes)) {
		rbuf := make([]byte, size)
		require.NoError(t, x.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
		x.rxPosted++
		c := x.collect(t, how, map[any]bool{"r": false})["r"]
		if d := firstDiff(rbuf[:c.Len], pattern(make([]byte, size), i)); d != "" {
			say("fail", "message "+strconv.Itoa(i)+" of "+strconv.Itoa(size)+" bytes: "+d)
			return
		}
		x.send(t, rbuf, peer, "s")
		x.collect(t, how, map[any]bool{"s": true})
	}
	say("done", strconv.FormatInt((cpuTime()-cpu0).Milliseconds(), 10))
	if os.Getenv(envHold) == "1" {
		time.Sleep(10 * time.Minute)
	}
	x.closeX(t)
}

// cpuTime returns the CPU time the process used so far.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Finding 1: closing an endpoint while other goroutines are blocked in
// SRead or a counter Wait on its queues, with traffic arriving, returns;
// a blocked reader of a receive that was posted gets its fi.ECANCELED
// error entry (a counter waiter sees the error count move), one with
// nothing to report keeps waiting until its context ends, and nothing
// touches the closed endpoint's memory (before the fix: "index out of
// range [67] with length 0" or SIGSEGV from (*epSet).wait ->
// (*endpoint).wake). Each case closes once with every waiter asleep on
// the doorbell, and several times at once after the waiters started, to
// meet them anywhere in their loop.
func TestCloseWhileWaiting(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, how := range []waitStyle{sread, cwait} {
		for _, posted := range []bool{true, false} {
			t.Run(string(how)+"/posted="+strconv.FormatBool(posted), func(t *testing.T) {
				closeWhileWaiting(t, how, posted, true)
				for range 20 {
					closeWhileWaiting(t, how, posted, false)
				}
			})
		}
	}
}

var services atomicCounter

type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCounter) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func closeWhileWaiting(t *testing.T, how waitStyle, posted, asleep bool) {
	name := "src:127.0.0.1:" + strconv.Itoa(20000+os.Getpid()%10000+services.next())
	x := openX(t, name, how == cwait)
	defer x.closeX(t)
	s := openX(t, "", false)
	defer s.closeX(t)
	dest := s.insert(t, x.name)
	// A sender keeps x's inbox busy while it closes, with messages no
	// posted receive takes.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		msg := make([]byte, 64)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = s.ep.(ep.Tagged).TInject(msg, dest, 99)
			_, _ = s.cq.Read(nil)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	if posted {
		require.NoError(t, x.ep.(ep.Msg).Recv(make([]byte, 1<<20), nil, fi.AddrUnspec, "never"))
		require.NoError(t, x.ep.(ep.Tagged).TRecv(make([]byte, 16), nil, fi.AddrUnspec, 7, 0, "never-tagged"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	type result struct {
		e   entry
		err error
	}
	const waiters = 3
	res := make(chan result, waiters)
	for range waiters {
		go func() {
			switch how {
			case sread:
				var c [1]eq.Completion
				n, err := x.cq.SRead(ctx, c[:])
				switch {
				case err == fi.EAVAIL:
					e, rerr := x.cq.ReadErr()
					if rerr == fi.EAGAIN { // another waiter took it
						res <- result{err: fi.EAVAIL}
						return
					}
					res <- result{e: entry{err: e}, err: rerr}
				case n == 1:
					res <- result{e: entry{c: c[0]}}
				default:
					res <- result{err: err}
				}
			case cwait:
				res <- result{err: x.rx.Wait(ctx, 1<<40)}
			}
		}()
	}
	if asleep {
		deadline := time.Now().Add(procWait)
		for shm.Sleepers(x.ep) < waiters {
			require.True(t, time.Now().Before(deadline), "the waiters never slept")
			time.Sleep(100 * time.Microsecond)
		}
	}
	require.NoError(t, x.ep.Close())
	check := func(r result) {
		switch {
		case r.err == fi.EAVAIL: // a counter waiter, or an SRead waiter whose entry another took
		case r.e.err != nil:
			require.ErrorIs(t, r.e.err, fi.ECANCELED)
		case errors.Is(r.err, context.Canceled):
			require.False(t, posted && asleep && how == cwait, "a blocked counter waiter missed the error count")
		default:
			t.Fatalf("unexpected result %+v", r)
		}
	}
	got := 0
	if posted && asleep {
		// The two fi.ECANCELED entries reach SRead waiters (a third
		// waits on); every counter waiter sees the error count move.
		want := waiters
		if how == sread {
			want = 2
		}
		for errs := 0; errs < want; got++ {
			select {
			case r := <-res:
				check(r)
				if r.e.err != nil || how == cwait {
					errs++
				}
			case <-time.After(procWait):
				t.Fatalf("%d of %d waiters returned after Close (hang)", errs, want)
			}
		}
	}
	if !posted && asleep {
		select {
		case r := <-res:
			t.Fatalf("a waiter returned with nothing to report: %+v", r)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	for ; got < waiters; got++ {
		select {
		case r := <-res:
			check(r)
		case <-time.After(procWait):
			t.Fatal("a waiter is still blocked after its context ended (hang)")
		}
	}
	// The queue works on after the close.
	_, err := x.cq.Read(make([]eq.Completion, 1))
	require.Contains(t, []error{nil, fi.EAGAIN, fi.EAVAIL}, err)
}

// bounceSizes are the message sizes of the bounce-buffer matrix: both
// sides of the inline limit and of a chunk, the four chunks of an entry,
// and several times them; the largest first, as the first message of a
// connection.
var bounceSizes = []int{4 << 20, 1, 192, 193, 16 << 10, 64 << 10, 64<<10 + 1, 1 << 20}

// Finding 2: every size completes in both directions between two
// processes, with each wait style on both sides, with and without
// cross-memory attach (before the fix a sender waiting in SRead on a
// message over 64 KiB sent through the bounce chunks deadlocked: freeing
// a chunk never woke it).
func TestBounceSizesWaitStyles(t *testing.T) {
	for _, cma := range []string{"0", "1"} {
		for _, how := range styles {
			t.Run("disable_cma="+cma+"/"+string(how), func(t *testing.T) {
				t.Setenv("FI_SHM_DISABLE_CMA", cma)
				x := openX(t, "", how == cwait)
				defer x.closeX(t)
				name := "fi_shm://echo-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(services.next())
				c := startChild(t, "echo", nil, envName+"="+name, envPeer+"="+string(x.name),
					envStyle+"="+string(how), envSizes+"="+joinSizes(bounceSizes))
				c.expect(t, "ready")
				dest := x.insert(t, []byte(name))
				for i, size := range bounceSizes {
					payload := pattern(make([]byte, size), i)
					rbuf := make([]byte, size)
					require.NoError(t, x.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
					x.rxPosted++
					x.send(t, payload, dest, "s")
					got := x.collect(t, how, map[any]bool{"s": true, "r": false})
					require.Equal(t, size, got["r"].Len, "size %d", size)
					require.Empty(t, firstDiff(rbuf, payload), "size %d", size)
				}
				c.expect(t, "done")
			})
		}
	}
}

// Finding 3: a survivor waiting in SRead or a counter Wait, or busy
// polling, learns that its peer was killed: what it had in flight to the
// peer fails with fi.ECONNRESET error entries, its next send fails with
// fi.ECONNRESET, and a process that opens an endpoint of the same name is
// reachable again (before the fix a blocked survivor waited on forever,
// its sends completing into the dead peer's ring; a polling one saw the
// error after 1.3 s). The time from the kill to the error is logged.
func TestPeerKilledWhileBlocked(t *testing.T) {
	for _, cma := range []string{"0", "1"} {
		for _, how := range styles {
			t.Run("disable_cma="+cma+"/"+string(how), func(t *testing.T) {
				t.Setenv("FI_SHM_DISABLE_CMA", cma)
				peerKilled(t, how)
			})
		}
	}
}

func peerKilled(t *testing.T, how waitStyle) {
	x := openX(t, "", how == cwait)
	defer x.closeX(t)
	name := "fi_shm://victim-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(services.next())
	dest := x.insert(t, []byte(name))
	echo := func(hold bool) *child {
		env := []string{envName + "=" + name, envPeer + "=" + string(x.name), envStyle + "=sread", envSizes + "=1"}
		if hold {
			env = append(env, envHold+"=1")
		}
		c := startChild(t, "echo", nil, env...)
		c.expect(t, "ready")
		rbuf := make([]byte, 1)
		require.NoError(t, x.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
		x.rxPosted++
		x.send(t, pattern(make([]byte, 1), 0), dest, "s")
		x.collect(t, how, map[any]bool{"s": true, "r": false})
		c.expect(t, "done")
		return c
	}
	c := echo(true)
	// The peer no longer polls: a large message stays in flight.
	big := make([]byte, 1<<20)
	require.NoError(t, x.ep.(ep.Msg).Send(big, nil, dest, "in-flight"))
	x.txPosted++
	// A receive nothing matches stays posted.
	require.NoError(t, x.ep.(ep.Tagged).TRecv(make([]byte, 64), nil, fi.AddrUnspec, 5, 0, "posted"))
	type result struct {
		e   entry
		err error
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), procWait)
		defer cancel()
		e, err := x.waitOne(ctx, how, true)
		res <- result{e, err}
	}()
	deadline := time.Now().Add(procWait)
	for how != busy && shm.Sleepers(x.ep) == 0 { // let it block
		require.True(t, time.Now().Before(deadline), "the survivor never slept")
		time.Sleep(100 * time.Microsecond)
	}
	killed := time.Now()
	c.kill()
	r := <-res
	at := time.Since(killed)
	require.NoError(t, r.err, "the blocked survivor saw nothing (hang)")
	require.NotNil(t, r.e.err, "want an error entry, got %+v", r.e.c)
	require.Equal(t, "in-flight", r.e.err.Context)
	require.ErrorIs(t, r.e.err, fi.ECONNRESET)
	t.Logf("the survivor (%s) got ECONNRESET %v after the kill", how, at.Round(time.Millisecond))

	err := x.ep.(ep.Msg).Send(make([]byte, 8), nil, dest, "after")
	require.ErrorIs(t, err, fi.ECONNRESET, "a send to the dead peer")

	// A new process of the same name is reachable.
	echo(false)
}

// A reader blocked in SRead on a queue before any endpoint is bound to it
// sees the completions of an endpoint enabled later: enabling wakes it to
// sleep on the new endpoint's doorbell too (before, it slept on nothing
// until its context ended).
func TestSReadBeforeEnable(t *testing.T) {
	infos, err := fi.GetInfo(context.Background(), "", "", 0, shmHints())
	require.NoError(t, err)
	fab, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	defer fab.Close()
	dom, err := fab.OpenDomain(infos[0])
	require.NoError(t, err)
	defer dom.Close()
	cq, err := eq.OpenCQ(dom, &eq.CQAttr{Format: eq.FormatMsg})
	require.NoError(t, err)
	defer cq.Close()
	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		var c [1]eq.Completion
		_, err := cq.SRead(ctx, c[:])
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it block on the empty queue
	av, err := fi.OpenAV(dom, &fi.AVAttr{Type: fi.AVTable})
	require.NoError(t, err)
	defer av.Close()
	e, err := ep.Open(dom, infos[0])
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Bind(av, 0))
	require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, e.Enable())
	var name [64]byte
	n, err := e.(ep.Namer).Name(name[:])
	require.NoError(t, err)
	require.NoError(t, e.(ep.Msg).Recv(make([]byte, 8), nil, fi.AddrUnspec, "r"))
	s := openX(t, "", false)
	defer s.closeX(t)
	s.send(t, []byte("hi"), s.insert(t, name[:n]), "s")
	require.NoError(t, <-got, "the reader never saw the endpoint's completion")
}
