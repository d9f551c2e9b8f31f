package kit_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// matchOffer returns a tcp-like static entry.
func matchOffer() *fi.Info {
	return &fi.Info{
		Caps: fi.CapMsg | fi.CapTagged | fi.CapSend | fi.CapRecv |
			fi.CapSource | fi.CapMultiRecv | fi.CapLocalComm | fi.CapRemoteComm,
		AddrFormat: fi.FormatSockaddr,
		TxAttr: &fi.TxAttr{
			Caps:     fi.CapMsg | fi.CapTagged | fi.CapSend,
			OpFlags:  fi.FlagCompletion | fi.FlagInjectComplete,
			MsgOrder: fi.OrderSAS | fi.OrderRAR, InjectSize: 64, Size: 1024, IOVLimit: 4, RMAIOVLimit: 4,
		},
		RxAttr: &fi.RxAttr{
			Caps:     fi.CapMsg | fi.CapTagged | fi.CapRecv | fi.CapSource | fi.CapMultiRecv,
			MsgOrder: fi.OrderSAS, Size: 1024, IOVLimit: 4,
		},
		EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM, Protocol: fi.ProtoRXMTCP, ProtocolVersion: 1, MaxMsgSize: 1 << 20, TxCtxCnt: 1, RxCtxCnt: 1},
		DomainAttr: &fi.DomainAttr{
			Name: "lo", Threading: fi.ThreadSafe, ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressAuto,
			ResourceMgmt: fi.RMEnabled, MRKeySize: 8, CQDataSize: 8, CQCnt: 256, EPCnt: 8192, TxCtxCnt: 256, RxCtxCnt: 256,
			MaxEPTxCtx: 1, MaxEPRxCtx: 1, CntrCnt: 64, MRIOVLimit: 1, MaxErrData: 64, MRCnt: 1024,
		},
		FabricAttr: &fi.FabricAttr{Name: "127.0.0.0/8", ProvName: "tcp;ofi_rxm"},
	}
}

// matchHints returns hints with every attribute allocated, like
// fi_allocinfo, after applying set.
func matchHints(set func(h *fi.Info)) *fi.Info {
	h := (*fi.Info)(nil).Clone()
	if set != nil {
		set(h)
	}
	return h
}

func sockaddr(tb testing.TB, uri string) []byte {
	tb.Helper()
	_, b, err := fi.ParseAddr(uri)
	require.NoError(tb, err)
	return b
}

