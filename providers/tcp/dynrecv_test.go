//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Dynamic receive mode (kit.DynRecv) and the raw tagged sends of FI_EP_MSG
// endpoints: what rxm, layered over tcp's MSG endpoints, needs for C
// ofi_rxm's wire and a receive with no copy (issue 19, step 4).

const dynPrefix = 64 // rxm's header

// arrived is what a handler saw of one message.
type arrived struct {
	cookie  any
	tagged  bool
	tag     uint64
	flags   fi.Flags
	data    uint64
	prefix  []byte
	rest    int
	dst     [][]byte
	ctxName string
}

// recHandler records what it is shown and answers with decide, which
// returns the buffers and context name of message i (0, 1, ...), or
// fi.EAGAIN. It may run on any goroutine: its fields are under mu.
type recHandler struct {
	mu     sync.Mutex
	calls  int
	got    []arrived
	decide func(i int, a *kit.Arrival) ([][]byte, string, error)
}

func (h *recHandler) Arrived(a *kit.Arrival) ([][]byte, any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	dst, name, err := h.decide(len(h.got), a)
	if err != nil {
		return nil, nil, err
	}
	h.got = append(h.got, arrived{cookie: a.Cookie, tagged: a.Tagged, tag: a.Tag, flags: a.Flags, data: a.Data,
		prefix: bytes.Clone(a.Prefix), rest: a.Rest, dst: dst, ctxName: name})
	return dst, name, nil
}

func (h *recHandler) nCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *recHandler) arrival(i int) arrived {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[i]
}

// wholeDst gives every message one buffer of its Rest.
func wholeDst(i int, a *kit.Arrival) ([][]byte, string, error) {
	return [][]byte{make([]byte, a.Rest)}, ctxName(i), nil
}

func ctxName(i int) string { return "m" + string(rune('a'+i%26)) + string(rune('0'+i/26)) }

// openDynSide opens s from info on f with its CQ (tagged format); with h
// set the endpoint is put in dynamic receive mode before Enable.
func openDynSide(t testing.TB, s *side, f fi.Fabric, q eq.EventQueue, info *fi.Info, h kit.DynRecvHandler, cookie any) {
	t.Helper()
	var err error
	s.fabric, s.eq = f, q
	s.domain, err = f.OpenDomain(info)
	require.NoError(t, err)
	s.cq, err = eq.OpenCQ(s.domain, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	s.ep, err = ep.Open(s.domain, info)
	require.NoError(t, err)
	if h != nil {
		dr, ok := s.ep.(kit.DynRecv)
		require.True(t, ok, "%T is no kit.DynRecv", s.ep)
		require.NoError(t, dr.SetDynRecv(h, cookie, dynPrefix))
	}
	require.NoError(t, s.ep.Bind(q, 0))
	require.NoError(t, s.ep.Bind(s.cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, s.ep.Enable())
}

// connectDyn connects a client to a server in dynamic receive mode with
// handler h (cookie "conn"); both endpoints have FI_TAGGED in their Info
// when tagged.
func connectDyn(t testing.TB, h kit.DynRecvHandler, tagged bool) *pair {
	t.Helper()
	p := &pair{}
	var name []byte
	info := loInfo(t)
	if tagged {
		info.Caps |= fi.CapTagged
	}
	p.srvFabric, p.srvEQ, p.pep, name = listenInfo(t, info)
	cf, err := fi.OpenFabric(info)
	require.NoError(t, err)
	cq, err := eq.OpenEQ(cf, nil)
	require.NoError(t, err)
	openDynSide(t, &p.client, cf, cq, info, nil, nil)
	require.NoError(t, p.client.cm().Connect(name, nil))
	ev := waitEvent(t, p.srvEQ)
	req, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	ri := req.Info.Clone()
	if tagged {
		ri.Caps |= fi.CapTagged
	}
	openDynSide(t, &p.server, p.srvFabric, p.srvEQ, ri, h, "conn")
	require.NoError(t, p.server.cm().Accept(nil))
	require.IsType(t, &eq.Connected{}, waitEvent(t, p.srvEQ))
	require.IsType(t, &eq.Connected{}, waitEvent(t, cq))
	return p
}

// pollErr reads q until an error entry comes, which it returns; a
// completion fails the test.
func pollErr(t testing.TB, q eq.CompletionQueue) *eq.CQError {
	t.Helper()
	var c [1]eq.Completion
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		n, err := q.Read(c[:])
		require.Zero(t, n, "a completion instead of an error entry: %+v", c[0])
		if fi.Code(err) == fi.EAVAIL {
			e, err := q.ReadErr()
			require.NoError(t, err)
			return e
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		runtime.Gosched()
	}
	t.Fatal("no error entry within 10 s")
	return nil
}

// requireEmpty checks that q has nothing more to report now.
func requireEmpty(t testing.TB, q eq.CompletionQueue) {
	t.Helper()
	var c [1]eq.Completion
	n, err := q.Read(c[:])
	require.Zero(t, n, "unexpected completion %+v", c[0])
	require.ErrorIs(t, err, fi.EAGAIN)
}

// pattern returns n bytes that differ from message to message.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>9)
	}
	return b
}

