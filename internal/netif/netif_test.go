package netif_test

import (
	"net/netip"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/netif"
	"github.com/stretchr/testify/require"
)

// TestListOrder checks the C providers' order that fi_info shows: loopback
// addresses last, IPv4 before IPv6 among them, and each loopback address
// its own fabric.
func TestListOrder(t *testing.T) {
	all, err := netif.List("")
	require.NoError(t, err)
	require.NotEmpty(t, all, "lo is up")
	firstLoop := len(all)
	for i, a := range all {
		if a.Loopback && firstLoop == len(all) {
			firstLoop = i
		}
		if i > firstLoop {
			require.True(t, a.Loopback, "%v after a loopback address", a.Addr)
		}
	}
	lo, err := netif.List("lo")
	require.NoError(t, err)
	require.NotEmpty(t, lo)
	for i, a := range lo {
		require.Equal(t, "lo", a.Name)
		require.True(t, a.Loopback)
		require.Equal(t, a.Addr.BitLen(), a.Subnet.Bits(), "loopback addresses are their own subnet")
		require.Equal(t, a.Addr.String()+"/"+map[bool]string{true: "32", false: "128"}[a.Addr.Is4()], a.FabricName())
		if i > 0 {
			require.False(t, a.Addr.Is4() && lo[i-1].Addr.Is6(), "IPv4 before IPv6")
		}
	}
	require.Equal(t, netip.MustParseAddr("127.0.0.1"), lo[0].Addr)
	ap, f, err := fi.AddrPortFromSockaddr(lo[0].Sockaddr())
	require.NoError(t, err)
	require.Equal(t, fi.FormatSockaddrIn, f)
	require.Equal(t, netip.MustParseAddrPort("127.0.0.1:0"), ap)

	none, err := netif.List("no-such-interface")
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestRouteSource(t *testing.T) {
	src, err := netif.RouteSource(netip.MustParseAddrPort("127.0.0.1:0"))
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("127.0.0.1"), src)
}

func TestLinkSpeedUnknown(t *testing.T) {
	require.Zero(t, netif.LinkSpeed("no-such-interface"))
}
