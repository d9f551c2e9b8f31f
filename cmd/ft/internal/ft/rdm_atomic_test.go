package ft

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// rdm_atomic against C's fi_rdm_atomic over tcp (tcp;ofi_rxm), both
// ways, with -o all (runfabtests.sh's short list: -I 5, and again with
// -U), and Go against Go over tcp and shm. Each side must exit 0, print a
// row for each pair its endpoint supports and a "Provider doesn't
// support" line for each other pair, nothing else, in C's order; over tcp
// the pairs must be cRxmAtomics, what C against C runs.

// Datatype sets of cRxmAtomics.
var (
	atomicIntTypes  = []ep.Datatype{ep.Int8, ep.Uint8, ep.Int16, ep.Uint16, ep.Int32, ep.Uint32, ep.Int64, ep.Uint64}
	atomicRealTypes = append(slices.Clone(atomicIntTypes), ep.Float, ep.Double)
	atomicAllTypes  = append(slices.Clone(atomicRealTypes), ep.FloatComplex)
)

// cRxmAtomics are the datatypes of each operation that C's fi_rdm_atomic
// -o all runs against itself over tcp (libfabric 1.17, Debian bookworm's
// tcp;ofi_rxm, loopback, 2026-11-28): 191 rows, the other 113 of the 19
// operations times 16 datatypes "Provider doesn't support" lines. C's
// rxm is built with compiler atomics, which leave out double complex,
// long double and long double complex; no provider has the 128-bit
// integers.
var cRxmAtomics = map[ep.AtomicOp][]ep.Datatype{
	ep.OpMin:         atomicRealTypes, // 10
	ep.OpMax:         atomicRealTypes,
	ep.OpSum:         atomicAllTypes, // 11
	ep.OpProd:        atomicAllTypes,
	ep.OpLOr:         atomicAllTypes,
	ep.OpLAnd:        atomicAllTypes,
	ep.OpBOr:         atomicIntTypes, // 8
	ep.OpBAnd:        atomicIntTypes,
	ep.OpLXor:        atomicAllTypes,
	ep.OpBXor:        atomicIntTypes,
	ep.OpAtomicRead:  atomicAllTypes,
	ep.OpAtomicWrite: atomicAllTypes,
	ep.OpCSwap:       atomicAllTypes,
	ep.OpCSwapNE:     atomicAllTypes,
	ep.OpCSwapLE:     atomicRealTypes,
	ep.OpCSwapLT:     atomicRealTypes,
	ep.OpCSwapGE:     atomicRealTypes,
	ep.OpCSwapGT:     atomicRealTypes,
	ep.OpMSwap:       atomicIntTypes,
}

// atomicPair is one operation on one datatype.
type atomicPair struct {
	op ep.AtomicOp
	dt ep.Datatype
}

// row is the name of the pair's show_perf row.
func (p atomicPair) row() string {
	return atomicTypeNames[p.dt].name + "_" + atomicOpNames[p.op].name + "_" + kindOf(p.op).String() + "_lat"
}

// skipLine is the line the program prints on stderr for a pair its
// endpoint does not support.
func (p atomicPair) skipLine() string {
	return "Provider doesn't support " + atomicOpNames[p.op].name + " " + kindOf(p.op).String() +
		" atomic operation on " + atomicTypeNames[p.dt].name
}

// allAtomicPairs are every operation with every datatype, in the order
// the program runs them.
func allAtomicPairs() []atomicPair {
	var ps []atomicPair
	for op := ep.OpMin; op <= ep.OpMSwap; op++ {
		for dt := ep.Int8; dt <= ep.Uint128; dt++ {
			ps = append(ps, atomicPair{op, dt})
		}
	}
	return ps
}

// cRxmPairs returns cRxmAtomics as a set.
func cRxmPairs() map[atomicPair]bool {
	set := map[atomicPair]bool{}
	for op, dts := range cRxmAtomics {
		for _, dt := range dts {
			set[atomicPair{op, dt}] = true
		}
	}
	return set
}

