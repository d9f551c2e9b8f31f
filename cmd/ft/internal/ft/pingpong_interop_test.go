package ft

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The interop matrix of the pingpong benchmarks: for each program the Go
// server with the C client and the C server with the Go client over tcp
// (msg, rdm) and udp (dgram), and Go against Go over shm (gofabric's shm
// has its own memory layout, not C's), each plain and with -v, -S all,
// -E and -b, 5 iterations a size (as fabtests' own short runs).
//
// Pairs that fail C against C would be excluded here with C's reason;
// none of these does (the fabtests build script's notes list the C
// failures: fi_mcast, fi_multi_mr -e msg, fi_multi_ep -e msg, and runs
// with -K).

// oobPlaceholder in a variant's arguments becomes a free port.
const oobPlaceholder = "OOB"

// variant is one way to run a pair.
type variant struct {
	name string
	args []string
	// all says -S all: every size up to the provider's max_msg_size
	// runs, not only the default ones.
	all bool
}

// pingpongVariants are the matrix's variants.
var pingpongVariants = []variant{
	{name: "plain", args: []string{"-I", "5"}},
	{name: "-v", args: []string{"-I", "5", "-v"}},
	{name: "-S_all", args: []string{"-I", "5", "-S", "all"}, all: true},
	{name: "-E", args: []string{"-I", "5", "-E=" + oobPlaceholder}},
	{name: "-b", args: []string{"-I", "5", "-b=" + oobPlaceholder}},
}

// providerMaxMsg is each provider's max_msg_size (gofabric's and C's
// agree): udp's datagrams carry 1472 bytes; tcp, shm and verbs have no
// limit below the largest size of the table.
var providerMaxMsg = map[string]int{"tcp": math.MaxInt, "shm": math.MaxInt, "udp": 1472, "verbs": math.MaxInt}

// pair is one run of a program between a server and a client.
type pair struct {
	prov, prog     string
	server, client string // "go" or "c"
	v              variant
	// extra are arguments for both sides beyond the variant's.
	extra []string
}

func (p pair) name() string {
	n := p.prov + "/" + p.prog + "/" + p.server + "_server_" + p.client + "_client/" + p.v.name
	if len(p.extra) > 0 {
		n += "_" + strings.Join(p.extra, "_")
	}
	return n
}

// pingpongPairs lists the matrix.
func pingpongPairs() []pair {
	var ps []pair
	for _, prog := range []string{"msg_pingpong", "rdm_pingpong", "rdm_tagged_pingpong", "rdm_cntr_pingpong"} {
		for _, v := range pingpongVariants {
			ps = append(ps, pair{prov: "tcp", prog: prog, server: "go", client: "c", v: v},
				pair{prov: "tcp", prog: prog, server: "c", client: "go", v: v})
		}
	}
	for _, v := range pingpongVariants {
		ps = append(ps, pair{prov: "udp", prog: "dgram_pingpong", server: "go", client: "c", v: v},
			pair{prov: "udp", prog: "dgram_pingpong", server: "c", client: "go", v: v})
	}
	for _, prog := range []string{"rdm_pingpong", "rdm_tagged_pingpong", "rdm_cntr_pingpong"} {
		for _, v := range pingpongVariants {
			ps = append(ps, pair{prov: "shm", prog: prog, server: "go", client: "go", v: v})
		}
	}
	// The completion methods: counters by busy polling, CQs read with
	// fi_cq_sread, and CQs waited on through their wait descriptor.
	plain := pingpongVariants[0]
	ps = append(ps,
		pair{prov: "tcp", prog: "rdm_cntr_pingpong", server: "go", client: "c", v: plain, extra: []string{"-c", "spin"}},
		pair{prov: "tcp", prog: "rdm_cntr_pingpong", server: "c", client: "go", v: plain, extra: []string{"-c", "spin"}},
		pair{prov: "tcp", prog: "rdm_pingpong", server: "go", client: "c", v: plain, extra: []string{"-c", "sread"}},
		pair{prov: "tcp", prog: "rdm_pingpong", server: "c", client: "go", v: plain, extra: []string{"-c", "sread"}},
		pair{prov: "shm", prog: "rdm_pingpong", server: "go", client: "go", v: plain, extra: []string{"-c", "sread"}},
		pair{prov: "tcp", prog: "msg_pingpong", server: "go", client: "c", v: plain, extra: []string{"-c", "sread"}},
		pair{prov: "tcp", prog: "msg_pingpong", server: "c", client: "go", v: plain, extra: []string{"-c", "sread"}},
		pair{prov: "tcp", prog: "rdm_pingpong", server: "go", client: "c", v: plain, extra: []string{"-c", "fd"}},
		pair{prov: "tcp", prog: "rdm_pingpong", server: "c", client: "go", v: plain, extra: []string{"-c", "fd"}},
		pair{prov: "tcp", prog: "msg_pingpong", server: "go", client: "c", v: plain, extra: []string{"-c", "fd"}},
		pair{prov: "shm", prog: "rdm_tagged_pingpong", server: "go", client: "go", v: plain, extra: []string{"-c", "fd"}},
	)
	return ps
}