// TestDynRecvPrefix: each message's first 64 bytes reach the handler as
// its Prefix (all of a shorter one), and the rest lands where the handler
// said: one buffer, three, a buffer shorter than the rest (the tail is
// dropped and the next message is intact), or none (discarded). One
// completion per message, in order, with the handler's context, Len the
// bytes placed, the sender's CQ data, and the cookie in every Arrival.
func TestDynRecvPrefix(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sizes := []int{0, 1, dynPrefix - 1, dynPrefix, dynPrefix + 1, 64 << 10, 4 << 20}
	type plan struct {
		size int
		mode string
		data bool
	}
	var plans []plan
	for _, mode := range []string{"whole", "split", "short", "discard"} {
		for k, n := range sizes {
			plans = append(plans, plan{size: n, mode: mode, data: k%2 == 1})
		}
	}
	h := &recHandler{}
	h.decide = func(i int, a *kit.Arrival) ([][]byte, string, error) {
		r := a.Rest
		switch plans[i].mode {
		case "split":
			b := make([]byte, r)
			return [][]byte{b[:r/3], b[r/3 : r/3], b[r/3 : r/2], b[r/2:]}, ctxName(i), nil
		case "short":
			return [][]byte{make([]byte, r/2)}, ctxName(i), nil
		case "discard":
			return nil, ctxName(i), nil
		}
		return wholeDst(i, a)
	}
	p := connectDyn(t, h, false)
	defer p.close(t)
	msg := p.client.msg()
	payloads := make([][]byte, len(plans))
	for i, pl := range plans {
		payloads[i] = pattern(pl.size, i)
		var err error
		if pl.data {
			err = msg.SendData(payloads[i], nil, uint64(1000+i), fi.AddrUnspec, i)
		} else {
			err = msg.Send(payloads[i], nil, fi.AddrUnspec, i)
		}
		require.NoError(t, err, "send %d", i)
	}
	for i, pl := range plans {
		c := poll(t, p.server.cq)
		a := h.arrival(i)
		n := min(pl.size, dynPrefix)
		require.Equal(t, "conn", a.cookie)
		require.False(t, a.tagged)
		require.Equal(t, payloads[i][:n], a.prefix, "message %d (%d bytes, %s): prefix", i, pl.size, pl.mode)
		require.Equal(t, pl.size-n, a.rest, "message %d: rest", i)
		require.Equal(t, ctxName(i), c.Context, "message %d: context", i)
		flags := fi.FlagRecv | fi.FlagMsg
		if pl.data {
			flags |= fi.FlagRemoteCQData
			require.Equal(t, fi.FlagRemoteCQData, a.flags)
			require.Equal(t, uint64(1000+i), a.data)
			require.Equal(t, uint64(1000+i), c.Data)
		} else {
			require.Zero(t, a.flags)
		}
		require.Equal(t, flags, c.Flags, "message %d: flags", i)
		var placed []byte
		for _, b := range a.dst {
			placed = append(placed, b...)
		}
		want := payloads[i][n:]
		switch pl.mode {
		case "short":
			want = want[:len(want)/2]
		case "discard":
			want = nil
		}
		require.Equal(t, len(want), c.Len, "message %d (%d bytes, %s): Len", i, pl.size, pl.mode)
		require.True(t, bytes.Equal(want, placed), "message %d (%d bytes, %s): the placed bytes differ", i, pl.size, pl.mode)
	}
	for i := range plans {
		c := poll(t, p.client.cq)
		require.Equal(t, i, c.Context)
		require.Equal(t, fi.FlagSend|fi.FlagMsg, c.Flags)
	}
	requireEmpty(t, p.server.cq)
	require.Equal(t, len(plans), h.nCalls())
	var pr [1]byte
	require.ErrorIs(t, p.server.msg().Recv(pr[:], nil, fi.AddrUnspec, nil), fi.ENOSYS, "receives of a dynamic receive endpoint")
}