// goAtomicPairs opens the endpoint rdm_atomic opens over prov (not
// enabled) and returns the pairs its valid queries support, each asked
// as the program asks it.
func goAtomicPairs(t *testing.T, prov string) map[atomicPair]bool {
	t.Helper()
	p := programs["rdm_atomic"]
	s := newSession(p, nil, io.Discard, io.Discard)
	p.init(s)
	require.NoError(t, s.parse(p.getoptSpec(), []string{"-p", prov, "-s", "127.0.0.1", "-B", freePort(t)}))
	require.NoError(t, p.setup(s))
	defer func() { require.NoError(t, s.close()) }()
	info, err := s.getinfo(s.hints)
	require.NoError(t, err)
	s.setInfo(info)
	require.NoError(t, s.openFabricRes())
	require.NoError(t, s.allocActiveRes())
	at, ok := s.ep.(ep.Atomic)
	require.True(t, ok, "%s's endpoint has atomics", info.FabricAttr.ProvName)
	a := &atomicOpts{atomic: at}
	set := map[atomicPair]bool{}
	for _, pr := range allAtomicPairs() {
		err := a.valid(kindOf(pr.op), pr.op, pr.dt)
		if err == nil {
			set[pr] = true
			continue
		}
		require.True(t, atomicUnsupported(err), "%s: %v", pr.row(), err)
	}
	return set
}

// TestRDMAtomicMatrix checks that gofabric's tcp;ofi_rxm offers the
// pairs C's does, asked as rdm_atomic asks: the valid queries of the
// endpoint the program opens (C's check is fi_atomicvalid, then
// fi_query_atomic).
func TestRDMAtomicMatrix(t *testing.T) {
	got := goAtomicPairs(t, "tcp")
	want := cRxmPairs()
	require.Len(t, want, 191)
	var missing, extra []string
	for _, p := range allAtomicPairs() {
		switch {
		case want[p] && !got[p]:
			missing = append(missing, p.row())
		case got[p] && !want[p]:
			extra = append(extra, p.row())
		}
	}
	require.Empty(t, missing, "pairs C's rxm runs that gofabric's rxm does not offer")
	require.Empty(t, extra, "pairs gofabric's rxm offers that C's does not")
}

// apair is one run of rdm_atomic: a server and a client.
type apair struct {
	prov           string
	server, client string // "go" or "c"
	args           []string
}

func (p apair) name() string {
	return p.prov + "/" + p.server + "_server_" + p.client + "_client/" + strings.Join(p.args, "_")
}

func TestRDMAtomicInterop(t *testing.T) {
	short := []string{"-o", "all", "-I", "5"}
	var ps []apair
	for _, args := range [][]string{short, append(slices.Clone(short), "-U"), {"-o", "cswap", "-z", "int32", "-I", "5"}} {
		ps = append(ps, apair{"tcp", "go", "c", args}, apair{"tcp", "c", "go", args})
	}
	for _, p := range ps {
		t.Run(p.name(), func(t *testing.T) {
			fabtestsBin(t)
			t.Parallel()
			runAtomic(t, p, cRxmPairs())
		})
	}
}

// TestRDMAtomicGo runs Go against Go: over tcp, where the pairs must be
// C's too, and over shm, where they must be those shm's endpoint offers.
func TestRDMAtomicGo(t *testing.T) {
	short := []string{"-o", "all", "-I", "5"}
	for _, p := range []apair{
		{"tcp", "go", "go", short},
		{"tcp", "go", "go", append(slices.Clone(short), "-U")},
		{"shm", "go", "go", short},
	} {
		t.Run(p.name(), func(t *testing.T) {
			want := cRxmPairs()
			if p.prov != "tcp" {
				want = goAtomicPairs(t, p.prov)
			}
			t.Parallel()
			runAtomic(t, p, want)
		})
	}
}