func TestMatchInfoRules(t *testing.T) {
	type matchCase struct {
		name  string
		offer func(o *fi.Info)           // changes to the offer
		hints *fi.Info                   // nil: nil hints
		check func(*testing.T, *fi.Info) // accepted: checks the result
		decl  string                     // declined: the reason
	}
	var none func(*testing.T, *fi.Info)
	cases := []matchCase{
		{name: "nil hints take everything", check: func(t *testing.T, r *fi.Info) {
			want := matchOffer()
			require.Equal(t, want.Caps, r.Caps)
			require.Equal(t, want.TxAttr, r.TxAttr)
			require.Equal(t, want.DomainAttr.Caps, fi.Caps(0))
			require.Equal(t, want.Caps&fi.DomainCaps, r.DomainAttr.Caps)
		}},
		{name: "nil hints ignore modes", offer: func(o *fi.Info) { o.Mode = fi.ModeContext }, check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.ModeContext, r.Mode)
		}},
		{name: "zero hints", hints: matchHints(nil), check: none},

		// Capabilities.
		{name: "primary caps asked", hints: matchHints(func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapSend }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.CapMsg|fi.CapSend|fi.CapSource|fi.CapMultiRecv|fi.CapLocalComm|fi.CapRemoteComm, r.Caps)
			require.Equal(t, fi.CapMsg|fi.CapSend, r.TxAttr.Caps)
			// FI_SEND is no receive cap: the receive side saw FI_MSG with
			// no direction, so it gets FI_RECV, as C libfabric answers.
			require.Equal(t, fi.CapMsg|fi.CapRecv|fi.CapSource|fi.CapMultiRecv, r.RxAttr.Caps)
			require.Zero(t, r.DomainAttr.Caps, "no domain caps named in hints caps, none returned")
		}},
		{name: "primary caps not offered", hints: matchHints(func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapRMA }),
			decl: fmt.Sprintf("caps %v not supported", fi.CapRMA)},
		{name: "secondary caps not offered", hints: matchHints(func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapTrigger }),
			decl: fmt.Sprintf("caps %v not supported", fi.CapTrigger)},
		{name: "tx caps", hints: matchHints(func(h *fi.Info) { h.TxAttr.Caps = fi.CapTagged }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.CapTagged|fi.CapSend, r.TxAttr.Caps, "no direction asked: the transmit direction of FI_TAGGED is named")
		}},
		{name: "tx caps not offered", hints: matchHints(func(h *fi.Info) { h.TxAttr.Caps = fi.CapRMA }),
			decl: fmt.Sprintf("tx caps %v not supported", fi.CapRMA)},
		{name: "rx caps not offered", hints: matchHints(func(h *fi.Info) { h.RxAttr.Caps = fi.CapDirectedRecv }),
			decl: fmt.Sprintf("rx caps %v not supported", fi.CapDirectedRecv)},
		{name: "caps of the other side are ignored", hints: matchHints(func(h *fi.Info) {
			h.TxAttr.Caps = fi.CapMsg | fi.CapRecv
			h.RxAttr.Caps = fi.CapMsg | fi.CapSend
		}), check: func(t *testing.T, r *fi.Info) {
			require.Zero(t, r.TxAttr.Caps&fi.CapRecv, "FI_RECV is no transmit cap")
			require.Zero(t, r.RxAttr.Caps&fi.CapSend, "FI_SEND is no receive cap")
		}},
		{name: "hints caps split by side", hints: matchHints(func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapSend }),
			check: func(t *testing.T, r *fi.Info) {
				require.Equal(t, fi.CapMsg|fi.CapSend, r.TxAttr.Caps&fi.PrimaryCaps)
				require.Equal(t, fi.CapMsg|fi.CapRecv, r.RxAttr.Caps&fi.PrimaryCaps)
			}},
		{name: "domain caps not offered", hints: matchHints(func(h *fi.Info) { h.DomainAttr.Caps = fi.CapSharedAV }),
			decl: fmt.Sprintf("domain caps %v not supported", fi.CapSharedAV)},

		// Mode bits: zero in hints means none supported.
		{name: "mode required, none supported", offer: func(o *fi.Info) { o.Mode = fi.ModeContext }, hints: matchHints(nil),
			decl: fmt.Sprintf("mode %v required (hints support %v)", fi.ModeContext, fi.Mode(0))},
		{name: "mode required and supported", offer: func(o *fi.Info) { o.Mode = fi.ModeContext },
			hints: matchHints(func(h *fi.Info) { h.Mode = fi.ModeContext | fi.ModeContext2 }), check: func(t *testing.T, r *fi.Info) {
				require.Equal(t, fi.ModeContext, r.Mode, "the result keeps the entry's mode")
			}},
		{name: "tx mode from info mode", offer: func(o *fi.Info) { o.TxAttr.Mode = fi.ModeMsgPrefix },
			hints: matchHints(func(h *fi.Info) { h.Mode = fi.ModeMsgPrefix }), check: none},
		{name: "tx mode not supported", offer: func(o *fi.Info) { o.TxAttr.Mode = fi.ModeMsgPrefix },
			hints: matchHints(func(h *fi.Info) { h.Mode = fi.ModeMsgPrefix; h.TxAttr.Mode = fi.ModeContext }),
			decl:  fmt.Sprintf("tx mode %v required (hints support %v)", fi.ModeMsgPrefix, fi.ModeContext)},
		{name: "rx mode not supported", offer: func(o *fi.Info) { o.RxAttr.Mode = fi.ModeRxCQData }, hints: matchHints(nil),
			decl: fmt.Sprintf("rx mode %v required (hints support %v)", fi.ModeRxCQData, fi.Mode(0))},
		{name: "mr mode supported", offer: func(o *fi.Info) { o.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeProvKey },
			hints: matchHints(func(h *fi.Info) { h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeProvKey | fi.MRModeVirtAddr }),
			check: func(t *testing.T, r *fi.Info) {
				require.Equal(t, fi.MRModeLocal|fi.MRModeProvKey, r.DomainAttr.MRMode)
			}},
		{name: "mr mode basic and local mr", offer: func(o *fi.Info) { o.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeProvKey | fi.MRModeVirtAddr },
			hints: matchHints(func(h *fi.Info) { h.Mode = fi.ModeLocalMR; h.DomainAttr.MRMode = fi.MRModeBasic }), check: none},
		{name: "mr mode not supported", offer: func(o *fi.Info) { o.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeProvKey },
			hints: matchHints(func(h *fi.Info) { h.DomainAttr.MRMode = fi.MRModeLocal }),
			decl:  fmt.Sprintf("mr mode %v required (hints support %v)", fi.MRModeProvKey, fi.MRModeLocal)},
		{name: "mr mode unchecked without a domain attr (C's ofi_check_info)",
			offer: func(o *fi.Info) { o.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeProvKey },
			hints: matchHints(func(h *fi.Info) { h.Mode = ^fi.Mode(0); h.DomainAttr = nil }),
			check: func(t *testing.T, r *fi.Info) {
				require.Equal(t, fi.MRModeLocal|fi.MRModeProvKey, r.DomainAttr.MRMode, "the entry says what it requires")
			}},
		{name: "mode bits checked without a domain attr", offer: func(o *fi.Info) { o.Mode = fi.ModeContext },
			hints: matchHints(func(h *fi.Info) { h.DomainAttr = nil }),
			decl:  fmt.Sprintf("mode %v required (hints support %v)", fi.ModeContext, fi.Mode(0))},

		// Equality.
		{name: "ep type", hints: matchHints(func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeRDM }), check: none},
		{name: "ep type not offered", hints: matchHints(func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeMsg }),
			decl: fmt.Sprintf("ep type %v not supported (offers %v)", fi.EPTypeMsg, fi.EPTypeRDM)},
		{name: "protocol", hints: matchHints(func(h *fi.Info) { h.EPAttr.Protocol = fi.ProtoRXMTCP; h.EPAttr.ProtocolVersion = 1 }), check: none},
		{name: "protocol not offered", hints: matchHints(func(h *fi.Info) { h.EPAttr.Protocol = fi.ProtoSockTCP }),
			decl: fmt.Sprintf("protocol %v not supported (offers %v)", fi.ProtoSockTCP, fi.ProtoRXMTCP)},
		{name: "protocol version too new", hints: matchHints(func(h *fi.Info) { h.EPAttr.ProtocolVersion = 2 }),
			decl: "protocol version 2 not supported (offers 1)"},
		{name: "addr format narrows sockaddr", hints: matchHints(func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn6 }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.FormatSockaddrIn6, r.AddrFormat)
		}},
		{name: "sockaddr hint takes a concrete entry", offer: func(o *fi.Info) { o.AddrFormat = fi.FormatSockaddrIn },
			hints: matchHints(func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddr }), check: func(t *testing.T, r *fi.Info) {
				require.Equal(t, fi.FormatSockaddrIn, r.AddrFormat)
			}},
		{name: "addr format not offered", hints: matchHints(func(h *fi.Info) { h.AddrFormat = fi.FormatStr }),
			decl: fmt.Sprintf("addr format %v not supported (offers %v)", fi.FormatStr, fi.FormatSockaddr)},
		{name: "other address family", offer: func(o *fi.Info) { o.AddrFormat = fi.FormatSockaddrIn },
			hints: matchHints(func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn6 }),
			decl:  fmt.Sprintf("addr format %v not supported (offers %v)", fi.FormatSockaddrIn6, fi.FormatSockaddrIn)},
		{name: "domain name", hints: matchHints(func(h *fi.Info) { h.DomainAttr.Name = "lo" }), check: none},
		{name: "domain name not offered", hints: matchHints(func(h *fi.Info) { h.DomainAttr.Name = "eth0" }),
			decl: `domain "eth0" not offered (offers "lo")`},
		{name: "fabric name", hints: matchHints(func(h *fi.Info) { h.FabricAttr.Name = "127.0.0.0/8" }), check: none},
		{name: "fabric name not offered", hints: matchHints(func(h *fi.Info) { h.FabricAttr.Name = "10.0.0.0/8" }),
			decl: `fabric "10.0.0.0/8" not offered (offers "127.0.0.0/8")`},
		{name: "prov name core selects layering", hints: matchHints(func(h *fi.Info) { h.FabricAttr.ProvName = "tcp" }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, "tcp;ofi_rxm", r.FabricAttr.ProvName)
		}},
		{name: "prov name layered", hints: matchHints(func(h *fi.Info) { h.FabricAttr.ProvName = "TCP;ofi_rxm" }), check: none},
		{name: "prov name other", hints: matchHints(func(h *fi.Info) { h.FabricAttr.ProvName = "udp" }),
			decl: `prov name tcp;ofi_rxm not selected by hints prov name "udp"`},
		{name: "prov name from provider", offer: func(o *fi.Info) { o.FabricAttr.ProvName = "" },
			hints: matchHints(func(h *fi.Info) { h.FabricAttr.ProvName = "tcp;ofi_rxm" }),
			decl:  `prov name tcp not selected by hints prov name "tcp;ofi_rxm"`},

		// Minimums.
		{name: "smaller tx size keeps the offer's", hints: matchHints(func(h *fi.Info) { h.TxAttr.Size = 512 }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, 1024, r.TxAttr.Size)
		}},
		{name: "equal tx size", hints: matchHints(func(h *fi.Info) { h.TxAttr.Size = 1024 }), check: none},

		// Enumerations.
		{name: "lighter threading", hints: matchHints(func(h *fi.Info) { h.DomainAttr.Threading = fi.ThreadDomain }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.ThreadDomain, r.DomainAttr.Threading)
		}},
		{name: "safer threading than offered", offer: func(o *fi.Info) { o.DomainAttr.Threading = fi.ThreadDomain },
			hints: matchHints(func(h *fi.Info) { h.DomainAttr.Threading = fi.ThreadSafe }),
			decl:  fmt.Sprintf("threading %v not supported (offers %v)", fi.ThreadSafe, fi.ThreadDomain)},
		{name: "progress", hints: matchHints(func(h *fi.Info) { h.DomainAttr.DataProgress = fi.ProgressAuto }), check: none},
		{name: "data progress not offered", hints: matchHints(func(h *fi.Info) { h.DomainAttr.DataProgress = fi.ProgressManual }),
			decl: fmt.Sprintf("data progress %v not supported (offers %v)", fi.ProgressManual, fi.ProgressAuto)},
		{name: "control progress not offered", hints: matchHints(func(h *fi.Info) { h.DomainAttr.ControlProgress = fi.ProgressManual }),
			decl: fmt.Sprintf("control progress %v not supported (offers %v)", fi.ProgressManual, fi.ProgressAuto)},
		{name: "resource mgmt disabled", hints: matchHints(func(h *fi.Info) { h.DomainAttr.ResourceMgmt = fi.RMDisabled }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.RMDisabled, r.DomainAttr.ResourceMgmt)
		}},
		{name: "resource mgmt not offered", offer: func(o *fi.Info) { o.DomainAttr.ResourceMgmt = fi.RMDisabled },
			hints: matchHints(func(h *fi.Info) { h.DomainAttr.ResourceMgmt = fi.RMEnabled }),
			decl:  fmt.Sprintf("resource mgmt %v not supported (offers %v)", fi.RMEnabled, fi.RMDisabled)},
		{name: "av type chosen", hints: matchHints(func(h *fi.Info) { h.DomainAttr.AVType = fi.AVTable }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.AVTable, r.DomainAttr.AVType)
		}},
		{name: "av type not offered", offer: func(o *fi.Info) { o.DomainAttr.AVType = fi.AVMap },
			hints: matchHints(func(h *fi.Info) { h.DomainAttr.AVType = fi.AVTable }),
			decl:  fmt.Sprintf("av type %v not supported (offers %v)", fi.AVTable, fi.AVMap)},

		// Subsets.
		{name: "msg order", hints: matchHints(func(h *fi.Info) { h.TxAttr.MsgOrder = fi.OrderSAS }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.OrderSAS|fi.OrderRAR, r.TxAttr.MsgOrder)
		}},
		{name: "tx msg order not offered", hints: matchHints(func(h *fi.Info) { h.TxAttr.MsgOrder = fi.OrderSAS | fi.OrderWAW }),
			decl: fmt.Sprintf("tx msg order %v not supported", fi.OrderWAW)},
		{name: "rx msg order not offered", hints: matchHints(func(h *fi.Info) { h.RxAttr.MsgOrder = fi.OrderRAR }),
			decl: fmt.Sprintf("rx msg order %v not supported", fi.OrderRAR)},
		{name: "tx comp order not offered", hints: matchHints(func(h *fi.Info) { h.TxAttr.CompOrder = fi.OrderStrict }),
			decl: fmt.Sprintf("tx comp order %v not supported", fi.OrderStrict)},
		{name: "rx comp order not offered", hints: matchHints(func(h *fi.Info) { h.RxAttr.CompOrder = fi.OrderData }),
			decl: fmt.Sprintf("rx comp order %v not supported", fi.OrderData)},
		{name: "op flags", hints: matchHints(func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagCompletion }), check: func(t *testing.T, r *fi.Info) {
			require.Equal(t, fi.FlagCompletion, r.TxAttr.OpFlags)
		}},
		{name: "tx op flags not offered", hints: matchHints(func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagDeliveryComplete }),
			decl: "tx op flags FI_DELIVERY_COMPLETE not supported"},
		{name: "rx op flags not offered", hints: matchHints(func(h *fi.Info) { h.RxAttr.OpFlags = fi.FlagMultiRecv }),
			decl: "rx op flags FI_MULTI_RECV not supported"},
	}
	// Every minimum declines when asked for more than offered.
	for _, l := range []struct {
		name string
		set  func(h *fi.Info, n int)
		max  int
	}{
		{"tx size", func(h *fi.Info, n int) { h.TxAttr.Size = n }, 1024},
		{"inject size", func(h *fi.Info, n int) { h.TxAttr.InjectSize = n }, 64},
		{"tx iov limit", func(h *fi.Info, n int) { h.TxAttr.IOVLimit = n }, 4},
		{"rma iov limit", func(h *fi.Info, n int) { h.TxAttr.RMAIOVLimit = n }, 4},
		{"rx size", func(h *fi.Info, n int) { h.RxAttr.Size = n }, 1024},
		{"rx iov limit", func(h *fi.Info, n int) { h.RxAttr.IOVLimit = n }, 4},
		{"total buffered recv", func(h *fi.Info, n int) { h.RxAttr.TotalBufferedRecv = n }, 0},
		{"max msg size", func(h *fi.Info, n int) { h.EPAttr.MaxMsgSize = n }, 1 << 20},
		{"max order raw size", func(h *fi.Info, n int) { h.EPAttr.MaxOrderRAWSize = n }, 0},
		{"max order war size", func(h *fi.Info, n int) { h.EPAttr.MaxOrderWARSize = n }, 0},
		{"max order waw size", func(h *fi.Info, n int) { h.EPAttr.MaxOrderWAWSize = n }, 0},
		{"ep tx ctx cnt", func(h *fi.Info, n int) { h.EPAttr.TxCtxCnt = n }, 1},
		{"ep rx ctx cnt", func(h *fi.Info, n int) { h.EPAttr.RxCtxCnt = n }, 1},
		{"mr key size", func(h *fi.Info, n int) { h.DomainAttr.MRKeySize = n }, 8},
		{"cq data size", func(h *fi.Info, n int) { h.DomainAttr.CQDataSize = n }, 8},
		{"cq cnt", func(h *fi.Info, n int) { h.DomainAttr.CQCnt = n }, 256},
		{"ep cnt", func(h *fi.Info, n int) { h.DomainAttr.EPCnt = n }, 8192},
		{"tx ctx cnt", func(h *fi.Info, n int) { h.DomainAttr.TxCtxCnt = n }, 256},
		{"rx ctx cnt", func(h *fi.Info, n int) { h.DomainAttr.RxCtxCnt = n }, 256},
		{"max ep tx ctx", func(h *fi.Info, n int) { h.DomainAttr.MaxEPTxCtx = n }, 1},
		{"max ep rx ctx", func(h *fi.Info, n int) { h.DomainAttr.MaxEPRxCtx = n }, 1},
		{"max ep stx ctx", func(h *fi.Info, n int) { h.DomainAttr.MaxEPStxCtx = n }, 0},
		{"max ep srx ctx", func(h *fi.Info, n int) { h.DomainAttr.MaxEPSrxCtx = n }, 0},
		{"cntr cnt", func(h *fi.Info, n int) { h.DomainAttr.CntrCnt = n }, 64},
		{"mr iov limit", func(h *fi.Info, n int) { h.DomainAttr.MRIOVLimit = n }, 1},
		{"max err data", func(h *fi.Info, n int) { h.DomainAttr.MaxErrData = n }, 64},
		{"mr cnt", func(h *fi.Info, n int) { h.DomainAttr.MRCnt = n }, 1024},
	} {
		cases = append(cases, matchCase{
			name:  l.name + " above offer",
			hints: matchHints(func(h *fi.Info) { l.set(h, l.max+1) }),
			decl:  fmt.Sprintf("%s %d not supported (max %d)", l.name, l.max+1, l.max),
		})
		if l.max > 0 {
			cases = append(cases, matchCase{name: l.name + " at offer", hints: matchHints(func(h *fi.Info) { l.set(h, l.max) }), check: none})
		}
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			offer := matchOffer()
			if tc.offer != nil {
				tc.offer(offer)
			}
			before := offer.Clone()
			got, err := kit.MatchInfo(context.Background(), "tcp", []*fi.Info{offer}, "", "", 0, tc.hints)
			require.Equal(t, before, offer, "the offer is not changed")
			if tc.decl != "" {
				require.ErrorIs(t, err, fi.ENODATA)
				var nm *fi.NoMatchError
				require.ErrorAs(t, err, &nm)
				require.Len(t, nm.Reasons, 1)
				require.Equal(t, "tcp", nm.Reasons[0].Provider)
				require.Equal(t, tc.decl, nm.Reasons[0].Reason)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.NotSame(t, offer, got[0])
			require.NotNil(t, got[0].TxAttr)
			require.NotNil(t, got[0].DomainAttr)
			if tc.offer == nil || offer.FabricAttr.ProvName != "" {
				require.Equal(t, offer.FabricAttr.ProvName, got[0].FabricAttr.ProvName)
			}
			if tc.check != nil {
				tc.check(t, got[0])
			}
		})
	}
}

