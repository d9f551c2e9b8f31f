//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The liveness bound of established connections (issue 16):
// FI_TCP_USER_TIMEOUT sets TCP_USER_TIMEOUT and keepalive on every
// connection, so that a peer that stops answering (a cut link, a dead
// host) fails the connection within it instead of after the kernel's
// 15 minutes of retransmissions.

// TestLivenessSocketOptions: both ends of a connection carry
// TCP_USER_TIMEOUT and keepalive probes every third of it (at least a
// second); 0 leaves the kernel's defaults.
func TestLivenessSocketOptions(t *testing.T) {
	for _, tc := range []struct {
		env                     string // FI_TCP_USER_TIMEOUT, "" for unset
		timeout, keep, idle, iv int
	}{
		{"", 30000, 1, 10, 10},
		{"2000", 2000, 1, 1, 1},
		{"90000", 90000, 1, 30, 30},
		{"0", 0, 0, -1, -1},
	} {
		t.Run("FI_TCP_USER_TIMEOUT="+tc.env, func(t *testing.T) {
			cleanEnv(t)
			if tc.env != "" {
				t.Setenv("FI_TCP_USER_TIMEOUT", tc.env)
			}
			p := connectPair(t)
			defer p.close(t)
			for _, s := range []*side{&p.client, &p.server} {
				fd := connFD(t, s.cm())
				get := func(level, opt int) int {
					v, err := unix.GetsockoptInt(fd, level, opt)
					require.NoError(t, err)
					return v
				}
				require.Equal(t, tc.timeout, get(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT))
				require.Equal(t, tc.keep, get(unix.SOL_SOCKET, unix.SO_KEEPALIVE))
				if tc.idle >= 0 {
					require.Equal(t, tc.idle, get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE))
					require.Equal(t, tc.iv, get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL))
				}
			}
		})
	}
}

// netLink is a veth pair between this network namespace (hostIP) and a
// new one (nsIP), and a way to cut it.
type netLink struct {
	ns, ip, nft  string
	hostIP, nsIP string
}

// newNetLink creates the namespace and the link; cleanup deletes both.
// Where namespaces cannot be made the test is skipped (failed under
// GOFABRIC_STRICT).
func newNetLink(t *testing.T) *netLink {
	t.Helper()
	reftest.Root(t, "create network namespaces")
	l := &netLink{ip: reftest.Tool(t, "ip", "iproute2"), nft: reftest.Tool(t, "nft", "nftables")}
	id := rand.Uint32()
	l.ns = fmt.Sprintf("gofabric-tcp-%d-%d", os.Getpid(), id)
	sub := 1 + id%250
	l.hostIP, l.nsIP = fmt.Sprintf("10.213.%d.1", sub), fmt.Sprintf("10.213.%d.2", sub)
	host, peer := fmt.Sprintf("gft%dh", id%100000), fmt.Sprintf("gft%dn", id%100000)
	if err := l.run("", "netns", "add", l.ns); err != nil {
		reftest.Missing(t, "network namespace unavailable: %v", err)
	}
	t.Cleanup(func() {
		if err := l.run("", "netns", "del", l.ns); err != nil {
			t.Errorf("delete the test's network namespace: %v", err)
		}
	})
	for _, args := range [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", l.ns},
		{"addr", "add", l.hostIP + "/30", "dev", host},
		{"link", "set", host, "up"},
		{"-n", l.ns, "addr", "add", l.nsIP + "/30", "dev", peer},
		{"-n", l.ns, "link", "set", peer, "up"},
		{"-n", l.ns, "link", "set", "lo", "up"},
	} {
		if err := l.run("", args...); err != nil {
			reftest.Missing(t, "network namespace unavailable: %v", err)
		}
	}
	return l
}

