//go:build verbs && cgo

package verbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// udHints are hints for the device's FI_EP_DGRAM entries: their MR mode,
// FI_MSG_PREFIX when prefix is set, FI_MULTICAST.
func udHints(prefix bool) *fi.Info {
	h := (*fi.Info)(nil).Clone()
	h.EPAttr.Type = fi.EPTypeDgram
	h.FabricAttr.ProvName = "verbs"
	h.Caps = fi.CapMsg | fi.CapMulticast
	h.DomainAttr.MRMode = msgMRMode
	if prefix {
		h.Mode = fi.ModeMsgPrefix
	}
	return h
}

// udSide is one datagram endpoint with its own fabric, domain, AV, CQ
// and EQ, closed at the test's end.
type udSide struct {
	info   *fi.Info
	fabric fi.Fabric
	domain fi.Domain
	av     fi.AV
	cq     eq.CompletionQueue
	eq     eq.EventQueue
	ep     ep.Endpoint
	msg    ep.Msg
	name   []byte
}

// openUDSide opens a datagram endpoint for the first entry of hints.
func openUDSide(t testing.TB, hints *fi.Info) *udSide {
	t.Helper()
	rdmaAddr(t)
	infos, err := fi.GetInfo(context.Background(), "", "", 0, hints)
	require.NoError(t, err)
	s := &udSide{info: infos[0]}
	s.fabric, err = fi.OpenFabric(s.info)
	require.NoError(t, err)
	udCloseAt(t, s.fabric)
	s.eq, err = eq.OpenEQ(s.fabric, &eq.Attr{})
	require.NoError(t, err)
	udCloseAt(t, s.eq)
	s.domain, err = s.fabric.OpenDomain(s.info)
	require.NoError(t, err)
	udCloseAt(t, s.domain)
	s.av, err = fi.OpenAV(s.domain, &fi.AVAttr{})
	require.NoError(t, err)
	udCloseAt(t, s.av)
	s.cq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	udCloseAt(t, s.cq)
	s.ep, err = ep.Open(s.domain, s.info)
	require.NoError(t, err)
	udCloseAt(t, s.ep)
	for _, b := range []struct {
		f     fi.Fid
		flags fi.Flags
	}{{s.eq, 0}, {s.av, 0}, {s.cq, fi.FlagSend | fi.FlagRecv}} {
		require.NoError(t, s.ep.Bind(b.f, b.flags))
	}
	require.NoError(t, s.ep.Enable())
	s.msg = s.ep.(ep.Msg)
	buf := make([]byte, 64)
	n, err := s.ep.(ep.Namer).Name(buf)
	require.NoError(t, err)
	require.Equal(t, udNameLen, n)
	s.name = buf[:n]
	return s
}

// udCloseAt is closeAt that logs a Close slower than a second.
func udCloseAt(t testing.TB, f fi.Fid) {
	t.Cleanup(func() {
		start := time.Now()
		if err := f.Close(); err != nil && !errors.Is(err, fi.EBADF) {
			t.Errorf("close %T: %v", f, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Logf("close %T took %v", f, d)
		}
	})
}

// insert puts peer's name into s's AV.
func (s *udSide) insert(t testing.TB, peer *udSide) fi.Addr {
	t.Helper()
	fa, err := s.av.Insert([][]byte{peer.name}, 0)
	require.NoError(t, err)
	return fa[0]
}

// next waits for s's next completion or error entry.
func (s *udSide) next(t testing.TB) (eq.Completion, *eq.CQError) {
	t.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := s.cq.Read(c[:])
		switch {
		case n == 1:
			return c[0], nil
		case err == fi.EAVAIL:
			e, err := s.cq.ReadErr()
			require.NoError(t, err)
			return eq.Completion{}, e
		case err != fi.EAGAIN:
			require.NoError(t, err)
		}
	}
	t.Fatal("no completion in 10 s")
	return eq.Completion{}, nil
}

// reg registers buf with s's domain.
func (s *udSide) reg(t testing.TB, buf []byte) any {
	t.Helper()
	mr, err := fi.RegisterMR(s.domain, &fi.MRAttr{Buf: buf, Access: fi.AccessSend | fi.AccessRecv}, 0)
	require.NoError(t, err)
	udCloseAt(t, mr)
	return mr.Desc()
}