func TestMatchInfoAddresses(t *testing.T) {
	src := sockaddr(t, "fi_sockaddr_in://10.0.0.1:1")
	dst := sockaddr(t, "fi_sockaddr_in://10.0.0.2:2")
	withAddrs := matchHints(func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn; h.SrcAddr = src; h.DestAddr = dst })
	for _, tc := range []struct {
		name          string
		offerFormat   fi.AddrFormat
		node, service string
		flags         fi.Flags
		hints         *fi.Info
		format        fi.AddrFormat
		src, dst      string // AddrString of the result's addresses ("" for none)
		decl          string // reason, when declined
	}{
		{name: "no node: hints addresses", hints: withAddrs, format: fi.FormatSockaddrIn,
			src: "fi_sockaddr_in://10.0.0.1:1", dst: "fi_sockaddr_in://10.0.0.2:2"},
		{name: "node fills dest", node: "127.0.0.1", service: "4000", hints: withAddrs, format: fi.FormatSockaddrIn,
			src: "fi_sockaddr_in://10.0.0.1:1", dst: "fi_sockaddr_in://127.0.0.1:4000"},
		{name: "source fills src", node: "127.0.0.1", service: "4000", flags: fi.FlagSource, hints: withAddrs, format: fi.FormatSockaddrIn,
			src: "fi_sockaddr_in://127.0.0.1:4000", dst: "fi_sockaddr_in://10.0.0.2:2"},
		{name: "source service only", service: "4000", flags: fi.FlagSource, format: fi.FormatSockaddrIn,
			src: "fi_sockaddr_in://0.0.0.0:4000"},
		{name: "sockaddr entry takes the resolved family", node: "::1", service: "7", format: fi.FormatSockaddrIn6,
			dst: "fi_sockaddr_in6://[::1]:7"},
		{name: "hinted family", node: "::1", hints: matchHints(func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn6 }),
			format: fi.FormatSockaddrIn6, dst: "fi_sockaddr_in6://[::1]:0"},
		{name: "address string", offerFormat: fi.FormatStr, node: "fi_shm://peer", format: fi.FormatStr, dst: "fi_shm://peer"},
		{name: "numeric host refuses a name", node: "localhost", flags: fi.FlagNumericHost,
			decl: `resolve addr: FI_NUMERICHOST set but node "localhost" is not a numeric address`},
		{name: "family mismatch", offerFormat: fi.FormatSockaddrIn, node: "::1",
			decl: `resolve addr: node "::1" is not an ip4 address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offer := matchOffer()
			if tc.offerFormat != fi.FormatUnspec {
				offer.AddrFormat = tc.offerFormat
			}
			got, err := kit.MatchInfo(context.Background(), "tcp", []*fi.Info{offer}, tc.node, tc.service, tc.flags, tc.hints)
			if tc.decl != "" {
				var nm *fi.NoMatchError
				require.ErrorAs(t, err, &nm)
				require.Len(t, nm.Reasons, 1)
				require.Contains(t, nm.Reasons[0].Reason, tc.decl)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			r := got[0]
			require.Equal(t, tc.format, r.AddrFormat)
			str := func(b []byte) string {
				if b == nil {
					return ""
				}
				return fi.AddrString(r.AddrFormat, b)
			}
			require.Equal(t, tc.src, str(r.SrcAddr), "src")
			require.Equal(t, tc.dst, str(r.DestAddr), "dest")
			if tc.hints != nil && tc.hints.SrcAddr != nil {
				r.SrcAddr[0] ^= 0xff
				require.Equal(t, src, tc.hints.SrcAddr, "addresses are copied")
			}
		})
	}
}

func TestMatchInfoSeveral(t *testing.T) {
	entry := func(name string, ep fi.EPType) *fi.Info {
		o := matchOffer()
		o.FabricAttr.Name = name
		o.EPAttr.Type = ep
		return o
	}
	offers := []*fi.Info{entry("a", fi.EPTypeMsg), entry("b", fi.EPTypeDgram), entry("c", fi.EPTypeMsg), entry("d", fi.EPTypeRDM)}

	got, err := kit.MatchInfo(context.Background(), "tcp", offers, "", "", 0, matchHints(func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeMsg }))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "a", got[0].FabricAttr.Name, "offer order is kept")
	require.Equal(t, "c", got[1].FabricAttr.Name)

	_, err = kit.MatchInfo(context.Background(), "tcp", offers[:3], "", "", 0, matchHints(func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeRDM }))
	require.Equal(t, fi.ENODATA, fi.Code(err))
	require.EqualError(t, err, fmt.Sprintf("fi: getinfo: no provider matched: "+
		"tcp: ep type %[1]v not supported (offers %[2]v); tcp: ep type %[1]v not supported (offers %[3]v)",
		fi.EPTypeRDM, fi.EPTypeMsg, fi.EPTypeDgram), "distinct reasons only")

	_, err = kit.MatchInfo(context.Background(), "tcp", nil, "", "", 0, nil)
	require.EqualError(t, err, "fi: getinfo: no provider matched: tcp: offers no entries")
}

func TestMatchInfoHintObjects(t *testing.T) {
	var pep struct{ fi.Fid }
	h := matchHints(func(h *fi.Info) {
		h.Handle = pep
		h.EPAttr.AuthKey = []byte{1, 2}
	})
	got, err := kit.MatchInfo(context.Background(), "tcp", []*fi.Info{matchOffer()}, "", "", 0, h)
	require.NoError(t, err)
	require.Equal(t, pep, got[0].Handle)
	require.Equal(t, []byte{1, 2}, got[0].EPAttr.AuthKey)
	got[0].EPAttr.AuthKey[0] = 9
	require.Equal(t, []byte{1, 2}, h.EPAttr.AuthKey, "the auth key is copied")
}

func TestMatchInfoCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := kit.MatchInfo(ctx, "tcp", []*fi.Info{matchOffer()}, "127.0.0.1", "1", 0, nil)
	require.ErrorIs(t, err, fi.ECANCELED)
	require.ErrorIs(t, err, context.Canceled)
}

func TestMatchInfoLogsReasons(t *testing.T) {
	var buf bytes.Buffer
	fi.SetLogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() { fi.SetLogHandler(nil) })
	if !fi.Logger("tcp").Enabled(context.Background(), slog.LevelDebug) {
		t.Skip("FI_LOG_LEVEL or FI_LOG_PROV keeps tcp's debug records out")
	}
	_, err := kit.MatchInfo(context.Background(), "tcp", []*fi.Info{matchOffer()}, "", "", 0,
		matchHints(func(h *fi.Info) { h.DomainAttr.Name = "eth9" }))
	require.Error(t, err)
	require.Contains(t, buf.String(), `level=DEBUG msg="getinfo: entry declined" prov=tcp reason="domain \"eth9\" not offered (offers \"lo\")"`)
}

// matchProv is a provider whose GetInfo is MatchInfo over one entry.
type matchProv struct{ offer *fi.Info }

func (matchProv) Name() string                                 { return "tcp" }
func (matchProv) Version() fi.Version                          { return fi.MakeVersion(1, 0) }
func (matchProv) OpenFabric(*fi.FabricAttr) (fi.Fabric, error) { return nil, fi.ENOSYS }
func (p matchProv) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	return kit.MatchInfo(ctx, "tcp", []*fi.Info{p.offer}, node, service, flags, hints)
}

// TestMatchInfoHints checks that declines the application can act on (the
// mode bits it supports) carry advice, and that GetInfo hands it on as a
// hint that survives wrapping; other declines carry none.
func TestMatchInfoHints(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	for _, tc := range []struct {
		name  string
		offer func(*fi.Info)
		hints *fi.Info
		hint  string
	}{
		{"mode", func(o *fi.Info) { o.Mode = fi.ModeContext }, matchHints(nil), "hints.Mode"},
		{"rx mode", func(o *fi.Info) { o.RxAttr.Mode = fi.ModeRxCQData }, matchHints(nil), "hints.Mode"},
		{"mr mode", func(o *fi.Info) { o.DomainAttr.MRMode = fi.MRModeLocal }, matchHints(nil), "hints.DomainAttr.MRMode"},
		{"ep type", nil, matchHints(func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeDgram }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offer := matchOffer()
			if tc.offer != nil {
				tc.offer(offer)
			}
			_, err := kit.MatchInfo(context.Background(), "tcp", []*fi.Info{offer}, "", "", 0, tc.hints)
			var nm *fi.NoMatchError
			require.ErrorAs(t, err, &nm)
			require.Len(t, nm.Reasons, 1)
			_, err = fi.GetInfoFrom(context.Background(), []fi.Provider{matchProv{offer}}, "", "", 0, tc.hints)
			require.ErrorIs(t, err, fi.ENODATA)
			hints := errors.FlattenHints(errors.Wrapf(err, "app: %s", "setup"))
			if tc.hint == "" {
				require.Empty(t, nm.Reasons[0].Hint)
				require.Empty(t, hints)
				return
			}
			require.Contains(t, nm.Reasons[0].Hint, tc.hint)
			require.Contains(t, hints, tc.hint)
		})
	}
}
