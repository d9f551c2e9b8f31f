//go:build linux

package tcp_test

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
	"golang.org/x/sys/unix"
)

// The scale benchmarks (issue 22): N connected tcp MSG endpoint pairs in
// one process, shaped as scripts/scaleprobe/scaleprobe.c shapes them for
// C libfabric: one fabric and one EQ for everything, a client domain and a
// server domain with one CQ each, every client endpoint bound to the
// client CQ and every server endpoint to the server CQ, one passive
// endpoint. They report figures, never assert times.
//
// GOFABRIC_SCALE_N (a comma list) sets the connection counts; the default
// is small enough for a quick run. scripts/bench-report.sh passes the
// issue's (1,16,256,1024,4096 and 4000 pairs to connect).

// scaleSizes returns GOFABRIC_SCALE_N's counts, or def.
func scaleSizes(b *testing.B, def ...int) []int {
	v := os.Getenv("GOFABRIC_SCALE_N")
	if v == "" {
		return def
	}
	var ns []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("GOFABRIC_SCALE_N=%q: %q is not a positive count", v, f)
		}
		ns = append(ns, n)
	}
	return ns
}

// raiseFDLimit lifts RLIMIT_NOFILE's soft limit to the hard one and
// skips when n pairs (2n endpoints, up to 2 fds each, and some slack)
// would still not fit.
func raiseFDLimit(b *testing.B, pairs int) {
	var r unix.Rlimit
	require.NoError(b, unix.Getrlimit(unix.RLIMIT_NOFILE, &r))
	if r.Cur < r.Max {
		r.Cur = r.Max
		require.NoError(b, unix.Setrlimit(unix.RLIMIT_NOFILE, &r))
	}
	if need := uint64(4*pairs + 256); r.Cur < need {
		b.Skipf("RLIMIT_NOFILE hard limit %d is below the %d fds %d pairs may take", r.Max, need, pairs)
	}
}

// scaleSet is the objects around the pairs.
type scaleSet struct {
	fabric       fi.Fabric
	eq           eq.EventQueue
	cliDom       fi.Domain
	srvDom       fi.Domain
	cliCQ, srvCQ eq.CompletionQueue
	pep          ep.PassiveEndpoint
	info         *fi.Info
	name         []byte
	cli, srv     []ep.Endpoint
}