// run runs ip(8) with args, with stdin.
func (l *netLink) run(stdin string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.ip, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// cut drops every packet in and out of the namespace (nftables), as a
// link that failed silently does.
func (l *netLink) cut(t *testing.T) {
	t.Helper()
	const rules = `table inet gofabric_cut {
	chain in { type filter hook input priority 0; policy drop; }
	chain out { type filter hook output priority 0; policy drop; }
}
`
	require.NoError(t, l.run(rules, "netns", "exec", l.ns, l.nft, "-f", "-"))
}

// in runs f on a thread that entered the namespace: the sockets f
// creates live there (a listening socket's accepted ones too). The thread
// is discarded afterwards.
func (l *netLink) in(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open("/run/netns/"+l.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// infoAt returns an entry of the tcp provider of type typ for local
// address ip.
func infoAt(typ fi.EPType, ip string) (*fi.Info, error) {
	infos, err := fi.GetInfo(context.Background(), ip, "0", fi.FlagSource, tcpHints(typ))
	if err != nil {
		return nil, err
	}
	for _, in := range infos {
		if in.EPAttr.Type == typ {
			return in, nil
		}
	}
	return nil, fmt.Errorf("no %v entry for %s", typ, ip)
}

// waitErrEntry reads q until an error entry arrives and returns it;
// completions fail the test. It waits up to a minute: without a liveness
// bound the kernel keeps a cut connection for about 15 minutes.
func waitErrEntry(t *testing.T, q eq.CompletionQueue) *eq.CQError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var c [1]eq.Completion
	n, err := q.SRead(ctx, c[:])
	require.Zero(t, n, "a completion instead of an error: %+v", c[0])
	require.ErrorIs(t, err, fi.EAVAIL, "no error entry within a minute of the cut")
	ce, err := q.ReadErr()
	require.NoError(t, err)
	return ce
}

// TestLivenessCutLink: a tcp MSG connection across a veth pair, then the
// link is cut (every packet dropped). The side with a send in flight and
// the idle side with a posted receive both end in error entries
// (fi.ETIMEDOUT) and eq.Shutdown within FI_TCP_USER_TIMEOUT (2 s here),
// where the kernel alone would retransmit for about 15 minutes.
func TestLivenessCutLink(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_USER_TIMEOUT", "2000")
	l := newNetLink(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	// The server listens inside the namespace.
	var (
		sfab  fi.Fabric
		seq   eq.EventQueue
		pep   ep.PassiveEndpoint
		sinfo *fi.Info
	)
	require.NoError(t, l.in(func() error {
		var err error
		if sinfo, err = infoAt(fi.EPTypeMsg, l.nsIP); err != nil {
			return err
		}
		if sfab, err = fi.OpenFabric(sinfo); err != nil {
			return err
		}
		if seq, err = eq.OpenEQ(sfab, nil); err != nil {
			return err
		}
		pep, err = ep.OpenPassive(sfab, sinfo)
		return err
	}))
	require.NoError(t, pep.Bind(seq, 0))
	require.NoError(t, pep.Listen())
	name := make([]byte, 64)
	n, err := pep.Name(name)
	require.NoError(t, err)
	name = name[:n]

	cinfo, err := infoAt(fi.EPTypeMsg, l.hostIP)
	require.NoError(t, err)
	cfab, err := fi.OpenFabric(cinfo)
	require.NoError(t, err)
	ceq, err := eq.OpenEQ(cfab, nil)
	require.NoError(t, err)
	var client, server side
	openSide(t, &client, cfab, ceq, cinfo)
	require.NoError(t, client.cm().Connect(name, nil))
	ev := waitEvent(t, seq)
	req, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	openSide(t, &server, sfab, seq, req.Info)
	require.NoError(t, server.cm().Accept(nil))
	require.IsType(t, &eq.Connected{}, waitEvent(t, seq))
	require.IsType(t, &eq.Connected{}, waitEvent(t, ceq))

	// The link works.
	buf := make([]byte, 16)
	require.NoError(t, server.msg().Recv(buf, nil, fi.AddrUnspec, "warm"))
	require.NoError(t, client.msg().Send([]byte("over the veth"), nil, fi.AddrUnspec, "warm"))
	require.Equal(t, "warm", poll(t, client.cq).Context)
	require.Equal(t, "warm", poll(t, server.cq).Context)

	// Cut it; the server idles with a receive posted, the client sends.
	require.NoError(t, server.msg().Recv(buf, nil, fi.AddrUnspec, "server-recv"))
	require.NoError(t, client.msg().Recv(buf, nil, fi.AddrUnspec, "client-recv"))
	l.cut(t)
	require.NoError(t, client.msg().Send(make([]byte, 1<<20), nil, fi.AddrUnspec, "in-flight"))

	got := map[any]fi.Errno{}
	for range 2 {
		ce := waitErrEntry(t, client.cq)
		got[ce.Context] = ce.Err
	}
	require.Equal(t, map[any]fi.Errno{"in-flight": fi.ETIMEDOUT, "client-recv": fi.ETIMEDOUT}, got, "the client's operations")
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, ceq))
	ce := waitErrEntry(t, server.cq)
	require.Equal(t, "server-recv", ce.Context)
	require.Equal(t, fi.ETIMEDOUT, ce.Err)
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, seq))

	client.close(t)
	server.close(t)
	require.NoError(t, pep.Close())
	for _, c := range []fi.Fid{ceq, seq, cfab, sfab} {
		require.NoError(t, c.Close())
	}
}

