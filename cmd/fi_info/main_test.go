package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	crdb "github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/kit"
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
// kit.MatchInfo and records the arguments of its last GetInfo.
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
	if hints != nil && hints.DomainAttr != nil && hints.DomainAttr.Name == "hinted" {
		return nil, crdb.WithHint(crdb.Wrap(fi.ENODATA, "fake: domain hinted is asleep"), "wake it with FI_FAKE_WAKE=1")
	}
	return kit.MatchInfo(ctx, "fake", fakeInfos(), node, service, flags, hints)
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
	for _, arg := range []string{"-l", "--list", "--li", "-l -p tcp", "extra -l"} {
		t.Run(arg, func(t *testing.T) {
			code, out, errOut := runFiInfo(t, strings.Fields(arg)...)
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
		code, _, _ := runFiInfo(t, "-n", "10.0.0.9", "--src_addr", "10.0.0.2", "-P", "7")
		require.Equal(t, 0, code)
		node, service, flags, _ := fake.lastCall()
		require.Equal(t, "10.0.0.2", node)
		require.Equal(t, "7", service)
		require.Equal(t, fi.FlagSource, flags)
	})
	t.Run("as in C, a later node replaces src_addr but FI_SOURCE stays", func(t *testing.T) {
		code, _, _ := runFiInfo(t, "-s10.0.0.2", "-n10.0.0.9")
		require.Equal(t, 0, code)
		node, _, flags, _ := fake.lastCall()
		require.Equal(t, "10.0.0.9", node)
		require.Equal(t, fi.FlagSource, flags)
	})
	t.Run("caps add up, a later mode replaces", func(t *testing.T) {
		code, _, _ := runFiInfo(t, "-cFI_MSG", "--caps=FI_RMA", "-m", "FI_CONTEXT", "--mode", "FI_MSG_PREFIX")
		require.Equal(t, 61, code, "the fake provider has no FI_RMA")
		_, _, _, h := fake.lastCall()
		require.Equal(t, fi.CapMsg|fi.CapRMA, h.Caps)
		require.Equal(t, fi.ModeMsgPrefix, h.Mode)
	})
}

// TestGetoptSyntax checks the option forms C users type, as C's
// getopt_long reads them.
func TestGetoptSyntax(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want func(t *testing.T, out string)
	}{
		{"attached provider", []string{"-pfake"}, func(t *testing.T, out string) { require.Equal(t, summaryMsg+summaryRDM, out) }},
		{"attached provider that is not selected", []string{"-ptcp"}, nil},
		{"attached ep type", []string{"-tFI_EP_RDM"}, func(t *testing.T, out string) { require.Equal(t, summaryRDM, out) }},
		{"cluster ending in a value", []string{"-vtFI_EP_RDM"}, func(t *testing.T, out string) {
			require.Equal(t, 1, strings.Count(out, "---\n"))
			require.Contains(t, out, "type: FI_EP_RDM")
		}},
		{"long prefix with value", []string{"--ep=FI_EP_MSG"}, func(t *testing.T, out string) { require.Equal(t, summaryMsg, out) }},
		{"long prefix, value apart", []string{"--prov", "fake", "--ep_t", "fi_ep_rdm"}, func(t *testing.T, out string) { require.Equal(t, summaryRDM, out) }},
		{"operands anywhere", []string{"x", "-tFI_EP_MSG", "y", "--", "-tFI_EP_RDM"}, func(t *testing.T, out string) { require.Equal(t, summaryMsg, out) }},
		{"list verbose", []string{"-lv"}, func(t *testing.T, out string) {
			entries := strings.Split(out, "---\n")[1:]
			require.Len(t, entries, len(fi.Providers()))
			require.Contains(t, out, "    fi_fabric_attr:\n        name: (null)\n        prov_name: fake\n        prov_version: 1.2\n        api_version: 0.0\n")
			require.Contains(t, out, "        prov_name: tcp\n")
		}},
		{"list verbose, other order", []string{"-vl"}, func(t *testing.T, out string) { require.Len(t, strings.Split(out, "---\n")[1:], len(fi.Providers())) }},
		{"list with info filter", []string{"-list"}, func(t *testing.T, out string) {
			// -l -i st: verbose, the entries holding "st" in any case.
			require.Len(t, strings.Split(out, "---\n")[1:], len(fi.Providers()), "every entry holds FI_ORDER_STRICT... or src_addr")
		}},
		{"list with a filter that matches one", []string{"-li", "PROV_NAME: FAKE"}, func(t *testing.T, out string) {
			require.Equal(t, 1, strings.Count(out, "---\n"))
			require.Contains(t, out, "prov_name: fake\n")
		}},
		{"env wins over verbose", []string{"-vg", "fake_if"}, func(t *testing.T, out string) {
			require.True(t, strings.HasPrefix(out, "# FI_FAKE_IFACE: String\n"), out)
		}},
		{"info filter applies to env", []string{"-i", "FAKE_IF", "-e"}, func(t *testing.T, out string) {
			require.True(t, strings.HasPrefix(out, "# FI_FAKE_IFACE: String\n"), out)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runFiInfo(t, tt.args...)
			if tt.want == nil {
				require.Equal(t, 61, code, "stderr %q", errOut)
				require.Empty(t, out)
				return
			}
			require.Equal(t, 0, code, "stderr %q", errOut)
			require.Empty(t, errOut)
			tt.want(t, out)
		})
	}
}

