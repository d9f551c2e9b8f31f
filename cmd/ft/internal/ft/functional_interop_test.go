package ft

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The interop matrix of the functional programs: for each, the Go server
// with the C client and the C server with the Go client over tcp (msg,
// rdm) and udp (dgram), and Go against Go over shm, with -E and -b, and
// with -v and -S all where the C program takes them (only msg_inject has
// -v; -S all is accepted by the programs with the client-server options
// and leaves their one transfer size as it is). Both sides must exit with
// the status C gives and print C's lines.
//
// Where C against C does not run, the pair is C's verdict:
//   - rdm_rma_event over tcp, and unexpected_msg -e msg over tcp: C's
//     tcp;ofi_rxm has no FI_RMA_EVENT and C's tcp has no tagged messages
//     on MSG endpoints, and neither has gofabric's: both sides exit 61
//     (ENODATA, runfabtests.sh's "Notrun"), which the pairs check;
//   - msg_inject -A inject over shm: C's shm and gofabric's refuse
//     FI_INJECT in the transmit op flags: both exit 61, checked Go
//     against Go.
//
// Pairs left out, with the reason:
//   - rdm_tagged_peek with C's server and Go's client, and Go against Go
//     over shm: the client peeks (FI_PEEK, FI_CLAIM, FI_DISCARD), which no
//     gofabric provider implements; ft's client exits 38 (ENOSYS) with the
//     reason, which TestPeekClientRefused checks;
//   - cm_data with -E or -b: it fails C against C (C's client never opens
//     the out-of-band socket its server waits for);
//   - rdm_tagged_peek with -S 100000 and up, or -S 0: they fail C against
//     C (the sends of five large messages do not complete; a 0-byte
//     receive truncates the sync message).

// Placeholders in a pair's arguments, replaced by free ports.
const (
	cmPortPlaceholder = "QPORT" // cm_data's sync socket (-q)
)

// fpair is one run of a functional program.
type fpair struct {
	prov, prog     string
	server, client string // "go" or "c"
	variant        string
	args           []string // for both sides
	// clients is how many client processes run one after another (rdm
	// -C N); 0 means 1.
	clients int
	// status is what both sides exit with: 0, or 61 where the provider
	// lacks what the program needs (C's "not run").
	status int
	// cmData is the provider's CM data size (cm_data's limit): 0 for
	// tcp's 256.
	cmData int
}

func (p fpair) name() string {
	return p.prov + "/" + p.prog + "/" + p.server + "_server_" + p.client + "_client/" + p.variant
}

// oobVariants are the out-of-band variants every program takes, plain
// first.
var oobVariants = []struct {
	name string
	args []string
}{
	{"plain", nil},
	{"-E", []string{"-E=" + oobPlaceholder}},
	{"-b", []string{"-b=" + oobPlaceholder}},
}

// bothWays returns the pair with the Go server and C client, and the one
// with the C server and Go client.
func bothWays(p fpair) []fpair {
	a, b := p, p
	a.server, a.client = "go", "c"
	b.server, b.client = "c", "go"
	return []fpair{a, b}
}

// goGo returns the pair Go against Go.
func goGo(p fpair) fpair {
	p.server, p.client = "go", "go"
	return p
}

