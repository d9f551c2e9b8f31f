package eq_test

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// TestConnReason: the reason of an error event survives wrapping, shows
// in its text, and is absent from errors without an event.
func TestConnReason(t *testing.T) {
	ev := &eq.EQError{Err: fi.ECONNREFUSED, ProvErrno: 111, Reason: eq.ReasonNoListener}
	err := errors.Wrap(ev, "dial")
	require.Equal(t, eq.ReasonNoListener, eq.ReasonOf(err))
	require.ErrorIs(t, err, fi.ECONNREFUSED)
	require.Contains(t, err.Error(), "(prov_errno 111): nothing listening")
	require.Equal(t, eq.ReasonUnknown, eq.ReasonOf(fi.ECONNREFUSED))
	require.Equal(t, eq.ReasonUnknown, eq.ReasonOf(nil))
	require.NotContains(t, (&eq.EQError{Err: fi.EIO}).Error(), "unknown")
	for r := eq.ReasonUnknown; r <= eq.ReasonTransport; r++ {
		require.NotContains(t, r.String(), "ConnReason(", "reason %d has a name", r)
	}
	require.Equal(t, "ConnReason(200)", eq.ConnReason(200).String())
}
