package main

import (
	"bytes"
	"context"
	"github.com/gofabric/gofabric/internal/reftest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/provutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The command links every provider (providers/all); the tests select
	// the fake one.
	os.Setenv("FI_PROVIDER", "fake")
	goleak.VerifyTestMain(m)
}

// fakeProvider offers one FI_EP_MSG and one FI_EP_RDM entry through
// provutil.MatchInfo and records the arguments of its last GetInfo.
type fakeProvider struct {
	mu   sync.Mutex // guards last
	last struct {
		node, service string
		flags         fi.Flags
		hints         *fi.Info
	}
}

var fake = &fakeProvider{}

// fakeParam is listed by -e.
var fakeParam = fi.DefineParam("fake", "iface", fi.ParamString, "interface to use (default: any)")

func init() { fi.Register(fake) }

func (*fakeProvider) Name() string        { return "fake" }
func (*fakeProvider) Version() fi.Version { return fi.MakeVersion(1, 2) }
func (*fakeProvider) OpenFabric(*fi.FabricAttr) (fi.Fabric, error) {
	return nil, fi.ENOSYS
}

func (p *fakeProvider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	p.mu.Lock()
	p.last.node, p.last.service, p.last.flags, p.last.hints = node, service, flags, hints.Clone()
	p.mu.Unlock()
	return provutil.MatchInfo(ctx, "fake", fakeInfos(), node, service, flags, hints)
}

func (p *fakeProvider) lastCall() (node, service string, flags fi.Flags, hints *fi.Info) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.node, p.last.service, p.last.flags, p.last.hints
}

func fakeInfos() []*fi.Info {
	entry := func(t fi.EPType, proto fi.Protocol, name string) *fi.Info {
		i := (*fi.Info)(nil).Clone()
		i.Caps = fi.CapMsg | fi.CapSend | fi.CapRecv
		i.AddrFormat = fi.FormatSockaddrIn
		i.TxAttr.Caps = fi.CapMsg | fi.CapSend
		i.TxAttr.Size = 256
		i.RxAttr.Caps = fi.CapMsg | fi.CapRecv
		i.RxAttr.Size = 256
		i.EPAttr.Type, i.EPAttr.Protocol = t, proto
		i.EPAttr.MaxMsgSize = 1 << 20
		i.DomainAttr.Name = "fake0"
		i.DomainAttr.Threading = fi.ThreadSafe
		i.DomainAttr.ControlProgress, i.DomainAttr.DataProgress = fi.ProgressAuto, fi.ProgressAuto
		i.FabricAttr.Name = "10.0.0.0/8"
		i.FabricAttr.ProvName = name
		i.FabricAttr.ProvVersion = fi.MakeVersion(1, 2)
		i.FabricAttr.APIVersion = fi.APIVersion
		return i
	}
	return []*fi.Info{
		entry(fi.EPTypeMsg, fi.ProtoSockTCP, "fake"),
		entry(fi.EPTypeRDM, fi.ProtoRXM, "fake"),
	}
}

// runFiInfo runs the command in-process.
func runFiInfo(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const summaryMsg = "provider: fake\n    fabric: 10.0.0.0/8\n    domain: fake0\n    version: 1.2\n    type: FI_EP_MSG\n    protocol: FI_PROTO_SOCK_TCP\n"
const summaryRDM = "provider: fake\n    fabric: 10.0.0.0/8\n    domain: fake0\n    version: 1.2\n    type: FI_EP_RDM\n    protocol: FI_PROTO_RXM\n"

func TestList(t *testing.T) {
	for _, arg := range []string{"-l", "--list", "-list"} {
		t.Run(arg, func(t *testing.T) {
			code, out, errOut := runFiInfo(t, arg)
			require.Equal(t, 0, code)
			require.Contains(t, out, "fake:\n    version: 1.2\n")
			require.Contains(t, out, "tcp:\n    version: 117.0\n")
			require.Empty(t, errOut)
		})
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all", nil, summaryMsg + summaryRDM},
		{"ep type", []string{"-t", "FI_EP_RDM"}, summaryRDM},
		{"ep type long", []string{"--ep_type=FI_EP_MSG"}, summaryMsg},
		{"ep type lower case", []string{"--ep_type", "fi_ep_msg"}, summaryMsg},
		{"provider", []string{"-p", "fake"}, summaryMsg + summaryRDM},
		{"caps pipe list", []string{"-c", "FI_MSG|"}, summaryMsg + summaryRDM},
		{"domain and fabric", []string{"-d", "fake0", "--fabric", "10.0.0.0/8"}, summaryMsg + summaryRDM},
		{"addr format", []string{"-a", "FI_SOCKADDR_IN"}, summaryMsg + summaryRDM},
		{"extra arguments are ignored", []string{"extra", "-t", "FI_EP_MSG", "more"}, summaryMsg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runFiInfo(t, tt.args...)
			require.Empty(t, errOut)
			require.Equal(t, 0, code)
			require.Equal(t, tt.want, out)
		})
	}
}

