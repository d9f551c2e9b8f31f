//go:build linux

package udp_test

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// noLeaks checks, after the test's cleanups closed its objects, that no
// goroutine the test started is left.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// pair returns two enabled endpoints on 127.0.0.1, each with the other in
// its AV, and the AV address of the peer on each side.
func pair(t testing.TB) (a, b *node, toB, toA fi.Addr) {
	t.Helper()
	cleanEnv(t)
	a, b = newNode(t, loInfo(t, 0), false), newNode(t, loInfo(t, 0), false)
	return a, b, a.insert(t, b.name), b.insert(t, a.name)
}

// TestSendRecv sends one datagram with each send call; the receiver gets
// the payload as is, its length, and with FI_SOURCE the sender's fi.Addr.
func TestSendRecv(t *testing.T) {
	noLeaks(t)
	a, b, toB, toA := pair(t)
	msg := &ep.Message{Addr: toB, Context: "sendmsg"}
	tests := []struct {
		name string
		send func(p []byte) error
		ctx  any // the send's completion context; nil: no completion
	}{
		{"send", func(p []byte) error { return a.msg.Send(p, nil, toB, "send") }, "send"},
		{"sendv", func(p []byte) error { return a.msg.SendV([][]byte{p[:3], nil, p[3:]}, nil, toB, "sendv") }, "sendv"},
		{"sendmsg", func(p []byte) error { msg.IOV = [][]byte{p}; return a.msg.SendMsg(msg, fi.FlagTransmitComplete) }, "sendmsg"},
		{"inject", func(p []byte) error { return a.msg.Inject(p, toB) }, nil},
	}
	// A receive of one buffer and one of several take different system
	// calls (recvfrom, recvmsg); both must report the source.
	recvs := []struct {
		name string
		post func(buf []byte) error
	}{
		{"recv", func(buf []byte) error { return b.msg.Recv(buf, nil, fi.AddrUnspec, "rx") }},
		{"recvv", func(buf []byte) error { return b.msg.RecvV([][]byte{buf[:5], nil, buf[5:]}, nil, fi.AddrUnspec, "rx") }},
	}
	for _, tt := range tests {
		for _, rx := range recvs {
			t.Run(tt.name+"/"+rx.name, func(t *testing.T) {
				payload := []byte("payload of " + tt.name)
				buf := make([]byte, 100)
				require.NoError(t, rx.post(buf))
				require.NoError(t, tt.send(payload))
				c, src, cerr := readOne(t, b.rxcq)
				require.Nil(t, cerr)
				require.Equal(t, "rx", c.Context)
				require.Equal(t, len(payload), c.Len)
				require.Equal(t, fi.FlagRecv|fi.FlagMsg, c.Flags)
				require.Equal(t, payload, buf[:c.Len], "no header: the payload as sent")
				require.Equal(t, toA, src, "FI_SOURCE: the sender's address in the AV")
				if tt.ctx != nil {
					c, _, cerr := readOne(t, a.txcq)
					require.Nil(t, cerr)
					require.Equal(t, tt.ctx, c.Context)
					require.Equal(t, fi.FlagSend|fi.FlagMsg, c.Flags)
				}
				var none [1]eq.Completion
				_, err := a.txcq.Read(none[:])
				require.ErrorIs(t, err, fi.EAGAIN, "one completion per send, none for inject")
			})
		}
	}
}

// TestSourceNotInAV: a datagram from a sender the AV lacks reports
// fi.AddrUnspec (FI_ADDR_NOTAVAIL).
func TestSourceNotInAV(t *testing.T) {
	cleanEnv(t)
	a, b := newNode(t, loInfo(t, 0), false), newNode(t, loInfo(t, 0), false)
	toB := a.insert(t, b.name)
	require.NoError(t, b.msg.Recv(make([]byte, 8), nil, fi.AddrUnspec, nil))
	require.NoError(t, a.msg.Inject([]byte("x"), toB))
	_, src, cerr := readOne(t, b.rxcq)
	require.Nil(t, cerr)
	require.Equal(t, fi.AddrUnspec, src)
	// Once inserted, the same sender is found (the cache follows the AV).
	toA := b.insert(t, a.name)
	require.NoError(t, b.msg.Recv(make([]byte, 8), nil, fi.AddrUnspec, nil))
	require.NoError(t, a.msg.Inject([]byte("y"), toB))
	_, src, cerr = readOne(t, b.rxcq)
	require.Nil(t, cerr)
	require.Equal(t, toA, src)
}