// functionalPairs lists the matrix.
func functionalPairs() []fpair {
	var ps []fpair
	add := func(p ...fpair) { ps = append(ps, p...) }
	for _, v := range oobVariants {
		add(bothWays(fpair{prov: "tcp", prog: "msg", variant: v.name, args: v.args})...)
		add(bothWays(fpair{prov: "tcp", prog: "rdm", variant: v.name, args: v.args})...)
		add(bothWays(fpair{prov: "udp", prog: "dgram", variant: v.name, args: v.args})...)
		add(goGo(fpair{prov: "shm", prog: "rdm", variant: v.name, args: v.args}))
		add(fpair{prov: "tcp", prog: "rdm_tagged_peek", server: "go", client: "c", variant: v.name, args: v.args})
		mc := append([]string{"-C", "3", "-I", "5"}, v.args...)
		add(bothWays(fpair{prov: "tcp", prog: "rdm_multi_client", variant: v.name, args: mc})...)
		add(goGo(fpair{prov: "shm", prog: "rdm_multi_client", variant: v.name, args: mc}))
		add(bothWays(fpair{prov: "tcp", prog: "rdm_rma_event", variant: v.name, args: v.args, status: int(fi.ENODATA)})...)
		add(goGo(fpair{prov: "shm", prog: "rdm_rma_event", variant: v.name, args: v.args}))
	}
	add(bothWays(fpair{prov: "tcp", prog: "rdm", variant: "-U", args: []string{"-U"}})...)
	add(bothWays(fpair{prov: "tcp", prog: "rdm", variant: "-C_2", args: []string{"-C", "2"}, clients: 2})...)
	add(bothWays(fpair{prov: "tcp", prog: "rdm", variant: "-C_2_-E", args: []string{"-C", "2", "-E=" + oobPlaceholder}, clients: 2})...)
	add(fpair{prov: "tcp", prog: "rdm_tagged_peek", server: "go", client: "c", variant: "-S_all", args: []string{"-S", "all"}})
	add(bothWays(fpair{prov: "tcp", prog: "cm_data", variant: "plain", args: []string{"-q", cmPortPlaceholder}})...)
	for _, mc := range [][]string{{"-U"}, {"-R"}, {"-S", "all"}} {
		add(bothWays(fpair{prov: "tcp", prog: "rdm_multi_client", variant: strings.Join(mc, "_"), args: append([]string{"-C", "3", "-I", "5"}, mc...)})...)
	}
	add(goGo(fpair{prov: "shm", prog: "rdm_multi_client", variant: "-R", args: []string{"-C", "3", "-I", "5", "-R"}}))
	// FI_DELIVERY_COMPLETE (-U) and FI_INJECT_COMPLETE as default op
	// flags, which gofabric's shm takes as C's does.
	add(goGo(fpair{prov: "shm", prog: "rdm", variant: "-U", args: []string{"-U"}}))
	add(goGo(fpair{prov: "shm", prog: "rdm_multi_client", variant: "-U", args: []string{"-C", "3", "-I", "5", "-U"}}))
	add(goGo(fpair{prov: "shm", prog: "msg_inject", variant: "-A_inj_complete", args: []string{"-A", "inj_complete", "-v", "-I", "5"}}))

	// unexpected_msg always uses the out-of-band socket (port 3000
	// unless -E or -b names one).
	for _, v := range [][]string{{"-E=" + oobPlaceholder}, {"-b=" + oobPlaceholder}, {"-b=" + oobPlaceholder, "-C"}, {"-b=" + oobPlaceholder, "-S", "all"}, {"-b=" + oobPlaceholder, "-S", "100000", "-M", "3"}} {
		args := append([]string{"-e", "rdm", "-I", "5"}, v...)
		name := strings.Join(v, "_")
		add(bothWays(fpair{prov: "tcp", prog: "unexpected_msg", variant: "-e_rdm_" + name, args: args})...)
	}
	add(bothWays(fpair{prov: "tcp", prog: "unexpected_msg", variant: "-e_msg", args: []string{"-e", "msg", "-I", "5", "-b=" + oobPlaceholder}, status: int(fi.ENODATA)})...)
	add(goGo(fpair{prov: "shm", prog: "unexpected_msg", variant: "-e_rdm", args: []string{"-e", "rdm", "-I", "5", "-b=" + oobPlaceholder}}))

	for _, a := range []string{"inject", "inj_complete"} {
		for _, n := range [][]string{nil, {"-N"}} {
			args := append([]string{"-A", a, "-v", "-I", "5"}, n...)
			name := strings.Join(args[:2], "_") + strings.Join(append([]string{""}, n...), "_")
			add(bothWays(fpair{prov: "tcp", prog: "msg_inject", variant: name, args: args})...)
		}
	}
	add(bothWays(fpair{prov: "tcp", prog: "msg_inject", variant: "-A_inj_complete_-E", args: []string{"-A", "inj_complete", "-v", "-I", "5", "-E=" + oobPlaceholder}})...)
	add(bothWays(fpair{prov: "tcp", prog: "msg_inject", variant: "-A_inj_complete_-N_-b", args: []string{"-A", "inj_complete", "-N", "-v", "-I", "5", "-b=" + oobPlaceholder}})...)
	add(bothWays(fpair{prov: "tcp", prog: "msg_inject", variant: "-A_inj_complete_-S_all_-S_100000", args: []string{"-A", "inj_complete", "-v", "-I", "5", "-S", "all", "-S", "100000"}})...)
	add(goGo(fpair{prov: "shm", prog: "msg_inject", variant: "-A_inj_complete_-N", args: []string{"-A", "inj_complete", "-N", "-v", "-I", "5"}}))
	add(goGo(fpair{prov: "shm", prog: "msg_inject", variant: "-A_inject", args: []string{"-A", "inject", "-v", "-I", "5"}, status: int(fi.ENODATA)}))
	return ps
}

