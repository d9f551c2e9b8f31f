package ft

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The interop matrix of the bandwidth programs: msg_bw, rdm_tagged_bw, bw
// (-e rdm, -e msg) and rma_bw (-e msg, -e rdm; -o write, read,
// writedata), the Go server with the C client and the C server with the
// Go client over tcp, and Go against Go over shm. Each runs plain, with
// -v where the program checks data (msg_bw, rdm_tagged_bw, bw, rma_bw -o
// writedata), with -E and -b, and with a window of 4 (-W 4 -I 20: five
// windows with the warm-ups, where -I 5 fits in one window of 64).
// Iterations are -I 5 as in fabtests' own short runs; bw has no -I (its
// count is the window).
//
// Over tcp rdm_tagged_bw and rma_bw -e rdm also run with -U (sends and
// writes complete on delivery), as in fabtests' short list.
//
// Excluded because C against C fails: msg_bw and rdm_tagged_bw with -b
// over the default sizes. With -b, ft_sync goes over the socket and takes
// no receive, so the receive a size's loop leaves posted (sized for that
// size, 256 bytes for 64 and 256) meets the next size's first message: a
// truncation error at 1k (C 1.17 and ft alike). They run with -b at one
// size (-S 64k) instead.

// bwVariant is one way to run a bandwidth pair.
type bwVariant struct {
	name string
	args []string
	// iters is the iterations column both sides print.
	iters string
	// sizes are the rows' sizes; nil for the default ones (64 to 1m).
	sizes []string
}

var (
	bwPlain  = bwVariant{name: "plain", args: []string{"-I", "5"}, iters: "5"}
	bwVerify = bwVariant{name: "-v", args: []string{"-I", "5", "-v"}, iters: "5"}
	bwE      = bwVariant{name: "-E", args: []string{"-I", "5", "-E=" + oobPlaceholder}, iters: "5"}
	bwB      = bwVariant{name: "-b", args: []string{"-I", "5", "-b=" + oobPlaceholder}, iters: "5"}
	bwW4     = bwVariant{name: "-W_4", args: []string{"-I", "20", "-W", "4"}, iters: "20"}
	bwB64k   = bwVariant{name: "-b_-S_64k", args: []string{"-I", "5", "-b=" + oobPlaceholder, "-S", "65536"}, iters: "5", sizes: []string{"64k"}}
	bwU      = bwVariant{name: "-U", args: []string{"-I", "5", "-U"}, iters: "5"}
	bwVU     = bwVariant{name: "-v_-U", args: []string{"-I", "5", "-v", "-U"}, iters: "5"}
)

// bwPair is one run of a bandwidth program.
type bwPair struct {
	prov, prog     string
	server, client string // "go" or "c"
	// extra are the program's own arguments (-e, -o), before the
	// variant's.
	extra []string
	v     bwVariant
}

func (p bwPair) name() string {
	n := p.prov + "/" + p.prog
	if len(p.extra) > 0 {
		n += "_" + strings.Join(p.extra, "_")
	}
	return n + "/" + p.server + "_server_" + p.client + "_client/" + p.v.name
}

