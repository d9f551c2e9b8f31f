package verbs_test

import (
	"context"
	"testing"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/verbs"
	"github.com/stretchr/testify/require"
)

// GetInfo for verbs declines with fi.ENODATA and a reason a user can act
// on: how to build the provider, or which devices it found.
func TestGetInfoSaysWhy(t *testing.T) {
	hints := &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "verbs"}}
	_, err := fi.GetInfo(context.Background(), "", "", 0, hints)
	require.ErrorIs(t, err, fi.ENODATA)
	var nm *fi.NoMatchError
	require.ErrorAs(t, err, &nm)
	require.Len(t, nm.Reasons, 1)
	require.Equal(t, "verbs", nm.Reasons[0].Provider)
	require.Regexp(t, `build tag 'verbs'|no RDMA device|found .* port`, nm.Reasons[0].Reason)
	_, err = fi.OpenFabric(&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "verbs", Name: "x"}})
	require.ErrorIs(t, err, fi.ENODATA)
}