// TestDynRecvEAGAINResume: a handler's fi.EAGAIN holds the message, and
// the ones behind it, however often progress runs, and is not asked again
// until Resume; then it is, and the messages complete in order. Resume
// from another goroutine reaches a reader blocked in SRead (the held
// message sits in the staging buffer, with nothing in the socket to wake
// for), and a Resume while the handler decides is not lost.
func TestDynRecvEAGAINResume(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name string
		// resume resumes the endpoint after the handler held the first
		// message; nil: the handler calls Resume itself before it answers
		// fi.EAGAIN.
		resume func(t *testing.T, p *pair, dr kit.DynRecv)
	}{
		{"polling", func(t *testing.T, p *pair, dr kit.DynRecv) { dr.Resume() }},
		{"blocked reader", func(t *testing.T, p *pair, dr kit.DynRecv) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
					if n, _ := tcp.BlockedReaders(p.server.cq); n > 0 {
						break
					}
				}
				dr.Resume()
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var c [1]eq.Completion
			n, err := p.server.cq.SRead(ctx, c[:])
			require.NoError(t, err, "SRead after Resume")
			require.Equal(t, 1, n)
			require.Equal(t, ctxName(0), c[0].Context)
			<-done
		}},
		{"during the handler", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			var dr kit.DynRecv
			h := &recHandler{}
			held := false
			h.decide = func(i int, a *kit.Arrival) ([][]byte, string, error) {
				if i == 0 && !held {
					held = true
					if tc.resume == nil {
						dr.Resume()
					}
					return nil, "", fi.EAGAIN
				}
				return wholeDst(i, a)
			}
			p := connectDyn(t, h, false)
			defer p.close(t)
			h.mu.Lock() // the handler reads dr under mu
			dr = p.server.ep.(kit.DynRecv)
			h.mu.Unlock()
			first, second := pattern(5000, 1), pattern(dynPrefix+10, 2)
			require.NoError(t, p.client.msg().Send(first, nil, fi.AddrUnspec, "first"))
			require.NoError(t, p.client.msg().Send(second, nil, fi.AddrUnspec, "second"))
			if tc.resume != nil {
				for deadline := time.Now().Add(10 * time.Second); h.nCalls() == 0; {
					require.True(t, time.Now().Before(deadline), "the handler was never asked")
					_, _ = p.server.cq.Read(nil)
				}
				for range 200 {
					requireEmpty(t, p.server.cq) // runs progress
				}
				require.Equal(t, 1, h.nCalls(), "the handler was asked again without Resume")
				tc.resume(t, p, dr)
			}
			var got []eq.Completion
			if tc.name != "blocked reader" {
				got = append(got, poll(t, p.server.cq))
			}
			got = append(got, poll(t, p.server.cq))
			require.Equal(t, 3, h.nCalls(), "held once, then asked for each message")
			if len(got) == 2 {
				require.Equal(t, ctxName(0), got[0].Context)
			}
			require.Equal(t, ctxName(1), got[len(got)-1].Context)
			a0, a1 := h.arrival(0), h.arrival(1)
			require.Equal(t, first, append(a0.prefix, a0.dst[0]...))
			require.Equal(t, second, append(a1.prefix, a1.dst[0]...))
			requireEmpty(t, p.server.cq)
		})
	}
}

