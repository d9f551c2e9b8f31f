package hook_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/providers/hook"
	_ "github.com/gofabric/gofabric/providers/shm"
	_ "github.com/gofabric/gofabric/providers/tcp"
	_ "github.com/gofabric/gofabric/providers/udp"
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
	// tolerant runs the suite with Config.Faults (the faults group's
	// tolerance of lost and duplicated messages).
	tolerant bool
}{
	"getinfo_rma":    {"tcp", hook.Faults{GetInfoLosesRMA: true}, []string{"unit/getinfo"}, "unit/getinfo/results", false},
	"eq_writes":      {"tcp", hook.Faults{EQLosesWrites: true}, []string{"unit/eq"}, "unit/eq/write-read", false},
	"cq_close":       {"tcp", hook.Faults{CQCloseIgnoresBinding: true}, []string{"unit/cq"}, "unit/cq/bound-busy", false},
	"cntr":           {"shm", hook.Faults{CounterOffByOne: true}, []string{"unit/cntr"}, "unit/cntr/add-set-read", false},
	"av_lookup":      {"shm", hook.Faults{AVLookupWrong: true}, []string{"unit/av"}, "unit/av/insert-lookup-FI_AV_MAP", false},
	"mr_key":         {"shm", hook.Faults{MRKeyZero: true}, []string{"unit/mr"}, "unit/mr/register", false},
	"drop_shutdown":  {"tcp", hook.Faults{DropShutdown: true}, []string{"cm"}, "cm/shutdown-client", false},
	"truncate_cm":    {"tcp", hook.Faults{TruncateCMData: 4}, []string{"cm"}, "cm/private-data", false},
	"hide_rma_tcp":   {"tcp", hook.Faults{HideRMAErrors: true}, []string{"rma/msg"}, "rma/msg/bad-key", false},
	"source":         {"shm", hook.Faults{SourceUnknown: true}, []string{"rdm"}, "rdm/send-recv", false},
	"tag":            {"shm", hook.Faults{TagWrong: true}, []string{"tagged"}, "tagged/tsend-trecv", false},
	"hide_rma_shm":   {"shm", hook.Faults{HideRMAErrors: true}, []string{"rma/rdm"}, "rma/rdm/bad-key", false},
	"close_twice":    {"shm", hook.Faults{CloseTwiceOK: true}, []string{"close"}, "close/busy-then-ebadf", false},
	"lossy":          {"shm", hook.Faults{Seed: 1, Drop: 0.2}, []string{"concurrency"}, "concurrency/many-senders", false},
	"iov_limit":      {"shm", hook.Faults{IOVLimitIgnored: true}, []string{"badinput"}, "badinput/too-many-segments", false},
	"lossy_udp":      {"udp", hook.Faults{Seed: 1, Drop: 0.5}, []string{"dgram"}, "dgram/send-recv", false},
	"no_join_event":  {"udp", hook.Faults{DropJoinComplete: true}, []string{"multicast"}, "multicast/join", false},
	"corrupt":        {"tcp", hook.Faults{Seed: 1, Corrupt: 0.3, CorruptUnchecked: true}, []string{"faults"}, "faults/every-op-ends", true},
	"pass_tcp_check": {"tcp", hook.Faults{}, []string{"cm", "msg", "rma/msg"}, "", false},
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

// A hook without faults passes the suite, across processes too: the
// wrapping is transparent. (One Run per top-level test: the suite's
// second process re-runs the top-level test.)
func TestPassThroughTCP(t *testing.T) {
	register(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	fabtests.Run(t, fabtests.Config{Provider: "tcp;hook_pass_tcp_check", Groups: []string{"cm", "msg", "rma/msg"}})
}

func TestPassThroughSHM(t *testing.T) {
	register(t)
	fabtests.Run(t, fabtests.Config{Provider: "shm;hook_none", Groups: []string{"rdm", "tagged", "rma/rdm", "unit/waitfd"}})
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
	// The multicast group needs its separate processes.
	single := c.groups[0] != "multicast"
	fabtests.Run(t, fabtests.Config{Provider: c.inner + ";hook_" + name, Groups: c.groups, SingleProcess: single,
		Timeout: 2 * time.Second, Faults: c.tolerant})
}

// The suite fails against each broken provider, at the test that checks
// what the fault breaks: it can fail, so its passes mean something.
func TestBrokenProvidersFail(t *testing.T) {
	for name, c := range faults {
		if c.fails == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
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

// seeds are the fault-injection runs' seeds.
var seeds = []uint64{1, 2, 3}

var registerSeeds sync.Once

// Through a hook that drops, delays, duplicates and corrupts messages and
// cuts connections, every operation still ends in a completion or an
// error entry, none hangs and none arrives corrupted (the faults group),
// for three seeds, over tcp (FI_EP_MSG) and shm (FI_EP_RDM).
func TestFaultInjection(t *testing.T) {
	registerSeeds.Do(func() {
		for _, seed := range seeds {
			f := hook.Faults{Seed: seed, Drop: 0.05, Delay: 0.05, Duplicate: 0.05, Corrupt: 0.05, Cut: 0.01}
			for _, inner := range []string{"tcp", "shm"} {
				require.NoError(t, hook.Register("faults"+strconv.FormatUint(seed, 10), inner, f))
			}
		}
	})
	t.Setenv("FI_TCP_IFACE", "lo")
	for _, seed := range seeds {
		for _, inner := range []string{"tcp", "shm"} {
			t.Run(inner+"/seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
				fabtests.Run(t, fabtests.Config{Provider: inner + ";faults" + strconv.FormatUint(seed, 10),
					Groups: []string{"faults"}, Faults: true, SingleProcess: true})
			})
		}
	}
}
