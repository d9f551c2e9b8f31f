package hook_test

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/providers/hook"
	_ "github.com/gofabric/gofabric/providers/shm"
	_ "github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
)

// faults are the broken providers of TestBrokenProvidersFail: each is a
// hook over a real provider with one fault, the groups it is run with,
// and a test of the suite that must fail against it.
var faults = map[string]struct {
	inner  string
	f      hook.Faults
	groups []string
	fails  string
}{
	"drop_shutdown":  {"tcp", hook.Faults{DropShutdown: true}, []string{"cm"}, "cm/shutdown-client"},
	"truncate_cm":    {"tcp", hook.Faults{TruncateCMData: 4}, []string{"cm"}, "cm/private-data"},
	"hide_rma_tcp":   {"tcp", hook.Faults{HideRMAErrors: true}, []string{"msg"}, "msg/rma-bad-key"},
	"hide_rma_shm":   {"shm", hook.Faults{HideRMAErrors: true}, []string{"rma"}, "rma/bad-key"},
	"pass_tcp_check": {"tcp", hook.Faults{}, []string{"cm", "msg"}, ""},
}

var registerOnce sync.Once

// register registers every hook of this file's table once per process.
func register(t testing.TB) {
	registerOnce.Do(func() {
		for name, c := range faults {
			require.NoError(t, hook.Register("hook_"+name, c.inner, c.f))
		}
		require.NoError(t, hook.Register("hook_none", "shm", hook.Faults{}))
	})
}

// A hook without faults passes the suite: the wrapping is transparent.
func TestPassThrough(t *testing.T) {
	register(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	t.Run("tcp", func(t *testing.T) {
		fabtests.Run(t, fabtests.Config{Provider: "tcp;hook_pass_tcp_check", Groups: []string{"cm", "msg"}})
	})
	t.Run("shm", func(t *testing.T) {
		fabtests.Run(t, fabtests.Config{Provider: "shm;hook_none", Groups: []string{"rdm", "tagged", "rma"}, SingleProcess: true})
	})
}

// faultEnv names the fault TestBrokenSuite runs the suite against.
const faultEnv = "GOFABRIC_HOOK_FAULT"

// TestBrokenSuite is not a test on its own: TestBrokenProvidersFail runs
// it in a child process per fault, where it runs the suite against the
// broken provider (the os/exec helper-process idiom).
func TestBrokenSuite(t *testing.T) {
	name := os.Getenv(faultEnv)
	if name == "" {
		return
	}
	register(t)
	c := faults[name]
	// A short timeout: a broken provider makes tests wait for what never
	// comes.
	fabtests.Run(t, fabtests.Config{Provider: c.inner + ";hook_" + name, Groups: c.groups, SingleProcess: true, Timeout: 2 * time.Second})
}

// The suite fails against each broken provider, at the test that checks
// what the fault breaks: it can fail, so its passes mean something.
func TestBrokenProvidersFail(t *testing.T) {
	for name, c := range faults {
		if c.fails == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenSuite$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), faultEnv+"="+name, "FI_TCP_IFACE=lo")
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite passed against a provider with fault %s:\n%s", name, out)
			want := "--- FAIL: TestBrokenSuite/" + c.fails
			require.True(t, strings.Contains(string(out), want), "%q not in the suite's output:\n%s", want, tail(out))
		})
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
