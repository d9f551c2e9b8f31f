// Command benchreport runs gofabric's comparisons with C libfabric and
// writes a Markdown report with SVG plots (issue 22): scripts/bench-report.sh
// runs it. It is not part of the tests.
//
// It runs, from the repository root:
//   - scripts/bench-compare.sh (fi_pingpong, Go and C interleaved) for
//     tcp msg, tcp rdm, shm rdm at 64 B, 4 KiB, 64 KiB and 1 MiB, and
//     udp dgram at 64 B and 1 KiB, and for udp also scripts/udpfloor
//     (the same system calls in Go and in C, without a fabric library);
//   - scripts/bench-compare.sh bw (fabtests' streaming benchmarks);
//   - the Go scale benchmarks (providers/tcp, providers/shm:
//     CQReadIdleConns, PerEndpoint, ConnectPairs) and their C counterpart,
//     scripts/scaleprobe/scaleprobe.c, built with gcc against -lfabric;
//
// and writes the report (default docs/perf-report.md) and its plots
// (default docs/perf/*.svg): the machine, one table per comparison with
// the Go and C medians, their ratio and the spread (min-max) of every
// figure. --quick runs one round of a few sizes with small counts and no
// quiet gate, in about a minute; its report says it is a quick sample.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

type config struct {
	quick                   bool
	rounds, quiet           int
	sizes, udpSizes         string
	iters                   string
	scaleN, connectN, shmN  string
	bwSizes, bwIters        string
	out, plots              string
	skipPing, skipBW, skipS bool
}

func main() {
	var c config
	flag.BoolVar(&c.quick, "quick", false, "one round, few sizes, small counts, no quiet gate (a try, not a measurement)")
	flag.IntVar(&c.rounds, "rounds", 5, "interleaved rounds of every comparison (-r), and -count of the Go benchmarks")
	flag.IntVar(&c.quiet, "quiet", 180, "quiet gate of the pingpong runs in seconds (-q; 0 = off)")
	flag.StringVar(&c.sizes, "sizes", "64,4096,65536,1048576", "pingpong sizes of tcp msg, tcp rdm and shm rdm")
	flag.StringVar(&c.udpSizes, "udp-sizes", "64,1024", "pingpong sizes of udp dgram")
	flag.StringVar(&c.iters, "iters", "", "pingpong -I (one value for all sizes; default bench-compare.sh's)")
	flag.StringVar(&c.bwSizes, "bw-sizes", "64,4096,1048576", "streaming sizes")
	flag.StringVar(&c.bwIters, "bw-iters", "", "streaming -I (default bench-bw.sh's)")
	flag.StringVar(&c.scaleN, "scale-n", "1,16,256,1024,4096", "connection counts of the CQ read and per-endpoint figures")
	flag.StringVar(&c.connectN, "connect-n", "1000,4000", "pair counts of the connection setup figure")
	flag.StringVar(&c.shmN, "shm-n", "1,16,256", "endpoint counts of shm's per-endpoint figure")
	flag.StringVar(&c.out, "out", "docs/perf-report.md", "the report")
	flag.StringVar(&c.plots, "plots", "docs/perf", "directory of the SVG plots (referred to relative to the report)")
	flag.BoolVar(&c.skipPing, "skip-pingpong", false, "leave out the pingpong comparisons")
	flag.BoolVar(&c.skipBW, "skip-bw", false, "leave out the streaming comparison")
	flag.BoolVar(&c.skipS, "skip-scale", false, "leave out the scale figures")
	flag.Parse()
	if c.quick {
		// Options given on the command line win over the quick ones.
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"rounds": "1", "quiet": "0", "sizes": "64,65536", "udp-sizes": "64",
			"iters": "5000", "bw-sizes": "64,1048576", "bw-iters": "200", "scale-n": "1,16,64", "connect-n": "100", "shm-n": "1,16"} {
			if !set[name] {
				_ = flag.Set(name, v)
			}
		}
	}
	for _, l := range []string{c.scaleN, c.connectN, c.shmN, c.sizes, c.udpSizes, c.bwSizes} {
		if _, err := ints(l); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(2)
		}
	}
	if c.rounds <= 0 || c.quiet < 0 {
		fmt.Fprintln(os.Stderr, "benchreport: -rounds must be positive and -quiet not negative")
		os.Exit(2)
	}
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// pingCase is one bench-compare.sh comparison.
type pingCase struct{ prov, ep, sizes string }

