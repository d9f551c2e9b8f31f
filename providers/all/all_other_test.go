//go:build !linux

package all_test

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// Off Linux, GetInfo finds nothing, and its ENODATA names each Linux-only
// provider with the reason and advice. internal/portability runs this on
// js/wasm under Node.js, the one such system a Linux host can execute.
func TestGetInfoNamesLinuxOnlyProviders(t *testing.T) {
	for _, name := range []string{"shm", "tcp", "udp"} {
		t.Run(name, func(t *testing.T) {
			_, err := fi.GetInfo(context.Background(), "", "", 0, &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: name}})
			require.ErrorIs(t, err, fi.ENODATA)
			var nm *fi.NoMatchError
			require.ErrorAs(t, err, &nm)
			i := slices.IndexFunc(nm.Reasons, func(r fi.ProviderReason) bool { return r.Provider == name })
			require.NotEqual(t, -1, i, "no reason for %s in %v", name, err)
			require.Equal(t, "available on Linux only (this is "+runtime.GOOS+"/"+runtime.GOARCH+")", nm.Reasons[i].Reason)
			require.Contains(t, errors.FlattenHints(err), "run the program on Linux")

			_, err = fi.OpenFabric(&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: name}})
			require.ErrorIs(t, err, fi.ENODATA)
			require.ErrorContains(t, err, name+": open fabric: available on Linux only")
		})
	}
}
