package fabtests

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// This file is the multicast group: fi_join, fi_mc_addr, FI_JOIN_COMPLETE
// and leaving by closing the group (fi_cm(3)), over datagram endpoints
// with FI_MULTICAST. The group's tests run inside a network namespace of
// their own with a multicast route on loopback (netns.go), so that no
// datagram reaches a real network.

const (
	// mcCount is the number of datagrams the sender sends per round.
	mcCount = 4
	// mcLen is the length of each; receive buffers are larger.
	mcLen = 24
)

// mcInfo returns the provider's FI_EP_DGRAM Info with FI_MULTICAST and
// extra caps on the suite's node, skipping when there is none or when its
// addresses are not IPv4 (the namespace routes IPv4 groups only).
func (s *suite) mcInfo(t testing.TB, extra fi.Caps) *fi.Info {
	t.Helper()
	info := s.dgramInfo(t, fi.CapMsg|fi.CapMulticast|extra)
	if info.Caps&fi.CapMulticast == 0 {
		t.Skipf("provider's Info lacks FI_MULTICAST: %v", info.Caps)
	}
	switch info.AddrFormat {
	case fi.FormatSockaddrIn, fi.FormatSockaddr:
	case fi.FormatIBUD:
		// InfiniBand UD endpoints (verbs) join IPv4 groups too, through
		// rdma_cm, whatever their own address format.
	default:
		t.Skipf("the multicast tests join IPv4 groups; the provider's address format is %v", info.AddrFormat)
	}
	return info
}

