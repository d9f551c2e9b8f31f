//go:build linux

package tcp_test

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/tcp"
	"github.com/stretchr/testify/require"
)

// cleanEnv unsets the variables that change what the provider offers, for
// the test's duration.
func cleanEnv(t testing.TB) {
	for _, v := range []string{"FI_PROVIDER", "FI_TCP_IFACE", "FI_TCP_PORT_LOW_RANGE",
		"FI_TCP_PORT_HIGH_RANGE", "FI_TCP_NODELAY", "FI_TCP_CONGESTION", "FI_TCP_CONN_TIMEOUT",
		"FI_TCP_USER_TIMEOUT", "FI_TCP_STALL_TIMEOUT"} {
		t.Setenv(v, "") // restores the old value at cleanup
		require.NoError(t, os.Unsetenv(v))
	}
}

// tcpHints returns hints selecting the tcp provider and endpoint type typ
// (any when EPTypeUnspec).
func tcpHints(typ fi.EPType) *fi.Info {
	h := (*fi.Info)(nil).Clone()
	h.FabricAttr.ProvName = "tcp"
	h.EPAttr.Type = typ
	return h
}

// sockaddrIn returns the 16 bytes of a struct sockaddr_in, built by hand.
func sockaddrIn(ip [4]byte, port uint16) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, 2) // AF_INET
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], ip[:])
	return b
}

// hasIPv6Loopback reports whether lo carries ::1.
func hasIPv6Loopback(t testing.TB) bool {
	ifi, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	addrs, err := ifi.Addrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(net.IPv6loopback) {
			return true
		}
	}
	return false
}

func TestGetInfoLoopbackEntry(t *testing.T) {
	cleanEnv(t)
	infos, err := fi.GetInfo(context.Background(), "", "", 0, tcpHints(fi.EPTypeMsg))
	require.NoError(t, err)
	var lo []*fi.Info
	for i, in := range infos {
		if in.DomainAttr.Name == "lo" {
			lo = append(lo, in)
			continue
		}
		require.Empty(t, lo, "entry %d (%s) after the loopback entries: loopback comes last", i, in.DomainAttr.Name)
	}
	want := 1
	if hasIPv6Loopback(t) {
		want = 2
	}
	require.Len(t, lo, want)

	v4 := lo[0]
	require.Equal(t, "127.0.0.1/32", v4.FabricAttr.Name, "the C provider names the loopback fabric by its address")
	require.Equal(t, fi.FormatSockaddrIn, v4.AddrFormat)
	require.Equal(t, sockaddrIn([4]byte{127, 0, 0, 1}, 0), v4.SrcAddr)
	require.Empty(t, v4.DestAddr)
	require.Zero(t, v4.Caps&fi.CapRemoteComm, "listed loopback entries offer local communication only")
	if want == 2 {
		v6 := lo[1]
		require.Equal(t, "::1/128", v6.FabricAttr.Name)
		require.Equal(t, fi.FormatSockaddrIn6, v6.AddrFormat)
		ap, _, err := fi.AddrPortFromSockaddr(v6.SrcAddr)
		require.NoError(t, err)
		require.Equal(t, netip.MustParseAddrPort("[::1]:0"), ap)
	}

	// The C provider's FI_EP_MSG attributes.
	require.Equal(t, "tcp", v4.FabricAttr.ProvName)
	require.Equal(t, fi.MakeVersion(117, 0), v4.FabricAttr.ProvVersion)
	require.Equal(t, fi.APIVersion, v4.FabricAttr.APIVersion)
	require.Equal(t, fi.EPTypeMsg, v4.EPAttr.Type)
	require.Equal(t, fi.ProtoSockTCP, v4.EPAttr.Protocol)
	require.Equal(t, math.MaxInt, v4.EPAttr.MaxMsgSize)
	prim := fi.CapMsg | fi.CapRMA | fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite | fi.CapRemoteRead | fi.CapRemoteWrite
	require.Equal(t, prim, v4.Caps&fi.PrimaryCaps)
	require.Equal(t, 128, v4.TxAttr.InjectSize)
	require.Equal(t, 4, v4.TxAttr.IOVLimit)
	require.Equal(t, 4, v4.TxAttr.RMAIOVLimit)
	require.Equal(t, 4, v4.RxAttr.IOVLimit)
	require.Equal(t, 256, v4.TxAttr.Size)
	require.Equal(t, 256, v4.RxAttr.Size)
	require.Equal(t, fi.OrderStrict, v4.TxAttr.CompOrder)
	require.Equal(t, 8, v4.DomainAttr.CQDataSize)
	require.Equal(t, fi.MRMode(0), v4.DomainAttr.MRMode)
	require.Equal(t, fi.ThreadSafe, v4.DomainAttr.Threading)
	require.Equal(t, fi.ProgressAuto, v4.DomainAttr.DataProgress)
	require.Equal(t, fi.ProgressAuto, v4.DomainAttr.ControlProgress)
	require.Zero(t, v4.Mode)
}