func TestHints(t *testing.T) {
	t.Run("defaults accept every mode", func(t *testing.T) {
		code, _, _ := runFiInfo(t)
		require.Equal(t, 0, code)
		node, service, flags, h := fake.lastCall()
		require.Empty(t, node)
		require.Empty(t, service)
		require.Zero(t, flags)
		require.Equal(t, ^fi.Mode(0), h.Mode)
		require.Equal(t, ^fi.Mode(0), h.TxAttr.Mode)
		require.Equal(t, ^(fi.MRModeBasic | fi.MRModeScalable), h.DomainAttr.MRMode)
	})
	t.Run("options", func(t *testing.T) {
		code, _, _ := runFiInfo(t, "-n", "10.0.0.1", "--port=4242", "-m", "FI_CONTEXT|FI_MSG_PREFIX",
			"--caps", "FI_MSG", "-a", "FI_SOCKADDR_IN", "-d", "fake0", "-f", "10.0.0.0/8", "-p", "fake")
		require.Equal(t, 0, code)
		node, service, flags, h := fake.lastCall()
		require.Equal(t, "10.0.0.1", node)
		require.Equal(t, "4242", service)
		require.Zero(t, flags)
		require.Equal(t, fi.ModeContext|fi.ModeMsgPrefix, h.Mode)
		require.Equal(t, fi.CapMsg, h.Caps)
		require.Equal(t, fi.FormatSockaddrIn, h.AddrFormat)
		require.Equal(t, "fake0", h.DomainAttr.Name)
		require.Equal(t, "10.0.0.0/8", h.FabricAttr.Name)
		require.Equal(t, "fake", h.FabricAttr.ProvName)
	})
	t.Run("src_addr is the node with FI_SOURCE", func(t *testing.T) {
		code, _, _ := runFiInfo(t, "--src_addr", "10.0.0.2", "-n", "10.0.0.9", "-P", "7")
		require.Equal(t, 0, code)
		node, service, flags, _ := fake.lastCall()
		require.Equal(t, "10.0.0.2", node)
		require.Equal(t, "7", service)
		require.Equal(t, fi.FlagSource, flags)
	})
}

func TestVerbose(t *testing.T) {
	code, out, errOut := runFiInfo(t, "-v", "-t", "FI_EP_RDM")
	require.Equal(t, 0, code)
	require.Empty(t, errOut)
	_, _, _, h := fake.lastCall()
	infos, err := provutil.MatchInfo(context.Background(), "fake", fakeInfos(), "", "", 0, h)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	require.Equal(t, "---\n"+infos[0].String(), out)

	t.Run("info substring", func(t *testing.T) {
		code, out, _ := runFiInfo(t, "-i", "FI_PROTO_RXM")
		require.Equal(t, 0, code)
		require.Equal(t, 1, strings.Count(out, "---\n"))
		require.Contains(t, out, "protocol: FI_PROTO_RXM")
		code, out, _ = runFiInfo(t, "--info=no such thing")
		require.Equal(t, 0, code)
		require.Empty(t, out)
	})
}

// fieldLines reduces fi_info -v output to its first entry's field names
// with their indentation.
func fieldLines(tb testing.TB, out string) []string {
	tb.Helper()
	entries := strings.Split(out, "---\n")
	require.Greater(tb, len(entries), 1, "no entry in %q", out)
	var names []string
	re := regexp.MustCompile(`^( *[a-z_]+):`)
	for _, line := range strings.Split(strings.TrimSuffix(entries[1], "\n"), "\n") {
		m := re.FindStringSubmatch(line)
		require.NotNil(tb, m, "line %q is not a field", line)
		names = append(names, m[1])
	}
	return names
}