func TestPingpongInterop(t *testing.T) {
	for _, p := range pingpongPairs() {
		t.Run(p.name(), func(t *testing.T) {
			if p.server == "c" || p.client == "c" {
				fabtestsBin(t)
			}
			t.Parallel()
			runPair(t, p)
		})
	}
}

// runPair runs p: the server, then (once it listens) the client, and
// checks that both exit 0 and print the same rows, one per size.
func runPair(t *testing.T, p pair) {
	dataPort, oobPort := freePort(t), ""
	args := slices.Clone(p.v.args)
	for i, a := range args {
		if strings.Contains(a, oobPlaceholder) {
			oobPort = freePort(t)
			args[i] = strings.ReplaceAll(a, oobPlaceholder, oobPort)
		}
	}
	args = append(args, p.extra...)
	if p.prog == "dgram_pingpong" && oobPort == "" {
		// dgram_pingpong always synchronizes over the socket, on port
		// 3000 unless -E or -b names another.
		oobPort = defaultOOBPort
		defaultOOBPortMu.Lock()
		defer defaultOOBPortMu.Unlock()
	}
	srvArgs := append([]string{"-p", p.prov, "-s", pairHost(p.prov), "-B", dataPort}, args...)
	cliArgs := []string{"-p", p.prov, "-P", dataPort}
	switch {
	case p.prov != "shm":
		// On loopback, and to look the server up by address with -E/-b.
		cliArgs = append(cliArgs, "-s", pairHost(p.prov))
	case oobPort != "":
		// gofabric's shm names an endpoint after -s and -B: without -s
		// the client's own name comes from -B (9228 by default).
		cliArgs = append(cliArgs, "-B", freePort(t))
	}
	cliArgs = append(append(cliArgs, args...), pairHost(p.prov))

	srv := startPeer(t, p.server, "server", p.prog, srvArgs...)
	switch {
	case oobPort != "":
		waitListening(t, srv, oobPort)
	case p.prov == "tcp":
		waitListening(t, srv, dataPort)
	case p.prov == "verbs":
		waitCMListening(t, srv, dataPort)
	}
	cli := startPeer(t, p.client, "client", p.prog, cliArgs...)
	srvStatus := srv.status(t, peerLimit, cli)
	cliStatus := cli.status(t, peerLimit, srv)
	require.Zero(t, srvStatus, "%s", reports(srv, cli))
	require.Zero(t, cliStatus, "%s", reports(srv, cli))
	checkRows(t, p, srv, cli)
}

// defaultOOBPortMu serializes the runs on the out-of-band socket's
// default port (dgram_pingpong without -E or -b).
var defaultOOBPortMu sync.Mutex

// checkRows checks that both sides printed one row per size the variant
// runs, with the same size, iteration and total columns.
func checkRows(t *testing.T, p pair, srv, cli *peer) {
	t.Helper()
	want := 0
	for _, sp := range defaultSizes() {
		if sp.size <= providerMaxMsg[p.prov] && (p.v.all || sp.def) {
			want++
		}
	}
	srvRows, cliRows := perfRows(srv.out.String()), perfRows(cli.out.String())
	require.Len(t, srvRows, want, "%s", srv.report())
	require.Len(t, cliRows, want, "%s", cli.report())
	for i := range srvRows {
		require.Equal(t, srvRows[i][:3], cliRows[i][:3], "row %d: bytes, iters and total agree", i)
		require.Equal(t, "5", srvRows[i][1], "row %d: -I 5", i)
	}
	// The last size is the largest the variant runs.
	last := srvRows[len(srvRows)-1][0]
	switch {
	case p.prov == "udp":
		require.Equal(t, "1k", last)
	case p.v.all:
		require.Equal(t, "8m", last)
	default:
		require.Equal(t, "1m", last)
	}
}

// TestVerifyCatchesBadPayloads pairs a side that checks payloads (-v)
// with one that does not fill them: the checking side must report the
// first wrong byte on stdout, as C does, and exit with EIO. It shows that
// the passing -v pairs above checked real data both ways: the Go side
// checks what C sent, and C checks what the Go side sent.
func TestVerifyCatchesBadPayloads(t *testing.T) {
	for _, tt := range []struct {
		prov, prog, checker string
	}{
		{"tcp", "rdm_pingpong", "go"},
		{"tcp", "rdm_pingpong", "c"},
		{"tcp", "msg_pingpong", "go"},
		{"tcp", "rdm_tagged_pingpong", "c"},
	} {
		t.Run(tt.prog+"/"+tt.checker+"_checks", func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			other := map[string]string{"go": "c", "c": "go"}[tt.checker]
			port := freePort(t)
			args := []string{"-p", tt.prov, "-s", "127.0.0.1", "-I", "5", "-S", "64"}
			srv := startPeer(t, tt.checker, "server", tt.prog, append(args, "-B", port, "-v")...)
			waitListening(t, srv, port)
			cli := startPeer(t, other, "client", tt.prog, append(args, "-P", port, "127.0.0.1")...)
			require.Equal(t, 5, srv.status(t, peerLimit, cli), "%s", reports(srv, cli))
			require.Regexp(t, `^Data check error \(0!=.\) at byte 0 for buffer size 64\n`, srv.out.String())
		})
	}
}
