package fabnet_test

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gofabric/gofabric/fabnet"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// connPair returns a connected tcp client and server, closed at cleanup.
func connPair(t testing.TB) (client, server *fabnet.Conn) {
	t.Helper()
	ctx := ctxFor(t)
	ln := listen(t, nil)
	accepted := make(chan *fabnet.Conn, 1)
	go func() {
		c, _ := ln.Accept(ctx)
		accepted <- c
	}()
	client, err := fabnet.Dial(ctx, "tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() { _ = server.Close() })
	return client, server
}

// rdmPair returns two RDM endpoints of prov that know each other: a's
// fi.Addr for b, and b's for a. Closed at cleanup.
func rdmPair(t testing.TB, prov string, cfg *fabnet.EndpointConfig) (a, b *fabnet.Endpoint, ab, ba fi.Addr) {
	t.Helper()
	ctx := ctxFor(t)
	open := func() *fabnet.Endpoint {
		var e *fabnet.Endpoint
		var err error
		node, service := "", ""
		if prov == "tcp" {
			node, service = "127.0.0.1", "0"
		}
		if cfg == nil {
			e, err = fabnet.OpenRDM(ctx, prov, node, service)
		} else {
			c := *cfg
			if service != "" {
				c.Flags = fi.FlagSource
			}
			e, err = fabnet.NewEndpoint(ctx, prov, node, service, &c)
		}
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	a, b = open(), open()
	name := func(e *fabnet.Endpoint) []byte {
		n, err := e.Name()
		require.NoError(t, err)
		return n
	}
	var err error
	ab, err = a.Insert(name(b))
	require.NoError(t, err)
	ba, err = b.Insert(name(a))
	require.NoError(t, err)
	return a, b, ab, ba
}

// TestRecvDeadline: a receive whose deadline passes returns the
// context's error with its buffer given back (the next message goes to
// the next receive, the abandoned buffer stays untouched); one whose
// deadline does not pass gets its message; a context already ended
// posts nothing.
func TestRecvDeadline(t *testing.T) {
	noLeaks(t)
	t.Run("tcp-msg", func(t *testing.T) {
		c, s := connPair(t)
		recvDeadline(t, func(ctx context.Context, buf []byte) error { return c.Send(ctx, buf) }, s.Recv)
	})
	for _, prov := range []string{"shm", "tcp"} {
		t.Run(prov+"-rdm", func(t *testing.T) {
			a, b, ab, _ := rdmPair(t, prov, nil)
			recvDeadline(t, func(ctx context.Context, buf []byte) error { return a.SendTo(ctx, buf, ab) }, b.Recv)
		})
	}
}

func recvDeadline(t *testing.T, send func(context.Context, []byte) error, recv func(context.Context, []byte) (int, error)) {
	t.Helper()
	ctx := ctxFor(t)
	abandoned := make([]byte, 16)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err := recv(short, abandoned)
	cancel()
	requireDeadline(t, err)

	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	requireDeadline(t, send(expired, []byte("never")))
	_, err = recv(expired, make([]byte, 16))
	requireDeadline(t, err)

	require.NoError(t, send(ctx, []byte("after")))
	buf := make([]byte, 16)
	n, err := recv(ctx, buf)
	require.NoError(t, err)
	require.Equal(t, "after", string(buf[:n]), "the message sent with an expired context went out")
	require.Equal(t, make([]byte, 16), abandoned, "the abandoned receive's buffer")
}

// TestCloseWhileRecv: Close wakes a receive that waits, which returns an
// error matching net.ErrClosed, on a connection and on RDM endpoints
// that poll or sleep.
func TestCloseWhileRecv(t *testing.T) {
	noLeaks(t)
	check := func(t *testing.T, recv func(context.Context, []byte) (int, error), closer func() error) {
		errc := make(chan error, 1)
		go func() {
			_, err := recv(context.Background(), make([]byte, 16))
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond) // let it block, mostly
		require.NoError(t, closer())
		err := <-errc
		require.ErrorIs(t, err, net.ErrClosed)
		require.ErrorIs(t, err, fi.EBADF)
		_, err = recv(context.Background(), make([]byte, 16))
		require.ErrorIs(t, err, net.ErrClosed, "after Close")
	}
	t.Run("tcp-msg", func(t *testing.T) {
		_, s := connPair(t)
		check(t, s.Recv, s.Close)
	})
	for _, prov := range []string{"shm", "tcp"} {
		for _, spin := range []time.Duration{0, -1} {
			t.Run(prov+"-rdm-spin"+spin.String(), func(t *testing.T) {
				_, b, _, _ := rdmPair(t, prov, &fabnet.EndpointConfig{Spin: spin})
				check(t, b.Recv, b.Close)
			})
		}
	}
}

// TestSleepingWait: with no polling (Spin < 0) the calls sleep in the
// queue's blocking read at once, and wake for a message sent later; the
// source comes with it (fi_cq_sreadfrom) where the endpoint has
// FI_SOURCE.
func TestSleepingWait(t *testing.T) {
	noLeaks(t)
	for _, prov := range []string{"shm", "tcp"} {
		t.Run(prov, func(t *testing.T) {
			h := &fi.Info{Caps: fi.CapMsg | fi.CapSource, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}}
			a, b, ab, ba := rdmPair(t, prov, &fabnet.EndpointConfig{Spin: -1, Hints: h})
			ctx := ctxFor(t)
			go func() {
				time.Sleep(20 * time.Millisecond)
				_ = a.SendTo(ctx, []byte("later"), ab)
			}()
			buf := make([]byte, 16)
			n, src, err := b.RecvFrom(ctx, buf)
			require.NoError(t, err)
			require.Equal(t, "later", string(buf[:n]))
			require.Equal(t, ba, src, "the sender's fi.Addr")
		})
	}
}

// TestTaggedAndRMA: TSend/TRecv match tags under the ignore mask, and
// Write/Read reach registered memory, on RDM endpoints and on a
// connection.
func TestTaggedAndRMA(t *testing.T) {
	noLeaks(t)
	for _, prov := range []string{"shm", "tcp"} {
		t.Run(prov+"-rdm", func(t *testing.T) {
			a, b, ab, _ := rdmPair(t, prov, nil)
			ctx := ctxFor(t)
			require.NoError(t, a.TSend(ctx, []byte("tagged"), ab, 0x1234))
			buf := make([]byte, 16)
			n, tag, err := b.TRecv(ctx, buf, fi.AddrUnspec, 0x1200, 0xff)
			require.NoError(t, err)
			require.Equal(t, "tagged", string(buf[:n]))
			require.Equal(t, uint64(0x1234), tag)
			rma(t, ctx, a, b, ab)
		})
	}
	t.Run("tcp-msg", func(t *testing.T) {
		c, s := connPair(t)
		rma(t, ctxFor(t), c.Endpoint, s.Endpoint, fi.AddrUnspec)
	})
}

// rma writes into and reads from memory b registers, from a, while b
// waits in Recv for the message that says a is done: with manual
// progress (shm, tcp;ofi_rxm) the target answers RMA only while a call
// reads its queues. The memory is looked at once that Recv returned,
// which orders the target's writes before the look.
func rma(t *testing.T, ctx context.Context, a, b *fabnet.Endpoint, ab fi.Addr) {
	t.Helper()
	mem := []byte("....................")
	mr, err := fi.RegisterMR(b.Domain, &fi.MRAttr{Buf: mem, Access: fi.AccessRemoteWrite | fi.AccessRemoteRead, RequestedKey: 42}, 0)
	require.NoError(t, err)
	defer mr.Close()
	base := uint64(0)
	if b.Info.DomainAttr.MRMode&fi.MRModeVirtAddr != 0 {
		base = uint64(uintptr(unsafe.Pointer(&mem[0])))
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Recv(ctx, make([]byte, 8))
		done <- err
	}()
	require.NoError(t, a.Write(ctx, []byte("written"), ab, base+6, mr.Key()))
	got := make([]byte, 7)
	require.NoError(t, a.Read(ctx, got, ab, base+6, mr.Key()))
	require.Equal(t, "written", string(got))
	require.NoError(t, a.SendTo(ctx, []byte("done"), ab))
	require.NoError(t, <-done)
	require.Equal(t, "......written.......", string(mem))
}

// TestZeroAllocs: in steady state the blocking calls allocate nothing:
// a round trip of Send and Recv on a tcp connection, and of SendTo,
// RecvFrom, TSend, TRecv, Write and Read on shm and tcp RDM endpoints;
// 64-byte messages (injected) and, over tcp, 1 KiB ones (posted, and
// waited for).
func TestZeroAllocs(t *testing.T) {
	ctx := ctxFor(t)
	msg, buf := make([]byte, 64), make([]byte, 1024)
	big := make([]byte, 1024)
	check := func(t *testing.T, round func()) {
		for range 10 {
			round()
		}
		require.Zero(t, testing.AllocsPerRun(200, round))
	}
	t.Run("tcp-msg", func(t *testing.T) {
		c, s := connPair(t)
		check(t, func() {
			require.NoError(t, c.Send(ctx, msg))
			_, err := s.Recv(ctx, buf)
			require.NoError(t, err)
			require.NoError(t, s.Send(ctx, msg))
			_, err = c.Recv(ctx, buf)
			require.NoError(t, err)
			require.NoError(t, c.Send(ctx, big))
			_, err = s.Recv(ctx, buf)
			require.NoError(t, err)
		})
	})
	for _, prov := range []string{"shm", "tcp"} {
		t.Run(prov+"-rdm", func(t *testing.T) {
			a, b, ab, _ := rdmPair(t, prov, nil)
			mem := make([]byte, 64)
			mr, err := fi.RegisterMR(b.Domain, &fi.MRAttr{Buf: mem, Access: fi.AccessRemoteWrite | fi.AccessRemoteRead, RequestedKey: 7}, 0)
			require.NoError(t, err)
			defer mr.Close()
			base := uint64(0)
			if b.Info.DomainAttr.MRMode&fi.MRModeVirtAddr != 0 {
				base = uint64(uintptr(unsafe.Pointer(&mem[0])))
			}
			key := mr.Key()
			// The target of RMA answers while its queues are read (manual
			// progress): a goroutine reads them without taking entries.
			var stop atomic.Bool
			polled := make(chan struct{})
			go func() {
				defer close(polled)
				for !stop.Load() {
					_, _ = b.TxCQ.Read(nil)
					runtime.Gosched()
				}
			}()
			defer func() {
				stop.Store(true)
				<-polled
			}()
			check(t, func() {
				require.NoError(t, a.SendTo(ctx, msg, ab))
				_, _, err := b.RecvFrom(ctx, buf)
				require.NoError(t, err)
				require.NoError(t, a.TSend(ctx, msg, ab, 9))
				_, _, err = b.TRecv(ctx, buf, fi.AddrUnspec, 9, 0)
				require.NoError(t, err)
				require.NoError(t, a.Write(ctx, msg, ab, base, key))
				require.NoError(t, a.Read(ctx, buf[:64], ab, base, key))
				if prov == "tcp" { // eager: complete once written
					require.NoError(t, a.SendTo(ctx, big, ab))
					_, err = b.Recv(ctx, buf)
					require.NoError(t, err)
				}
			})
		})
	}
}