func TestVerboseStructureMatchesC(t *testing.T) {
	path := reftest.Tool(t, "fi_info", "libfabric-bin")
	cmd := exec.Command(path, "-v", "-p", "tcp", "-t", "FI_EP_MSG")
	cmd.Env = append(os.Environ(), "FI_PROVIDER=tcp")
	cout, err := cmd.Output()
	if err != nil {
		reftest.Missing(t, "C fi_info -v -p tcp found nothing: %v", err)
	}
	require.NoError(t, err)
	code, out, _ := runFiInfo(t, "-v")
	require.Equal(t, 0, code)
	require.Equal(t, fieldLines(t, string(cout)), fieldLines(t, out))
}

func TestEnv(t *testing.T) {
	t.Setenv("FI_FAKE_IFACE", "eth9")
	code, out, _ := runFiInfo(t, "-e")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "# FI_PROVIDER: String\n# "), out)
	require.Contains(t, out, "\n# FI_LOG_LEVEL: String\n")
	require.Contains(t, out, "\n# FI_FAKE_IFACE: String\n# fake: interface to use (default: any)\nFI_FAKE_IFACE=eth9\n\n")

	code, out, _ = runFiInfo(t, "-g", "fake_IF")
	require.Equal(t, 0, code)
	require.Equal(t, "# FI_FAKE_IFACE: String\n# fake: interface to use (default: any)\nFI_FAKE_IFACE=eth9\n\n", out)
	_, ok := fakeParam.Lookup()
	require.True(t, ok)
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  string
		stdout  string // prefix
		reasons bool
	}{
		{name: "bad cap", args: []string{"-c", "FI_MSG|FI_BOGUS"}, code: 22, stderr: "error: Unrecognized capability: FI_BOGUS\n"},
		{name: "bad mode", args: []string{"--mode=0"}, code: 22, stderr: "error: Unrecognized mode: 0\n"},
		{name: "bad ep type", args: []string{"-t", "FI_EP_BOGUS"}, code: 22, stderr: "error: Unrecognized endpoint type: FI_EP_BOGUS\n"},
		{name: "bad addr format", args: []string{"-a", "bogus"}, code: 22, stderr: "error: Unrecognized address format: bogus\n"},
		{name: "unknown option", args: []string{"--bogus"}, code: 1, stderr: "fi_info: flag provided but not defined: -bogus\n", stdout: "Usage: fi_info\n"},
		{name: "missing value", args: []string{"-p"}, code: 1, stderr: "fi_info: flag needs an argument: -p\n", stdout: "Usage: fi_info\n"},
		{name: "help", args: []string{"-h"}, code: 1, stdout: "Usage: fi_info\n"},
		{name: "help long", args: []string{"--help"}, code: 1, stdout: "Usage: fi_info\n"},
		{name: "no match", args: []string{"-t", "FI_EP_DGRAM"}, code: 61, stderr: "fi_getinfo: -61\n", reasons: true},
		{name: "other provider", args: []string{"-p", "tcp"}, code: 61, stderr: "fi_getinfo: -61\n", reasons: true},
		{name: "getinfo argument error", args: []string{"-n", "fi_sockaddr_in://1.2.3.4:5", "-P", "1"}, code: 22, stderr: "fi_getinfo: -22\n    fi: getinfo:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runFiInfo(t, tt.args...)
			require.Equal(t, tt.code, code)
			require.True(t, strings.HasPrefix(errOut, tt.stderr), "stderr %q", errOut)
			if tt.reasons {
				lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
				require.Greater(t, len(lines), 1, "a reason follows")
				require.True(t, strings.HasPrefix(lines[1], "    fake: "), "reason %q", lines[1])
			}
			require.True(t, strings.HasPrefix(out, tt.stdout), "stdout %q", out)
			if tt.stdout == "" {
				require.Empty(t, out)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runFiInfo(t, "--version")
	require.Equal(t, 0, code)
	require.Equal(t, "fi_info: 1.17.0\nlibfabric: 1.17.0\nlibfabric api: 1.17\n", out)
}
