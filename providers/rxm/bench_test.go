//go:build linux

package rxm_test

import (
	"fmt"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// BenchmarkPingPong sends a message from one RDM endpoint to another and
// back, both on loopback in this process and driven by one goroutine
// that busy-polls both completion queues, over rxm layered on tcp
// (tcp;ofi_gorxm: dynamic receive buffers, raw tagged messages, the read
// rendezvous above 16 KiB) and, for comparison in the same run, over
// tcp's built-in FI_EP_RDM (tcp;ofi_rxm), whose wire is the same. One
// operation is one round trip.
func BenchmarkPingPong(b *testing.B) {
	for _, prov := range []string{"tcp;ofi_rxm", testName} {
		for _, size := range []int{64, 4096, 65536, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%d", prov, size), func(b *testing.B) {
				x, y := openSideOf(b, prov, nil, 0, nil), openSideOf(b, prov, nil, 0, nil)
				toY, toX := x.insert(b, y)[0], y.insert(b, x)[0]
				sbuf, rbuf := fill(size, 1), make([]byte, size)
				comps := make([]eq.Completion, 4)
				wait := func(s, other *side) {
					for {
						n, err := s.cq.Read(comps[:1])
						if n > 0 {
							return
						}
						if err == fi.EAVAIL {
							ce, _ := s.cq.ReadErr()
							b.Fatalf("error completion: %v", ce)
						}
						_, _ = other.cq.Read(comps[:0])
					}
				}
				// one sends from s to d (at dest) and waits for both ends.
				one := func(s, d *side, dest fi.Addr) {
					if err := d.msg().Recv(rbuf, nil, fi.AddrUnspec, nil); err != nil {
						b.Fatal(err)
					}
					for {
						err := s.msg().Send(sbuf, nil, dest, nil)
						if err == nil {
							break
						}
						if err != fi.EAGAIN {
							b.Fatal(err)
						}
						_, _ = d.cq.Read(comps[:0])
					}
					wait(d, s)
					wait(s, d)
				}
				for range 20 {
					one(x, y, toY)
					one(y, x, toX)
				}
				b.SetBytes(int64(2 * size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					one(x, y, toY)
					one(y, x, toX)
				}
			})
		}
	}
}
