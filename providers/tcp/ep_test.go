//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// side is one end of a connection made by connectPair: its objects, and
// the queues to read.
type side struct {
	fabric fi.Fabric
	eq     eq.EventQueue
	domain fi.Domain
	cq     eq.CompletionQueue
	ep     ep.Endpoint
}

func (s *side) msg() ep.Msg { return s.ep.(ep.Msg) }
func (s *side) cm() ep.CM   { return s.ep.(ep.CM) }

// pair is a connected client and server, and the server's passive
// endpoint.
type pair struct {
	client, server side
	pep            ep.PassiveEndpoint
	srvFabric      fi.Fabric
	srvEQ          eq.EventQueue
}

func loInfo(t testing.TB) *fi.Info { return loInfoWith(t, nil) }

// loInfoWith is loInfo with hints changed by modify when not nil.
func loInfoWith(t testing.TB, modify func(*fi.Info)) *fi.Info {
	t.Helper()
	h := tcpHints(fi.EPTypeMsg)
	if modify != nil {
		modify(h)
	}
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, h)
	require.NoError(t, err)
	return infos[0]
}

func openSide(t testing.TB, s *side, f fi.Fabric, q eq.EventQueue, info *fi.Info) {
	t.Helper()
	openSideBind(t, s, f, q, info, 0)
}

// openSideBind is openSide with the CQ bound with bindFlags besides
// FI_SEND|FI_RECV (such as FI_SELECTIVE_COMPLETION).
func openSideBind(t testing.TB, s *side, f fi.Fabric, q eq.EventQueue, info *fi.Info, bindFlags fi.Flags) {
	t.Helper()
	var err error
	s.fabric, s.eq = f, q
	s.domain, err = f.OpenDomain(info)
	require.NoError(t, err)
	s.cq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	s.ep, err = ep.Open(s.domain, info)
	require.NoError(t, err)
	require.NoError(t, s.ep.Bind(q, 0))
	require.NoError(t, s.ep.Bind(s.cq, fi.FlagSend|fi.FlagRecv|bindFlags))
	require.NoError(t, s.ep.Enable())
}

// listen opens a fabric, EQ and listening passive endpoint on loopback.
func listen(t testing.TB) (fi.Fabric, eq.EventQueue, ep.PassiveEndpoint, []byte) {
	t.Helper()
	return listenInfo(t, loInfo(t))
}

// listenInfo is listen from info.
func listenInfo(t testing.TB, info *fi.Info) (fi.Fabric, eq.EventQueue, ep.PassiveEndpoint, []byte) {
	t.Helper()
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	p, err := ep.OpenPassive(f, info)
	require.NoError(t, err)
	require.NoError(t, p.Bind(q, 0))
	require.NoError(t, p.Listen())
	name := make([]byte, 64)
	n, err := p.Name(name)
	require.NoError(t, err)
	return f, q, p, name[:n]
}

// waitEvent reads the next event of q, or its error entry as an error.
func waitEvent(t testing.TB, q eq.EventQueue) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := q.SRead(ctx)
	if fi.Code(err) == fi.EAVAIL {
		e, err2 := q.ReadErr()
		require.NoError(t, err2)
		return e
	}
	require.NoError(t, err)
	return ev
}

// connectPair connects a client to a fresh server with private data both
// ways.
func connectPair(t testing.TB) *pair { return connectPairWith(t, nil, 0) }

// connectPairWith is connectPair with both sides' hints changed by modify
// (when not nil) and their CQs bound with bindFlags besides
// FI_SEND|FI_RECV.
func connectPairWith(t testing.TB, modify func(*fi.Info), bindFlags fi.Flags) *pair {
	t.Helper()
	p := &pair{}
	var name []byte
	info := loInfoWith(t, modify)
	p.srvFabric, p.srvEQ, p.pep, name = listenInfo(t, info)
	cf, err := fi.OpenFabric(info)
	require.NoError(t, err)
	cq, err := eq.OpenEQ(cf, nil)
	require.NoError(t, err)
	openSideBind(t, &p.client, cf, cq, info, bindFlags)
	require.NoError(t, p.client.cm().Connect(name, []byte("hello")))

	ev := waitEvent(t, p.srvEQ)
	req, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	require.Equal(t, []byte("hello"), req.Data)
	openSideBind(t, &p.server, p.srvFabric, p.srvEQ, req.Info, bindFlags)
	require.NoError(t, p.server.cm().Accept([]byte("welcome")))
	ev = waitEvent(t, p.srvEQ)
	require.IsType(t, &eq.Connected{}, ev)
	ev = waitEvent(t, cq)
	c, ok := ev.(*eq.Connected)
	require.True(t, ok, "got %T %v", ev, ev)
	require.Equal(t, []byte("welcome"), c.Data)
	return p
}

