package all_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/all"
)

// Every provider registers on every OS, as itself on Linux and as a
// stand-in that declines elsewhere.
func TestRegistersEveryProvider(t *testing.T) {
	require.Subset(t, fi.Providers(), []string{"shm", "tcp", "udp", "verbs"})
}