func TestFunctionalInterop(t *testing.T) {
	for _, p := range functionalPairs() {
		t.Run(p.name(), func(t *testing.T) {
			if p.server == "c" || p.client == "c" {
				fabtestsBin(t)
			}
			t.Parallel()
			runFunctional(t, p)
		})
	}
}

// runFunctional runs p: the server, then, once it is ready, each client in
// turn, and checks every side's status and output.
func runFunctional(t *testing.T, p fpair) {
	dataPort, oobPort, cmPort := freePort(t), "", ""
	args := slices.Clone(p.args)
	for i, a := range args {
		switch {
		case strings.Contains(a, oobPlaceholder):
			oobPort = freePort(t)
			args[i] = strings.ReplaceAll(a, oobPlaceholder, oobPort)
		case a == cmPortPlaceholder:
			cmPort = freePort(t)
			args[i] = cmPort
		}
	}
	srvArgs := append([]string{"-p", p.prov, "-s", pairHost(p.prov), "-B", dataPort}, args...)
	srv := startPeer(t, p.server, "server", p.prog, srvArgs...)
	ready := func() {
		switch {
		case oobPort != "":
			// The out-of-band socket comes first, even where fi_getinfo
			// then fails.
			waitListening(t, srv, oobPort)
		case p.status != 0:
			// The server stops at fi_getinfo.
		case cmPort != "":
			// cm_data listens on its sync port after its data port.
			waitListening(t, srv, cmPort)
		case p.prov == "tcp":
			waitListening(t, srv, dataPort)
		case p.prov == "verbs":
			waitCMListening(t, srv, dataPort)
		case p.prov == "udp":
			// The client's first datagram, its address, is lost if the
			// server's socket is not bound yet.
			waitUDPBound(t, srv, dataPort)
		}
	}
	clients := max(p.clients, 1)
	var clis []*peer
	for i := 0; i < clients; i++ {
		ready()
		cliArgs := []string{"-p", p.prov, "-P", dataPort}
		switch {
		case p.prov != "shm":
			cliArgs = append(cliArgs, "-s", pairHost(p.prov))
		case oobPort != "":
			// gofabric's shm names an endpoint after -s and -B: without -s
			// the client's own name comes from -B (9228 by default).
			cliArgs = append(cliArgs, "-B", freePort(t))
		}
		cliArgs = append(append(cliArgs, args...), pairHost(p.prov))
		cli := startPeer(t, p.client, fmt.Sprintf("client %d", i+1), p.prog, cliArgs...)
		clis = append(clis, cli)
		all := append([]*peer{srv}, clis...)
		require.Equal(t, p.status, cli.status(t, peerLimit, all...), "%s", reports(all...))
	}
	all := append([]*peer{srv}, clis...)
	require.Equal(t, p.status, srv.status(t, peerLimit, clis...), "%s", reports(all...))
	if p.status != 0 {
		return
	}
	require.Regexp(t, expectedOutput(t, p, "server", clients), srv.out.String(), "%s", srv.report())
	for _, cli := range clis {
		require.Regexp(t, expectedOutput(t, p, "client", 1), cli.out.String(), "%s", cli.report())
	}
}