// stat is a median and the spread of one figure.
type stat struct{ med, lo, hi float64 }

func (s stat) ok() bool { return !math.IsNaN(s.med) }

var nan = stat{math.NaN(), math.NaN(), math.NaN()}

// pingRow is one size of a bench-compare.sh table.
type pingRow struct {
	size           int
	cLat, goLat    stat
	cBW, goBW      stat
	latRatio, bwRt string
}

// bwRow is one row of bench-bw.sh's table.
type bwRow struct {
	prov, prog string
	size       int
	c, gob     stat
	ratio      string
}

func run(c *config) error {
	tmp, err := os.MkdirTemp("", "benchreport")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var md bytes.Buffer
	start := time.Now()
	if err := os.MkdirAll(c.plots, 0o755); err != nil {
		return err
	}
	plotRef := func(file string) string {
		rel, err := filepath.Rel(filepath.Dir(c.out), filepath.Join(c.plots, file))
		if err != nil {
			rel = filepath.Join(c.plots, file)
		}
		return rel
	}

	fmt.Fprintf(&md, "# gofabric against C libfabric: performance report\n\n")
	if c.quick {
		fmt.Fprintf(&md, "> **Quick sample** (`--quick`): one round, few sizes, small counts, no quiet gate. It shows the tool works; its figures are not measurements.\n\n")
	}
	fmt.Fprintf(&md, "Written by `scripts/bench-report.sh %s` on %s. Go and C run interleaved; every figure is the median of %d runs, with its spread (min-max) beside it. Ratios are Go/C: below 1 Go is faster (time), above 1 Go moves more (bandwidth).\n\n",
		strings.Join(os.Args[1:], " "), start.UTC().Format("2006-01-02 15:04 UTC"), c.rounds)
	md.WriteString(machine())

	if !c.skipPing {
		if err := pingpong(c, tmp, &md, plotRef); err != nil {
			failed(&md, "pingpong", err)
		}
	}
	if !c.skipBW {
		if err := streaming(c, tmp, &md, plotRef); err != nil {
			failed(&md, "streaming", err)
		}
	}
	if !c.skipS {
		if err := scale(c, tmp, &md, plotRef); err != nil {
			failed(&md, "scale", err)
		}
	}
	fmt.Fprintf(&md, "---\nThe report took %s.\n", time.Since(start).Round(time.Second))
	if err := os.WriteFile(c.out, md.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchreport: wrote %s and %s/*.svg\n", c.out, c.plots)
	if len(failures) > 0 {
		return fmt.Errorf("%d steps failed (marked in the report; their output is above): %s", len(failures), strings.Join(failures, "; "))
	}
	return nil
}

// failures names the steps that failed; the report marks them and goes on.
var failures []string

// failed marks a failed step in the report (its first line; the whole
// output went to stderr) and records it.
func failed(md *bytes.Buffer, what string, err error) {
	first, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(md, "\n> **Failed** (%s): %s\n\n", what, first)
	fmt.Fprintf(os.Stderr, "benchreport: %s failed: %v\n", what, err)
	failures = append(failures, what+": "+first)
}

// pingpong runs bench-compare.sh for every provider and endpoint type.
func pingpong(c *config, tmp string, md *bytes.Buffer, plotRef func(string) string) error {
	gobin := filepath.Join(tmp, "fi_pingpong")
	if err := sh("go", "build", "-o", gobin, "./cmd/fi_pingpong"); err != nil {
		return err
	}
	cases := []pingCase{{"tcp", "msg", c.sizes}, {"tcp", "rdm", c.sizes}, {"shm", "rdm", c.sizes}, {"udp", "dgram", c.udpSizes}}
	md.WriteString("## Latency and bandwidth: fi_pingpong\n\n`scripts/bench-compare.sh`: Go's and C's `fi_pingpong` over loopback, the client's usec/xfer (one way) and MB/sec.\n\n")
	for _, pc := range cases {
		args := []string{"-p", pc.prov, "-e", pc.ep, "-s", pc.sizes, "-r", strconv.Itoa(c.rounds), "-q", strconv.Itoa(c.quiet), "-G", gobin}
		if c.iters != "" {
			args = append(args, "-I", c.iters)
		}
		fmt.Fprintf(md, "### %s %s\n\n", pc.prov, pc.ep)
		out, err := capture(nil, "scripts/bench-compare.sh", args...)
		if err != nil {
			failed(md, pc.prov+" "+pc.ep, err)
			continue
		}
		rows := parsePing(out)
		if len(rows) == 0 {
			failed(md, pc.prov+" "+pc.ep, fmt.Errorf("bench-compare.sh %s: no result rows in:\n%s", strings.Join(args, " "), out))
			continue
		}
		name := pc.prov + "-" + pc.ep
		md.WriteString("| size | Go usec | C usec | Go/C | Go spread | C spread | Go MB/s | C MB/s | Go/C | Go spread | C spread |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		var gl, cl, gb, cb []point
		for _, r := range rows {
			fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sizeName(r.size),
				f2(r.goLat.med), f2(r.cLat.med), r.latRatio, spread(r.goLat), spread(r.cLat),
				f2(r.goBW.med), f2(r.cBW.med), r.bwRt, spread(r.goBW), spread(r.cBW))
			x := float64(r.size)
			gl, cl = append(gl, point{x, r.goLat}), append(cl, point{x, r.cLat})
			gb, cb = append(gb, point{x, r.goBW}), append(cb, point{x, r.cBW})
		}
		if err := writePlot(c.plots, "lat-"+name+".svg", pc.prov+" "+pc.ep+": latency (usec/xfer)", "message size (bytes)", "usec", []series{{"Go", gl}, {"C", cl}}); err != nil {
			return err
		}
		if err := writePlot(c.plots, "bw-"+name+".svg", pc.prov+" "+pc.ep+": bandwidth (MB/s)", "message size (bytes)", "MB/s", []series{{"Go", gb}, {"C", cb}}); err != nil {
			return err
		}
		fmt.Fprintf(md, "\n![%s latency](%s) ![%s bandwidth](%s)\n\n", name, plotRef("lat-"+name+".svg"), name, plotRef("bw-"+name+".svg"))
		if pc.prov == "udp" {
			if err := udpFloor(c, tmp, md); err != nil {
				failed(md, "udp floor", err)
			}
		}
	}
	return nil
}

// udpFloor runs scripts/udpfloor, Go's and C's, through bench-compare.sh
// at the udp sizes, and writes its table under udp's: the same system
// calls in both languages with no fabric library, so that the part of
// udp's Go/C ratio that the language runtime costs shows apart from the
// libraries' own.
func udpFloor(c *config, tmp string, md *bytes.Buffer) error {
	gobin, cbin := filepath.Join(tmp, "udpfloor-go"), filepath.Join(tmp, "udpfloor-c")
	if err := sh("go", "build", "-o", gobin, "./scripts/udpfloor"); err != nil {
		return err
	}
	if err := sh("gcc", "-O2", "-Wall", "-o", cbin, "scripts/udpfloor/c/udpfloor.c"); err != nil {
		return err
	}
	args := []string{"-p", "udp", "-e", "dgram", "-s", c.udpSizes, "-r", strconv.Itoa(c.rounds), "-q", strconv.Itoa(c.quiet), "-C", cbin, "-G", gobin}
	if c.iters != "" {
		args = append(args, "-I", c.iters)
	}
	out, err := capture(nil, "scripts/bench-compare.sh", args...)
	if err != nil {
		return err
	}
	rows := parsePing(out)
	if len(rows) == 0 {
		return fmt.Errorf("bench-compare.sh %s: no result rows in:\n%s", strings.Join(args, " "), out)
	}
	md.WriteString("#### udp: the system calls alone (`scripts/udpfloor`)\n\n" +
		"The same ping-pong made of system calls alone, those the udp providers make for it (`sendto`, then a receive on a non-blocking socket until the answer is there: `recvfrom` here and in gofabric, `recvmsg` in libfabric), in Go (`scripts/udpfloor`, raw system calls, the loop's thread locked as in `fi_pingpong`) and in C (`scripts/udpfloor/c/udpfloor.c`), with no fabric library, run by `bench-compare.sh` the same way. " +
		"Their ratio is what the language and its runtime cost on this machine for the same kernel work; udp's `fi_pingpong` ratio above includes it. " +
		"(These runs are not interleaved with the `fi_pingpong` runs above, so subtracting one table from the other mixes in the machine's drift.)\n\n")
	md.WriteString("| size | Go usec | C usec | Go/C | Go spread | C spread |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s |\n", sizeName(r.size),
			f2(r.goLat.med), f2(r.cLat.med), r.latRatio, spread(r.goLat), spread(r.cLat))
	}
	md.WriteString("\n")
	return nil
}

// streaming runs bench-compare.sh bw.
func streaming(c *config, tmp string, md *bytes.Buffer, plotRef func(string) string) error {
	ft := filepath.Join(tmp, "ft")
	if err := sh("go", "build", "-o", ft, "./cmd/ft"); err != nil {
		return err
	}
	args := []string{"bw", "-s", c.bwSizes, "-r", strconv.Itoa(c.rounds), "-q", strconv.Itoa(min(c.quiet, 30)), "-G", ft}
	if c.bwIters != "" {
		args = append(args, "-I", c.bwIters)
	}
	md.WriteString("## Streaming: fabtests' bandwidth programs\n\n`scripts/bench-compare.sh bw`: Go against Go (`cmd/ft`) and C against C (fabtests 1.17), 64 operations in flight, the client's MB/sec.\n\n")
	out, err := capture(nil, "scripts/bench-compare.sh", args...)
	rows := parseBW(out)
	if err != nil {
		// bench-bw.sh prints its tables, failed runs marked, before it fails.
		failed(md, "bench-compare.sh bw", err)
		if len(rows) == 0 {
			return nil
		}
	}
	md.WriteString("| provider | program | size | Go MB/s | C MB/s | Go/C | Go spread | C spread |\n|---|---|---|---|---|---|---|---|\n")
	plots := map[string][2][]point{}
	var order []string
	for _, r := range rows {
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.prov, r.prog, sizeName(r.size), f2(r.gob.med), f2(r.c.med), r.ratio, spread(r.gob), spread(r.c))
		k := r.prov + "-" + r.prog
		if _, ok := plots[k]; !ok {
			order = append(order, k)
		}
		p := plots[k]
		p[0] = append(p[0], point{float64(r.size), r.gob})
		p[1] = append(p[1], point{float64(r.size), r.c})
		plots[k] = p
	}
	md.WriteString("\n")
	for _, k := range order {
		f := "stream-" + k + ".svg"
		if err := writePlot(c.plots, f, strings.Replace(k, "-", " ", 1)+": streaming bandwidth (MB/s)", "message size (bytes)", "MB/s", []series{{"Go", plots[k][0]}, {"C", plots[k][1]}}); err != nil {
			return err
		}
		fmt.Fprintf(md, "![%s](%s) ", k, plotRef(f))
	}
	md.WriteString("\n\n")
	return nil
}

// figures are benchmark results: key "impl|Benchmark/N|unit" to values.
type figures map[string][]float64

// addBench parses `go test -bench` lines (the probe prints the same).
func (f figures) addBench(impl, out string) {
	for _, line := range strings.Split(out, "\n") {
		fs := strings.Fields(line)
		if len(fs) < 4 || !strings.HasPrefix(fs[0], "Benchmark") {
			continue
		}
		name := fs[0]
		if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') && i > 0 {
			name = name[:i] // the -GOMAXPROCS suffix
		}
		for i := 2; i+1 < len(fs); i += 2 {
			v, err := strconv.ParseFloat(fs[i], 64)
			if err == nil {
				k := impl + "|" + name + "|" + fs[i+1]
				f[k] = append(f[k], v)
			}
		}
	}
}

func (f figures) stat(impl, bench string, n int, unit string) stat {
	return summarize(f[impl+"|"+bench+"/"+strconv.Itoa(n)+"|"+unit])
}

func scale(c *config, tmp string, md *bytes.Buffer, plotRef func(string) string) error {
	scaleN, err := ints(c.scaleN)
	if err != nil {
		return err
	}
	connectN, err := ints(c.connectN)
	if err != nil {
		return err
	}
	shmN, err := ints(c.shmN)
	if err != nil {
		return err
	}
	md.WriteString("## Scale: many tcp connections in one process\n\n" +
		"N connected tcp FI_EP_MSG pairs in one process: one fabric and EQ, a client and a server domain with one CQ each, every endpoint bound to its side's CQ. Go: `go test -bench` in providers/tcp (`CQReadIdleConns`, `PerEndpoint`, `ConnectPairs`); C: `scripts/scaleprobe/scaleprobe.c` against C libfabric, the same shape.\n\n")
	figs := figures{}
	count := strconv.Itoa(c.rounds)
	benchtime := "0.5s"
	if c.quick {
		benchtime = "0.1s"
	}
	runs := []struct {
		impl, env, bench, time, pkg string
	}{
		{"Go", "GOFABRIC_SCALE_N=" + c.scaleN, "^(BenchmarkCQReadIdleConns|BenchmarkPerEndpoint)$", benchtime, "./providers/tcp/"},
		{"Go", "GOFABRIC_SCALE_N=" + c.connectN, "^BenchmarkConnectPairs$", "1x", "./providers/tcp/"},
		{"Go-shm", "GOFABRIC_SHM_SCALE_N=" + c.shmN, "^BenchmarkPerEndpoint$", "1x", "./providers/shm/"},
	}
	for _, r := range runs {
		out, err := capture([]string{r.env}, "go", "test", "-p", "1", "-run", "^$", "-bench", r.bench, "-benchtime", r.time, "-count", count, r.pkg)
		figs.addBench(r.impl, out) // what ran before a failure
		if err != nil {
			failed(md, r.pkg+" "+r.bench, err)
		}
	}
	probe := filepath.Join(tmp, "scaleprobe")
	probeErr := sh("gcc", "-O2", "-Wall", "-o", probe, "scripts/scaleprobe/scaleprobe.c", "-lfabric")
	if probeErr != nil {
		failed(md, "building scaleprobe", probeErr)
	}
	all := map[int]bool{}
	for _, n := range append(append([]int(nil), scaleN...), connectN...) {
		all[n] = true
	}
	probeT := "0.5"
	if c.quick {
		probeT = "0.1"
	}
	for r := 0; r < c.rounds && probeErr == nil; r++ {
		for _, n := range sortedKeys(all) {
			out, err := capture([]string{"FI_TCP_IFACE=lo"}, probe, "-n", strconv.Itoa(n), "-t", probeT)
			figs.addBench("C", out)
			if err != nil {
				failed(md, "scaleprobe -n "+strconv.Itoa(n), err)
			}
		}
	}

	md.WriteString("### An empty CQ read with N idle connections bound\n\n| N | Go ns/read | C ns/read | Go/C | Go spread | C spread | Go ns/conn | C ns/conn |\n|---|---|---|---|---|---|---|---|\n")
	var gp, cp []point
	for _, n := range scaleN {
		g, cc := figs.stat("Go", "BenchmarkCQReadIdleConns", n, "ns/op"), figs.stat("C", "BenchmarkCQReadIdleConns", n, "ns/op")
		fmt.Fprintf(md, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", n, f1(g.med), f1(cc.med), ratio(g, cc), spread(g), spread(cc),
			f1(figs.stat("Go", "BenchmarkCQReadIdleConns", n, "ns/conn").med), f1(figs.stat("C", "BenchmarkCQReadIdleConns", n, "ns/conn").med))
		gp, cp = append(gp, point{float64(n), g}), append(cp, point{float64(n), cc})
	}
	if err := writePlot(c.plots, "cqread.svg", "tcp: empty CQ read against bound connections", "connections (N)", "ns per read", []series{{"Go", gp}, {"C", cp}}); err != nil {
		return err
	}
	fmt.Fprintf(md, "\n![CQ read cost](%s)\n\n", plotRef("cqread.svg"))

	md.WriteString("### Per tcp endpoint (2N endpoints)\n\nfds/ep: open fds; bytes/ep: resident set growth (/proc/self/statm) once connected, and after one 64 B message each way on every pair (traffic); Go heap: Go heap spans and stacks in use, untouched queue memory included.\n\n" +
		"| N | Go fds/ep | C fds/ep | Go bytes/ep | C bytes/ep | Go/C | Go spread | C spread | Go bytes/ep traffic | C bytes/ep traffic | Go heap bytes/ep |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range scaleN {
		g, cc := figs.stat("Go", "BenchmarkPerEndpoint", n, "bytes/ep"), figs.stat("C", "BenchmarkPerEndpoint", n, "bytes/ep")
		fmt.Fprintf(md, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n,
			f2(figs.stat("Go", "BenchmarkPerEndpoint", n, "fds/ep").med), f2(figs.stat("C", "BenchmarkPerEndpoint", n, "fds/ep").med),
			f0(g.med), f0(cc.med), ratio(g, cc), spread0(g), spread0(cc),
			f0(figs.stat("Go", "BenchmarkPerEndpoint", n, "bytes/ep-traffic").med), f0(figs.stat("C", "BenchmarkPerEndpoint", n, "bytes/ep-traffic").med),
			f0(figs.stat("Go", "BenchmarkPerEndpoint", n, "heap-bytes/ep").med))
	}
	md.WriteString("\n### Connecting N pairs\n\n| N | Go ms | C ms | Go/C | Go spread | C spread |\n|---|---|---|---|---|---|\n")
	for _, n := range connectN {
		g, cc := figs.stat("Go", "BenchmarkConnectPairs", n, "ms/setup"), figs.stat("C", "BenchmarkConnectPairs", n, "ms/setup")
		fmt.Fprintf(md, "| %d | %s | %s | %s | %s | %s |\n", n, f1(g.med), f1(cc.med), ratio(g, cc), spread(g), spread(cc))
	}
	md.WriteString("\n### Per shm endpoint (Go)\n\nN endpoints in one domain, each with its AV and CQ; after traffic, each sent 64 B to the next in a ring. (No C figure yet.)\n\n| N | bytes/ep | spread | bytes/ep traffic | spread | fds/ep |\n|---|---|---|---|---|---|\n")
	for _, n := range shmN {
		idle := figs.stat("Go-shm", "BenchmarkPerEndpoint", n, "bytes/ep")
		busy := figs.stat("Go-shm", "BenchmarkPerEndpoint", n, "bytes/ep-traffic")
		fmt.Fprintf(md, "| %d | %s | %s | %s | %s | %s |\n", n, f0(idle.med), spread0(idle), f0(busy.med), spread0(busy),
			f2(figs.stat("Go-shm", "BenchmarkPerEndpoint", n, "fds/ep").med))
	}
	md.WriteString("\n")
	return nil
}

// parsePing reads bench-compare.sh's table and spread table.
func parsePing(out string) []pingRow {
	var rows []pingRow
	idx := map[int]int{}
	inSpread := false
	for _, line := range strings.Split(out, "\n") {
		fs := strings.Fields(line)
		if strings.HasPrefix(line, "spread") {
			inSpread = true
			continue
		}
		if len(fs) == 0 {
			continue
		}
		size, err := strconv.Atoi(fs[0])
		if err != nil {
			continue
		}
		switch {
		case !inSpread && len(fs) == 8:
			r := pingRow{size: size, cLat: med(fs[2]), goLat: med(fs[3]), latRatio: fs[4], cBW: med(fs[5]), goBW: med(fs[6]), bwRt: fs[7]}
			idx[size] = len(rows)
			rows = append(rows, r)
		case inSpread && len(fs) == 5:
			if i, ok := idx[size]; ok {
				r := &rows[i]
				r.cLat.lo, r.cLat.hi = rng(fs[1])
				r.goLat.lo, r.goLat.hi = rng(fs[2])
				r.cBW.lo, r.cBW.hi = rng(fs[3])
				r.goBW.lo, r.goBW.hi = rng(fs[4])
			}
		}
	}
	return rows
}

// parseBW reads bench-bw.sh's table and spread table.
func parseBW(out string) []bwRow {
	var rows []bwRow
	idx := map[string]int{}
	inSpread := false
	for _, line := range strings.Split(out, "\n") {
		fs := strings.Fields(line)
		if strings.HasPrefix(line, "spread") {
			inSpread = true
			continue
		}
		if len(fs) < 5 {
			continue
		}
		size, err := strconv.Atoi(fs[2])
		if err != nil {
			continue
		}
		k := fs[0] + " " + fs[1] + " " + fs[2]
		switch {
		case !inSpread && len(fs) == 9:
			idx[k] = len(rows)
			rows = append(rows, bwRow{prov: fs[0], prog: fs[1], size: size, c: med(fs[4]), gob: med(fs[5]), ratio: fs[6]})
		case inSpread:
			if i, ok := idx[k]; ok {
				rows[i].c.lo, rows[i].c.hi = rng(fs[3])
				rows[i].gob.lo, rows[i].gob.hi = rng(fs[4])
			}
		}
	}
	return rows
}

func med(s string) stat {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nan
	}
	return stat{v, v, v}
}

// rng parses "lo-hi" (neither negative).
func rng(s string) (float64, float64) {
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseFloat(lo, 64)
	b, err2 := strconv.ParseFloat(hi, 64)
	if !ok || err1 != nil || err2 != nil {
		return math.NaN(), math.NaN()
	}
	return a, b
}

func summarize(v []float64) stat {
	if len(v) == 0 {
		return nan
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{m, s[0], s[len(s)-1]}
}

func ratio(g, c stat) string {
	if !g.ok() || !c.ok() || c.med == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", g.med/c.med)
}

func fmtf(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
func f0(v float64) string { return fmtf(v, 0) }
func f1(v float64) string { return fmtf(v, 1) }
func f2(v float64) string { return fmtf(v, 2) }
func spread(s stat) string {
	if math.IsNaN(s.lo) {
		return "-"
	}
	return f2(s.lo) + "-" + f2(s.hi)
}
func spread0(s stat) string {
	if math.IsNaN(s.lo) {
		return "-"
	}
	return f0(s.lo) + "-" + f0(s.hi)
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

func ints(s string) ([]int, error) {
	var v []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: not a list of positive counts", s)
		}
		v = append(v, n)
	}
	return v, nil
}

func sortedKeys(m map[int]bool) []int {
	var v []int
	for k := range m {
		v = append(v, k)
	}
	sort.Ints(v)
	return v
}

// machine describes the host: CPU, cores, kernel, Go and libfabric.
func machine() string {
	var b strings.Builder
	b.WriteString("## Machine\n\n")
	model, _ := capture(nil, "sh", "-c", "lscpu | sed -n 's/^Model name: *//p' | head -n 1")
	cores, _ := capture(nil, "nproc")
	kernel, _ := capture(nil, "uname", "-sr")
	gov, _ := capture(nil, "go", "version")
	fab, _ := capture(nil, "sh", "-c", "fi_info --version | sed -n 's/^libfabric: *//p'")
	cc, _ := capture(nil, "sh", "-c", "cat /proc/sys/net/ipv4/tcp_congestion_control")
	fmt.Fprintf(&b, "- CPU: %s, %s cores (nproc)\n- kernel: %s\n- Go: %s\n- C libfabric: %s\n- tcp congestion control: %s\n\n",
		strings.TrimSpace(model), strings.TrimSpace(cores), strings.TrimSpace(kernel), strings.TrimSpace(gov), strings.TrimSpace(fab), strings.TrimSpace(cc))
	return b.String()
}

// capture runs a command with extra environment, returns its stdout and
// passes its stderr through.
func capture(env []string, name string, args ...string) (string, error) {
	fmt.Fprintf(os.Stderr, "benchreport: %s %s %s\n", strings.Join(env, " "), name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// sh runs a command for its effect.
func sh(name string, args ...string) error {
	_, err := capture(nil, name, args...)
	return err
}
