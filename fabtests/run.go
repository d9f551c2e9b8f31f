package fabtests

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Config selects the provider under test and tunes the suite.
type Config struct {
	// Provider is the registered provider name ("tcp", "shm"...). Required.
	Provider string
	// Hints are extra hints merged into every GetInfo the suite makes; the
	// suite sets FabricAttr.ProvName and the endpoint type itself. May be
	// nil.
	Hints *fi.Info
	// Node and Service address the provider's local interface for tests
	// that need addresses (AV inserts); if Node is empty "127.0.0.1" is
	// used, if Service is empty ports from 49152 up are used.
	Node    string
	Service string
	// Groups restricts the run to these groups ("unit/eq", or a prefix
	// such as "unit"); empty runs every group.
	Groups []string
	// Exclude lists tests to skip with their reason, like libfabric's
	// per-provider exclude files: the key is a test path as t.Run names it
	// below Run ("unit/eq/peek").
	Exclude map[string]string
	// Timeout bounds every blocking step of the suite; zero means 10s.
	// In two-process tests it also bounds each wait for the peer process
	// and its exit.
	Timeout time.Duration
	// SingleProcess skips the "2proc" variants of the tests that cross a
	// process boundary. Those re-execute the test binary (os.Args[0])
	// with -test.run anchored to the current top-level test and the
	// environment variable GOFABRIC_FABTESTS_PEER naming the test; the
	// child's Run runs only that test's peer side. Set SingleProcess
	// where the binary cannot be re-executed, or where the top-level test
	// does not call Run with the same Config when re-executed.
	SingleProcess bool
	// Faults says the provider injects faults (a hook layer): the faults
	// group then tolerates lost, duplicated and failed operations, but
	// never hangs or corruption.
	Faults bool
	// HostNetwork runs the multicast group in the test process's own
	// network namespace instead of a new one (netns.go): for providers
	// whose devices live only there (verbs: the Soft-RoCE device rxe0 on
	// eth0, which a new namespace does not have), where the caller
	// vouches that nothing the group sends reaches a real network (the
	// Soft-RoCE VM's NIC is on a qemu hub with no other port).
	HostNetwork bool
	// Burst is the size of the burst group: how many clients connect to
	// one passive endpoint at once, and how many RDM peers send their
	// first message to one endpoint at once. Zero means 100.
	Burst int
}

// group is one named set of tests.
type group struct {
	name string
	run  func(t *testing.T, s *suite)
}

var groups = []group{
	{"unit/getinfo", testGetInfo},
	{"unit/eq", testEQ},
	{"unit/cq", testCQ},
	{"unit/cntr", testCntr},
	{"unit/av", testAV},
	{"unit/mr", testMR},
	{"unit/waitfd", testWaitFD},
	{"wait", testWait},
	{"cm", testCM},
	{"msg", testMsg},
	{"rdm", testRDM},
	{"tagged", testTagged},
	{"multi-recv", testMultiRecv},
	{"rma/msg", testMsgRMA},
	{"rma/rdm", testRDMRMA},
	{"atomic", testAtomic},
	{"dgram", testDgram},
	{"multicast", testMulticast},
	{"close", testClose},
	{"concurrency", testConcurrency},
	{"badinput", testBadInput},
	{"faults", testFaults},
	{"close-while-waiting", testCloseWhileWaiting},
	{"wait-sizes", testWaitSizes},
	{"peer-killed", testPeerKilled},
	{"burst", testBurst},
	{"context", testContext},
}

// Groups returns the names of the suite's groups, in the order Run runs
// them.
func Groups() []string {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.name
	}
	return names
}