// uncut lets packets through again.
func (l *netLink) uncut(t *testing.T) {
	t.Helper()
	require.NoError(t, l.run("", "netns", "exec", l.ns, l.nft, "delete", "table", "inet", "gofabric_cut"))
}

// rdmAt opens an RDM endpoint bound to ip with its AV and CQ.
func rdmAt(ip string) (*rdmSide, fi.Fabric, error) {
	info, err := infoAt(fi.EPTypeRDM, ip)
	if err != nil {
		return nil, nil, err
	}
	fab, err := fi.OpenFabric(info)
	if err != nil {
		return nil, nil, err
	}
	s := &rdmSide{}
	if s.dom, err = fab.OpenDomain(info); err != nil {
		return nil, nil, err
	}
	if s.cq, err = eq.OpenCQ(s.dom, &eq.CQAttr{Format: eq.FormatTagged}); err != nil {
		return nil, nil, err
	}
	if s.av, err = fi.OpenAV(s.dom, &fi.AVAttr{}); err != nil {
		return nil, nil, err
	}
	if s.e, err = ep.Open(s.dom, info); err != nil {
		return nil, nil, err
	}
	if err := s.e.Bind(s.cq, fi.FlagSend|fi.FlagRecv); err != nil {
		return nil, nil, err
	}
	if err := s.e.Bind(s.av, 0); err != nil {
		return nil, nil, err
	}
	return s, fab, s.e.Enable()
}

func (s *rdmSide) closeAll(t *testing.T, fab fi.Fabric) {
	t.Helper()
	for _, c := range []fi.Fid{s.e, s.av, s.cq, s.dom, fab} {
		require.NoError(t, c.Close())
	}
}

// TestLivenessCutLinkRDM: an RDM connection across the veth pair, each
// side with a rendezvous send the other has not taken yet, then the link
// is cut. Both sends fail with fi.ETIMEDOUT within FI_TCP_USER_TIMEOUT
// (the connection is lost); once the link is back the next send opens a
// new connection and gets through.
func TestLivenessCutLinkRDM(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_USER_TIMEOUT", "2000")
	l := newNetLink(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var (
		hub    *rdmSide
		hubFab fi.Fabric
	)
	require.NoError(t, l.in(func() error {
		var err error
		hub, hubFab, err = rdmAt(l.nsIP)
		return err
	}))
	peer, peerFab, err := rdmAt(l.hostIP)
	require.NoError(t, err)
	toHub, err := peer.av.Insert([][]byte{hub.name(t)}, 0)
	require.NoError(t, err)
	toPeer, err := hub.av.Insert([][]byte{peer.name(t)}, 0)
	require.NoError(t, err)

	buf := make([]byte, 16)
	require.NoError(t, hub.msg().Recv(buf, nil, fi.AddrUnspec, "warm"))
	_, err = sendRetry(t, peer, func() error { return peer.msg().Send([]byte("warm"), nil, toHub[0], "warm") })
	require.NoError(t, err)
	require.Equal(t, "warm", next(t, hub, peer).c.Context)
	require.Equal(t, "warm", next(t, peer, hub).c.Context)

	big := make([]byte, 1<<20)
	require.NoError(t, hub.msg().Send(big, nil, toPeer[0], "hub-rndv"))
	l.cut(t)
	require.NoError(t, peer.msg().Send(big, nil, toHub[0], "peer-rndv"))
	for _, s := range []*rdmSide{peer, hub} {
		ce := waitErrEntry(t, s.cq)
		require.Equal(t, fi.ETIMEDOUT, ce.Err, "%+v", ce)
	}

	l.uncut(t)
	rbuf := make([]byte, 16)
	require.NoError(t, hub.msg().Recv(rbuf, nil, fi.AddrUnspec, "again"))
	_, err = sendRetry(t, peer, func() error { return peer.msg().Send([]byte("again"), nil, toHub[0], "again") })
	require.NoError(t, err)
	got := next(t, hub, peer)
	require.Nil(t, got.err)
	require.Equal(t, "again", got.c.Context)
	require.Equal(t, []byte("again"), rbuf[:5])
	got = next(t, peer, hub)
	require.Nil(t, got.err)
	require.Equal(t, "again", got.c.Context)

	peer.closeAll(t, peerFab)
	hub.closeAll(t, hubFab)
}