// TestDynRecvDeliveryCompleteACK: a delivery-complete send to an endpoint
// in dynamic receive mode completes once the message is placed, not when
// its header or prefix arrived: while the handler holds it, a message the
// receiver sends back overtakes the ACK (the byte stream orders them), and
// after Resume the ACK comes.
func TestDynRecvDeliveryCompleteACK(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := &recHandler{}
	held := false
	h.decide = func(i int, a *kit.Arrival) ([][]byte, string, error) {
		if !held {
			held = true
			return nil, "", fi.EAGAIN
		}
		return wholeDst(i, a)
	}
	p := connectDyn(t, h, false)
	defer p.close(t)
	payload := pattern(100<<10, 3)
	m := ep.Message{IOV: [][]byte{payload}, Context: "dc"}
	require.NoError(t, p.client.msg().SendMsg(&m, fi.FlagDeliveryComplete))
	for deadline := time.Now().Add(10 * time.Second); h.nCalls() == 0; {
		require.True(t, time.Now().Before(deadline), "the handler was never asked")
		_, _ = p.server.cq.Read(nil)
	}
	// Held: whatever the receiver sends now comes before any ACK.
	mark := make([]byte, 8)
	require.NoError(t, p.client.msg().Recv(mark, nil, fi.AddrUnspec, "marker-rx"))
	require.NoError(t, p.server.msg().Send([]byte("marker"), nil, fi.AddrUnspec, "marker-tx"))
	require.Equal(t, "marker-tx", poll(t, p.server.cq).Context)
	c := poll(t, p.client.cq)
	require.Equal(t, "marker-rx", c.Context, "the delivery-complete send completed while its message was held")
	requireEmpty(t, p.client.cq)

	p.server.ep.(kit.DynRecv).Resume()
	c = poll(t, p.server.cq)
	require.Equal(t, ctxName(0), c.Context)
	require.Equal(t, len(payload)-dynPrefix, c.Len)
	a := h.arrival(0)
	require.Equal(t, payload, append(a.prefix, a.dst[0]...))
	c = poll(t, p.client.cq)
	require.Equal(t, "dc", c.Context, "the delivery-complete send after placement")
	require.Equal(t, fi.FlagSend|fi.FlagMsg, c.Flags)
}

// dynRawPeer connects a plain TCP socket to a server whose endpoint is in
// dynamic receive mode with h; it returns the socket and the server side.
func dynRawPeer(t *testing.T, h kit.DynRecvHandler) (net.Conn, *side, func()) {
	t.Helper()
	f, q, pep, name := listen(t)
	ap, _, err := fi.AddrPortFromSockaddr(name)
	require.NoError(t, err)
	c, err := net.Dial("tcp", ap.String())
	require.NoError(t, err)
	_, err = c.Write(cmRequest(nil))
	require.NoError(t, err)
	ev := waitEvent(t, q)
	cr, ok := ev.(*eq.ConnReq)
	require.True(t, ok, "got %T %v", ev, ev)
	s := &side{}
	openDynSide(t, s, f, q, cr.Info, h, "raw")
	require.NoError(t, s.cm().Accept(nil))
	require.IsType(t, &eq.Connected{}, waitEvent(t, q))
	resp := make([]byte, 32)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = readFull(c, resp)
	require.NoError(t, err)
	return c, s, func() {
		c.Close()
		s.close(t)
		require.NoError(t, pep.Close())
		require.NoError(t, q.Close())
		require.NoError(t, f.Close())
	}
}

// msgHeader is a tcp data header of an op-0 message with size bytes of
// payload (docs/wire-tcp.md §2.4), little-endian.
func msgHeader(size int) []byte {
	b := []byte{3, 0, 0, 0, 0, 0, 16, 0}
	return binary.LittleEndian.AppendUint64(b, uint64(16+size))
}

// TestDynRecvCutMidPayload: a peer that closes its connection in the
// middle of a message: when the handler had placed the message, its
// context completes with an fi.ECANCELED error entry, also when the
// handler held it first and placed it after Resume; when the message was
// still in its prefix nothing completes (the handler gave no context).
// Either way the endpoint reports eq.Shutdown, nothing else completes, and
// no goroutine is left.
func TestDynRecvCutMidPayload(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name   string
		sent   int // payload bytes sent of 1 MiB
		hold   bool
		failed bool
	}{
		{"in the rest", 100 << 10, false, true},
		{"in the prefix", 10, false, false},
		{"held, then resumed", 100 << 10, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			hold := tc.hold
			h := &recHandler{}
			h.decide = func(i int, a *kit.Arrival) ([][]byte, string, error) {
				if hold {
					return nil, "", fi.EAGAIN
				}
				b := make([]byte, a.Rest)
				return [][]byte{b[:1000], b[1000:]}, "cut", nil
			}
			c, s, done := dynRawPeer(t, h)
			defer done()
			_, err := c.Write(append(msgHeader(1<<20), pattern(tc.sent, 4)...))
			require.NoError(t, err)
			if tc.sent > dynPrefix {
				for deadline := time.Now().Add(10 * time.Second); h.nCalls() == 0; {
					require.True(t, time.Now().Before(deadline), "the handler was never asked")
					_, _ = s.cq.Read(nil)
				}
			}
			require.NoError(t, c.Close())
			if tc.hold {
				// A held connection reads nothing, not even the end of the
				// stream (as one waiting for a posted receive), until
				// Resume.
				h.mu.Lock()
				hold = false
				h.mu.Unlock()
				s.ep.(kit.DynRecv).Resume()
			}
			if tc.failed {
				e := pollErr(t, s.cq)
				require.Equal(t, "cut", e.Context)
				require.Equal(t, fi.ECANCELED, e.Err)
				require.Equal(t, fi.FlagRecv|fi.FlagMsg, e.Flags)
			}
			require.IsType(t, &eq.Shutdown{}, waitEvent(t, s.eq))
			requireEmpty(t, s.cq)
			switch {
			case tc.hold:
				require.Equal(t, 2, h.nCalls())
			case tc.failed:
				require.Equal(t, 1, h.nCalls())
			default:
				require.Zero(t, h.nCalls())
			}
		})
	}
}

