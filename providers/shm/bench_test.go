//go:build linux

package shm_test

import (
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// BenchmarkPingPong measures one round trip between two endpoints of one
// process, each side busy-polling its CQ as fi_pingpong does (small sizes
// injected).
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{64, 4096, 65536, 1 << 20} {
		b.Run(itoa(size), func(b *testing.B) {
			x, y := openNode(b), openNode(b)
			defer x.close(b)
			defer y.close(b)
			toY, toX := x.insert(b, y.name), y.insert(b, x.name)
			b.SetBytes(int64(2 * size))
			done := make(chan struct{})
			go func() {
				defer close(done)
				echo(y, toX, size, b.N, false)
			}()
			echo(x, toY, size, b.N, true)
			<-done
		})
	}
}

func echo(n *node, peer fi.Addr, size, iters int, client bool) {
	buf := make([]byte, size)
	rbuf := make([]byte, size)
	var comp [1]eq.Completion
	m := n.ep.(ep.Msg)
	wait := func() {
		for {
			if k, _ := n.cq.Read(comp[:]); k > 0 {
				return
			}
		}
	}
	send := func() {
		if size <= 192 {
			for m.Inject(buf, peer) != nil {
				_, _ = n.cq.Read(nil)
			}
			return
		}
		for m.Send(buf, nil, peer, nil) != nil {
			_, _ = n.cq.Read(nil)
		}
		wait()
	}
	_ = m.Recv(rbuf, nil, fi.AddrUnspec, nil)
	for range iters {
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

// BenchmarkIdlePoll measures a CQ read that finds nothing: the cost of
// each turn of a busy-polling loop while no message comes.
func BenchmarkIdlePoll(b *testing.B) {
	x := openNode(b)
	defer x.close(b)
	var comp [1]eq.Completion
	b.ReportAllocs()
	for b.Loop() {
		_, _ = x.cq.Read(comp[:])
	}
}