// The FI_EP_DGRAM entries print as C's fi_info -v prints its -dgram
// entries, line for line, but for what gofabric adds (FI_MULTICAST in the
// caps) and the source address (C prints FI_ADDR_IB_UD names in its own
// notation).
func TestDgramEntriesMatchC(t *testing.T) {
	if _, err := exec.LookPath(cFiInfo); err != nil {
		t.Skipf("no C fi_info at %s (%v); run the tests in the Soft-RoCE VM (README)", cFiInfo, err)
	}
	rdmaAddr(t)
	got, err := udEntries()
	require.NoError(t, err)
	require.NotEmpty(t, got)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cFiInfo, "-p", "verbs", "-t", "FI_EP_DGRAM", "-v").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var want []string
	for _, e := range strings.Split(string(out), "---\n") {
		if strings.HasPrefix(e, "fi_info:\n") && strings.Contains(e, "\n        prov_name: verbs\n") {
			want = append(want, e)
		}
	}
	require.Len(t, want, len(got), "C's -dgram entries")
	noSrc := func(s string) string {
		var ls []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "    src_addr: ") {
				ls = append(ls, l)
			}
		}
		return strings.Join(ls, "\n")
	}
	for i, g := range got {
		c := g.Clone()
		c.Caps &^= fi.CapMulticast
		c.TxAttr.Caps &^= fi.CapMulticast
		c.RxAttr.Caps &^= fi.CapMulticast
		if d := firstDiff(noSrc(c.String()), noSrc(want[i])); d != "" {
			t.Errorf("entry %s differs from C's at %s", g.DomainAttr.Name, d)
		}
	}
}

// Datagrams between two UD endpoints, with and without FI_MSG_PREFIX:
// the payload arrives whole; under FI_MSG_PREFIX it sits after the
// 40-byte prefix and the completion's length counts the prefix, as C's
// (wc.byte_len), without it the provider gives the header room itself.
// A datagram above max_msg_size, and an inject above inject_size, are
// refused with fi.EMSGSIZE; a receive shorter than the datagram completes
// with fi.ETRUNC (Len placed, OLen lost) and the endpoint carries on.
func TestUDSendRecv(t *testing.T) {
	for _, prefix := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefix=%v", prefix), func(t *testing.T) {
			a, b := openUDSide(t, udHints(prefix)), openUDSide(t, udHints(prefix))
			pre := 0
			if prefix {
				pre = udPrefixSize
				require.Equal(t, udPrefixSize, a.info.EPAttr.MsgPrefixSize)
				require.NotZero(t, a.info.RxAttr.Mode&fi.ModeMsgPrefix)
			} else {
				require.Zero(t, a.info.EPAttr.MsgPrefixSize)
				require.Zero(t, a.info.Mode&fi.ModeMsgPrefix)
			}
			toB := a.insert(t, b)
			maxMsg := a.info.EPAttr.MaxMsgSize
			require.Positive(t, maxMsg)
			rbuf := make([]byte, pre+maxMsg)
			rdesc := b.reg(t, rbuf)
			sbuf := bytes.Repeat([]byte("0123456789abcdef"), maxMsg/16+1)[:maxMsg]
			sdesc := a.reg(t, sbuf)
			for _, n := range []int{0, 1, min(a.info.TxAttr.InjectSize+1, maxMsg), maxMsg} {
				clear(rbuf)
				require.NoError(t, b.msg.Recv(rbuf, rdesc, fi.AddrUnspec, "recv"))
				require.NoError(t, a.msg.Send(sbuf[:n], sdesc, toB, "send"))
				c, e := b.next(t)
				require.Nil(t, e, "%d bytes", n)
				require.Equal(t, pre+n, c.Len, "%d bytes: the length", n)
				require.Equal(t, sbuf[:n], rbuf[pre:pre+n], "%d bytes", n)
				require.Equal(t, fi.FlagRecv|fi.FlagMsg, c.Flags)
				c, e = a.next(t)
				require.Nil(t, e)
				require.Equal(t, "send", c.Context)
			}
			require.ErrorIs(t, a.msg.Send(append(sbuf, 0), nil, toB, nil), fi.EMSGSIZE)
			require.ErrorIs(t, a.msg.Inject(sbuf[:a.info.TxAttr.InjectSize+1], toB), fi.EMSGSIZE)

			small := make([]byte, pre+8)
			require.NoError(t, b.msg.Recv(small, b.reg(t, small), fi.AddrUnspec, "small"))
			require.NoError(t, a.msg.Inject(sbuf[:20], toB))
			_, e := b.next(t)
			require.NotNil(t, e)
			require.Equal(t, fi.ETRUNC, e.Err)
			require.Equal(t, pre+8, e.Len)
			require.Equal(t, 12, e.OLen)
			require.Equal(t, sbuf[:8], small[pre:])
			require.NoError(t, b.msg.Recv(rbuf, rdesc, fi.AddrUnspec, "after"))
			require.NoError(t, a.msg.Inject(sbuf[:5], toB))
			c, e := b.next(t)
			require.Nil(t, e, "the endpoint carries on after a truncation")
			require.Equal(t, pre+5, c.Len)
		})
	}
}