func (s *side) close(t testing.TB) {
	t.Helper()
	require.NoError(t, s.ep.Close())
	require.NoError(t, s.cq.Close())
	require.NoError(t, s.domain.Close())
}

func (p *pair) close(t testing.TB) {
	t.Helper()
	p.client.close(t)
	p.server.close(t)
	require.NoError(t, p.pep.Close())
	require.NoError(t, p.client.eq.Close())
	require.NoError(t, p.client.fabric.Close())
	require.NoError(t, p.srvEQ.Close())
	require.NoError(t, p.srvFabric.Close())
}

// poll reads one completion from q, driving progress, within 10 s.
func poll(t testing.TB, q eq.CompletionQueue) eq.Completion {
	t.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := q.Read(c[:])
		if n == 1 {
			return c[0]
		}
		if fi.Code(err) == fi.EAVAIL {
			e, err := q.ReadErr()
			require.NoError(t, err)
			t.Fatalf("error completion: %v (olen %d)", e, e.OLen)
		}
		require.ErrorIs(t, err, fi.EAGAIN)
	}
	t.Fatal("no completion within 10 s")
	return eq.Completion{}
}

func TestSendRecvAndShutdown(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := connectPair(t)
	rbuf := make([]byte, 1<<20)
	require.NoError(t, p.server.msg().Recv(rbuf, nil, fi.AddrUnspec, "r1"))
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	require.NoError(t, p.client.msg().Send(payload, nil, fi.AddrUnspec, "s1"))
	c := poll(t, p.server.cq)
	require.Equal(t, "r1", c.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, c.Flags)
	require.Equal(t, len(payload), c.Len)
	require.Equal(t, payload, rbuf[:c.Len])
	c = poll(t, p.client.cq)
	require.Equal(t, "s1", c.Context)
	require.Equal(t, fi.FlagSend|fi.FlagMsg, c.Flags)

	require.NoError(t, p.server.msg().Recv(rbuf, nil, fi.AddrUnspec, "r2"))
	require.NoError(t, p.client.msg().SendData([]byte("x"), nil, 0xfeed, fi.AddrUnspec, "s2"))
	c = poll(t, p.server.cq)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagRemoteCQData, c.Flags)
	require.Equal(t, uint64(0xfeed), c.Data)

	require.NoError(t, p.client.cm().Shutdown(0))
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, p.client.eq))
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, p.srvEQ))
	p.close(t)
}