// outputOf holds the expected output of the programs whose tests live
// in files of their own (multi_recv_interop_test.go), set from init:
// expectedOutput's for their pairs.
var outputOf = map[string]func(t *testing.T, p fpair, role string) string{}

// expectedOutput is the regular expression of everything a side of p
// prints on stdout, C's lines (runs is the server's number of clients).
func expectedOutput(t *testing.T, p fpair, role string, runs int) string {
	t.Helper()
	if f, ok := outputOf[p.prog]; ok {
		return f(t, p, role)
	}
	lines := func(ls ...string) string {
		var b strings.Builder
		b.WriteString("^")
		for _, l := range ls {
			b.WriteString(regexp.QuoteMeta(l) + "\n")
		}
		return b.String() + "$"
	}
	argVal := func(flag, def string) string {
		if i := slices.Index(p.args, flag); i >= 0 {
			return p.args[i+1]
		}
		return def
	}
	switch p.prog {
	case "msg", "rdm", "dgram":
		if role == "client" {
			return lines("Sending message...", "Send completion received")
		}
		var ls []string
		for range runs {
			ls = append(ls, "Waiting for message from client...", "Data check OK", "Received data from client: "+greeting)
		}
		return lines(ls...)
	case "rdm_tagged_peek":
		if role == "server" {
			return lines("Sending five tagged messages", "Waiting for messages to complete")
		}
		return lines("Searching for a bad msg", "Searching for a bad msg with claim", "Searching for first msg",
			"Receiving first msg", "Searching for second msg to claim", "Receiving second msg",
			"Searching for third msg to peek and discard", "Checking to see if third msg was discarded",
			"Searching for fourth msg to claim and discard", "Discarding fourth msg", "Retrieving fifth message")
	case "cm_data":
		limit := cmp.Or(p.cmData, 256)
		var ls []string
		for n := 1; n <= limit; n <<= 1 {
			ls = append(ls, fmt.Sprintf("trying with data size: %d", n))
		}
		if role == "client" {
			ls = append(ls, fmt.Sprintf("trying with data size exceeding maximum: %d", limit+1))
		}
		return lines(ls...)
	case "rdm_multi_client":
		n, err := strconv.Atoi(argVal("-C", "1"))
		require.NoError(t, err)
		var ls []string
		for i := range n {
			if role == "client" {
				ls = append(ls, fmt.Sprintf("Starting client: %d", i))
			}
			ls = append(ls, "Start ping-pong.", "Ping-pong succeeds.")
		}
		return lines(ls...)
	case "rdm_rma_event":
		if role == "client" {
			return lines("RMA write to server", "Received a completion event for RMA write")
		}
		return lines("Data check OK", "Received data from Client: "+greeting)
	case "unexpected_msg":
		iters := argVal("-I", "600")
		return `^PID \d+ GOOD iter 0/` + iters + ` completed\nPID \d+ GOOD all done\n$`
	case "msg_inject":
		flag := map[string]string{"inject": "FI_INJECT", "inj_complete": "FI_INJECT_COMPLETE"}[argVal("-A", "")]
		return lines("Start testing "+flag, "GOOD: Completed "+flag+" Testing")
	}
	t.Fatalf("no expected output for %s", p.prog)
	return ""
}