// TestOptionErrorsMatchC runs bad command lines through C's fi_info and
// this one and requires the same exit status and first line on stderr,
// and the usage on stdout where C prints it.
func TestOptionErrorsMatchC(t *testing.T) {
	path := reftest.Tool(t, "fi_info", "libfabric-bin")
	for _, args := range [][]string{
		{"-x"}, {"-lvx"}, {"-p"}, {"-lp"}, {"--foo"}, {"--fo=bar"}, {"---"}, {"--ver"}, {"--p=tcp"}, {"--e"}, {"--=x"},
		{"--list=3"}, {"--verbose="}, {"--version=1"}, {"--node"}, {"--s"}, {"-e=3"}, {"-:"}, {"-h"}, {"--help"}, {"-h", "-x"},
		{"-x", "--version"}, {"--version", "-x"}, {"-c", "FI_BOGUS", "--version"}, {"-tFI_EP_BOGUS", "-x"},
		{"-m", "0"}, {"-a", "bogus"}, {"-p", "bogus"}, {"-l", "-p"}, {"-\xc3\xa9"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(path, args...)
			var cout, cerr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &cout, &cerr
			err := cmd.Run()
			ccode := 0
			if ee, ok := err.(*exec.ExitError); ok {
				ccode = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			code, out, errOut := runFiInfo(t, args...)
			require.Equal(t, ccode, code, "C stderr %q, Go stderr %q", cerr.String(), errOut)
			cline, _, _ := strings.Cut(cerr.String(), "\n")
			gline, _, _ := strings.Cut(errOut, "\n")
			// C names itself by its argv[0], a path here.
			cline = strings.Replace(cline, path+":", "fi_info:", 1)
			require.Equal(t, cline, gline)
			require.Equal(t, strings.HasPrefix(cout.String(), "Usage: "), strings.HasPrefix(out, "Usage: fi_info\n"))
		})
	}
}