// runAtomic runs p and checks both sides' statuses and output: want are
// the pairs that run (those -o and -z select among them).
func runAtomic(t *testing.T, p apair, want map[atomicPair]bool) {
	start := time.Now()
	port := freePort(t)
	srv := startPeer(t, p.server, "server", "rdm_atomic", append([]string{"-p", p.prov, "-s", "127.0.0.1", "-B", port}, p.args...)...)
	cliArgs := []string{"-p", p.prov, "-P", port}
	if p.prov == "tcp" {
		waitListening(t, srv, port)
		cliArgs = append(cliArgs, "-s", "127.0.0.1")
	}
	cli := startPeer(t, p.client, "client", "rdm_atomic", append(append(cliArgs, p.args...), "127.0.0.1")...)
	all := []*peer{srv, cli}
	require.Equal(t, 0, cli.status(t, peerLimit, srv), "%s", reports(all...))
	require.Equal(t, 0, srv.status(t, peerLimit, cli), "%s", reports(all...))
	t.Logf("%s: %.1f s", p.name(), time.Since(start).Seconds())

	// The pairs -o and -z select, and the rows and lines they give.
	argVal := func(flag string) string {
		if i := slices.Index(p.args, flag); i >= 0 {
			return p.args[i+1]
		}
		return "all"
	}
	iters := "1k"
	if i := slices.Index(p.args, "-I"); i >= 0 {
		iters = p.args[i+1]
	}
	var rows, skips []string
	perOp := map[ep.AtomicOp]int{}
	for _, pr := range allAtomicPairs() {
		if o := argVal("-o"); o != "all" && atomicOpNames[pr.op].arg != o {
			continue
		}
		if z := argVal("-z"); z != "all" && atomicTypeNames[pr.dt].arg != z {
			continue
		}
		if want[pr] {
			rows = append(rows, pr.row())
			perOp[pr.op]++
		} else {
			skips = append(skips, pr.skipLine())
		}
	}
	for _, side := range all {
		checkAtomicOutput(t, side, rows, skips, perOp, iters)
	}
}

// perfRow is a named show_perf row: name, bytes, iters, total, time,
// MB/sec, usec/xfer, Mxfers/sec.
var perfRow = regexp.MustCompile(`^(\S+)\s+(\d+)\s+(\S+)\s+\S+\s+\d+\.\d\ds\s+\S+\s+\S+\s+\S+$`)

// checkAtomicOutput checks one side's output: show_perf's header, then
// rows in order, each of one element of its datatype and iters
// iterations, and on stderr skips and nothing else. It logs how many
// datatypes ran per operation and requires perOp's counts.
func checkAtomicOutput(t *testing.T, p *peer, rows, skips []string, perOp map[ep.AtomicOp]int, iters string) {
	t.Helper()
	out := strings.Split(strings.TrimSuffix(p.out.String(), "\n"), "\n")
	require.NotEmpty(t, out, "%s", p.report())
	require.Regexp(t, `^name\s+bytes\s+iters\s+total\s+time\s+MB/sec\s+usec/xfer\s+Mxfers/sec$`, out[0], "%s", p.report())
	var got []string
	gotPerOp := map[ep.AtomicOp]int{}
	for _, line := range out[1:] {
		m := perfRow.FindStringSubmatch(line)
		require.NotNil(t, m, "%s: not a result row: %q\n%s", p.name, line, p.report())
		got = append(got, m[1])
		require.Equal(t, iters, m[3], "%s: %s's iterations", p.name, m[1])
		for op := ep.OpMin; op <= ep.OpMSwap; op++ {
			if suffix := "_" + atomicOpNames[op].name + "_" + kindOf(op).String() + "_lat"; strings.HasSuffix(m[1], suffix) {
				gotPerOp[op]++
				dt := strings.TrimSuffix(m[1], suffix)
				i := slices.IndexFunc(atomicTypeNames[:], func(n atomicName) bool { return n.name == dt })
				require.GreaterOrEqual(t, i, 0, "%s: row %s names no datatype", p.name, m[1])
				size, err := strconv.Atoi(m[2])
				require.NoError(t, err)
				require.Equal(t, cAtomicSizes[i], size, "%s: %s's bytes", p.name, m[1])
			}
		}
	}
	var counts []string
	for op := ep.OpMin; op <= ep.OpMSwap; op++ {
		if n, ok := gotPerOp[op]; ok || perOp[op] > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", atomicOpNames[op].arg, n))
		}
	}
	t.Logf("%s: %d rows; datatypes per operation: %s", p.name, len(got), strings.Join(counts, ", "))
	require.Equal(t, perOp, gotPerOp, "%s: datatypes run per operation\n%s", p.name, p.report())
	require.Equal(t, rows, got, "%s: the rows\n%s", p.name, p.report())
	var errLines []string
	if e := strings.TrimSuffix(p.errOut.String(), "\n"); e != "" {
		errLines = strings.Split(e, "\n")
	}
	require.Equal(t, skips, errLines, "%s: stderr holds exactly the unsupported pairs' lines\n%s", p.name, p.report())
}