// waitUDPBound waits until a UDP socket is bound to port (seen in
// /proc/net/udp or udp6), failing if p exits first.
func waitUDPBound(t *testing.T, p *peer, port string) {
	t.Helper()
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	want := fmt.Sprintf(":%04X", n)
	bound := func() bool {
		for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) > 1 && strings.HasSuffix(fields[1], want) {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(time.Minute)
	for !bound() {
		if p.exited() {
			t.Fatalf("%s exited before binding UDP port %s\n%s", p.name, port, p.report())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not bind UDP port %s within a minute\n%s", p.name, port, p.report())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPeekClientRefused checks what stands in for the rdm_tagged_peek
// pairs with ft's client: gofabric's providers have no FI_PEEK, and the
// client says so with ENOSYS (38, runfabtests.sh's "not run") before it
// contacts a server.
func TestPeekClientRefused(t *testing.T) {
	for _, prov := range []string{"tcp", "shm"} {
		status, stdout, stderr := runMain("rdm_tagged_peek", "-p", prov, "-P", "1", "127.0.0.1")
		require.Equal(t, int(fi.ENOSYS), status, "%s", stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, "FI_PEEK, FI_CLAIM, FI_DISCARD")
		require.Contains(t, stderr, "hint: run ft rdm_tagged_peek as the server")
	}
}

// badPeerTimeout is the Go side's --timeout against a misbehaving C peer:
// it bounds a hang, and the failures these tests expect come as soon as
// the peer's message does. It must also cover the C peer's start, which
// on a loaded machine is slow (C libfabric loads every provider at its
// first fi_getinfo): 5 s ran out once under the race-enabled suite on two
// busy vCPUs, the Go server "waiting for the client's address".
const badPeerTimeout = "30"

// TestFunctionalBadPeer runs a Go side against a C peer that sends what
// the Go side does not expect: it must fail with the status and reason
// given, within its timeout, without a panic.
func TestFunctionalBadPeer(t *testing.T) {
	tests := []struct {
		name       string
		prog, peer string   // the Go server's program, the C client's
		srv, cli   []string // extra arguments
		status     int
		stderr     string
	}{
		{
			// rdm_pingpong's first message after the addresses is its
			// 1-byte sync, not a greeting.
			name: "rdm greeting from a pingpong", prog: "rdm", peer: "rdm_pingpong",
			cli: []string{"-I", "5", "-S", "64"}, status: 1,
			stderr: "Received length does not match expected length.",
		},
		{
			name: "unexpected_msg of 100 bytes where 64 are due", prog: "unexpected_msg", peer: "unexpected_msg",
			srv: []string{"-I", "5", "-S", "64", "-b=OOB"}, cli: []string{"-I", "5", "-S", "100", "-b=OOB"},
			status: int(fi.EMSGSIZE), stderr: "received a 100-byte message where the test sends 64 bytes",
		},
		{
			name: "unexpected_msg of 1k into 256-byte buffers", prog: "unexpected_msg", peer: "unexpected_msg",
			srv: []string{"-I", "5", "-S", "64", "-b=OOB"}, cli: []string{"-I", "5", "-b=OOB"},
			status: 1, stderr: "Truncation error",
		},
		{
			name: "unexpected_msg without the CQ data -C expects", prog: "unexpected_msg", peer: "unexpected_msg",
			srv: []string{"-I", "5", "-C", "-b=OOB"}, cli: []string{"-I", "5", "-b=OOB"},
			status: 1, stderr: "the message carries the remote CQ data 0 where the peer sends its size 1024",
		},
		{
			// -A inject sends empty messages.
			name: "msg_inject empty where 1k is due", prog: "msg_inject", peer: "msg_inject",
			srv: []string{"-A", "inj_complete"}, cli: []string{"-A", "inject"},
			status: int(fi.EMSGSIZE), stderr: "received a 0-byte message where the test sends 1024 bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			port, oob := freePort(t), freePort(t)
			fix := func(args []string) []string {
				out := slices.Clone(args)
				for i, a := range out {
					out[i] = strings.ReplaceAll(a, oobPlaceholder, oob)
				}
				return out
			}
			srvArgs := append([]string{"-p", "tcp", "-s", "127.0.0.1", "-B", port, "--timeout", badPeerTimeout}, fix(tt.srv)...)
			srv := startPeer(t, "go", "server", tt.prog, srvArgs...)
			if slices.ContainsFunc(tt.srv, func(a string) bool { return strings.Contains(a, oobPlaceholder) }) {
				waitListening(t, srv, oob)
			} else {
				waitListening(t, srv, port)
			}
			cliArgs := append(append([]string{"-p", "tcp", "-s", "127.0.0.1", "-P", port}, fix(tt.cli)...), "127.0.0.1")
			cli := startPeer(t, "c", "client", tt.peer, cliArgs...)
			requireCleanFailure(t, srv, tt.status, tt.stderr, cli)
		})
	}
}

func TestUniqueOpts(t *testing.T) {
	require.Equal(t, "CM:hB:P:s:a:b::E::F:I:QS:mc:t:w:lf:d:p:KD:i:He:", uniqueOpts("CM:h"+optsCS+optsInfo))
	require.Equal(t, "ab::c:", uniqueOpts("ab::c:a:b"))
}

func TestFunctionalOptions(t *testing.T) {
	status, stdout, stderr := runMain("msg_inject", "-A", "nosuch")
	require.Equal(t, 1, status, stderr)
	require.Equal(t, "Unsupported flag\n", stdout)

	status, _, stderr = runMain("unexpected_msg", "-M", "0")
	require.Equal(t, int(fi.EINVAL), status, stderr)
	require.Contains(t, stderr, "-M 0: at least one message")

	// unexpected_msg's -C takes no argument and is not -C <connections>.
	s := newSession(programs["unexpected_msg"], nil, nil, nil)
	programs["unexpected_msg"].init(s)
	require.NoError(t, s.parse(programs["unexpected_msg"].getoptSpec(), []string{"-C", "-M", "7", "host"}))
	require.Equal(t, &unexpectedOpts{sendData: true, count: 7}, s.local)
	require.Equal(t, 1, s.opts.NumConnections)
	require.Equal(t, "host", s.opts.DstAddr)
	require.Equal(t, 600, s.opts.Iterations)
	require.True(t, s.opts.Has(OptOOBSync|OptOOBAddrExch|OptSkipMsgAlloc))

	// cm_data's -q names its sync port.
	s = newSession(programs["cm_data"], nil, nil, nil)
	programs["cm_data"].init(s)
	require.Equal(t, defaultCMDataPort, s.local.(*cmDataOpts).port)
	require.NoError(t, s.parse(programs["cm_data"].getoptSpec(), []string{"-q", "4711"}))
	require.Equal(t, "4711", s.local.(*cmDataOpts).port)

	for _, name := range []string{"msg", "rdm", "dgram", "rdm_tagged_peek", "cm_data", "unexpected_msg", "rdm_multi_client", "rdm_rma_event", "msg_inject"} {
		require.NotNil(t, lookup("fi_"+name), name)
		status, _, stderr := runMain(name, "-h")
		require.Equal(t, 1, status)
		require.Contains(t, stderr, "Usage:\n", name)
	}
}

// TestCMDataBadPeer runs ft's cm_data server against a peer that is not
// cm_data: a plain socket on its sync port, and C's fi_msg, which
// connects without private data where the first round carries 1 byte.
// The server must refuse the request and fail with EINVAL, saying why.
func TestCMDataBadPeer(t *testing.T) {
	fabtestsBin(t)
	t.Parallel()
	port, sync := freePort(t), freePort(t)
	srv := startPeer(t, "go", "server", "cm_data", "-p", "tcp", "-s", "127.0.0.1", "-B", port, "-q", sync, "--timeout", badPeerTimeout)
	waitListening(t, srv, sync)
	c, err := net.Dial("tcp", "127.0.0.1:"+sync)
	require.NoError(t, err)
	defer c.Close()
	cli := startPeer(t, "c", "client", "msg", "-p", "tcp", "-s", "127.0.0.1", "-P", port, "127.0.0.1")
	requireCleanFailure(t, srv, int(fi.EINVAL), "the connection request carries 0 bytes of private data where the test sends 1", cli)
	// fi_msg hears the reject.
	require.NotZero(t, cli.status(t, peerLimit))
}
