package loopback_test

import (
	"context"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	_ "github.com/gofabric/gofabric/examples/loopback" // registers "loopback"
	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs gofabric's conformance suite (libfabric's fabtests
// in Go) on the provider: the groups of the unit tests, connection
// management, and messages over FI_EP_MSG and FI_EP_RDM.
func TestConformance(t *testing.T) {
	fabtests.Run(t, fabtests.Config{
		Provider: "loopback",
		Groups:   []string{"unit", "cm", "msg", "rdm"},
		// The wire is this process's memory: a peer in another process
		// has nothing to talk to, so the "2proc" variants are skipped.
		SingleProcess: true,
	})
}

// rdmPeer is an RDM endpoint with its own fabric, domain, AV and CQ.
type rdmPeer struct {
	ep   ep.Endpoint
	msg  ep.Msg
	cq   eq.CompletionQueue
	av   fi.AV
	name []byte
}

func openRDM(t *testing.T) *rdmPeer {
	t.Helper()
	hints := &fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM},
		FabricAttr: &fi.FabricAttr{ProvName: "loopback"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "", "", 0, hints)
	require.NoError(t, err)
	fabric, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, fabric.Close()) })
	domain, err := fabric.OpenDomain(infos[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, domain.Close()) })
	x := &rdmPeer{}
	x.av, err = fi.OpenAV(domain, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, x.av.Close()) })
	x.cq, err = eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatData})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, x.cq.Close()) })
	x.ep, err = ep.Open(domain, infos[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, x.ep.Close()) })
	require.NoError(t, x.ep.Bind(x.av, 0))
	require.NoError(t, x.ep.Bind(x.cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, x.ep.Enable())
	x.msg = x.ep.(ep.Msg)
	buf := make([]byte, 64)
	n, err := x.ep.(ep.Namer).Name(buf)
	require.NoError(t, err)
	x.name = buf[:n]
	return x
}

// TestDataPathAllocs: posting, matching and reading completions allocate
// nothing, whether the receive or the send comes first (the message then
// waits in the receiver's inbox), and for injects, whose data is copied.
func TestDataPathAllocs(t *testing.T) {
	a, b := openRDM(t), openRDM(t)
	fas, err := a.av.Insert([][]byte{b.name}, 0)
	require.NoError(t, err)
	dest := fas[0]
	sbuf, rbuf := make([]byte, 32), make([]byte, 32)
	var c [4]eq.Completion
	read := func(q eq.CompletionQueue, want int) {
		n, err := q.Read(c[:])
		if err != nil || n != want {
			t.Fatalf("cq read: %d entries, %v; want %d", n, err, want)
		}
	}
	for _, tc := range []struct {
		name string
		run  func()
	}{
		{"recv-first", func() {
			_ = b.msg.Recv(rbuf, nil, fi.AddrUnspec, nil)
			_ = a.msg.Send(sbuf, nil, dest, nil)
			read(b.cq, 1)
			read(a.cq, 1)
		}},
		{"send-first", func() {
			_ = a.msg.SendData(sbuf, nil, 7, dest, nil)
			_ = b.msg.Recv(rbuf, nil, fi.AddrUnspec, nil)
			read(b.cq, 1)
			read(a.cq, 1)
		}},
		{"inject", func() {
			_ = a.msg.Inject(sbuf, dest)
			_ = b.msg.Recv(rbuf, nil, fi.AddrUnspec, nil)
			read(b.cq, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, tc.run))
		})
	}
}

// TestAddressCheck: the AV takes FI_SOCKADDR_IN addresses only, and
// refuses others with fi.EINVAL (fi_av_insert).
func TestAddressCheck(t *testing.T) {
	a := openRDM(t)
	_, in6, err := fi.SockaddrFromAddrPort(netip.MustParseAddrPort("[::1]:4000"))
	require.NoError(t, err)
	for _, bad := range [][]byte{in6, {2, 0, 1}} {
		fas, err := a.av.Insert([][]byte{bad}, 0)
		require.ErrorIs(t, err, fi.EINVAL, "insert %x", bad)
		require.Equal(t, []fi.Addr{fi.AddrUnspec}, fas)
	}
	fas, err := a.av.Insert([][]byte{a.name}, 0)
	require.NoError(t, err)
	require.NotEqual(t, fi.AddrUnspec, fas[0])
}