// cAtomicSizes are the elements' sizes in bytes, as fabtests'
// datatype_to_size gives them on x86-64.
var cAtomicSizes = [...]int{
	ep.Int8: 1, ep.Uint8: 1, ep.Int16: 2, ep.Uint16: 2, ep.Int32: 4, ep.Uint32: 4, ep.Int64: 8, ep.Uint64: 8,
	ep.Float: 4, ep.Double: 8, ep.FloatComplex: 8, ep.DoubleComplex: 16, ep.LongDouble: 16,
	ep.LongDoubleComplex: 32, ep.Int128: 16, ep.Uint128: 16,
}

// TestRDMAtomicOptions checks -o, -z and -U, and the refusal of words
// that name no operation or datatype (the usage, status 1, as C).
func TestRDMAtomicOptions(t *testing.T) {
	p := programs["rdm_atomic"]
	require.Same(t, p, lookup("fi_rdm_atomic"))
	parse := func(args ...string) (*Session, *atomicOpts, error) {
		s := newSession(p, nil, io.Discard, io.Discard)
		p.init(s)
		err := s.parse(p.getoptSpec(), args)
		return s, s.local.(*atomicOpts), err
	}
	_, a, err := parse()
	require.NoError(t, err)
	require.True(t, a.allOps && a.allTypes)

	s, a, err := parse("-o", "cswap_ne", "-z", "long_double_complex", "-U", "-I", "7", "host")
	require.NoError(t, err)
	require.False(t, a.allOps || a.allTypes)
	require.Equal(t, ep.OpCSwapNE, a.op)
	require.Equal(t, ep.LongDoubleComplex, a.dt)
	require.NotZero(t, s.hints.TxAttr.OpFlags&fi.FlagDeliveryComplete)
	require.Equal(t, 7, s.opts.Iterations)
	require.Equal(t, "host", s.opts.DstAddr)

	// "all" is a prefix, in any case, as C's strncasecmp reads it.
	_, a, err = parse("-o", "min", "-o", "ALLx", "-z", "int8", "-z", "All")
	require.NoError(t, err)
	require.True(t, a.allOps && a.allTypes)

	for _, args := range [][]string{{"-o", "Min"}, {"-o", "add"}, {"-z", "int"}, {"-z", "float128"}} {
		status, stdout, stderr := runMain(append([]string{"rdm_atomic"}, args...)...)
		require.Equal(t, 1, status, "%v: %s", args, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, "not an atomic", "%v", args)
		require.Contains(t, stderr, "Usage:\n", "%v", args)
	}
	status, _, stderr := runMain("rdm_atomic", "-h")
	require.Equal(t, 1, status)
	require.Contains(t, stderr, "-o <op>")
	require.Contains(t, stderr, "-z <datatype>")

	// The element sizes the program takes from kit are datatype_to_size's.
	for dt := ep.Int8; dt <= ep.Uint128; dt++ {
		n, err := kit.AtomicSize(dt)
		require.NoError(t, err)
		require.Equal(t, cAtomicSizes[dt], n, atomicTypeNames[dt].name)
	}

	// The rows' names and the kinds C gives each operation.
	require.Equal(t, "FI_INT8_FI_MIN_base_lat", atomicPair{ep.OpMin, ep.Int8}.row())
	require.Equal(t, "FI_FLOAT_COMPLEX_FI_ATOMIC_READ_fetch_lat", atomicPair{ep.OpAtomicRead, ep.FloatComplex}.row())
	require.Equal(t, "FI_UINT64_FI_MSWAP_compare_lat", atomicPair{ep.OpMSwap, ep.Uint64}.row())
	require.Equal(t, "FI_DOUBLE_FI_ATOMIC_WRITE_base_lat", atomicPair{ep.OpAtomicWrite, ep.Double}.row())
}