// Run runs the conformance suite against cfg.Provider. It checks after
// each group that the group left no goroutine and no open file descriptor
// behind (the latter where /proc/self/fd exists).
//
// With GOFABRIC_FABTESTS_PEER set, Run is the peer process of one
// two-process test (see Config.SingleProcess): it runs only that test's
// peer side and returns.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	require.NotEmpty(t, cfg.Provider, "fabtests: Config.Provider is required")
	if cfg.Node == "" {
		cfg.Node = "127.0.0.1"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	s := &suite{cfg: cfg}
	if s.peerTest = os.Getenv(peerEnv); s.peerTest != "" {
		s.runPeer(t)
		return
	}
	if s.planning() {
		s.plan(t)
		return
	}
	warmNetpoller(t)
	for _, g := range groups {
		if !s.selected(g.name) {
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			fds := openFDs(t)
			g.run(t, s)
			if !t.Failed() && !t.Skipped() {
				goleak.VerifyNone(t, ignore)
				if fds != nil {
					require.Empty(t, newFDs(fds, openFDs(t)), "file descriptors the group left open")
				}
			}
		})
	}
}

// warmNetpoller makes the runtime open its netpoller descriptors before
// the first count, so that they are not taken for a leak.
func warmNetpoller(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.SetReadDeadline(time.Now()))
	r.Close()
	w.Close()
}

// openFDs returns the open descriptors and what they refer to, or nil
// where /proc/self/fd does not exist.
func openFDs(t testing.TB) map[string]string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	fds := make(map[string]string, len(ents))
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil { // the directory's own descriptor is gone by now
			fds[e.Name()] = target
		}
	}
	return fds
}

// newFDs lists the descriptors of after that are not in before.
func newFDs(before, after map[string]string) []string {
	var out []string
	for fd, target := range after {
		if before[fd] != target {
			out = append(out, fd+" -> "+target)
		}
	}
	slices.Sort(out)
	return out
}

// suite carries the configuration through the groups.
type suite struct {
	cfg Config
	// peerTest is the test whose peer side this process runs, from
	// GOFABRIC_FABTESTS_PEER (proc.go); empty in the parent.
	peerTest string
}

func (s *suite) selected(name string) bool {
	if len(s.cfg.Groups) == 0 {
		return true
	}
	return slices.ContainsFunc(s.cfg.Groups, func(g string) bool {
		return g == name || len(name) > len(g) && name[:len(g)] == g && name[len(g)] == '/'
	})
}

// ctx returns a context bounded by the suite's timeout.
func (s *suite) ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// run runs one test of a group as a subtest, honouring Config.Exclude.
// In a peer process it runs nothing: only run2's tests have a peer side.
func (s *suite) run(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if s.peerTest != "" {
		return
	}
	if s.planning() {
		t.Run(name, func(*testing.T) {})
		return
	}
	t.Run(name, func(t *testing.T) {
		if why, ok := s.cfg.Exclude[relName(t.Name())]; ok {
			t.Skipf("excluded by the provider's configuration: %s", why)
		}
		f(t)
	})
}

// relName strips the top-level test name and returns the path below Run,
// e.g. "unit/eq/peek".
func relName(full string) string {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			return full[i+1:]
		}
	}
	return full
}

// hints returns the suite's base hints for endpoint type typ (EPTypeUnspec
// for any).
func (s *suite) hints(typ fi.EPType) *fi.Info {
	h := s.cfg.Hints.Clone()
	h.FabricAttr.ProvName = s.cfg.Provider
	if typ != fi.EPTypeUnspec {
		h.EPAttr.Type = typ
	}
	return h
}

// skipIfAbsent skips the test when err says the provider lacks the ability
// (ENOSYS, ENODATA, EOPNOTSUPP), and fails it on any other error.
func skipIfAbsent(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	switch fi.Code(err) {
	case fi.ENOSYS, fi.ENODATA, fi.EOPNOTSUPP:
		t.Skipf("provider does not offer %s: %v", what, err)
	}
	require.NoError(t, err, what)
}

// requireCoded fails unless err carries an Errno that is not EOTHER: every
// public error of a provider must (docs/architecture.md, §4).
func requireCoded(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	require.NotEqual(t, fi.EOTHER, fi.Code(err), "error without an fi.Errno in its chain: %v", err)
}
