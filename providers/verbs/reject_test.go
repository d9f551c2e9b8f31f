package verbs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/providers/verbs"
)

// TestRejectReasons: the reasons carry the values of the IB CM's table
// (seed 004, IBTA 12.6.7.2), timeout 4 and "no QP" 1 among them.
func TestRejectReasons(t *testing.T) {
	for r, want := range map[verbs.RejectReason]int{
		verbs.RejectNoQP: 1, verbs.RejectTimeout: 4, verbs.RejectInvalidServiceID: 8,
		verbs.RejectStaleConnection: 10, verbs.RejectConsumer: 28, verbs.RejectRNRRetryCount: 29,
	} {
		require.Equal(t, want, int(r), "%v", r)
	}
	require.Equal(t, "timeout", verbs.RejectTimeout.String())
	require.Equal(t, "consumer defined", verbs.RejectConsumer.String())
	require.Equal(t, "reject reason 30", verbs.RejectReason(30).String())
	require.Equal(t, "reject reason 0", verbs.RejectReason(0).String())
	for r := verbs.RejectNoQP; r <= verbs.RejectRNRRetryCount; r++ {
		require.NotContains(t, r.String(), "reject reason", "%d has a name", int(r))
	}
}

// TestRejectReasonConnReason: each IB reject reason maps to the reason
// applications act on.
func TestRejectReasonConnReason(t *testing.T) {
	require.Equal(t, eq.ReasonRejected, verbs.RejectConsumer.Reason())
	require.Equal(t, eq.ReasonNoListener, verbs.RejectInvalidServiceID.Reason())
	require.Equal(t, eq.ReasonTimedOut, verbs.RejectTimeout.Reason())
	for _, r := range []verbs.RejectReason{verbs.RejectNoQP, verbs.RejectStaleConnection, verbs.RejectInsufficientResponder, 99} {
		require.Equal(t, eq.ReasonTransport, r.Reason(), "%v", r)
	}
}
