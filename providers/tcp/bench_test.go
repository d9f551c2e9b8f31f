//go:build linux

package tcp_test

import (
	"context"

	"github.com/gofabric/gofabric/ep"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// BenchmarkPingPong measures one round trip of a message between two
// connected endpoints of one process, each side busy-polling its CQ as
// fi_pingpong does (64 B: injected, no send completion).
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{64, 4096, 1 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			cleanEnv(b)
			p := connectPair(b)
			defer p.close(b)
			b.SetBytes(int64(2 * size))
			done := make(chan struct{})
			go func() {
				defer close(done)
				echo(p.server, size, b.N)
			}()
			echo(p.client, size, -b.N)
			<-done
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return "1MiB"
	case n >= 1<<10:
		return "4KiB"
	}
	return "64B"
}

// echo runs n round trips on s: the client (n < 0) sends first.
func echo(s side, size, n int) {
	buf := make([]byte, size)
	rbuf := make([]byte, size)
	var comp [1]eq.Completion
	m := s.msg()
	client := n < 0
	if client {
		n = -n
	}
	wait := func() {
		for {
			if k, _ := s.cq.Read(comp[:]); k > 0 {
				return
			}
		}
	}
	send := func() {
		if size < 128 {
			for m.Inject(buf, fi.AddrUnspec) != nil {
			}
			return
		}
		for m.Send(buf, nil, fi.AddrUnspec, nil) != nil {
		}
		wait()
	}
	_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
	for range n {
		if client {
			send()
			wait()
			_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
		} else {
			wait()
			_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
			send()
		}
	}
}

// BenchmarkRDMPingPong is BenchmarkPingPong over RDM endpoints
// (tcp;ofi_rxm): 64 B eager (not injected: rxm's inject size is 64, as in
// fi_pingpong), 1 MiB by rendezvous.
func BenchmarkRDMPingPong(b *testing.B) {
	for _, size := range []int{64, 1 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			cleanEnv(b)
			x, y, fx, fy := rdmPair(b)
			b.SetBytes(int64(2 * size))
			done := make(chan struct{})
			go func() {
				defer close(done)
				rdmEcho(y, fy, size, b.N)
			}()
			rdmEcho(x, fx, size, -b.N)
			<-done
		})
	}
}

// rdmEcho runs n round trips from s to dest: the client (n < 0) sends
// first.
func rdmEcho(s *rdmSide, dest fi.Addr, size, n int) {
	buf := make([]byte, size)
	rbuf := make([]byte, size)
	var comp [1]eq.Completion
	m := s.e.(ep.Msg)
	client := n < 0
	if client {
		n = -n
	}
	wait := func() {
		for {
			if k, _ := s.cq.Read(comp[:]); k > 0 {
				return
			}
		}
	}
	send := func() {
		for m.Send(buf, nil, dest, nil) != nil {
			_, _ = s.cq.Read(nil)
		}
		wait()
	}
	_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
	for range n {
		if client {
			send()
			wait()
			_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
		} else {
			wait()
			_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
			send()
		}
	}
}

// BenchmarkRDMPingPongSRead is BenchmarkRDMPingPong with both sides
// waiting in CQ.SRead instead of polling: the background progress moves
// every byte (64 B eager, 1 MiB by rendezvous).
func BenchmarkRDMPingPongSRead(b *testing.B) {
	for _, size := range []int{64, 1 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			cleanEnv(b)
			x, y, fx, fy := rdmPair(b)
			b.SetBytes(int64(2 * size))
			done := make(chan struct{})
			go func() {
				defer close(done)
				rdmEchoSRead(b, y, fy, size, b.N)
			}()
			rdmEchoSRead(b, x, fx, size, -b.N)
			<-done
		})
	}
}

// rdmEchoSRead is rdmEcho waiting in SRead.
func rdmEchoSRead(b *testing.B, s *rdmSide, dest fi.Addr, size, n int) {
	ctx := context.Background()
	buf := make([]byte, size)
	rbuf := make([]byte, size)
	var comp [1]eq.Completion
	m := s.e.(ep.Msg)
	client := n < 0
	if client {
		n = -n
	}
	wait := func() {
		if _, err := s.cq.SRead(ctx, comp[:]); err != nil {
			b.Error(err)
		}
	}
	send := func() {
		for m.Send(buf, nil, dest, nil) != nil {
			_, _ = s.cq.Read(nil)
		}
		wait()
	}
	_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
	for range n {
		if client {
			send()
			wait()
			_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
		} else {
			wait()
			_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
			send()
		}
	}
}

// BenchmarkPingPongOneThread is BenchmarkPingPong with both sides driven
// by one goroutine in turn: the cost of the data path (post, progress,
// completion) without the scheduling of two busy-polling threads, which
// dominates BenchmarkPingPong on a loaded machine.
func BenchmarkPingPongOneThread(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			cleanEnv(b)
			p := connectPair(b)
			defer p.close(b)
			b.SetBytes(int64(2 * size))
			buf := make([]byte, size)
			rbuf := make([]byte, size)
			var comp [1]eq.Completion
			hop := func(from, to side) {
				_ = to.msg().Recv(rbuf, nil, fi.AddrUnspec, nil)
				if size < 128 {
					for from.msg().Inject(buf, fi.AddrUnspec) != nil {
					}
				} else {
					for from.msg().Send(buf, nil, fi.AddrUnspec, nil) != nil {
					}
				}
				for {
					if k, _ := to.cq.Read(comp[:]); k > 0 {
						break
					}
				}
				if size >= 128 {
					for {
						if k, _ := from.cq.Read(comp[:]); k > 0 {
							break
						}
					}
				}
			}
			b.ResetTimer()
			for range b.N {
				hop(p.client, p.server)
				hop(p.server, p.client)
			}
		})
	}
}
