//go:build linux

package tcp_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Connection bursts (issue 16, finding 4): many clients connecting at once
// to one passive endpoint, or many RDM peers' first sends to one hub,
// with the default settings.

// freeFDs makes room for want more descriptors: it raises the process's
// soft RLIMIT_NOFILE to its hard limit, and the hard limit too where that
// is short and the process may (root), for the test's duration. It
// returns how many descriptors are free under the limit then.
func freeFDs(t testing.TB, want int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	open := uint64(len(ents))
	var old, lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	lim = old
	lim.Cur = lim.Max
	if need := open + uint64(want); lim.Cur < need {
		lim.Cur, lim.Max = need, max(lim.Max, need)
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
			lim = old // not allowed: the hard limit stays
			lim.Cur = lim.Max
		}
	}
	if lim != old {
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
		t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
	}
	return int(lim.Cur) - int(open)
}

// msgBurst is the server and clients of TestConnectBurst: every endpoint
// has an event queue of its own, so that reading one runs progress on
// that endpoint only.
type msgBurst struct {
	fab, cfab   fi.Fabric
	sdom, cdom  fi.Domain
	scq, ccq    eq.CompletionQueue
	pepEQ       eq.EventQueue
	pep         ep.PassiveEndpoint
	mu          sync.Mutex // guards servers
	servers     []ep.Endpoint
	serverEQs   []eq.EventQueue
	clients     []ep.Endpoint
	clientEQs   []eq.EventQueue
	acceptErrs  []error
	serverReqs  int
	serverClose sync.WaitGroup
}

