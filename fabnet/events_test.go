//go:build linux

package fabnet_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fabnet"
	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
)

// cmRig is a tcp fabric with one event queue that a listening passive
// endpoint and every endpoint of the test, accepting and connecting
// alike, report to: one handler sees all their events in one order.
type cmRig struct {
	t      *testing.T
	hints  *fi.Info
	fabric fi.Fabric
	q      eq.EventQueue
	pep    ep.PassiveEndpoint
	addr   []byte // the passive endpoint's address
	format fi.AddrFormat

	mu    sync.Mutex // guards names, objs
	names map[fi.Fid]string
	objs  []fi.Fid // to close, children after their parents
}

func newCMRig(t *testing.T) *cmRig {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &cmRig{t: t, names: map[fi.Fid]string{},
		hints: &fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg}, FabricAttr: &fi.FabricAttr{ProvName: "tcp"}}}
	infos, err := fi.GetInfo(ctx, "127.0.0.1", "", fi.FlagSource, r.hints)
	require.NoError(t, err)
	r.format = infos[0].AddrFormat
	r.fabric, err = fi.OpenFabric(infos[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.fabric.Close()) })
	r.q, err = eq.OpenEQ(r.fabric, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.q.Close() })
	r.pep, err = ep.OpenPassive(r.fabric, infos[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.pep.Close()) })
	require.NoError(t, r.pep.Bind(r.q, 0))
	require.NoError(t, r.pep.Listen())
	r.addr = nameOf(t, r.pep)
	r.names[r.pep] = "listener"
	t.Cleanup(r.closeAll)
	return r
}

func nameOf(t *testing.T, n ep.Namer) []byte {
	buf := make([]byte, 256)
	k, err := n.Name(buf)
	require.NoError(t, err)
	return buf[:k]
}

// closeAll closes the endpoints, queues and domains the test opened,
// newest first.
func (r *cmRig) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.objs) - 1; i >= 0; i-- {
		if err := r.objs[i].Close(); err != nil && !errors.Is(err, fi.EBADF) {
			r.t.Errorf("close %T: %v", r.objs[i], err)
		}
	}
	r.objs = nil
}

// endpoint opens a domain, a CQ and an endpoint of info on the rig's
// fabric, bound to the rig's queue and enabled, and names it. It may
// run on the handler's goroutine, so it returns errors instead of
// failing the test.
func (r *cmRig) endpoint(info *fi.Info, name string) (ep.Endpoint, error) {
	keep := func(f fi.Fid) {
		r.mu.Lock()
		r.objs = append(r.objs, f)
		r.mu.Unlock()
	}
	d, err := r.fabric.OpenDomain(info)
	if err != nil {
		return nil, err
	}
	keep(d)
	cq, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatMsg})
	if err != nil {
		return nil, err
	}
	keep(cq)
	x, err := ep.Open(d, info)
	if err != nil {
		return nil, err
	}
	keep(x)
	if err := x.Bind(r.q, 0); err != nil {
		return nil, err
	}
	if err := x.Bind(cq, fi.FlagSend|fi.FlagRecv); err != nil {
		return nil, err
	}
	if err := x.Enable(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.names[x] = name
	r.mu.Unlock()
	return x, nil
}

// client opens a connecting endpoint for dest and connects it with data.
func (r *cmRig) client(dest []byte, name string, data []byte) ep.Endpoint {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := r.hints.Clone()
	h.AddrFormat, h.DestAddr = r.format, dest
	infos, err := fi.GetInfo(ctx, "", "", 0, h)
	require.NoError(r.t, err)
	x, err := r.endpoint(infos[0], name)
	require.NoError(r.t, err)
	cm, err := ep.AsCM(x)
	require.NoError(r.t, err)
	require.NoError(r.t, cm.Connect(infos[0].DestAddr, data))
	return x
}

// name names fid for the log.
func (r *cmRig) name(f fi.Fid) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.names[f]; ok {
		return n
	}
	return fmt.Sprintf("%T", f)
}