// mcGroup returns a random group address 239.255.x.y (organization-local
// scope) with a random port, as a struct sockaddr_in.
func mcGroup(t testing.TB) []byte {
	t.Helper()
	ip := netip.AddrFrom4([4]byte{239, 255, byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
	_, b, err := fi.SockaddrFromAddrPort(netip.AddrPortFrom(ip, uint16(49152+rand.IntN(16384))))
	require.NoError(t, err)
	return b
}

// joinerOf returns x's multicast ability, skipping when it has none.
func joinerOf(t testing.TB, x *rdmPeer) ep.Joiner {
	t.Helper()
	j, ok := x.ep.(ep.Joiner)
	if !ok {
		t.Skipf("provider's endpoint %T cannot join multicast groups (ep.Joiner)", x.ep)
	}
	return j
}

// join joins x to the group at addr with flags, waits for its
// FI_JOIN_COMPLETE event and checks it: the join's context, the group as
// the event's fid, and a group address (fi_mc_addr). The group is closed
// (left) at cleanup.
func (s *suite) join(t testing.TB, x *rdmPeer, addr []byte, flags fi.Flags) ep.MulticastGroup {
	t.Helper()
	ctx := &opCtx{"join"}
	g, err := joinerOf(t, x).Join(addr, flags, ctx)
	require.NoError(t, err, "%s: join %s with flags %v", x.role, fi.AddrString(x.info.AddrFormat, addr), flags)
	keep(t, g)
	ev := expectEvent[*eq.JoinComplete](t, s, x.eq)
	require.Same(t, ctx, ev.Context, "%s: the FI_JOIN_COMPLETE event's context", x.role)
	requireSameFid(t, g, ev.Fid, x.role+": the FI_JOIN_COMPLETE event's fid is the group")
	require.NotEqual(t, fi.AddrUnspec, g.Addr(), "%s: fi_mc_addr after the join completed", x.role)
	return g
}

// mcPayload is datagram seq of round: it names both in its first bytes.
func mcPayload(round, seq int) []byte {
	b := pattern(mcLen, byte(40*round+seq))
	b[0], b[1] = byte(round), byte(seq)
	return b
}

// postRecvs posts n receives of 64 bytes at x and returns their buffers
// by context.
func postRecvs(t testing.TB, x *rdmPeer, n int) map[any][]byte {
	t.Helper()
	require.LessOrEqual(t, n, x.info.RxAttr.Size, "%s: receive queue size", x.role)
	bufs := make(map[any][]byte, n)
	for i := range n {
		buf, ctx := make([]byte, 64), &opCtx{fmt.Sprintf("recv %d", i)}
		require.NoError(t, x.msg(t).Recv(buf, x.desc(t, buf), fi.AddrUnspec, ctx), "%s: post receive %d", x.role, i)
		bufs[ctx] = buf
	}
	return bufs
}

// mcSend sends the mcCount datagrams of round from x to group g
// (fi_sendmsg with FI_MULTICAST) and waits for their completions. Any
// receive completing at x meanwhile fails the test: x is a send-only
// member.
func mcSend(t testing.TB, m *mesh, x *rdmPeer, g ep.MulticastGroup, round int) {
	t.Helper()
	xm := x.msg(t)
	for seq := range mcCount {
		buf := mcPayload(round, seq)
		msg := &ep.Message{IOV: [][]byte{buf}, Desc: []any{x.desc(t, buf)}, Addr: g.Addr(), Context: &opCtx{"multicast send"}}
		m.post(t, "multicast send", func() error { return xm.SendMsg(msg, fi.FlagMulticast) })
	}
	for i, e := range m.take(t, x, mcCount) {
		require.Nil(t, e.err, "%s: multicast send %d completed with an error", x.role, i)
		require.Equal(t, sendFlags, e.c.Flags&^fi.FlagMulticast,
			"%s: completion %d is not a send (a send-only member received?): %v", x.role, i, e.c.Flags)
	}
}

// mcCheck waits for want datagrams of round at x, then polls a while
// longer, and requires exactly those: each of the round's datagrams once,
// whole, from src (where the Info has FI_SOURCE) and, with FI_SOURCE,
// flagged FI_MULTICAST (fi_cq(3)).
func mcCheck(t testing.TB, m *mesh, x *rdmPeer, bufs map[any][]byte, src fi.Addr, round, want int) {
	t.Helper()
	if want > 0 {
		m.until(t, fmt.Sprintf("%d multicast datagrams", want), func() bool { return len(x.in) >= want })
	}
	m.settle(t, mcSettle(m.s))
	require.Len(t, x.in, want, "%s: datagrams received in round %d", x.role, round)
	seen := make(map[int]bool)
	for _, e := range x.in {
		require.Nil(t, e.err, "%s: receive error entry", x.role)
		buf, ok := bufs[e.c.Context]
		require.True(t, ok, "%s: completion with a context that was not posted: %v", x.role, e.c.Context)
		delete(bufs, e.c.Context)
		if x.info.Caps&fi.CapSource != 0 {
			require.Equal(t, recvFlags|fi.FlagMulticast, e.c.Flags, "%s: flags of a multicast receive (FI_SOURCE)", x.role)
			require.Equal(t, src, e.src, "%s: source of a multicast datagram (FI_SOURCE)", x.role)
		} else {
			require.Equal(t, recvFlags, e.c.Flags&^fi.FlagMulticast, "%s: flags of a multicast receive", x.role)
		}
		require.Equal(t, mcLen, e.c.Len, "%s: length of a multicast datagram", x.role)
		seq := int(buf[1])
		require.Equal(t, mcPayload(round, seq), buf[:mcLen], "%s: a datagram of round %d", x.role, round)
		require.False(t, seen[seq], "%s: datagram %d of round %d received twice", x.role, seq, round)
		seen[seq] = true
	}
	x.in = x.in[:0]
}

// mcSettle is how long a member polls after the sends completed before
// it concludes that nothing more arrives. On loopback a datagram is
// queued at its receivers by the time its send completes.
func mcSettle(s *suite) time.Duration { return min(s.cfg.Timeout/10, 250*time.Millisecond) }

// testMulticast is the multicast group. Outside the namespace (the parent
// of a run) it only checks that the provider offers FI_MULTICAST and runs
// the group again inside a new network namespace (netns.go); there, and in
// the member processes started from there, it runs the tests. With
// Config.HostNetwork it runs them where it is.
func testMulticast(t *testing.T, s *suite) {
	if s.peerTest == "" && os.Getenv(netnsEnv) == "" && !s.planning() && !s.cfg.HostNetwork {
		s.mcInfo(t, 0)
		s.inNetns(t)
		return
	}

	s.run(t, "join-no-eq", func(t *testing.T) {
		// fi_join(3): an endpoint must be bound to an event queue.
		x := s.openDgram(t, "member", s.mcInfo(t, 0), dgramOpts{})
		_, err := joinerOf(t, x).Join(mcGroup(t), 0, nil)
		requireCoded(t, err)
	})

	s.run(t, "not-multicast", func(t *testing.T) {
		x := s.openDgram(t, "member", s.mcInfo(t, 0), dgramOpts{eq: true})
		j := joinerOf(t, x)
		for _, c := range []struct {
			name string
			addr []byte
		}{
			{"unicast", x.name},
			{"short", x.name[:3]},
			{"empty", nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, err := j.Join(c.addr, 0, nil)
				require.ErrorIs(t, err, fi.EINVAL)
			})
		}
		requireNoEvent(t, x.eq)
	})

	s.run(t, "join-twice", func(t *testing.T) {
		// Joining a group the endpoint is in is refused at once; after
		// leaving (closing the group, which a second Close reports as
		// fi.EBADF) the endpoint can join it again.
		x := s.openDgram(t, "member", s.mcInfo(t, 0), dgramOpts{eq: true})
		ga := mcGroup(t)
		g := s.join(t, x, ga, 0)
		_, err := joinerOf(t, x).Join(ga, 0, &opCtx{"second join"})
		requireCoded(t, err)
		requireNoEvent(t, x.eq)
		require.NoError(t, g.Close(), "leave the group")
		require.ErrorIs(t, g.Close(), fi.EBADF, "close a group twice")
		s.join(t, x, ga, 0)
	})

	s.run(t, "join-complete", func(t *testing.T) {
		// Two joins in flight on one endpoint: one FI_JOIN_COMPLETE each,
		// with its own context and group, and distinct group addresses.
		x := s.openDgram(t, "member", s.mcInfo(t, 0), dgramOpts{eq: true})
		j := joinerOf(t, x)
		ga, gb := mcGroup(t), mcGroup(t)
		for string(gb) == string(ga) {
			gb = mcGroup(t)
		}
		ca, cb := &opCtx{"join a"}, &opCtx{"join b"}
		a, err := j.Join(ga, 0, ca)
		require.NoError(t, err)
		keep(t, a)
		b, err := j.Join(gb, 0, cb)
		require.NoError(t, err)
		keep(t, b)
		got := make(map[any]fi.Fid)
		for range 2 {
			ev := expectEvent[*eq.JoinComplete](t, s, x.eq)
			got[ev.Context] = ev.Fid
		}
		requireSameFid(t, a, got[ca], "group of the first join's event")
		requireSameFid(t, b, got[cb], "group of the second join's event")
		require.NotEqual(t, a.Addr(), b.Addr(), "fi_mc_addr of two groups")
		requireNoEvent(t, x.eq)
	})

	s.run(t, "join-flags", func(t *testing.T) {
		// fi_join(3): FI_SEND needs an endpoint that transmits, FI_RECV
		// one that receives; other flags are reserved; FI_RECV grants no
		// sends.
		t.Run("reserved", func(t *testing.T) {
			x := s.openDgram(t, "member", s.mcInfo(t, 0), dgramOpts{eq: true})
			_, err := joinerOf(t, x).Join(mcGroup(t), fi.FlagRead, nil)
			requireCoded(t, err)
			requireNoEvent(t, x.eq)
		})
		t.Run("recv-only-member", func(t *testing.T) {
			// A member joined with FI_RECV has no right to send to the
			// group.
			x := s.openDgram(t, "member", s.mcInfo(t, 0), dgramOpts{eq: true})
			g := s.join(t, x, mcGroup(t), fi.FlagRecv)
			buf := []byte("refused")
			msg := &ep.Message{IOV: [][]byte{buf}, Desc: []any{x.desc(t, buf)}, Addr: g.Addr(), Context: &opCtx{"send"}}
			requireCoded(t, x.msg(t).SendMsg(msg, fi.FlagMulticast))
			x.requireCQEmpty(t)
		})
		for _, c := range []struct {
			name      string
			cap, lack fi.Caps
			ok, bad   fi.Flags
		}{
			{"recv-only-ep", fi.CapRecv, fi.CapSend, fi.FlagRecv, fi.FlagSend},
			{"send-only-ep", fi.CapSend, fi.CapRecv, fi.FlagSend, fi.FlagRecv},
		} {
			t.Run(c.name, func(t *testing.T) {
				info := s.mcInfo(t, c.cap)
				if info.Caps&c.lack != 0 {
					t.Skipf("provider's Info for %v also has %v", c.cap, info.Caps)
				}
				x := s.openDgram(t, "member", info, dgramOpts{eq: true})
				ga := mcGroup(t)
				_, err := joinerOf(t, x).Join(ga, c.bad, nil)
				requireCoded(t, err)
				requireNoEvent(t, x.eq)
				s.join(t, x, ga, c.ok)
			})
		}
	})

	s.run2(t, "members", nil, func(t *testing.T) {
		// The sender, joined with FI_SEND, and three members in their own
		// processes joined with 0, FI_RECV and FI_SEND. Round 0: the
		// members with receive rights get every datagram, the send-only
		// ones (the sender too) none. Then the member joined with 0
		// leaves; round 1 reaches only the FI_RECV member.
		m := s.dgram(t, s.mcInfo(t, 0), dgramOpts{eq: true}, "sender")
		x := m.peers[0]
		ga := mcGroup(t)
		g := s.join(t, x, ga, fi.FlagSend)
		postRecvs(t, x, 2*mcCount)
		flags := []fi.Flags{0, fi.FlagRecv, fi.FlagSend}
		links := make([]*link, len(flags))
		for i, f := range flags {
			links[i] = s.spawn(t, m.poll)
			links[i].sendU64(t, "flags", uint64(f))
			links[i].send(t, "group", ga)
			links[i].send(t, "name", x.name)
		}
		for _, l := range links {
			l.recv(t, "joined")
		}
		for round := range 2 {
			if round == 1 {
				links[0].send(t, "leave", nil)
				links[0].recv(t, "left")
			}
			mcSend(t, m, x, g, round)
			for i, l := range links {
				want := mcCount
				if flags[i] == fi.FlagSend || flags[i] == 0 && round == 1 {
					want = 0
				}
				l.sendU64(t, "expect", uint64(want))
			}
			m.settle(t, mcSettle(s))
			x.requireCQEmpty(t)
			for _, l := range links {
				l.recv(t, "checked")
			}
		}
		for _, l := range links {
			l.finish(t)
		}
	}, func(t *testing.T, l *link) {
		f := fi.Flags(l.recvU64(t, "flags"))
		ga := l.recv(t, "group")
		sender := l.recv(t, "name")
		role := "member joined with flags 0"
		if f != 0 {
			role = "member joined with " + f.String()
		}
		m := s.dgram(t, s.mcInfo(t, 0), dgramOpts{eq: true}, role)
		x := m.peers[0]
		l.poll = m.poll
		src := x.insert(t, sender)
		g := s.join(t, x, ga, f)
		bufs := postRecvs(t, x, 2*mcCount)
		l.send(t, "joined", nil)
		for round := range 2 {
			if round == 1 && f == 0 {
				l.recv(t, "leave")
				require.NoError(t, g.Close(), "leave the group")
				l.send(t, "left", nil)
			}
			mcCheck(t, m, x, bufs, src, round, int(l.recvU64(t, "expect")))
			l.send(t, "checked", nil)
		}
	})
}