func openMsgBurst(t *testing.T, n int) *msgBurst {
	t.Helper()
	b := &msgBurst{}
	b.fab, b.pepEQ, b.pep, _ = listen(t)
	info := loInfo(t)
	var err error
	b.sdom, err = b.fab.OpenDomain(info)
	require.NoError(t, err)
	b.scq, err = eq.OpenCQ(b.sdom, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	b.cfab, err = fi.OpenFabric(info)
	require.NoError(t, err)
	b.cdom, err = b.cfab.OpenDomain(info)
	require.NoError(t, err)
	b.ccq, err = eq.OpenCQ(b.cdom, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	t.Cleanup(func() { b.close(t) })
	for range n {
		q, err := eq.OpenEQ(b.cfab, nil)
		require.NoError(t, err)
		b.clientEQs = append(b.clientEQs, q)
		e, err := ep.Open(b.cdom, info)
		require.NoError(t, err)
		b.clients = append(b.clients, e)
		require.NoError(t, e.Bind(q, 0))
		require.NoError(t, e.Bind(b.ccq, fi.FlagSend|fi.FlagRecv))
		require.NoError(t, e.Enable())
	}
	return b
}

// serve accepts every request that reaches the passive endpoint's queue,
// until ctx ends.
func (b *msgBurst) serve(ctx context.Context) {
	defer b.serverClose.Done()
	for {
		ev, err := b.pepEQ.SRead(ctx)
		if err != nil {
			return
		}
		cr, ok := ev.(*eq.ConnReq)
		if !ok {
			continue
		}
		err = b.accept(cr)
		b.mu.Lock()
		b.serverReqs++
		if err != nil {
			b.acceptErrs = append(b.acceptErrs, err)
		}
		b.mu.Unlock()
	}
}

func (b *msgBurst) accept(cr *eq.ConnReq) error {
	q, err := eq.OpenEQ(b.fab, nil)
	if err != nil {
		return err
	}
	e, err := ep.Open(b.sdom, cr.Info)
	b.mu.Lock()
	b.serverEQs = append(b.serverEQs, q)
	if e != nil {
		b.servers = append(b.servers, e)
	}
	b.mu.Unlock()
	if err != nil {
		return err
	}
	if err := e.Bind(q, 0); err != nil {
		return err
	}
	if err := e.Bind(b.scq, fi.FlagSend|fi.FlagRecv); err != nil {
		return err
	}
	if err := e.Enable(); err != nil {
		return err
	}
	return e.(ep.CM).Accept(nil)
}

func (b *msgBurst) close(t testing.TB) {
	for _, e := range b.clients {
		require.NoError(t, e.Close())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.servers {
		require.NoError(t, e.Close())
	}
	for _, q := range append(b.clientEQs, b.serverEQs...) {
		require.NoError(t, q.Close())
	}
	require.NoError(t, b.pep.Close())
	require.NoError(t, b.pepEQ.Close())
	for _, c := range []fi.Fid{b.scq, b.ccq, b.sdom, b.cdom, b.fab, b.cfab} {
		require.NoError(t, c.Close())
	}
}

// TestConnectBurst: 1,000 clients connect at once to one passive endpoint
// opened with the defaults, whose application accepts each request as its
// event arrives: every client gets eq.Connected. (The default backlog was
// ep.DefaultBacklog, 128: 295 connected and 705 got an fi.ECONNREFUSED
// that the server's application never saw.)
func TestConnectBurst(t *testing.T) {
	cleanEnv(t)
	const n = 1000
	if free := freeFDs(t, 4*n+100); free < 4*n+100 {
		reftest.Missing(t, "%d clients need about %d descriptors; RLIMIT_NOFILE leaves %d", n, 4*n+100, free)
	}
	b := openMsgBurst(t, n)
	name := make([]byte, 64)
	k, err := b.pep.Name(name)
	require.NoError(t, err)
	name = name[:k]

	ctx, cancel := context.WithCancel(context.Background())
	b.serverClose.Add(1)
	go b.serve(ctx)
	defer func() { cancel(); b.serverClose.Wait() }()

	for _, e := range b.clients {
		require.NoError(t, e.(ep.CM).Connect(name, nil))
	}
	outcomes := map[string]int{}
	for _, q := range b.clientEQs {
		switch ev := waitEvent(t, q).(type) {
		case *eq.Connected:
			outcomes["connected"]++
		case *eq.EQError:
			outcomes[fmt.Sprintf("%v (prov_errno %d)", ev.Err, ev.ProvErrno)]++
		default:
			outcomes[fmt.Sprintf("%T", ev)]++
		}
	}
	cancel()
	b.serverClose.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.acceptErrs)
	require.Equal(t, map[string]int{"connected": n}, outcomes, "the server's application saw %d requests", b.serverReqs)
}

// TestBacklogDefault: a passive endpoint's backlog is the kernel's accept
// queue (net.core.somaxconn) until SetBacklog changes it, so that the
// provider never refuses a request the kernel accepted.
func TestBacklogDefault(t *testing.T) {
	cleanEnv(t)
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		reftest.Missing(t, "no /proc/sys/net/core/somaxconn: %v", err)
	}
	var want int
	_, err = fmt.Sscan(string(b), &want)
	require.NoError(t, err)
	f, q, pep, _ := listen(t)
	defer func() { _ = pep.Close(); _ = q.Close(); _ = f.Close() }()
	require.Equal(t, want, tcp.BacklogSize(pep))
}

// TestBacklogOverflowReject: requests beyond a backlog the application set
// are rejected, and the requester can tell that reject (ECONNREFUSED with
// ProvErrno 0 and eq.ReasonBacklogFull: the peer's provider answered)
// from an address where nothing listens (ECONNREFUSED with ProvErrno
// ECONNREFUSED, the kernel's answer to the TCP connect, and
// eq.ReasonNoListener).
func TestBacklogOverflowReject(t *testing.T) {
	cleanEnv(t)
	f, q, pep, name := listen(t)
	require.NoError(t, pep.(ep.BacklogSetter).SetBacklog(1))
	info := loInfo(t)
	cf, err := fi.OpenFabric(info)
	require.NoError(t, err)
	var sides [2]side
	for i := range sides {
		cq, err := eq.OpenEQ(cf, nil)
		require.NoError(t, err)
		openSide(t, &sides[i], cf, cq, info)
	}
	// The first request fills the backlog (nobody accepts it).
	require.NoError(t, sides[0].cm().Connect(name, nil))
	_, ok := waitEvent(t, q).(*eq.ConnReq)
	require.True(t, ok)
	require.NoError(t, sides[1].cm().Connect(name, nil))
	ev := waitEvent(t, sides[1].eq)
	full, ok := ev.(*eq.EQError)
	require.True(t, ok, "got %T %v", ev, ev)
	require.Equal(t, fi.ECONNREFUSED, full.Err)
	require.Zero(t, full.ProvErrno, "a reject from the peer's provider")
	require.Equal(t, eq.ReasonBacklogFull, full.Reason)
	require.Empty(t, full.ErrData)

	// Nothing listening.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	ap := l.Addr().(*net.TCPAddr).AddrPort()
	require.NoError(t, l.Close())
	_, closed, err := fi.SockaddrFromAddrPort(ap)
	require.NoError(t, err)
	var s side
	sq, err := eq.OpenEQ(cf, nil)
	require.NoError(t, err)
	openSide(t, &s, cf, sq, info)
	require.NoError(t, s.cm().Connect(closed, nil))
	ev = waitEvent(t, sq)
	none, ok := ev.(*eq.EQError)
	require.True(t, ok, "got %T %v", ev, ev)
	require.Equal(t, fi.ECONNREFUSED, none.Err)
	require.Equal(t, int(unix.ECONNREFUSED), none.ProvErrno, "the kernel refused the TCP connect")
	require.Equal(t, eq.ReasonNoListener, none.Reason)

	for _, x := range append(sides[:], s) {
		x.close(t)
		require.NoError(t, x.eq.Close())
	}
	require.NoError(t, pep.Close())
	require.NoError(t, q.Close())
	require.NoError(t, cf.Close())
	require.NoError(t, f.Close())
}

// TestRDMConnectBurst: many RDM peers' first sends to one hub (3,000
// where the descriptor limit allows, each peer with a listener and a
// connection): every send returns fi.EAGAIN until its connection is up and
// then succeeds. No fi.ECONNREFUSED, nor any other error, reaches the
// application, and the hub receives every message once. (3,000 peers got
// 648 fi.ECONNREFUSED from Send when the hub's listener refused requests
// beyond a backlog of 128 and a refused attempt was reported at once.)
func TestRDMConnectBurst(t *testing.T) {
	cleanEnv(t)
	n := 3000
	// A peer holds its listener and a socket and epoll instance for its
	// connection; the hub a socket and epoll instance for each.
	if free := freeFDs(t, 6*n+200) - 200; free/6 < n {
		n = free / 6
	}
	if n < 500 {
		reftest.Missing(t, "RLIMIT_NOFILE leaves room for %d RDM peers only", n)
	}
	t.Logf("%d peers", n)
	hub := openRDMSide(t)
	hubName := hub.name(t)

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
	toHub, err := av.Insert([][]byte{hubName}, 0)
	require.NoError(t, err)
	peers := make([]ep.Endpoint, 0, n)
	t.Cleanup(func() {
		for _, e := range peers {
			require.NoError(t, e.Close())
		}
		for _, c := range []fi.Fid{av, cq, dom, fab} {
			require.NoError(t, c.Close())
		}
	})
	for range n {
		e, err := ep.Open(dom, info)
		require.NoError(t, err)
		peers = append(peers, e)
		require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
		require.NoError(t, e.Bind(av, 0))
		require.NoError(t, e.Enable())
	}

	// The hub keeps up to 1024 receives posted.
	bufs := make([][8]byte, n)
	posted, got := 0, 0
	seen := make([]bool, n)
	post := func() {
		for posted < n && posted-got < 1024 {
			require.NoError(t, hub.msg().Recv(bufs[posted][:], nil, fi.AddrUnspec, posted))
			posted++
		}
	}
	drainHub := func() {
		var c [64]eq.Completion
		for {
			k, err := hub.cq.Read(c[:])
			for _, x := range c[:k] {
				b := bufs[x.Context.(int)]
				id := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
				require.Less(t, id, n)
				require.False(t, seen[id], "message of peer %d twice", id)
				seen[id] = true
				got++
			}
			if err == fi.EAVAIL {
				ce, _ := hub.cq.ReadErr()
				t.Fatalf("hub error entry: %v", ce)
			}
			if k < len(c) {
				return
			}
		}
	}
	post()

	errs := map[string]int{}
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	var c [256]eq.Completion
	deadline := time.Now().Add(2 * time.Minute)
	for len(pending) > 0 {
		left := pending[:0]
		for _, i := range pending {
			msg := [8]byte{byte(i), byte(i >> 8), byte(i >> 16)}
			switch err := peers[i].(ep.Msg).Send(msg[:], nil, toHub[0], i); {
			case err == nil:
			case err == fi.EAGAIN:
				left = append(left, i)
			default:
				errs[fmt.Sprintf("%v", fi.Code(err))]++
			}
		}
		pending = left
		require.True(t, time.Now().Before(deadline), "%d first sends still fi.EAGAIN", len(pending))
		// The connections come up on the provider's goroutines: give
		// them the processor.
		time.Sleep(time.Millisecond)
	}
	require.Empty(t, errs, "errors returned by the first sends")
	for got < n {
		require.True(t, time.Now().Before(deadline), "the hub received %d of %d messages", got, n)
		_, _ = cq.Read(c[:])
		drainHub()
		post()
	}
}