func TestDataPathDoesNotAllocate(t *testing.T) {
	cleanEnv(t)
	p := connectPair(t)
	defer p.close(t)
	buf := make([]byte, 64)
	rbuf := make([]byte, 64)
	var comp [4]eq.Completion
	ctx := &struct{}{}
	round := func() {
		if err := p.server.msg().Recv(rbuf, nil, fi.AddrUnspec, ctx); err != nil {
			panic(err)
		}
		if err := p.client.msg().Send(buf, nil, fi.AddrUnspec, ctx); err != nil {
			panic(err)
		}
		for got := 0; got < 1; {
			n, _ := p.server.cq.Read(comp[:])
			got += n
		}
		for got := 0; got < 1; {
			n, _ := p.client.cq.Read(comp[:])
			got += n
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
}

func TestInjectCopiesPayload(t *testing.T) {
	cleanEnv(t)
	p := connectPair(t)
	defer p.close(t)
	rbuf := make([]byte, 256)
	for i := range 3 {
		require.NoError(t, p.server.msg().Recv(rbuf, nil, fi.AddrUnspec, i))
		msg := bytes.Repeat([]byte{byte('a' + i)}, 64)
		require.NoError(t, p.client.msg().Inject(msg, fi.AddrUnspec))
		clear(msg) // the buffer is the caller's again at once
		c := poll(t, p.server.cq)
		require.Equal(t, i, c.Context)
		require.Equal(t, bytes.Repeat([]byte{byte('a' + i)}, 64), rbuf[:c.Len])
	}
}

func TestCongestionParamSetsConnections(t *testing.T) {
	// FI_TCP_CONGESTION reaches the sockets of both sides of a connection.
	// The test needs a congestion control other than the system's default
	// that this process may set, so that it tells set from left alone.
	cleanEnv(t)
	sys, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	require.NoError(t, err)
	allowed, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	require.NoError(t, err)
	want := ""
	for _, cc := range strings.Fields(string(allowed)) {
		if cc != strings.TrimSpace(string(sys)) {
			want = cc
			break
		}
	}
	if want == "" && unix.Geteuid() == 0 {
		want = "reno" // built into every kernel; root may set any
		if strings.TrimSpace(string(sys)) == "reno" {
			want = ""
		}
	}
	if want == "" {
		t.Skipf("this process may set no congestion control other than the system's %q (tcp_allowed_congestion_control: %q)",
			strings.TrimSpace(string(sys)), strings.TrimSpace(string(allowed)))
	}
	t.Setenv("FI_TCP_CONGESTION", want)
	p := connectPair(t)
	defer p.close(t)
	for _, s := range []*side{&p.client, &p.server} {
		fd := connFD(t, s.cm())
		got, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

// connFD finds the descriptor of this process that holds c's connection:
// the socket whose local and peer ports are c's Name and Peer ports.
func connFD(t testing.TB, c ep.CM) int {
	t.Helper()
	port := func(get func([]byte) (int, error)) int {
		b := make([]byte, 128)
		n, err := get(b)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 4)
		return int(binary.BigEndian.Uint16(b[2:4])) // sockaddr_in(6): sin_port
	}
	local, peer := port(c.Name), port(c.Peer)
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, ent := range ents {
		fd, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		ls, err1 := unix.Getsockname(fd)
		ps, err2 := unix.Getpeername(fd)
		if err1 != nil || err2 != nil {
			continue
		}
		if inetPort(ls) == local && inetPort(ps) == peer {
			return fd
		}
	}
	t.Fatalf("no socket with local port %d and peer port %d", local, peer)
	return -1
}

func inetPort(sa unix.Sockaddr) int {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return a.Port
	case *unix.SockaddrInet6:
		return a.Port
	}
	return -1
}

// A server that shuts down as soon as it has accepted: the client must
// still see eq.Connected, with the accept's data, before eq.Shutdown
// (fi_cm(3); libfabric's fi_cm_data does exactly this). The client's
// connection used to report the peer's FIN before it was marked
// connected, and eq.Connected never came.
func TestShutdownRightAfterAcceptConnectsFirst(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	sf, seq, pep, name := listenInfo(t, info)
	cf, err := fi.OpenFabric(info)
	require.NoError(t, err)
	ceq, err := eq.OpenEQ(cf, nil)
	require.NoError(t, err)
	for i := range 50 {
		var client, server side
		openSide(t, &client, cf, ceq, info)
		require.NoError(t, client.cm().Connect(name, []byte("hello")))
		req, ok := waitEvent(t, seq).(*eq.ConnReq)
		require.True(t, ok, "round %d", i)
		openSide(t, &server, sf, seq, req.Info)
		require.NoError(t, server.cm().Accept([]byte("welcome")))
		require.IsType(t, &eq.Connected{}, waitEvent(t, seq))
		require.NoError(t, server.cm().Shutdown(0))
		require.IsType(t, &eq.Shutdown{}, waitEvent(t, seq))

		ev := waitEvent(t, ceq)
		c, ok := ev.(*eq.Connected)
		require.True(t, ok, "round %d: the client's first event is %T %v, not eq.Connected", i, ev, ev)
		require.Equal(t, []byte("welcome"), c.Data)
		require.IsType(t, &eq.Shutdown{}, waitEvent(t, ceq), "round %d", i)
		client.close(t)
		server.close(t)
	}
	require.NoError(t, pep.Close())
	require.NoError(t, ceq.Close())
	require.NoError(t, cf.Close())
	require.NoError(t, seq.Close())
	require.NoError(t, sf.Close())
}