// serve runs fabnet.HandleEvents on the rig's queue with h until the
// test's end, which cancels it and checks that it ended with the
// context.
func (r *cmRig) serve(h fabnet.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fabnet.HandleEvents(ctx, r.q, h) }()
	r.t.Cleanup(func() {
		cancel()
		err := <-done
		require.ErrorIs(r.t, err, context.Canceled, "HandleEvents ends with its context")
		require.ErrorIs(r.t, err, fi.ECANCELED)
	})
}

// refusedAddr returns an address of the rig's format where nothing
// listens: a loopback port that was free a moment ago.
func (r *cmRig) refusedAddr() []byte {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(r.t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(r.t, l.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "127.0.0.1", strconv.Itoa(port), 0, r.hints)
	require.NoError(r.t, err)
	return infos[0].DestAddr
}

// eventLog is what a handler saw, one line per entry, delivered as they come.
type eventLog chan string

// expect takes the next n lines and requires them to be want, in any
// order within the batch (events of two endpoints of one step race).
func (l eventLog) expect(t *testing.T, want ...string) []string {
	t.Helper()
	var got []string
	for range want {
		select {
		case s := <-l:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("handler saw %q, then nothing for 10s; want %q", got, want)
		}
	}
	require.ElementsMatch(t, want, got)
	return got
}

// TestHandleEventsOrder: one handler sees a connection request (and
// accepts it), the connects of both sides, their shutdowns, a request
// it rejects with private data, that reject at the requester as an
// error entry (closed for the handler's error), and a refused connect,
// in order.
func TestHandleEventsOrder(t *testing.T) {
	noLeaks(t)
	r := newCMRig(t)
	lines := make(eventLog, 64)
	var all []string
	var handlerErr error
	r.serve(func(ev eq.Event, e *eq.EQError) error {
		var line string
		defer func() { lines <- line }()
		switch ev := ev.(type) {
		case *eq.ConnReq:
			line = "connreq " + string(ev.Data)
			if string(ev.Data) == "two" {
				return fabnet.RejectWith([]byte("go away"))
			}
			x, err := r.endpoint(ev.Info, "server "+string(ev.Data))
			if err == nil {
				var cm ep.CM
				if cm, err = ep.AsCM(x); err == nil {
					err = cm.Accept([]byte("welcome"))
				}
			}
			if err != nil {
				handlerErr = err
			}
			return err
		case *eq.Connected:
			line = "connected " + r.name(ev.Fid) + " " + string(ev.Data)
		case *eq.Shutdown:
			line = "shutdown " + r.name(ev.Fid)
		case nil:
			line = "error " + r.name(e.Fid) + " " + e.Err.Name() + " " + string(e.ErrData)
			return errors.New("drop this endpoint")
		default:
			line = "unexpected " + ev.Type().String()
		}
		return nil
	})

	cli1 := r.client(r.addr, "client one", []byte("one"))
	all = append(all, lines.expect(t, "connreq one")...)
	all = append(all, lines.expect(t, "connected server one ", "connected client one welcome")...)
	cm1, err := ep.AsCM(cli1)
	require.NoError(t, err)
	require.NoError(t, cm1.Shutdown(0))
	all = append(all, lines.expect(t, "shutdown client one", "shutdown server one")...)

	cli2 := r.client(r.addr, "client two", []byte("two"))
	all = append(all, lines.expect(t, "connreq two")...)
	all = append(all, lines.expect(t, "error client two FI_ECONNREFUSED go away")...)

	r.client(r.refusedAddr(), "client three", nil)
	all = append(all, lines.expect(t, "error client three FI_ECONNREFUSED ")...)
	require.NoError(t, handlerErr)
	t.Logf("the handler saw, in order: %q", all)

	require.ErrorIs(t, cli2.Close(), fi.EBADF, "the handler's error on the reject closed the endpoint")
}

// TestHandleEventsErrorClosesSource: an error from the handler for an
// endpoint's FI_CONNECTED closes that endpoint (rdma_cm destroys the id
// on a non-zero return): its peer sees the connection shut down.
func TestHandleEventsErrorClosesSource(t *testing.T) {
	noLeaks(t)
	r := newCMRig(t)
	lines := make(eventLog, 64)
	var srv ep.Endpoint
	r.serve(func(ev eq.Event, e *eq.EQError) error {
		switch ev := ev.(type) {
		case *eq.ConnReq:
			x, err := r.endpoint(ev.Info, "server")
			if err != nil {
				return err
			}
			srv = x
			cm, err := ep.AsCM(x)
			if err != nil {
				return err
			}
			return cm.Accept(nil)
		case *eq.Connected:
			lines <- "connected " + r.name(ev.Fid)
			if r.name(ev.Fid) == "server" {
				return errors.New("not this one after all")
			}
		case *eq.Shutdown:
			lines <- "shutdown " + r.name(ev.Fid)
		case nil:
			lines <- "error " + r.name(e.Fid) + " " + e.Err.Name()
		}
		return nil
	})
	r.client(r.addr, "client", nil)
	lines.expect(t, "connected server", "connected client")
	lines.expect(t, "shutdown client")
	require.ErrorIs(t, srv.Close(), fi.EBADF, "the handler's error closed the accepted endpoint")
}

// TestHandleEventsEnds: HandleEvents ends with its context (deadline or
// cancel), when its queue closes, and with the handler's error for an
// event about no object; it leaves no goroutine behind.
func TestHandleEventsEnds(t *testing.T) {
	noLeaks(t)
	r := newCMRig(t)
	nop := func(eq.Event, *eq.EQError) error { return nil }

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := fabnet.HandleEvents(ctx, r.q, nop)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, fi.ETIMEDOUT)

	// An application event about nothing: the handler's error ends the
	// loop, after the events before it.
	q, err := eq.OpenEQ(r.fabric, &eq.Attr{Flags: fi.FlagWrite})
	require.NoError(t, err)
	stop := errors.New("stop")
	var seen []uint64
	for i := range 3 {
		require.NoError(t, q.Write(&eq.Notify{Kind: eq.EventNotify, Data: uint64(i)}))
	}
	err = fabnet.HandleEvents(context.Background(), q, func(ev eq.Event, _ *eq.EQError) error {
		n := ev.(*eq.Notify)
		seen = append(seen, n.Data)
		if n.Data == 1 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, []uint64{0, 1}, seen)

	// Closing the queue ends a blocked loop.
	done := make(chan error, 1)
	go func() { done <- fabnet.HandleEvents(context.Background(), q, nop) }()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, q.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, fi.EBADF)
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("HandleEvents still running 10s after its queue closed")
	}

	require.ErrorIs(t, fabnet.HandleEvents(context.Background(), nil, nop), fi.EINVAL)
}

// TestRejectWith: the reject error carries fi.ECONNREFUSED, wrapped or
// not.
func TestRejectWith(t *testing.T) {
	err := fmt.Errorf("busy: %w", fabnet.RejectWith([]byte("later")))
	require.ErrorIs(t, err, fi.ECONNREFUSED)
}

// TestHandleEventsRejectTooLong: a reject whose private data the
// provider refuses (longer than CMDataSize) still rejects, without it.
func TestHandleEventsRejectTooLong(t *testing.T) {
	noLeaks(t)
	r := newCMRig(t)
	lines := make(eventLog, 8)
	r.serve(func(ev eq.Event, e *eq.EQError) error {
		switch ev := ev.(type) {
		case *eq.ConnReq:
			return fabnet.RejectWith(make([]byte, 1<<16))
		case nil:
			lines <- "error " + r.name(e.Fid) + " " + e.Err.Name() + " " + strconv.Itoa(len(e.ErrData))
		default:
			lines <- "unexpected " + ev.Type().String()
		}
		return nil
	})
	r.client(r.addr, "client", nil)
	lines.expect(t, "error client FI_ECONNREFUSED 0")
}