// openScale opens the fabric, EQ, domains, CQs and the listening passive
// endpoint, with a backlog of at least maxPairs.
func openScale(b *testing.B, maxPairs int) *scaleSet {
	b.Helper()
	cleanEnv(b)
	s := &scaleSet{info: loInfo(b)}
	var err error
	s.fabric, err = fi.OpenFabric(s.info)
	require.NoError(b, err)
	s.eq, err = eq.OpenEQ(s.fabric, &eq.Attr{Size: 2*maxPairs + 64})
	require.NoError(b, err)
	s.cliDom, err = s.fabric.OpenDomain(s.info)
	require.NoError(b, err)
	s.srvDom, err = s.fabric.OpenDomain(s.info)
	require.NoError(b, err)
	s.cliCQ, err = eq.OpenCQ(s.cliDom, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(b, err)
	s.srvCQ, err = eq.OpenCQ(s.srvDom, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(b, err)
	s.pep, err = ep.OpenPassive(s.fabric, s.info)
	require.NoError(b, err)
	if bs, ok := s.pep.(ep.BacklogSetter); ok && maxPairs > 128 {
		require.NoError(b, bs.SetBacklog(maxPairs+64))
	}
	require.NoError(b, s.pep.Bind(s.eq, 0))
	require.NoError(b, s.pep.Listen())
	name := make([]byte, 64)
	n, err := s.pep.Name(name)
	require.NoError(b, err)
	s.name = name[:n]
	return s
}

// openEP opens an endpoint from info in d bound to s's EQ and cq.
func (s *scaleSet) openEP(b *testing.B, d fi.Domain, cq eq.CompletionQueue, info *fi.Info) ep.Endpoint {
	e, err := ep.Open(d, info)
	require.NoError(b, err)
	require.NoError(b, e.Bind(s.eq, 0))
	require.NoError(b, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(b, e.Enable())
	return e
}

// connect connects n more pairs: every client connects first, then the
// server accepts the requests as they come, until all 2n endpoints have
// their FI_CONNECTED.
func (s *scaleSet) connect(b *testing.B, n int) {
	b.Helper()
	for range n {
		e := s.openEP(b, s.cliDom, s.cliCQ, s.info)
		s.cli = append(s.cli, e)
		require.NoError(b, e.(ep.CM).Connect(s.name, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(30+n/50)*time.Second)
	defer cancel()
	for connected := 0; connected < 2*n; {
		ev, err := s.eq.SRead(ctx)
		if fi.Code(err) == fi.EAVAIL {
			e, err2 := s.eq.ReadErr()
			require.NoError(b, err2)
			b.Fatalf("connecting %d pairs (%d of %d events): error event %v", n, connected, 2*n, e)
		}
		require.NoError(b, err, "connecting %d pairs: %d of %d FI_CONNECTED events", n, connected, 2*n)
		switch ev := ev.(type) {
		case *eq.ConnReq:
			e := s.openEP(b, s.srvDom, s.srvCQ, ev.Info)
			s.srv = append(s.srv, e)
			require.NoError(b, e.(ep.CM).Accept(nil))
		case *eq.Connected:
			connected++
		case *eq.Shutdown: // of a pair an earlier round closed
		default:
			b.Fatalf("connecting: unexpected event %T %v", ev, ev)
		}
	}
}

// closeEPs closes every endpoint (servers first) and drains the EQ of
// their shutdown events.
func (s *scaleSet) closeEPs(b *testing.B) {
	b.Helper()
	for _, e := range s.srv {
		require.NoError(b, e.Close())
	}
	for _, e := range s.cli {
		require.NoError(b, e.Close())
	}
	s.cli, s.srv = s.cli[:0], s.srv[:0]
	for {
		if _, err := s.eq.Read(); fi.Code(err) == fi.EAGAIN {
			break
		} else if fi.Code(err) == fi.EAVAIL {
			_, _ = s.eq.ReadErr()
		}
	}
}

func (s *scaleSet) close(b *testing.B) {
	b.Helper()
	s.closeEPs(b)
	require.NoError(b, s.pep.Close())
	require.NoError(b, s.cliCQ.Close())
	require.NoError(b, s.srvCQ.Close())
	require.NoError(b, s.cliDom.Close())
	require.NoError(b, s.srvDom.Close())
	require.NoError(b, s.eq.Close())
	require.NoError(b, s.fabric.Close())
}

// BenchmarkCQReadIdleConns measures an empty read of the client CQ with
// N idle connections bound to it: the cost of one turn of a busy-polling
// loop, which the issue found to grow with every bound connection. ns/op
// is one read; ns/conn divides it by N.
func BenchmarkCQReadIdleConns(b *testing.B) {
	for _, n := range scaleSizes(b, 1, 16, 256, 1024) {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			raiseFDLimit(b, n)
			defer noLeaks(b)()
			s := openScale(b, n)
			defer s.close(b)
			s.connect(b, n)
			var comp [1]eq.Completion
			for b.Loop() {
				if k, err := s.cliCQ.Read(comp[:]); k != 0 || fi.Code(err) != fi.EAGAIN {
					b.Fatalf("idle CQ read: %d entries, %v", k, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/conn")
		})
	}
}

// noLeaks returns a check, to defer, that the benchmark left no
// goroutines and no fds behind.
func noLeaks(b *testing.B) func() {
	opt := goleak.IgnoreCurrent()
	fds := openFDs(b)
	return func() {
		goleak.VerifyNone(b, opt)
		require.Equal(b, fds, openFDs(b), "open fds before and after")
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
	var u usage
	u.fds = openFDs(b)
	u.rss = statmRSS(b)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u.heap, u.stack = m.HeapInuse, m.StackInuse
	return u
}

// statmRSS returns the resident set from /proc/self/statm, in bytes.
func statmRSS(b testing.TB) uint64 {
	raw, err := os.ReadFile("/proc/self/statm")
	require.NoError(b, err)
	f := strings.Fields(string(raw))
	require.GreaterOrEqual(b, len(f), 2, "statm %q", raw)
	pages, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(b, err)
	return pages * uint64(os.Getpagesize())
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

// BenchmarkPerEndpoint reports what each tcp MSG endpoint of N connected
// pairs costs (2N endpoints): fds/ep from /proc/self/fd; bytes/ep, the
// resident set's growth (/proc/self/statm, comparable with C's);
// heap-bytes/ep, Go heap spans and stacks in use, which count queue
// memory allocated but never touched (not resident). The -traffic figures are taken again
// after one 64-byte message each way on every pair. Its ns/op is not
// reported: nothing is timed.
func BenchmarkPerEndpoint(b *testing.B) {
	for _, n := range scaleSizes(b, 1, 16, 256, 1024) {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			raiseFDLimit(b, n)
			defer noLeaks(b)()
			s := openScale(b, n)
			defer s.close(b)
			before := measure(b)
			s.connect(b, n)
			idle := measure(b)
			s.traffic(b)
			busy := measure(b)
			for b.Loop() {
			}
			b.ReportMetric(0, "ns/op")
			report(b, before, idle, 2*n, "")
			report(b, before, busy, 2*n, "-traffic")
		})
	}
}

// traffic sends 64 bytes each way on every pair and waits for all of
// it, reading both CQs.
func (s *scaleSet) traffic(b *testing.B) {
	b.Helper()
	msg := make([]byte, 64)
	rbuf := make([]byte, 64*len(s.cli))
	for i, e := range s.cli {
		require.NoError(b, e.(ep.Msg).Recv(rbuf[64*i:64*(i+1)], nil, fi.AddrUnspec, nil))
	}
	sbuf := make([]byte, 64*len(s.srv))
	for i, e := range s.srv {
		require.NoError(b, e.(ep.Msg).Recv(sbuf[64*i:64*(i+1)], nil, fi.AddrUnspec, nil))
	}
	for _, e := range append(append([]ep.Endpoint(nil), s.cli...), s.srv...) {
		for {
			err := e.(ep.Msg).Inject(msg, fi.AddrUnspec)
			if err == nil {
				break
			}
			require.ErrorIs(b, err, fi.EAGAIN)
			_, _ = s.cliCQ.Read(nil)
			_, _ = s.srvCQ.Read(nil)
		}
	}
	// Injected sends complete silently: 2N receive completions in all.
	var comp [64]eq.Completion
	deadline := time.Now().Add(time.Duration(10+len(s.cli)/100) * time.Second)
	for got := 0; got < len(s.cli)+len(s.srv); {
		require.True(b, time.Now().Before(deadline), "traffic: %d of %d receives after the deadline", got, len(s.cli)+len(s.srv))
		for _, q := range []eq.CompletionQueue{s.cliCQ, s.srvCQ} {
			k, err := q.Read(comp[:])
			if fi.Code(err) == fi.EAVAIL {
				e, _ := q.ReadErr()
				b.Fatalf("traffic: error completion %v", e)
			}
			got += k
		}
	}
}

// BenchmarkConnectPairs measures connecting N pairs (every client
// connects, the server accepts each request, until all 2N endpoints are
// connected), endpoints opened and enabled included, closing excluded:
// ms/setup is one round of N pairs.
func BenchmarkConnectPairs(b *testing.B) {
	for _, n := range scaleSizes(b, 1000) {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			raiseFDLimit(b, n)
			defer noLeaks(b)()
			s := openScale(b, n)
			defer s.close(b)
			for b.Loop() {
				s.connect(b, n)
				b.StopTimer()
				s.closeEPs(b)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/setup")
		})
	}
}