func TestGetInfoHints(t *testing.T) {
	loop := [4]byte{127, 0, 0, 1}
	tests := []struct {
		name          string
		env           map[string]string
		node, service string
		flags         fi.Flags
		hints         func(h *fi.Info)
		// check looks at the entries; nil means GetInfo must fail with
		// ENODATA and an error containing every string of reason.
		check  func(t *testing.T, infos []*fi.Info)
		reason []string
	}{{
		name: "FI_TCP_IFACE=lo restricts to lo",
		env:  map[string]string{"FI_TCP_IFACE": "lo"},
		check: func(t *testing.T, infos []*fi.Info) {
			for _, in := range infos {
				require.Equal(t, "lo", in.DomainAttr.Name)
			}
			require.Equal(t, "127.0.0.1/32", infos[0].FabricAttr.Name)
		},
	}, {
		name:   "FI_TCP_IFACE names no interface",
		env:    map[string]string{"FI_TCP_IFACE": "no-such-if0"},
		reason: []string{"FI_TCP_IFACE=no-such-if0"},
	}, {
		name: "node and service give the destination",
		node: "127.0.0.1", service: "4000",
		check: func(t *testing.T, infos []*fi.Info) {
			require.Len(t, infos, 1)
			in := infos[0]
			require.Equal(t, sockaddrIn(loop, 4000), in.DestAddr, "a 16-byte sockaddr_in")
			require.Equal(t, sockaddrIn(loop, 0), in.SrcAddr, "the source the route leaves from")
			require.Equal(t, "lo", in.DomainAttr.Name)
			require.Equal(t, "127.0.0.1/32", in.FabricAttr.Name)
			require.Equal(t, fi.FormatSockaddrIn, in.AddrFormat)
		},
	}, {
		name: "FI_SOURCE gives the source",
		node: "127.0.0.1", service: "4000", flags: fi.FlagSource,
		check: func(t *testing.T, infos []*fi.Info) {
			require.Len(t, infos, 1)
			require.Equal(t, sockaddrIn(loop, 4000), infos[0].SrcAddr)
			require.Empty(t, infos[0].DestAddr)
			require.Equal(t, "lo", infos[0].DomainAttr.Name)
		},
	}, {
		name:  "hints src addr selects its interface",
		hints: func(h *fi.Info) { h.SrcAddr = sockaddrIn(loop, 7) },
		check: func(t *testing.T, infos []*fi.Info) {
			require.Len(t, infos, 1)
			require.Equal(t, sockaddrIn(loop, 7), infos[0].SrcAddr)
			require.Equal(t, "lo", infos[0].DomainAttr.Name)
		},
	}, {
		name:    "FI_SOURCE wildcard is no interface in particular",
		service: "4000", flags: fi.FlagSource,
		hints: func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn },
		check: func(t *testing.T, infos []*fi.Info) {
			require.Len(t, infos, 1)
			require.Equal(t, sockaddrIn([4]byte{}, 4000), infos[0].SrcAddr)
			require.Equal(t, "tcp", infos[0].DomainAttr.Name)
			require.Equal(t, "TCP-IP", infos[0].FabricAttr.Name)
		},
	}, {
		name: "FI_SOURCE address of no interface",
		node: "203.0.113.7", service: "4000", flags: fi.FlagSource,
		reason: []string{"203.0.113.7", "not an address of"},
	}, {
		name:  "IPv6 only",
		hints: func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn6 },
		check: func(t *testing.T, infos []*fi.Info) {
			for _, in := range infos {
				require.Equal(t, fi.FormatSockaddrIn6, in.AddrFormat)
				require.Len(t, in.SrcAddr, 28)
			}
		},
	}, {
		name:  "fabric name selects",
		hints: func(h *fi.Info) { h.FabricAttr.Name = "127.0.0.1/32" },
		check: func(t *testing.T, infos []*fi.Info) {
			require.Len(t, infos, 1)
			require.Equal(t, "lo", infos[0].DomainAttr.Name)
		},
	}, {
		name:  "RDM is tcp;ofi_rxm",
		hints: func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeRDM },
		check: func(t *testing.T, infos []*fi.Info) {
			for _, in := range infos {
				require.Equal(t, "tcp;ofi_rxm", in.FabricAttr.ProvName)
				require.Equal(t, fi.ProtoRXM, in.EPAttr.Protocol)
				require.Equal(t, 64, in.TxAttr.InjectSize, "rxm's inject size: 128 less its header")
				require.NotZero(t, in.Caps&fi.CapTagged)
			}
		},
	}, {
		name:  "no ep type gives RDM entries first, as C",
		hints: func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeUnspec },
		check: func(t *testing.T, infos []*fi.Info) {
			require.Equal(t, fi.EPTypeRDM, infos[0].EPAttr.Type)
			require.Equal(t, fi.EPTypeMsg, infos[len(infos)-1].EPAttr.Type)
		},
	}, {
		name:   "DGRAM is not offered",
		hints:  func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeDgram },
		reason: []string{"tcp: ", "FI_EP_DGRAM"},
	}, {
		name:   "FI_TAGGED is not offered on FI_EP_MSG",
		hints:  func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapTagged },
		reason: []string{"tcp: ", "FI_TAGGED"},
	}, {
		name:   "FI_ADDR_STR is not offered",
		hints:  func(h *fi.Info) { h.AddrFormat = fi.FormatStr },
		reason: []string{"FI_ADDR_STR"},
	}, {
		name:   "inject size above 128",
		hints:  func(h *fi.Info) { h.TxAttr.InjectSize = 129 },
		reason: []string{"inject size 129"},
	}, {
		name:   "bad parameter names the variable",
		env:    map[string]string{"FI_TCP_PORT_LOW_RANGE": "70000", "FI_TCP_PORT_HIGH_RANGE": "70001"},
		reason: []string{"FI_TCP_PORT_LOW_RANGE=70000"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			h := tcpHints(fi.EPTypeMsg)
			if tt.hints != nil {
				tt.hints(h)
			}
			infos, err := fi.GetInfo(context.Background(), tt.node, tt.service, tt.flags, h)
			if tt.check == nil {
				require.ErrorIs(t, err, fi.ENODATA)
				for _, r := range tt.reason {
					require.ErrorContains(t, err, r)
				}
				return
			}
			require.NoError(t, err)
			require.NotEmpty(t, infos)
			for _, in := range infos {
				if h.EPAttr.Type != fi.EPTypeUnspec {
					require.Equal(t, h.EPAttr.Type, in.EPAttr.Type)
				}
			}
			tt.check(t, infos)
		})
	}
}

// TestGetInfoHintsFromEntries checks that every entry, used as hints,
// selects itself and nothing else.
func TestGetInfoHintsFromEntries(t *testing.T) {
	cleanEnv(t)
	infos, err := fi.GetInfo(context.Background(), "", "", 0, tcpHints(fi.EPTypeMsg))
	require.NoError(t, err)
	for _, in := range infos {
		h := in.Clone()
		h.SrcAddr = nil
		got, err := fi.GetInfo(context.Background(), "", "", 0, h)
		require.NoError(t, err, "%s %s", in.DomainAttr.Name, in.FabricAttr.Name)
		require.Len(t, got, 1)
		require.Equal(t, in, got[0])
	}
}