// TestDynRecvStalled: the stall watch (FI_TCP_STALL_TIMEOUT) covers an
// endpoint in dynamic receive mode as it covers every connection: a peer that stops sending in the middle of a message the
// handler placed, and keeps its connection open, loses it, and the
// message completes with an fi.ETIMEDOUT error entry, while the reader
// waits in SRead.
func TestDynRecvStalled(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_STALL_TIMEOUT", "300")
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := &recHandler{decide: func(i int, a *kit.Arrival) ([][]byte, string, error) {
		return [][]byte{make([]byte, a.Rest)}, "stalled", nil
	}}
	c, s, done := dynRawPeer(t, h)
	defer done()
	_, err := c.Write(append(msgHeader(1<<20), pattern(100<<10, 5)...))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var comp [1]eq.Completion
	_, err = s.cq.SRead(ctx, comp[:])
	require.ErrorIs(t, err, fi.EAVAIL, "the stalled message never failed")
	e, err := s.cq.ReadErr()
	require.NoError(t, err)
	require.Equal(t, "stalled", e.Context)
	require.Equal(t, fi.ETIMEDOUT, e.Err)
	require.IsType(t, &eq.Shutdown{}, waitEvent(t, s.eq))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the peer's connection is closed")
}

// TestTaggedRawForm: an FI_EP_MSG endpoint opened with FI_TAGGED sends
// every form of fi_tsend in rxm's raw tagged form (tcp op 0 with the tag
// flag 0x80, docs/wire-tcp.md §3.4; checked byte for byte on a raw
// socket), and a peer in dynamic receive mode with FI_TAGGED receives
// them: the handler sees the tag and CQ data and no prefix, and the
// completion carries them. fi_trecv is fi.ENOSYS; without FI_TAGGED so is
// fi_tsend.
func TestTaggedRawForm(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("wire", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		info := loInfo(t)
		info.Caps |= fi.CapTagged
		f, err := fi.OpenFabric(info)
		require.NoError(t, err)
		q, err := eq.OpenEQ(f, nil)
		require.NoError(t, err)
		var s side
		openDynSide(t, &s, f, q, info, nil, nil)
		defer func() {
			s.close(t)
			require.NoError(t, q.Close())
			require.NoError(t, f.Close())
		}()
		_, addr, err := fi.SockaddrFromAddrPort(ln.Addr().(*net.TCPAddr).AddrPort())
		require.NoError(t, err)
		require.NoError(t, s.cm().Connect(addr, nil))
		c, err := ln.Accept()
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req := make([]byte, 32)
		_, err = readFull(c, req)
		require.NoError(t, err)
		acc := make([]byte, 32)
		acc[0], acc[1], acc[24] = 3, 1, 1
		_, err = c.Write(acc)
		require.NoError(t, err)
		require.IsType(t, &eq.Connected{}, waitEvent(t, q))
		g := s.ep.(ep.Tagged)
		require.NoError(t, g.TSendData([]byte("hi"), nil, 0x0102030405060708, fi.AddrUnspec, 0x1234, "t"))
		require.NoError(t, g.TInject([]byte("inj"), fi.AddrUnspec, 7))
		got := make([]byte, 34+27)
		_, err = readFull(c, got)
		require.NoError(t, err)
		want := []byte{3, 0, 0x81, 0, 0, 0, 32, 0}
		want = binary.LittleEndian.AppendUint64(want, 34)
		want = binary.LittleEndian.AppendUint64(want, 0x0102030405060708)
		want = binary.LittleEndian.AppendUint64(want, 0x1234)
		want = append(want, "hi"...)
		want = append(want, 3, 0, 0x80, 0, 0, 0, 24, 0)
		want = binary.LittleEndian.AppendUint64(want, 27)
		want = binary.LittleEndian.AppendUint64(want, 7)
		want = append(want, "inj"...)
		require.Equal(t, want, got)
		c0 := poll(t, s.cq)
		require.Equal(t, "t", c0.Context)
		require.Equal(t, fi.FlagSend|fi.FlagTagged, c0.Flags)
	})
	t.Run("to a handler", func(t *testing.T) {
		h := &recHandler{decide: wholeDst}
		p := connectDyn(t, h, true)
		defer p.close(t)
		g := p.client.ep.(ep.Tagged)
		big := pattern(256<<10, 6)
		type sent struct {
			tag, data uint64
			hasData   bool
			payload   []byte
			ctx       any // nil: an inject, no completion
		}
		msgs := []sent{
			{tag: 0x1234, payload: []byte("tsend"), ctx: "tsend"},
			{tag: 2, data: 9, hasData: true, payload: []byte("tsenddata"), ctx: "tsenddata"},
			{tag: 3, payload: []byte("tinject")},
			{tag: 4, data: 5, hasData: true, payload: []byte("tinjectdata")},
			{tag: 5, payload: []byte("tsendv-two"), ctx: "tsendv"},
			{tag: ^uint64(0), data: 7, hasData: true, payload: big, ctx: "tsendmsg"},
			{tag: 6, payload: nil, ctx: "empty"},
		}
		require.NoError(t, g.TSend(msgs[0].payload, nil, fi.AddrUnspec, msgs[0].tag, msgs[0].ctx))
		require.NoError(t, g.TSendData(msgs[1].payload, nil, msgs[1].data, fi.AddrUnspec, msgs[1].tag, msgs[1].ctx))
		require.NoError(t, g.TInject(msgs[2].payload, fi.AddrUnspec, msgs[2].tag))
		require.NoError(t, g.TInjectData(msgs[3].payload, msgs[3].data, fi.AddrUnspec, msgs[3].tag))
		require.NoError(t, g.TSendV([][]byte{msgs[4].payload[:6], msgs[4].payload[6:]}, nil, fi.AddrUnspec, msgs[4].tag, msgs[4].ctx))
		tm := ep.TaggedMessage{IOV: [][]byte{big[:1000], big[1000:]}, Tag: msgs[5].tag, Data: msgs[5].data, Context: msgs[5].ctx}
		require.NoError(t, g.TSendMsg(&tm, fi.FlagRemoteCQData|fi.FlagDeliveryComplete))
		require.NoError(t, g.TSend(nil, nil, fi.AddrUnspec, msgs[6].tag, msgs[6].ctx))
		for i, m := range msgs {
			c := poll(t, p.server.cq)
			a := h.arrival(i)
			require.True(t, a.tagged, "message %d", i)
			require.Equal(t, m.tag, a.tag, "message %d", i)
			require.Empty(t, a.prefix, "message %d: tagged messages have no prefix", i)
			require.Equal(t, len(m.payload), a.rest)
			flags := fi.FlagRecv | fi.FlagTagged
			if m.hasData {
				flags |= fi.FlagRemoteCQData
				require.Equal(t, fi.FlagRemoteCQData, a.flags)
				require.Equal(t, m.data, a.data)
				require.Equal(t, m.data, c.Data)
			}
			require.Equal(t, ctxName(i), c.Context)
			require.Equal(t, flags, c.Flags, "message %d", i)
			require.Equal(t, m.tag, c.Tag, "message %d", i)
			require.Equal(t, len(m.payload), c.Len)
			require.True(t, bytes.Equal(m.payload, a.dst[0]), "message %d: payload", i)
		}
		want := map[any]bool{}
		for _, m := range msgs {
			if m.ctx != nil {
				want[m.ctx] = true
			}
		}
		got := map[any]bool{}
		for range want {
			c := poll(t, p.client.cq) // the delivery-complete one may come last
			require.Equal(t, fi.FlagSend|fi.FlagTagged, c.Flags)
			got[c.Context] = true
		}
		require.Equal(t, want, got)
		requireEmpty(t, p.client.cq)
		err := p.server.ep.(ep.Tagged).TRecv(make([]byte, 8), nil, fi.AddrUnspec, 1, 0, nil)
		require.ErrorIs(t, err, fi.ENOSYS)
		require.Contains(t, err.Error(), "tagged receives")
	})
	t.Run("without FI_TAGGED", func(t *testing.T) {
		p := connectPair(t)
		defer p.close(t)
		g, ok := p.client.ep.(ep.Tagged)
		require.True(t, ok)
		require.ErrorIs(t, g.TSend([]byte("x"), nil, fi.AddrUnspec, 1, nil), fi.ENOSYS)
		require.ErrorIs(t, g.TInject([]byte("x"), fi.AddrUnspec, 1), fi.ENOSYS)
		// A plain endpoint still refuses raw tagged messages (dropping the
		// connection): TestHostilePeerHeaders.
	})
}