func TestVerbose(t *testing.T) {
	code, out, errOut := runFiInfo(t, "-v", "-t", "FI_EP_RDM")
	require.Equal(t, 0, code)
	require.Empty(t, errOut)
	_, _, _, h := fake.lastCall()
	infos, err := kit.MatchInfo(context.Background(), "fake", fakeInfos(), "", "", 0, h)
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
		{name: "unknown option", args: []string{"--bogus"}, code: 1, stderr: "fi_info: unrecognized option '--bogus'\n", stdout: "Usage: fi_info\n"},
		{name: "unknown short option", args: []string{"-x"}, code: 1, stderr: "fi_info: invalid option -- 'x'\n", stdout: "Usage: fi_info\n"},
		{name: "unknown option in a cluster", args: []string{"-lvx"}, code: 1, stderr: "fi_info: invalid option -- 'x'\n", stdout: "Usage: fi_info\n"},
		{name: "missing value", args: []string{"-p"}, code: 1, stderr: "fi_info: option requires an argument -- 'p'\n", stdout: "Usage: fi_info\n"},
		{name: "missing long value", args: []string{"--provider"}, code: 1, stderr: "fi_info: option '--provider' requires an argument\n", stdout: "Usage: fi_info\n"},
		{name: "ambiguous prefix", args: []string{"--ver"}, code: 1, stderr: "fi_info: option '--ver' is ambiguous; possibilities: '--verbose' '--version'\n", stdout: "Usage: fi_info\n"},
		{name: "value for a flag", args: []string{"--list=3"}, code: 1, stderr: "fi_info: option '--list' doesn't allow an argument\n", stdout: "Usage: fi_info\n"},
		{name: "first mistake in order", args: []string{"-t", "FI_EP_BOGUS", "-x"}, code: 22, stderr: "error: Unrecognized endpoint type: FI_EP_BOGUS\n"},
		{name: "bad option before a bad value", args: []string{"-x", "-t", "FI_EP_BOGUS"}, code: 1, stderr: "fi_info: invalid option -- 'x'\n", stdout: "Usage: fi_info\n"},
		{name: "help stops before a bad option", args: []string{"-h", "-x"}, code: 1, stdout: "Usage: fi_info\n"},
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
	for _, args := range [][]string{{"--version"}, {"--vers"}, {"--version", "-x"}, {"-l", "--version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runFiInfo(t, args...)
			require.Equal(t, 0, code)
			require.Empty(t, errOut)
			lines := strings.SplitAfter(out, "\n")
			require.Len(t, lines, 5, out) // four lines and the empty rest
			require.Equal(t, "fi_info: 1.17.0\nlibfabric: 1.17.0\nlibfabric api: 1.17\n", strings.Join(lines[:3], ""))
			require.Regexp(t, `^gofabric: \S.*\n$`, lines[3])
		})
	}
	t.Run("matches C", func(t *testing.T) {
		path := reftest.Tool(t, "fi_info", "libfabric-bin")
		cout, err := exec.Command(path, "--version").Output()
		require.NoError(t, err)
		_, out, _ := runFiInfo(t, "--version")
		// C prints its argv[0]; the lines after it are the same.
		cfirst, crest, _ := strings.Cut(string(cout), "\n")
		require.True(t, strings.HasSuffix(cfirst, "fi_info: 1.17.0"), cfirst)
		require.True(t, strings.HasPrefix(out, "fi_info: 1.17.0\n"+crest), "Go %q, C %q", out, cout)
	})
}

func TestModuleVersion(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "70df37b9e1bf42227ee4b9c5602cf88e63ae8865"}}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"released", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"pseudo-version from a checkout", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261124195304-70df37b9e1bf+dirty"}, Settings: vcs},
			"v0.0.0-20261124195304-70df37b9e1bf+dirty"},
		{"devel with revision", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs},
			"(devel) 70df37b9e1bf42227ee4b9c5602cf88e63ae8865"},
		{"devel modified", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"},
			Settings: append(slices.Clone(vcs), debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			"(devel) 70df37b9e1bf42227ee4b9c5602cf88e63ae8865+dirty"},
		{"devel without VCS", &debug.BuildInfo{Main: debug.Module{Path: modulePath}}, "(devel)"},
		{"a dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.9.9"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.3.0"}}}, "v0.3.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, moduleVersion(tt.bi, true))
		})
	}
	require.Equal(t, "(unknown)", moduleVersion(nil, false))
}

// TestHintsReachTheUser checks that the hints of a GetInfo error, here
// one behind a provider's reason, are printed after the reasons.
func TestHintsReachTheUser(t *testing.T) {
	code, out, errOut := runFiInfo(t, "-d", "hinted")
	require.Equal(t, 61, code)
	require.Empty(t, out)
	require.True(t, strings.HasPrefix(errOut, "fi_getinfo: -61\n    fake: domain hinted is asleep\n"), errOut)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	require.Equal(t, "hint: wake it with FI_FAKE_WAKE=1", lines[len(lines)-1], "the hint after the reasons")
	for _, l := range lines[1 : len(lines)-1] {
		require.True(t, strings.HasPrefix(l, "    "), "reason line %q", l)
	}
}

func TestPrintHints(t *testing.T) {
	var b bytes.Buffer
	err := crdb.WithHint(crdb.WithHint(crdb.Wrap(fi.EINVAL, "x"), "first"), "second\nline")
	printHints(&b, &fi.NoMatchError{Reasons: []fi.ProviderReason{
		{Provider: "a", Reason: "r", Err: err},
		{Provider: "b", Reason: "r", Err: crdb.WithHint(fi.ENODATA, "first")},
		{Provider: "c", Reason: "no error"},
	}})
	require.Equal(t, "hint: first\nhint: second\n      line\n", b.String(), "each hint once, in order")
	b.Reset()
	printHints(&b, crdb.Wrap(crdb.WithHint(fi.EIO, "direct"), "ctx"))
	require.Equal(t, "hint: direct\n", b.String())
	b.Reset()
	printHints(&b, fi.EIO)
	require.Empty(t, b.String())
}