// The data path allocates nothing per send, receive and completion read,
// and a full receive queue gives bare fi.EAGAIN.
func TestUDPostAllocs(t *testing.T) {
	a, b := openUDSide(t, udHints(false)), openUDSide(t, udHints(false))
	toB := a.insert(t, b)
	rbuf, sbuf := make([]byte, 1024), make([]byte, 512)
	rdesc, sdesc := b.reg(t, rbuf), a.reg(t, sbuf)
	var ctx any = &struct{ n int }{3}
	var c [4]eq.Completion
	allocs := testing.AllocsPerRun(50, func() {
		if err := b.msg.Recv(rbuf, rdesc, fi.AddrUnspec, ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.msg.Send(sbuf, sdesc, toB, ctx); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 1; {
			n, _ := b.cq.Read(c[:])
			got += n
		}
		for got := 0; got < 1; {
			n, _ := a.cq.Read(c[:])
			got += n
		}
	})
	require.Zero(t, allocs, "allocations per Recv+Send+reads")
	var err error
	posted := 0
	for posted = 0; posted < 1<<16; posted++ {
		if err = b.msg.Recv(rbuf, rdesc, fi.AddrUnspec, ctx); err != nil {
			break
		}
	}
	require.True(t, err == fi.EAGAIN, "a full receive queue: bare fi.EAGAIN, got %v after %d", err, posted)
	require.GreaterOrEqual(t, posted, b.info.RxAttr.Size, "receives the queue takes: at least rx_attr.size")
}

// igmpJoined reports whether the kernel lists IPv4 group g in
// /proc/net/igmp (rdma_cm joins the IP group on the port's netdev).
func igmpJoined(t *testing.T, g netip.Addr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/igmp")
	require.NoError(t, err)
	a := g.As4()
	hex := fmt.Sprintf("%08X", binary.NativeEndian.Uint32(a[:]))
	return strings.Contains(string(b), hex)
}

// joinGroup joins s to the group and waits for FI_JOIN_COMPLETE.
func joinGroup(t *testing.T, s *udSide, group []byte, flags fi.Flags) ep.MulticastGroup {
	t.Helper()
	g, err := s.ep.(ep.Joiner).Join(group, flags, "join")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := s.eq.SRead(ctx)
	require.NoError(t, err)
	jc, ok := ev.(*eq.JoinComplete)
	require.True(t, ok, "event %T %v", ev, ev)
	require.Equal(t, "join", jc.Context)
	require.Same(t, g.(*mcGroup), jc.Fid.(*mcGroup))
	return g
}

// Two endpoints join one group; a third sends to it: both receive, with
// FI_MULTICAST. Closing the group leaves it; closing an endpoint leaves
// the groups it is in (the kernel's IGMP membership goes with the last
// member), and the group's own Close then only marks it closed.
func TestUDMulticastLeave(t *testing.T) {
	t0 := time.Now()
	step := func(what string) { t.Logf("%6.2fs %s", time.Since(t0).Seconds(), what) }
	a, b, s := openUDSide(t, udHints(false)), openUDSide(t, udHints(false)), openUDSide(t, udHints(false))
	step("opened")
	ip := netip.AddrFrom4([4]byte{239, 255, 77, byte(1 + time.Now().UnixNano()%250)})
	_, group, err := fi.SockaddrFromAddrPort(netip.AddrPortFrom(ip, 0))
	require.NoError(t, err)
	require.False(t, igmpJoined(t, ip))
	ga := joinGroup(t, a, group, fi.FlagRecv)
	gb := joinGroup(t, b, group, 0)
	gs := joinGroup(t, s, group, fi.FlagSend)
	step("joined")
	require.True(t, igmpJoined(t, ip), "rdma_cm joined %v on the netdev", ip)
	bufs := [2][]byte{make([]byte, 64), make([]byte, 64)}
	for i, x := range []*udSide{a, b} {
		require.NoError(t, x.msg.Recv(bufs[i], x.reg(t, bufs[i]), fi.AddrUnspec, "mc"))
	}
	data := []byte("to the group")
	msg := &ep.Message{IOV: [][]byte{data}, Addr: gs.Addr(), Context: "mcsend"}
	require.NoError(t, s.msg.SendMsg(msg, fi.FlagMulticast))
	c, e := s.next(t)
	require.Nil(t, e)
	require.Equal(t, fi.FlagSend|fi.FlagMsg|fi.FlagMulticast, c.Flags)
	for i, x := range []*udSide{a, b} {
		c, e := x.next(t)
		require.Nil(t, e)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMulticast, c.Flags, "member %d", i)
		require.Equal(t, data, bufs[i][:len(data)])
	}
	step("received")
	// a leaves by closing its group, b by closing its endpoint.
	require.NoError(t, ga.Close())
	step("a left")
	require.ErrorIs(t, ga.Close(), fi.EBADF)
	require.NoError(t, b.ep.Close())
	step("b closed")
	require.NoError(t, gb.Close(), "a group its endpoint's Close left")
	require.ErrorIs(t, gb.Close(), fi.EBADF)
	require.NoError(t, gs.Close())
	step("s left")
	deadline := time.Now().Add(5 * time.Second)
	for igmpJoined(t, ip) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.False(t, igmpJoined(t, ip), "every member left %v", ip)
	step("igmp gone")
	// a's receive is still posted and gets nothing more.
	require.NoError(t, a.msg.Recv(bufs[0], a.reg(t, bufs[0]), fi.AddrUnspec, "mc2"))
}