// bwPairs lists the matrix.
func bwPairs() []bwPair {
	var ps []bwPair
	both := func(prog string, extra []string, vs ...bwVariant) {
		for _, v := range vs {
			ps = append(ps,
				bwPair{prov: "tcp", prog: prog, server: "go", client: "c", extra: extra, v: v},
				bwPair{prov: "tcp", prog: prog, server: "c", client: "go", extra: extra, v: v})
		}
	}
	both("msg_bw", nil, bwPlain, bwVerify, bwE, bwB64k, bwW4)
	both("rdm_tagged_bw", nil, bwPlain, bwVerify, bwE, bwB64k, bwW4, bwU, bwVU)
	for _, e := range []string{"rdm", "msg"} {
		both("bw", []string{"-e", e}, bwOnly(bwPlain), bwOnly(bwVerify), bwOnly(bwE), bwOnly(bwB))
	}
	for _, e := range []string{"msg", "rdm"} {
		for _, o := range []string{"write", "read", "writedata"} {
			both("rma_bw", []string{"-e", e, "-o", o}, bwPlain)
		}
		both("rma_bw", []string{"-e", e, "-o", "writedata"}, bwVerify, bwW4)
		both("rma_bw", []string{"-e", e, "-o", "write"}, bwE, bwW4)
		both("rma_bw", []string{"-e", e, "-o", "read"}, bwB)
	}
	for _, o := range []string{"write", "read", "writedata"} {
		both("rma_bw", []string{"-e", "rdm", "-o", o}, bwU)
	}
	gogo := func(prog string, extra []string, vs ...bwVariant) {
		for _, v := range vs {
			ps = append(ps, bwPair{prov: "shm", prog: prog, server: "go", client: "go", extra: extra, v: v})
		}
	}
	gogo("rdm_tagged_bw", nil, bwPlain, bwVerify, bwE, bwW4)
	gogo("bw", []string{"-e", "rdm"}, bwOnly(bwPlain), bwOnly(bwVerify))
	for _, o := range []string{"write", "read", "writedata"} {
		gogo("rma_bw", []string{"-o", o}, bwPlain)
	}
	gogo("rma_bw", []string{"-o", "writedata"}, bwVerify)
	gogo("rma_bw", []string{"-o", "write"}, bwE, bwW4)
	return ps
}

// bwOnly is v for bw, which takes no -I: each size is one window of 64.
func bwOnly(v bwVariant) bwVariant {
	v.args = slices.DeleteFunc(slices.Clone(v.args), func(a string) bool { return a == "-I" || a == "5" })
	v.iters = "64"
	return v
}

func TestBandwidthInterop(t *testing.T) {
	for _, p := range bwPairs() {
		t.Run(p.name(), func(t *testing.T) {
			if p.server == "c" || p.client == "c" {
				fabtestsBin(t)
			}
			t.Parallel()
			srv, cli := runBWPair(t, p)
			checkBWRows(t, p, srv, cli)
		})
	}
}

// runBWPair runs p: the server, then (once it listens) the client; both
// must exit 0.
func runBWPair(t *testing.T, p bwPair) (srv, cli *peer) {
	t.Helper()
	dataPort, oobPort := freePort(t), ""
	args := append(slices.Clone(p.extra), p.v.args...)
	for i, a := range args {
		if strings.Contains(a, oobPlaceholder) {
			oobPort = freePort(t)
			args[i] = strings.ReplaceAll(a, oobPlaceholder, oobPort)
		}
	}
	srvArgs := append([]string{"-p", p.prov, "-s", pairHost(p.prov), "-B", dataPort}, args...)
	cliArgs := []string{"-p", p.prov, "-P", dataPort}
	switch {
	case p.prov != "shm":
		cliArgs = append(cliArgs, "-s", pairHost(p.prov))
	case oobPort != "":
		// gofabric's shm names an endpoint after -s and -B.
		cliArgs = append(cliArgs, "-B", freePort(t))
	}
	cliArgs = append(append(cliArgs, args...), pairHost(p.prov))

	srv = startPeer(t, p.server, "server", p.prog, srvArgs...)
	switch {
	case oobPort != "":
		waitListening(t, srv, oobPort)
	case p.prov == "tcp":
		waitListening(t, srv, dataPort)
	case p.prov == "verbs":
		waitCMListening(t, srv, dataPort)
	}
	cli = startPeer(t, p.client, "client", p.prog, cliArgs...)
	srvStatus := srv.status(t, peerLimit, cli)
	cliStatus := cli.status(t, peerLimit, srv)
	require.Zero(t, srvStatus, "%s", reports(srv, cli))
	require.Zero(t, cliStatus, "%s", reports(srv, cli))
	return srv, cli
}