// TestTruncation: a datagram longer than the posted receive fills it and
// completes with ETRUNC, OLen the bytes lost; the next receive gets the
// next datagram.
func TestTruncation(t *testing.T) {
	a, b, toB, _ := pair(t)
	small := make([]byte, 4)
	require.NoError(t, b.msg.RecvV([][]byte{small[:2], small[2:]}, nil, fi.AddrUnspec, "small"))
	require.NoError(t, a.msg.Inject([]byte("0123456789"), toB))
	_, _, cerr := readOne(t, b.rxcq)
	require.NotNil(t, cerr)
	require.ErrorIs(t, cerr, fi.ETRUNC)
	require.Equal(t, "small", cerr.Context)
	require.Equal(t, 4, cerr.Len)
	require.Equal(t, 6, cerr.OLen)
	require.Equal(t, "0123", string(small))

	buf := make([]byte, 16)
	require.NoError(t, b.msg.Recv(buf, nil, fi.AddrUnspec, "next"))
	require.NoError(t, a.msg.Inject([]byte("ok"), toB))
	c, _, cerr := readOne(t, b.rxcq)
	require.Nil(t, cerr)
	require.Equal(t, "ok", string(buf[:c.Len]))
}

// TestDataErrors checks the data calls' refusals: sizes, flags, unknown
// addresses, CQ data, and state.
func TestDataErrors(t *testing.T) {
	a, b, toB, _ := pair(t)
	big := make([]byte, 1473)
	require.ErrorIs(t, a.msg.Send(big, nil, toB, nil), fi.EMSGSIZE)
	require.ErrorIs(t, a.msg.Inject(big, toB), fi.EMSGSIZE)
	require.NoError(t, b.msg.Recv(make([]byte, 1472), nil, fi.AddrUnspec, nil))
	require.NoError(t, a.msg.Inject(big[:1472], toB), "max_msg_size is allowed")
	c, _, cerr := readOne(t, b.rxcq)
	require.Nil(t, cerr)
	require.Equal(t, 1472, c.Len)

	require.ErrorIs(t, a.msg.Send([]byte("x"), nil, toB+7, nil), fi.EINVAL, "not in the AV")
	require.ErrorIs(t, a.msg.SendData([]byte("x"), nil, 1, toB, nil), fi.ENOSYS, "cq_data_size is 0")
	require.ErrorIs(t, a.msg.InjectData([]byte("x"), 1, toB), fi.ENOSYS)
	require.ErrorIs(t, a.msg.SendMsg(&ep.Message{IOV: [][]byte{{1}}, Addr: toB}, fi.FlagRemoteCQData), fi.EBADFLAGS)
	require.ErrorIs(t, a.msg.SendMsg(&ep.Message{IOV: [][]byte{{1}}, Addr: 0}, fi.FlagMulticast), fi.EINVAL, "no group joined")
	require.ErrorIs(t, a.msg.SendV(make([][]byte, 5), nil, toB, nil), fi.EINVAL, "iov_limit is 4")
	require.ErrorIs(t, b.msg.RecvMsg(&ep.Message{IOV: [][]byte{make([]byte, 4)}}, fi.FlagMulticast), fi.EBADFLAGS)

	d := newDisabled(t)
	require.ErrorIs(t, d.(ep.Msg).Recv(make([]byte, 4), nil, fi.AddrUnspec, nil), fi.EOPBADSTATE)
	require.ErrorIs(t, d.(ep.Msg).Inject([]byte("x"), 0), fi.EOPBADSTATE)
	require.NoError(t, d.Close())
	require.ErrorIs(t, d.(ep.Msg).Inject([]byte("x"), 0), fi.EBADF)
	require.ErrorIs(t, d.Close(), fi.EBADF)
}

