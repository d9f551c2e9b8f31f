//go:build cgo && linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// names returns the C names of a plan.
func names(plan []*slot) []string {
	var out []string
	for _, s := range plan {
		out = append(out, s.cname)
	}
	return out
}

// TestPlanFollowsFileNames: the providers the library's file names ask for
// (libgoshm-fi.so) come first, the others follow in the default order;
// files that are other libraries do not count.
func TestPlanFollowsFileNames(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "libgofabric-fi.so")
	require.NoError(t, os.WriteFile(self, []byte("library"), 0o644))
	require.NoError(t, os.Symlink("libgofabric-fi.so", filepath.Join(dir, "libgoudp-fi.so")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "libgotcp-fi.so"), []byte("another library"), 0o644))
	other := t.TempDir()
	require.NoError(t, os.Symlink(self, filepath.Join(other, "libgoshm-fi.so")))

	require.Equal(t, []string{"gotcp", "goshm", "goudp"}, names(makePlan("", "", "")))
	require.Equal(t, []string{"goudp", "gotcp", "goshm"}, names(makePlan(self, "", "")))
	require.Equal(t, []string{"goudp", "goshm", "gotcp"}, names(makePlan(self, "", "@"+other)))
}

// TestPlanBuiltin: GOFABRIC_FI_BUILTIN gives a provider C's name and a
// version above C 1.17's, so that the core prefers it.
func TestPlanBuiltin(t *testing.T) {
	plan := makePlan("", " TCP, udp", "")
	require.Equal(t, []string{"tcp", "goshm", "udp"}, names(plan))
	require.True(t, plan[0].builtin)
	require.False(t, plan[1].builtin)
	require.Equal(t, fi.MakeVersion(117, 999), plan[0].version)
	require.Greater(t, plan[0].version, fi.MakeVersion(117, 90), "above every 1.17.x provider version")
}

// TestGoProvName: C hints name this provider by its C name, possibly
// layered and with excluded names (a utility provider asking for cores).
func TestGoProvName(t *testing.T) {
	s := &slot{cname: "gotcp", goName: "tcp"}
	for in, want := range map[string]string{
		"":                "",
		"gotcp":           "tcp",
		"GoTCP":           "tcp",
		"gotcp;ofi_rxm":   "tcp;ofi_rxm",
		"gotcp;^ofi_rxm":  "tcp",
		"^ofi_rxm":        "",
		"^ofi_rxm;^other": "",
	} {
		require.Equal(t, want, s.goProvName(in), in)
	}
}

// TestMRModes: the registration modes of libfabric's API 1.0
// (FI_MR_BASIC, FI_MR_SCALABLE), which gofabric does not have, as C's
// providers answer them.
func TestMRModes(t *testing.T) {
	v10, v117 := fi.MakeVersion(1, 0), fi.MakeVersion(1, 17)
	for _, c := range []struct {
		api          fi.Version
		hint         fi.MRMode
		goMode, rep  fi.MRMode
		ok           bool
		entry, wantM fi.MRMode // an entry's gofabric mode and what it reports
		serves       bool
	}{
		{v117, fi.MRModeScalable, 0, fi.MRModeScalable, true, 0, fi.MRModeScalable, true},
		{v117, fi.MRModeBasic, basicMap, fi.MRModeBasic, true, 0, 0, false},
		{v117, fi.MRModeBasic, basicMap, fi.MRModeBasic, true, basicMap, fi.MRModeBasic, true},
		{v117, fi.MRModeBasic | fi.MRModeLocal, 0, 0, false, 0, 0, false},
		{v117, fi.MRModeLocal, fi.MRModeLocal, 0, true, 0, 0, true},
		{v10, fi.MRModeUnspec, basicMap, v1Auto, true, 0, fi.MRModeScalable, true},
		{v10, fi.MRModeUnspec, basicMap, v1Auto, true, fi.MRModeVirtAddr | fi.MRModeProvKey, fi.MRModeBasic, true},
		{v10, fi.MRModeUnspec, basicMap, v1Auto, true, fi.MRModeLocal, 0, false},
		{v10, fi.MRModeLocal, 0, 0, false, 0, 0, false},
	} {
		goMode, rep, ok := mrHints(c.api, c.hint)
		require.Equal(t, c.ok, ok, "%v %v", c.api, c.hint)
		if !ok {
			continue
		}
		require.Equal(t, c.goMode, goMode, "%v %v", c.api, c.hint)
		require.Equal(t, c.rep, rep, "%v %v", c.api, c.hint)
		if rep == 0 {
			continue
		}
		m, serves := mrResult(c.entry, rep)
		require.Equal(t, c.serves, serves, "%v %v entry %v", c.api, c.hint, c.entry)
		if serves {
			require.Equal(t, c.wantM, m)
			require.Equal(t, c.entry&^fi.MRModeAllocated, mrFromV1(m)&^fi.MRModeAllocated)
		}
	}
}
