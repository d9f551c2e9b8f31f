package kit_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// Addr finds every address inserted, over many chunks of the lock-free
// table, none removed, and a freed slot's new address once FI_AV_MAP
// reuses it; readers racing with inserts and removals see an address or
// nothing, never another's (run with -race).
func TestAVAddrTable(t *testing.T) {
	av := kit.NewAV(&fi.AVAttr{Type: fi.AVMap}, fi.FormatStr, nil)
	defer av.Close()
	name := func(i int) []byte { return fmt.Appendf(nil, "peer-%d", i) }
	const n = 1000
	addrs := make([][]byte, n)
	for i := range addrs {
		addrs[i] = name(i)
	}
	fas, err := av.Insert(addrs, 0)
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i, fa := range fas {
				if a, ok := av.Addr(fa); ok && string(a) != string(name(i)) && string(a) != "new" {
					panic(fmt.Sprintf("fi_addr %d: %q", fa, a))
				}
			}
		}
	}()
	for i, fa := range fas {
		a, ok := av.Addr(fa)
		require.True(t, ok, "fi_addr %d", fa)
		require.Equal(t, name(i), a)
	}
	_, ok := av.Addr(fi.Addr(n + 300))
	require.False(t, ok, "an fi_addr past the table")
	_, ok = av.Addr(fi.AddrUnspec)
	require.False(t, ok, "FI_ADDR_UNSPEC")

	require.NoError(t, av.Remove([]fi.Addr{fas[3], fas[700]}, 0))
	_, ok = av.Addr(fas[3])
	require.False(t, ok, "a removed address")
	_, ok = av.Addr(fas[700])
	require.False(t, ok, "a removed address")
	more, err := av.Insert([][]byte{[]byte("new")}, 0)
	require.NoError(t, err)
	require.Contains(t, []fi.Addr{fas[3], fas[700]}, more[0], "FI_AV_MAP reuses a freed slot")
	a, ok := av.Addr(more[0])
	require.True(t, ok)
	require.Equal(t, []byte("new"), a)
	close(stop)
	wg.Wait()

	require.NoError(t, av.Close())
	_, ok = av.Addr(fas[0])
	require.False(t, ok, "a closed AV finds nothing")
}