// alive is the liveness test tcp's MSG endpoints export for rxm.
type alive interface{ Alive() bool }

// TestAlive: an endpoint is alive while it connects, while it was opened
// for a request and not yet accepted, and while connected; once the peer
// is gone (even before the endpoint's progress read the end of the
// stream: an endpoint in dynamic receive mode that nobody polls), after
// its own Shutdown, and before any connection attempt, it is not.
func TestAlive(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	f, q, pep, name := listenInfo(t, info)
	defer func() {
		require.NoError(t, pep.Close())
		require.NoError(t, q.Close())
		require.NoError(t, f.Close())
	}()
	cf, err := fi.OpenFabric(info)
	require.NoError(t, err)
	cq, err := eq.OpenEQ(cf, nil)
	require.NoError(t, err)
	var cli, srv side
	openDynSide(t, &cli, cf, cq, info, nil, nil)
	require.False(t, cli.ep.(alive).Alive(), "before Connect")
	require.NoError(t, cli.cm().Connect(name, nil))
	require.True(t, cli.ep.(alive).Alive(), "connecting")
	cr := waitEvent(t, q).(*eq.ConnReq)
	h := &recHandler{decide: wholeDst}
	openDynSide(t, &srv, f, q, cr.Info, h, nil)
	require.True(t, srv.ep.(alive).Alive(), "opened for the request")
	require.True(t, cli.ep.(alive).Alive(), "connecting, request not yet accepted")
	require.NoError(t, srv.cm().Accept(nil))
	require.True(t, srv.ep.(alive).Alive(), "accepted")
	require.IsType(t, &eq.Connected{}, waitEvent(t, cq))
	require.True(t, cli.ep.(alive).Alive(), "connected")

	// The client goes; the server reads none of its queues.
	require.NoError(t, cli.ep.Close())
	require.False(t, cli.ep.(alive).Alive(), "closed")
	for deadline := time.Now().Add(10 * time.Second); srv.ep.(alive).Alive(); runtime.Gosched() {
		require.True(t, time.Now().Before(deadline), "the server never saw its peer go")
	}
	require.NoError(t, cli.cq.Close())
	require.NoError(t, cli.domain.Close())
	require.NoError(t, cq.Close())
	require.NoError(t, cf.Close())
	for {
		ev := waitEvent(t, q)
		if _, ok := ev.(*eq.Connected); ok {
			continue
		}
		require.IsType(t, &eq.Shutdown{}, ev)
		break
	}
	require.False(t, srv.ep.(alive).Alive(), "after its eq.Shutdown")
	srv.close(t)

	// Its own Shutdown.
	p := connectPair(t)
	defer p.close(t)
	require.True(t, p.client.ep.(alive).Alive())
	require.NoError(t, p.client.cm().Shutdown(0))
	require.False(t, p.client.ep.(alive).Alive(), "after Shutdown")
}

