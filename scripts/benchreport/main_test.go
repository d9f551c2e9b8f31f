package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tables of scripts/bench-compare.sh and bench-bw.sh, as they print
// them (testdata: one tiny run of each), parse into medians and spreads.
func TestParsePing(t *testing.T) {
	raw, err := os.ReadFile("testdata/compare.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows := parsePing(string(raw))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(rows), rows)
	}
	r := rows[1]
	if r.size != 4096 || r.cLat.med != 9.70 || r.goLat.med != 8.28 || r.latRatio != "0.85" ||
		r.cBW.med != 422.29 || r.goBW.med != 494.54 || r.bwRt != "1.17" {
		t.Errorf("row %+v", r)
	}
	if r.goLat.lo != 8.28 || r.goLat.hi != 8.28 || r.cBW.lo != 422.29 {
		t.Errorf("spread of %+v", r)
	}
}

func TestParseBW(t *testing.T) {
	raw, err := os.ReadFile("testdata/bw.txt")
	if err != nil {
		t.Fatal(err)
	}
	// A failed run prints "fail" in place of figures.
	out := string(raw) + ""
	out = strings.Replace(out, "tcp   msg_bw         64            100       17.49       18.34     1.05",
		"tcp   msg_bw         64            100        fail       18.34        -", 1)
	rows := parseBW(out)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(rows), rows)
	}
	if r := rows[1]; r.prov != "tcp" || r.prog != "msg_bw" || r.size != 4096 || r.c.med != 1107.03 || r.gob.med != 560.33 || r.ratio != "0.51" || r.gob.hi != 560.33 {
		t.Errorf("row %+v", r)
	}
	if r := rows[0]; r.c.ok() || r.gob.med != 18.34 || ratio(r.gob, r.c) != "-" {
		t.Errorf("failed row %+v", r)
	}
}

// Benchmark lines, Go's (with the -GOMAXPROCS suffix) and the C probe's,
// give medians and spreads over their repetitions.
func TestAddBench(t *testing.T) {
	f := figures{}
	f.addBench("Go", "BenchmarkCQReadIdleConns/16-2 \t 1\t 6256 ns/op\t 391.0 ns/conn\n"+
		"BenchmarkCQReadIdleConns/16-2 \t 1\t 5000 ns/op\t 312.5 ns/conn\nPASS\n")
	f.addBench("C", "BenchmarkPerEndpoint/16 \t1\t1.000 fds/ep\t19712 bytes/ep\t48640 bytes/ep-traffic\n")
	if s := f.stat("Go", "BenchmarkCQReadIdleConns", 16, "ns/op"); s.med != 5628 || s.lo != 5000 || s.hi != 6256 {
		t.Errorf("Go CQ read %+v", s)
	}
	if s := f.stat("C", "BenchmarkPerEndpoint", 16, "bytes/ep-traffic"); s.med != 48640 {
		t.Errorf("C traffic %+v", s)
	}
	if s := f.stat("C", "BenchmarkPerEndpoint", 1, "bytes/ep"); s.ok() {
		t.Errorf("missing figure %+v", s)
	}
}

// A plot is well-formed SVG, with or without data.
func TestWritePlot(t *testing.T) {
	dir := t.TempDir()
	pts := []point{{64, stat{10, 9, 12}}, {4096, stat{20, 18, 25}}, {1 << 20, nan}}
	for _, ss := range [][]series{{{"Go", pts}, {"C", pts[:1]}}, {{"Go", nil}}} {
		if err := writePlot(dir, "p.svg", "t <&>", "message size (bytes)", "usec", ss); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "p.svg"))
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(string(raw)))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("not XML: %v\n%s", err, raw)
			}
		}
	}
}
