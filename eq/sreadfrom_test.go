package eq_test

import (
	"context"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// plainCQ is a completion queue without a blocking ReadFrom.
type plainCQ struct{ eq.CompletionQueue }

// TestSReadFromMissing: eq.SReadFrom on a queue that has no
// SReadFromer gives fi.ENOSYS with the reason.
func TestSReadFromMissing(t *testing.T) {
	_, err := eq.SReadFrom(context.Background(), plainCQ{}, make([]eq.Completion, 1), make([]fi.Addr, 1))
	require.ErrorIs(t, err, fi.ENOSYS)
	require.Contains(t, err.Error(), "no blocking ReadFrom")
}