// TestConnTimeout: the fabric tells FI_TCP_CONN_TIMEOUT (rxm bounds its
// retries of refused connections with it).
func TestConnTimeout(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{{"", 30 * time.Second}, {"1234", 1234 * time.Millisecond}} {
		if tc.env != "" {
			t.Setenv("FI_TCP_CONN_TIMEOUT", tc.env)
		}
		f, err := fi.OpenFabric(loInfo(t))
		require.NoError(t, err)
		ct, ok := f.(interface{ ConnTimeout() time.Duration })
		require.True(t, ok, "%T has no ConnTimeout", f)
		require.Equal(t, tc.want, ct.ConnTimeout())
		require.NoError(t, f.Close())
	}
}

// allocHandler places every message in one fixed buffer, without
// allocating.
type allocHandler struct {
	buf  [][]byte
	ctx  *int
	seen atomic.Int64
}

func (h *allocHandler) Arrived(a *kit.Arrival) ([][]byte, any, error) {
	h.seen.Add(int64(len(a.Prefix)))
	return h.buf, h.ctx, nil
}

// TestDynRecvDoesNotAllocate: the receive path of dynamic receive mode
// (prefix, handler, placement, completion), untagged and raw tagged,
// allocates nothing, nor do the raw tagged sends.
func TestDynRecvDoesNotAllocate(t *testing.T) {
	cleanEnv(t)
	ctx := new(int)
	h := &allocHandler{buf: [][]byte{make([]byte, 256)}, ctx: ctx}
	p := connectDyn(t, h, true)
	defer p.close(t)
	msg, g := p.client.msg(), p.client.ep.(ep.Tagged)
	buf := make([]byte, 2*dynPrefix)
	var comp [4]eq.Completion
	round := func() {
		if err := msg.Send(buf, nil, fi.AddrUnspec, ctx); err != nil {
			panic(err)
		}
		if err := g.TSend(buf[:dynPrefix], nil, fi.AddrUnspec, 9, ctx); err != nil {
			panic(err)
		}
		for got := 0; got < 2; {
			n, _ := p.server.cq.Read(comp[:])
			got += n
		}
		for got := 0; got < 2; {
			n, _ := p.client.cq.Read(comp[:])
			got += n
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(200, round))
	require.Equal(t, int64(202*dynPrefix), h.seen.Load(), "every untagged message's prefix (AllocsPerRun runs round once more)")
}

// TestSetDynRecvChecks: SetDynRecv refuses a nil handler and a prefix
// length out of range (fi.EINVAL), and an endpoint with receives posted
// or already enabled (fi.EOPBADSTATE).
func TestSetDynRecvChecks(t *testing.T) {
	cleanEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	info := loInfo(t)
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	defer f.Close()
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	defer d.Close()
	h := &recHandler{decide: wholeDst}
	x, err := ep.Open(d, info)
	require.NoError(t, err)
	dr := x.(kit.DynRecv)
	require.ErrorIs(t, dr.SetDynRecv(nil, nil, 0), fi.EINVAL)
	require.ErrorIs(t, dr.SetDynRecv(h, nil, -1), fi.EINVAL)
	require.ErrorIs(t, dr.SetDynRecv(h, nil, 4097), fi.EINVAL)
	require.NoError(t, x.(ep.Msg).Recv(make([]byte, 8), nil, fi.AddrUnspec, "posted"))
	require.ErrorIs(t, dr.SetDynRecv(h, nil, 64), fi.EOPBADSTATE)
	require.NoError(t, x.Close())

	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	defer q.Close()
	var s side
	openDynSide(t, &s, f, q, info, nil, nil)
	require.ErrorIs(t, s.ep.(kit.DynRecv).SetDynRecv(h, nil, 64), fi.EOPBADSTATE, "after Enable")
	s.close(t)
}

// TestDynRecvHandlerBreaks: a handler that answers with an error other
// than fi.EAGAIN, or with more buffers than the iov limit, breaks the
// connection (eq.Shutdown, nothing completes); so does a raw tagged
// message to an endpoint in dynamic receive mode without FI_TAGGED.
func TestDynRecvHandlerBreaks(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name   string
		tagged bool
		answer func(a *kit.Arrival) ([][]byte, string, error)
	}{
		{"error", false, func(*kit.Arrival) ([][]byte, string, error) { return nil, "", fi.EIO }},
		{"five buffers", false, func(a *kit.Arrival) ([][]byte, string, error) {
			return make([][]byte, 5), "five", nil
		}},
		{"tagged without FI_TAGGED", true, func(a *kit.Arrival) ([][]byte, string, error) { return nil, "tagged", nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			h := &recHandler{decide: func(_ int, a *kit.Arrival) ([][]byte, string, error) { return tc.answer(a) }}
			c, s, done := dynRawPeer(t, h)
			defer done()
			wire := append(msgHeader(100), pattern(100, 7)...)
			if tc.tagged {
				wire = []byte{3, 0, 0x80, 0, 0, 0, 24, 0}
				wire = binary.LittleEndian.AppendUint64(wire, 24+3)
				wire = binary.LittleEndian.AppendUint64(wire, 5)
				wire = append(wire, "tag"...)
			}
			_, err := c.Write(wire)
			require.NoError(t, err)
			require.IsType(t, &eq.Shutdown{}, waitEvent(t, s.eq))
			requireEmpty(t, s.cq)
			if tc.tagged {
				require.Zero(t, h.nCalls())
			}
		})
	}
}
