//go:build cgo && linux

package main

import (
	"context"
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

	require.Equal(t, []string{"gotcp", "goshm", "goudp", "ofi_gorxm"}, names(makePlan("", "", "")))
	require.Equal(t, []string{"goudp", "gotcp", "goshm", "ofi_gorxm"}, names(makePlan(self, "", "")))
	require.Equal(t, []string{"goudp", "goshm", "gotcp", "ofi_gorxm"}, names(makePlan(self, "", "@"+other)))
}

// TestPlanBuiltin: GOFABRIC_FI_BUILTIN gives a provider C's name and a
// version above C 1.17's, so that the core prefers it; C's own ofi_rxm
// layers over it, so ofi_gorxm, with no other core to layer over, is not
// offered.
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

// TestRxmUtilSlot: ofi_gorxm, gofabric's rxm as C's utility provider,
// translates the C names of the library's cores and its own, asks only
// the layerings the hints name, and gives C the names it builds the
// entries' "gotcp;ofi_gorxm" from.
func TestRxmUtilSlot(t *testing.T) {
	plan := makePlan("", "", "")
	u := plan[len(plan)-1]
	require.True(t, u.util)
	require.Equal(t, "ofi_gorxm", u.cname)
	for in, want := range map[string]string{
		"gotcp;ofi_gorxm": "tcp;ofi_rxm",
		"gotcp":           "tcp",
		"ofi_gorxm":       "ofi_rxm",
		"goshm":           "goshm", // no rxm layering: not a core of ofi_gorxm
	} {
		require.Equal(t, want, u.goProvName(in), in)
	}
	require.Equal(t, "gotcp", u.cProvName("tcp;ofi_rxm", false), "getinfo entries name their core")
	require.Equal(t, "gotcp;ofi_gorxm", u.cProvName("tcp;ofi_rxm", true), "events carry the whole name")
	require.Equal(t, "", plan[0].cProvName("tcp", false), "the core names a core provider's entries")

	for _, sel := range []string{"", "tcp", "tcp;ofi_rxm", "ofi_rxm"} {
		infos, err := u.getInfo(fi.MakeVersion(1, 17), "", "", 0, &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: sel}})
		require.NoError(t, err, sel)
		require.NotEmpty(t, infos, sel)
		for _, i := range infos {
			require.Equal(t, "tcp;ofi_rxm", i.FabricAttr.ProvName, sel)
			require.Equal(t, fi.EPTypeRDM, i.EPAttr.Type, sel)
		}
	}
	_, err := u.getInfo(fi.MakeVersion(1, 17), "", "", 0, &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "udp"}})
	require.ErrorIs(t, err, fi.ENODATA)
	_, err = u.p.OpenFabric(&fi.FabricAttr{ProvName: "udp;ofi_rxm"})
	require.ErrorIs(t, err, fi.EINVAL)
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

// TestNoAtomicsToC: the library carries no atomic operation to C yet, so
// goshm's entries, which gofabric's shm offers with FI_ATOMIC, reach C
// without it, and hints asking for FI_ATOMIC get ENODATA.
func TestNoAtomicsToC(t *testing.T) {
	var shm *slot
	for _, s := range makePlan("", "", "") {
		if s.cname == "goshm" {
			shm = s
		}
	}
	require.NotNil(t, shm)
	goInfos, err := shm.p.GetInfo(context.Background(), "", "", 0, nil)
	require.NoError(t, err)
	require.NotZero(t, goInfos[0].Caps&fi.CapAtomic, "gofabric's shm offers FI_ATOMIC")

	infos, err := shm.getInfo(fi.MakeVersion(1, 17), "", "", 0, &fi.Info{})
	require.NoError(t, err)
	for _, i := range infos {
		require.Zero(t, i.Caps&fi.CapAtomic)
		require.Zero(t, i.TxAttr.Caps&fi.CapAtomic)
		require.Zero(t, i.RxAttr.Caps&fi.CapAtomic)
	}
	_, err = shm.getInfo(fi.MakeVersion(1, 17), "", "", 0, &fi.Info{Caps: fi.CapAtomic})
	require.ErrorIs(t, err, fi.ENODATA)
	_, err = shm.getInfo(fi.MakeVersion(1, 17), "", "", 0, &fi.Info{TxAttr: &fi.TxAttr{Caps: fi.CapAtomic}})
	require.ErrorIs(t, err, fi.ENODATA)
}
