//go:build linux

package shm_test

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// BenchmarkPerEndpoint reports what each shm endpoint costs (issue 22:
// at most 128 KiB until traffic needs more): N endpoints in one domain,
// each with its own AV and CQ, as a C application opens them. bytes/ep is
// the resident set's growth (/proc/self/statm, shared memory pages
// touched included) once they are open; bytes/ep-traffic after each sent
// 64 bytes to the next one in a ring (every region then has one peer);
// heap-bytes/ep the Go heap and stacks in use; fds/ep the open fds.
// GOFABRIC_SHM_SCALE_N (a comma list) sets the counts. Its ns/op is not
// reported: nothing is timed.
func BenchmarkPerEndpoint(b *testing.B) {
	sizes := []int{1, 16, 64}
	if v := os.Getenv("GOFABRIC_SHM_SCALE_N"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("GOFABRIC_SHM_SCALE_N=%q: %q is not a positive count", v, f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			opt, fds := goleak.IgnoreCurrent(), openFDs(b)
			defer func() {
				goleak.VerifyNone(b, opt)
				require.Equal(b, fds, openFDs(b), "open fds before and after")
			}()
			infos, err := fi.GetInfo(context.Background(), "", "", 0, shmHints())
			require.NoError(b, err)
			f, err := fi.OpenFabric(infos[0])
			require.NoError(b, err)
			defer func() { require.NoError(b, f.Close()) }()
			d, err := f.OpenDomain(infos[0])
			require.NoError(b, err)
			defer func() { require.NoError(b, d.Close()) }()
			before := measure(b)
			nodes := make([]*node, n)
			for i := range nodes {
				nodes[i] = &node{fabric: f, domain: d}
				openEndpoint(b, nodes[i], infos[0])
			}
			defer func() {
				for _, x := range nodes {
					require.NoError(b, x.ep.Close())
					require.NoError(b, x.cq.Close())
					require.NoError(b, x.av.Close())
				}
			}()
			idle := measure(b)
			ring(b, nodes)
			busy := measure(b)
			for b.Loop() {
			}
			b.ReportMetric(0, "ns/op")
			report(b, before, idle, n, "")
			report(b, before, busy, n, "-traffic")
		})
	}
}

// ring has every node send 64 bytes to the next and waits until each
// received its message.
func ring(b *testing.B, nodes []*node) {
	b.Helper()
	rbuf := make([]byte, 64*len(nodes))
	msg := make([]byte, 64)
	for i, x := range nodes {
		require.NoError(b, x.ep.(ep.Msg).Recv(rbuf[64*i:64*(i+1)], nil, fi.AddrUnspec, nil))
	}
	for i, x := range nodes {
		to := x.insert(b, nodes[(i+1)%len(nodes)].name)
		for {
			err := x.ep.(ep.Msg).Inject(msg, to)
			if err == nil {
				break
			}
			require.ErrorIs(b, err, fi.EAGAIN)
			_, _ = x.cq.Read(nil)
		}
	}
	got := make([]bool, len(nodes))
	var comp [1]eq.Completion
	deadline := time.Now().Add(10 * time.Second)
	for left := len(nodes); left > 0; {
		require.True(b, time.Now().Before(deadline), "ring: %d of %d messages not received in 10 s", left, len(nodes))
		for i, x := range nodes {
			k, err := x.cq.Read(comp[:])
			if fi.Code(err) == fi.EAVAIL {
				e, _ := x.cq.ReadErr()
				b.Fatalf("ring: error completion %v", e)
			}
			if k > 0 && !got[i] {
				got[i] = true
				left--
			}
		}
	}
}

// openFDs counts the process's open fds.
func openFDs(b *testing.B) int {
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(b, err)
	return len(fds) - 1 // less ReadDir's own
}

// usage is the process's open fds and memory at one moment, after a
// garbage collection that returned what it could to the system.
type usage struct {
	fds              int
	rss, heap, stack uint64
}

func measure(b *testing.B) usage {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	u := usage{fds: openFDs(b)}
	raw, err := os.ReadFile("/proc/self/statm")
	require.NoError(b, err)
	f := strings.Fields(string(raw))
	require.GreaterOrEqual(b, len(f), 2, "statm %q", raw)
	pages, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(b, err)
	u.rss = pages * uint64(os.Getpagesize())
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u.heap, u.stack = m.HeapInuse, m.StackInuse
	return u
}

// report reports the growth from before to after divided by eps
// endpoints, with a suffix naming the moment ("" or "-traffic").
func report(b *testing.B, before, after usage, eps int, suffix string) {
	per := func(x, y uint64) float64 { return (float64(y) - float64(x)) / float64(eps) }
	if suffix == "" {
		b.ReportMetric(float64(after.fds-before.fds)/float64(eps), "fds/ep")
	}
	b.ReportMetric(per(before.rss, after.rss), "bytes/ep"+suffix)
	b.ReportMetric(per(before.heap+before.stack, after.heap+after.stack), "heap-bytes/ep"+suffix)
}
