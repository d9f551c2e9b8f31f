package rxm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// fakeFabric is a core fabric without ConnTimeout; timedFabric has one.
type fakeFabric struct{ fi.Fabric }

type timedFabric struct {
	fi.Fabric
	d time.Duration
}

func (f timedFabric) ConnTimeout() time.Duration { return f.d }

// TestCoreConnTimeout: the bound of refused connection attempts is the
// core fabric's ConnTimeout when it has a positive one, else rxm's
// default.
func TestCoreConnTimeout(t *testing.T) {
	require.Equal(t, 250*time.Millisecond, coreConnTimeout(timedFabric{d: 250 * time.Millisecond}))
	require.Equal(t, defaultConnTimeout, coreConnTimeout(timedFabric{}))
	require.Equal(t, defaultConnTimeout, coreConnTimeout(fakeFabric{}))
	require.Equal(t, 30*time.Second, defaultConnTimeout)
}