// publicImports are what the example's files may import besides the
// standard library and the example itself: gofabric's public packages
// for providers (and its suite), and the dependencies gofabric allows.
var publicImports = []string{
	"github.com/gofabric/gofabric/fi",
	"github.com/gofabric/gofabric/eq",
	"github.com/gofabric/gofabric/ep",
	"github.com/gofabric/gofabric/kit",
	"github.com/gofabric/gofabric/fabtests",
	"github.com/cockroachdb/errors",
	"github.com/stretchr/testify/require",
	"go.uber.org/goleak",
	"golang.org/x/sys/unix",
}

// providerPackages are the gofabric packages the provider may link, all
// it needs: an outside author's provider reaches nothing more.
var providerPackages = []string{
	"github.com/gofabric/gofabric/fi",
	"github.com/gofabric/gofabric/eq",
	"github.com/gofabric/gofabric/ep",
	"github.com/gofabric/gofabric/kit",
}

const (
	gofabric = "github.com/gofabric/gofabric/"
	self     = "github.com/gofabric/gofabric/examples/loopback"
)

// importProblems checks lines of "package import import...": every
// import is of the standard library, the example, or publicImports.
func importProblems(lines string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, imp := range f[1:] {
			std := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
			if !std && imp != self && !strings.HasPrefix(imp, self+"/") && !slices.Contains(publicImports, imp) {
				out = append(out, f[0]+" imports "+imp)
			}
		}
	}
	return out
}

// linkProblems checks the packages the provider links (go list -deps,
// without its tests): of gofabric's, only providerPackages, so no
// internal/ one.
func linkProblems(deps string) []string {
	var out []string
	for _, d := range strings.Fields(deps) {
		if strings.HasPrefix(d, gofabric) && !strings.HasPrefix(d, self) && !slices.Contains(providerPackages, d) {
			out = append(out, "the provider links "+d)
		}
	}
	return out
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
	}
	require.NoError(t, err, "go list %v", args)
	return string(out)
}

// TestOnlyPublicPackages proves that the provider is built from gofabric's
// exported packages only (issue 19): what its files import, tests
// included, and everything it links.
func TestOnlyPublicPackages(t *testing.T) {
	imports := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	require.Contains(t, imports, "github.com/gofabric/gofabric/kit", "the listing names the kit")
	require.Empty(t, importProblems(imports), "imports outside gofabric's public packages")
	deps := goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
	require.Contains(t, deps, "github.com/gofabric/gofabric/kit", "the listing names the kit")
	require.Empty(t, linkProblems(deps), "gofabric packages the provider links")
}

// TestDependencyRules shows that the checks of TestOnlyPublicPackages
// catch what they are for.
func TestDependencyRules(t *testing.T) {
	require.Empty(t, importProblems(self+" fmt "+gofabric+"kit github.com/cockroachdb/errors\n"+self+"_test "+self+" "+gofabric+"fabtests"))
	require.Equal(t, []string{self + " imports " + gofabric + "internal/reftest"},
		importProblems(self+" fmt "+gofabric+"internal/reftest"))
	require.Equal(t, []string{self + " imports example.com/other"}, importProblems(self+" example.com/other"))
	require.Empty(t, linkProblems(gofabric+"fi\n"+gofabric+"kit\n"+self+"\ngithub.com/cockroachdb/errors"))
	require.Equal(t, []string{"the provider links " + gofabric + "internal/netif", "the provider links " + gofabric + "fabtests"},
		linkProblems(gofabric+"internal/netif\n"+gofabric+"fabtests\n"+gofabric+"kit"))
}
