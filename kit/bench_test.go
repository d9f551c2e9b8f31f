package kit_test

import (
	"fmt"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// BenchmarkCQ measures the software CQ's data path: batch completions
// queued by a provider and read back by the application in one call.
func BenchmarkCQ(b *testing.B) {
	for _, batch := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			q := newCQ(b, &eq.CQAttr{Format: eq.FormatTagged})
			c := comp(1)
			buf := make([]eq.Completion, batch)
			src := make([]fi.Addr, batch)
			b.ReportAllocs()
			for b.Loop() {
				for i := range batch {
					if err := q.Complete(c, fi.Addr(i)); err != nil {
						b.Fatal(err)
					}
				}
				if n, err := q.ReadFrom(buf, src); err != nil || n != batch {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/completion")
		})
	}
}

// BenchmarkCQParallel measures completing and reading from several
// goroutines at once, the FI_THREAD_SAFE case.
func BenchmarkCQParallel(b *testing.B) {
	q := newCQ(b, &eq.CQAttr{Format: eq.FormatMsg})
	c := comp(1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]eq.Completion, 1)
		for pb.Next() {
			_ = q.CompleteOverflow(c, 0)
			_, _ = q.Read(buf)
		}
	})
}

// BenchmarkCounterAdd measures a provider bumping a counter nobody waits
// on.
func BenchmarkCounterAdd(b *testing.B) {
	c := newCounter(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Add(1)
	}
}
