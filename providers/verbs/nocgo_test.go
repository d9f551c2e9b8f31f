//go:build !verbs || !cgo

package verbs_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/verbs"
	"github.com/stretchr/testify/require"
)

// TestStubHints checks that a build without RDMA support says so, with
// the way to rebuild as a hint that survives the caller's wrapping.
func TestStubHints(t *testing.T) {
	p, ok := fi.LookupProvider("verbs")
	require.True(t, ok)
	_, err := fi.GetInfoFrom(context.Background(), []fi.Provider{p}, "", "", 0, nil)
	require.ErrorIs(t, err, fi.ENODATA)
	var nm *fi.NoMatchError
	require.ErrorAs(t, err, &nm)
	require.Len(t, nm.Reasons, 1)
	require.Contains(t, nm.Reasons[0].String(), "verbs: built without RDMA support")
	require.NotContains(t, err.Error(), "rebuild", "the advice is a hint, not the message")
	require.Contains(t, errors.FlattenHints(errors.Wrapf(err, "app: %s", "pick a fabric")), "-tags verbs")

	_, err = p.OpenFabric(&fi.FabricAttr{})
	require.ErrorIs(t, err, fi.ENODATA)
	require.Contains(t, errors.FlattenHints(errors.Wrap(err, "app")), "-tags verbs")
}