// checkBWRows checks that both sides printed a row for each default size
// (64 to 1m) with the same size, iteration and total columns, the
// iterations the variant asks for.
func checkBWRows(t *testing.T, p bwPair, srv, cli *peer) {
	t.Helper()
	want := p.v.sizes
	if want == nil {
		for _, sp := range defaultSizes() {
			if sp.def {
				want = append(want, sizeStr(int64(sp.size)))
			}
		}
	}
	srvRows, cliRows := perfRows(srv.out.String()), perfRows(cli.out.String())
	require.Len(t, srvRows, len(want), "%s", srv.report())
	require.Len(t, cliRows, len(want), "%s", cli.report())
	for i := range srvRows {
		require.Equal(t, want[i], srvRows[i][0], "row %d's size", i)
		require.Equal(t, srvRows[i][:3], cliRows[i][:3], "row %d: bytes, iters and total agree", i)
		require.Equal(t, p.v.iters, srvRows[i][1], "row %d's iterations", i)
	}
}

// TestBandwidthVerifyCatchesBadPayloads pairs a receiving side that checks
// payloads (-v) with a sender that does not fill them: the checker must
// report the first wrong byte on stdout and exit with EIO. It shows that
// the -v pairs above checked real data: the Go receivers check what C
// sent, and C's check what Go sent.
func TestBandwidthVerifyCatchesBadPayloads(t *testing.T) {
	for _, tt := range []struct {
		prog    string
		extra   []string
		checker string
	}{
		{"msg_bw", nil, "go"},
		{"rdm_tagged_bw", nil, "go"},
		{"rdm_tagged_bw", nil, "c"},
		{"bw", []string{"-e", "rdm"}, "go"},
		{"bw", []string{"-e", "msg"}, "c"},
		{"rma_bw", []string{"-e", "rdm", "-o", "writedata"}, "go"},
		{"rma_bw", []string{"-e", "msg", "-o", "writedata"}, "c"},
	} {
		t.Run(tt.prog+strings.Join(tt.extra, "_")+"/"+tt.checker+"_checks", func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			other := map[string]string{"go": "c", "c": "go"}[tt.checker]
			port := freePort(t)
			args := append(slices.Clone(tt.extra), "-p", "tcp", "-s", "127.0.0.1", "-S", "64")
			if tt.prog != "bw" {
				args = append(args, "-I", "5")
			}
			srv := startPeer(t, tt.checker, "server", tt.prog, append(args, "-B", port, "-v")...)
			waitListening(t, srv, port)
			cli := startPeer(t, other, "client", tt.prog, append(args, "-P", port, "127.0.0.1")...)
			require.Equal(t, int(fi.EIO), srv.status(t, peerLimit, cli), "%s", reports(srv, cli))
			// What an unfilled payload holds is the sender's business:
			// C's bw sends the whole window from the buffer that carried
			// its address, whose first byte varies from run to run and
			// is the pattern's '0' about once in 256 runs (a CI run saw
			// "(1!=z) at byte 1"). The checker must name the first byte
			// that differs, whichever it is, and it may be any byte
			// value, a newline included ((?s)).
			m := regexp.MustCompile(`(?s)Data check error \((.)!=(.)\) at byte (\d+) for buffer size 64\n`).FindStringSubmatch(srv.out.String())
			require.NotNil(t, m, "no data check error in %q", srv.out.String())
			at, err := strconv.Atoi(m[3])
			require.NoError(t, err)
			require.Less(t, at, 64)
			require.NotEqual(t, m[1], m[2], "the byte reported differs from the pattern")
			require.Equal(t, alphabet[at%len(alphabet)], m[1][0], "the pattern's byte at %d", at)
		})
	}
}

// TestBandwidthUnexpectedSize runs the Go server of a bandwidth test
// against a C client sending another size: the server must fail with
// EMSGSIZE and say what arrived, not take the data as its own size.
func TestBandwidthUnexpectedSize(t *testing.T) {
	for _, prog := range []string{"msg_bw", "rdm_tagged_bw"} {
		t.Run(prog, func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			port := freePort(t)
			args := []string{"-p", "tcp", "-s", "127.0.0.1", "-I", "5"}
			srv := startPeer(t, "go", "server", prog, append(args, "-B", port, "-S", "64", "--timeout", "5")...)
			waitListening(t, srv, port)
			cli := startPeer(t, "c", "client", prog, append(args, "-P", port, "-S", "128", "127.0.0.1")...)
			requireCleanFailure(t, srv, int(fi.EMSGSIZE), "received a 128-byte message where the test expects 64 bytes", cli)
		})
	}
}