// newDisabled opens an endpoint with no bindings.
func newDisabled(t testing.TB) ep.Endpoint {
	info := loInfo(t, 0)
	f, err := fi.OpenFabric(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	e, err := ep.Open(d, info)
	require.NoError(t, err)
	require.ErrorIs(t, e.Enable(), fi.ENOCQ)
	return e
}

// TestNames: Enable binds the SetName address (an ephemeral port for port
// 0); SetName after Enable is refused.
func TestNames(t *testing.T) {
	cleanEnv(t)
	info := loInfo(t, 0)
	n := newNode(t, info, false)
	ap, f, err := fi.AddrPortFromSockaddr(n.name)
	require.NoError(t, err)
	require.Equal(t, fi.FormatSockaddrIn, f)
	require.Equal(t, "127.0.0.1", ap.Addr().String())
	require.NotZero(t, ap.Port(), "an ephemeral port")
	require.ErrorIs(t, n.ep.(ep.Namer).SetName(n.name), fi.EOPBADSTATE)
	small := make([]byte, 2)
	l, err := n.ep.(ep.Namer).Name(small)
	require.ErrorIs(t, err, fi.ETOOSMALL)
	require.Equal(t, 16, l)

	// A second endpoint cannot take the same address.
	info2 := info.Clone()
	info2.SrcAddr = n.name
	f2, err := fi.OpenFabric(info2)
	require.NoError(t, err)
	defer f2.Close()
	d2, err := f2.OpenDomain(info2)
	require.NoError(t, err)
	defer d2.Close()
	e2, err := ep.Open(d2, info2)
	require.NoError(t, err)
	defer e2.Close()
	cq, err := eq.OpenCQ(d2, nil)
	require.NoError(t, err)
	defer cq.Close()
	av, err := fi.OpenAV(d2, nil)
	require.NoError(t, err)
	defer av.Close()
	require.NoError(t, e2.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, e2.Bind(av, 0))
	require.ErrorIs(t, e2.Enable(), fi.EADDRINUSE)
}

// TestSReadWakes: a reader blocked in SRead (no polling) gets the
// datagram through the background progress.
func TestSReadWakes(t *testing.T) {
	noLeaks(t)
	a, b, toB, _ := pair(t)
	buf := make([]byte, 8)
	require.NoError(t, b.msg.Recv(buf, nil, fi.AddrUnspec, "rx"))
	done := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // let the reader block first
		done <- a.msg.Inject([]byte("wake"), toB)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var c [1]eq.Completion
	n, err := b.rxcq.SRead(ctx, c[:])
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "wake", string(buf[:c[0].Len]))
	require.NoError(t, <-done)
}

// TestCancel: a posted receive cancelled, or left at Close, completes
// with ECANCELED.
func TestCancel(t *testing.T) {
	_, b, _, _ := pair(t)
	require.NoError(t, b.msg.Recv(make([]byte, 8), nil, fi.AddrUnspec, "one"))
	require.NoError(t, b.msg.Recv(make([]byte, 8), nil, fi.AddrUnspec, "two"))
	require.NoError(t, b.ep.Cancel("two"))
	require.ErrorIs(t, b.ep.Cancel("two"), fi.ENOENT)
	_, _, cerr := readOne(t, b.rxcq)
	require.ErrorIs(t, cerr, fi.ECANCELED)
	require.Equal(t, "two", cerr.Context)
}

// TestZeroAllocs: inject, post, and reap a completion allocate nothing.
func TestZeroAllocs(t *testing.T) {
	a, b, toB, _ := pair(t)
	buf, payload := make([]byte, 64), make([]byte, 64)
	ctx := &struct{ x int }{}
	var c [1]eq.Completion
	var src [1]fi.Addr
	allocs := testing.AllocsPerRun(200, func() {
		if err := b.msg.Recv(buf, nil, fi.AddrUnspec, ctx); err != nil {
			panic(err)
		}
		if err := a.msg.Inject(payload, toB); err != nil {
			panic(err)
		}
		for {
			if n, _ := b.rxcq.ReadFrom(c[:], src[:]); n == 1 {
				return
			}
		}
	})
	require.Zero(t, allocs)
}
