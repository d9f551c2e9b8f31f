//go:build linux

package shm_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/shm"
	"github.com/stretchr/testify/require"
)

// holdEnv names the endpoint TestHelperHoldRegion opens in a child
// process.
const holdEnv = "GOFABRIC_SHM_HOLD"

// TestHelperHoldRegion is not a test: run by TestDeadOwnerRegionIsReclaimed
// in a child process, it opens an endpoint named by holdEnv, says "ready"
// and waits to be killed (the os/exec helper-process idiom).
func TestHelperHoldRegion(t *testing.T) {
	name := os.Getenv(holdEnv)
	if name == "" {
		return
	}
	n := openNamed(t, name)
	_ = n
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
}

// openNamed opens an endpoint with the given name.
func openNamed(t testing.TB, name string) *node {
	t.Helper()
	h := shmHints()
	h.SrcAddr = []byte(name)
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	require.NoError(t, err)
	require.Equal(t, name, string(infos[0].SrcAddr))
	n := &node{}
	n.fabric, err = fi.OpenFabric(infos[0])
	require.NoError(t, err)
	n.domain, err = n.fabric.OpenDomain(infos[0])
	require.NoError(t, err)
	n.ep, err = ep.Open(n.domain, infos[0])
	require.NoError(t, err)
	return n
}

// A process killed while it owns an endpoint leaves its region file; the
// next endpoint of that name removes it and starts afresh, and while the
// owner lives the name is refused.
func TestDeadOwnerRegionIsReclaimed(t *testing.T) {
	name := "fi_shm://reclaim-" + itoa(os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldRegion$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"="+name)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	path := shm.RegionPath(name)
	require.FileExists(t, path)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	_, err = ep.Open(openDomain(t), withSrc(name))
	require.ErrorIs(t, err, fi.EADDRINUSE, "the name of a live endpoint is refused")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.FileExists(t, path, "a killed process cannot clean up")

	n := openNamed(t, name)
	require.NoError(t, n.ep.Close())
	require.NoError(t, n.domain.Close())
	require.NoError(t, n.fabric.Close())
	require.NoFileExists(t, path)
}

func withSrc(name string) *fi.Info {
	infos, _ := fi.GetInfo(context.Background(), "", "", 0, shmHints())
	i := infos[0]
	i.SrcAddr = []byte(name)
	return i
}

func openDomain(t testing.TB) fi.Domain {
	t.Helper()
	infos, err := fi.GetInfo(context.Background(), "", "", 0, shmHints())
	require.NoError(t, err)
	f, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	d, err := f.OpenDomain(infos[0])
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		require.NoError(t, f.Close())
	})
	return d
}