// A MULTICAST_ERROR event (the subnet manager refused the join, or the
// port went down) is an EQ error about the group, with
// eq.ReasonTransport and the event's status in ProvErrno, and the group
// no longer sends. rxe raises none on demand, so the event is handed to
// the endpoint's handler as the channel would.
func TestUDMulticastErrorEvent(t *testing.T) {
	s := openUDSide(t, udHints(false))
	_, group, err := fi.SockaddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("239.255.78.9"), 0))
	require.NoError(t, err)
	g := joinGroup(t, s, group, 0)
	e := s.ep.(*udEndpoint)
	mg := g.(*mcGroup)
	e.mc.event(e, mcEventC{id: mg.id, typ: evMulticastError, status: -int(110)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.eq.SRead(ctx)
	require.ErrorIs(t, err, fi.EAVAIL)
	ee, err := s.eq.ReadErr()
	require.NoError(t, err)
	require.Same(t, mg, ee.Fid.(*mcGroup))
	require.Equal(t, "join", ee.Context)
	require.Equal(t, fi.ETIMEDOUT, ee.Err)
	require.Equal(t, -110, ee.ProvErrno)
	require.Equal(t, eq.ReasonTransport, ee.Reason)
	msg := &ep.Message{IOV: [][]byte{[]byte("x")}, Addr: g.Addr()}
	require.ErrorIs(t, s.msg.SendMsg(msg, fi.FlagMulticast), fi.EINVAL, "a failed group sends nothing")
	require.NoError(t, g.Close())
}
