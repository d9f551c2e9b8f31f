package fi_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"github.com/gofabric/gofabric/internal/reftest"
	"math"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// cTostr builds testdata/tostr/tostr.c against the installed libfabric and
// returns a function that sends it one request line and returns what C's
// fi_tostr printed. Without gcc or libfabric's headers it skips the test,
// unless GOFABRIC_STRICT is set.
func cTostr(tb testing.TB, requests []string) []string {
	tb.Helper()
	skip := func(format string, args ...any) {
		tb.Helper()
		reftest.Missing(tb, format, args...)
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		skip("no C compiler to build the fi_tostr reference: %v", err)
	}
	bin := filepath.Join(tb.TempDir(), "tostr")
	out, err := exec.Command(gcc, "-o", bin, filepath.Join("testdata", "tostr", "tostr.c"), "-lfabric").CombinedOutput()
	if err != nil {
		skip("cannot build the fi_tostr reference against libfabric (is libfabric-dev installed?): %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(strings.Join(requests, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(tb, err, "tostr reference: %s", stderr.String())
	res := strings.Split(string(stdout), "\n--end--\n")
	require.Len(tb, res, len(requests)+1, "one answer per request")
	return res[:len(requests)]
}

// bitValues are the values each bit set type is printed with: zero, every
// single bit, all bits and a mixture.
func bitValues() []uint64 {
	vs := []uint64{0, math.MaxUint64, 0x0F00_0000_00FF_F0F6}
	for b := range 64 {
		vs = append(vs, 1<<b)
	}
	return vs
}

// enumValues are the values each enum type is printed with: its range, out
// of range, and the provider-specific bit.
var enumValues = []uint64{0, 1, 2, 3, 4, 5, 6, 7, 15, 16, 25, 26, 1<<31 | 1, math.MaxUint32}

// stringerCase is one request to the C program and what Go prints.
type stringerCase struct {
	req string
	got string
}

func stringerCases() []stringerCase {
	var cs []stringerCase
	add := func(typ string, v uint64, got string) {
		cs = append(cs, stringerCase{req: fmt.Sprintf("%s %d", typ, v), got: got})
	}
	for _, v := range bitValues() {
		for _, typ := range []string{"caps", "op_flags", "mode", "msg_order"} {
			add(typ, v, fi.TostrBits(typ, v))
		}
		add("mr_mode", uint64(uint32(v)), fi.TostrBits("mr_mode", uint64(uint32(v))))
	}
	for _, v := range enumValues {
		i := int64(int32(uint32(v))) // the C enums are 32-bit ints
		add("ep_type", v, fi.EPType(i).String())
		add("protocol", v, fi.Protocol(v).String())
		add("addr_format", v, fi.AddrFormat(v).String())
		add("threading", v, fi.Threading(i).String())
		add("progress", v, fi.Progress(i).String())
		add("av_type", v, fi.AVType(i).String())
	}
	return cs
}

// fullInfo is the Info that tostr.c's full() builds.
func fullInfo(tb testing.TB) *fi.Info {
	tb.Helper()
	_, src, err := fi.SockaddrFromAddrPort(mustAddrPort(tb, "10.1.2.3:4242"))
	require.NoError(tb, err)
	_, dst, err := fi.SockaddrFromAddrPort(mustAddrPort(tb, "[fe80::1:2]:7"))
	require.NoError(tb, err)
	return &fi.Info{
		Caps:       fi.CapMsg | fi.CapRMA | fi.CapTagged | fi.CapHMEM | fi.CapSource,
		Mode:       fi.ModeContext | fi.ModeBufferedRecv,
		AddrFormat: fi.FormatSockaddr,
		SrcAddr:    src,
		DestAddr:   dst,
		TxAttr: &fi.TxAttr{
			Caps: fi.CapMsg | fi.CapSend | fi.CapWrite, Mode: fi.ModeContext2,
			OpFlags:  fi.FlagInject | fi.FlagCompletion | fi.FlagDeliveryComplete,
			MsgOrder: fi.OrderSAS | fi.OrderRMAWAW, CompOrder: fi.OrderStrict | fi.OrderData,
			InjectSize: 101, Size: 102, IOVLimit: 103, RMAIOVLimit: 104, TClass: fi.TCBulkData,
		},
		RxAttr: &fi.RxAttr{
			Caps: fi.CapMsg | fi.CapRecv | fi.CapMultiRecv, Mode: fi.ModeRxCQData,
			OpFlags: fi.FlagMultiRecv | fi.FlagCompletion, MsgOrder: fi.OrderRAR, CompOrder: fi.OrderRAW,
			TotalBufferedRecv: 201, Size: 202, IOVLimit: 203,
		},
		EPAttr: &fi.EPAttr{
			Type: fi.EPTypeRDM, Protocol: fi.ProtoRXM, ProtocolVersion: 3, MaxMsgSize: -1,
			MsgPrefixSize: 301, MaxOrderRAWSize: 302, MaxOrderWARSize: 303, MaxOrderWAWSize: 304,
			MemTagFormat: 0xaaaa5555, TxCtxCnt: 305, RxCtxCnt: 306, AuthKey: []byte("key"),
		},
		DomainAttr: &fi.DomainAttr{
			Name: "dom0", Threading: fi.ThreadDomain, ControlProgress: fi.ProgressAuto,
			DataProgress: fi.ProgressManual, ResourceMgmt: fi.RMDisabled, AVType: fi.AVTable,
			MRMode:    fi.MRModeLocal | fi.MRModeVirtAddr | fi.MRModeProvKey,
			MRKeySize: 401, CQDataSize: 402, CQCnt: 403, EPCnt: 404, TxCtxCnt: 405, RxCtxCnt: 406,
			MaxEPTxCtx: 407, MaxEPRxCtx: 408, MaxEPStxCtx: 409, MaxEPSrxCtx: 410, CntrCnt: 411,
			MRIOVLimit: 412, Caps: fi.CapLocalComm | fi.CapSharedAV, Mode: fi.ModeLocalMR,
			AuthKey: []byte("secret"), MaxErrData: 413, MRCnt: 414, TClass: fi.TCLowLatency,
		},
		FabricAttr: &fi.FabricAttr{
			Name: "10.1.0.0/16", ProvName: "tcp;ofi_rxm",
			ProvVersion: fi.MakeVersion(117, 0), APIVersion: fi.MakeVersion(1, 17),
		},
	}
}

// addrCases are addresses of formats fi_tostr prints, as hex bytes.
var addrCases = []struct {
	format fi.AddrFormat
	hex    string
}{
	{fi.FormatSockaddrIn, "0200" + "1092" + "0a010203" + "0000000000000000"},
	{fi.FormatSockaddrIn, "0200" + "0000" + "00000000" + "0000000000000000"},
	{fi.FormatSockaddrIn6, "0a00" + "0007" + "00000000" + "20010db8000000000000000000000001" + "00000000"},
	{fi.FormatSockaddrIn6, "0a00" + "0009" + "00000000" + "00000000000000000000000001020304" + "00000000"},
	{fi.FormatSockaddrIn6, "0a00" + "0009" + "00000000" + "00000000000000000000000000000001" + "00000000"},
	{fi.FormatSockaddrIn6, "0a00" + "0009" + "00000000" + "00000000000000000000ffff01020304" + "00000000"},
	{fi.FormatSockaddr, "0100000000000000"},
	{fi.FormatStr, hex.EncodeToString([]byte("fi_sockets://1.2.3.4:5"))},
	{fi.FormatUnspec, "0102030405"},
	{fi.FormatPSMX, "1f00000000000000"},
	{fi.FormatPSMX2, "1f000000000000000200000000000000"},
	{fi.FormatGNI, "000b16212c37424d"},
	{fi.FormatOPX, "1f00000000000000"},
	{fi.FormatCXI, "1f000000"},
	{fi.FormatEFA, "000b16212c37424d58636e79848f9aa5b0bbc6d1dce7f2fd"},
}

func mustAddrPort(tb testing.TB, s string) netip.AddrPort {
	tb.Helper()
	ap, err := netip.ParseAddrPort(s)
	require.NoError(tb, err)
	return ap
}

func TestStringMatchesCTostr(t *testing.T) {
	cases := stringerCases()
	reqs := make([]string, 0, len(cases)+len(addrCases)+2)
	for _, c := range cases {
		reqs = append(reqs, c.req)
	}
	for _, a := range addrCases {
		reqs = append(reqs, fmt.Sprintf("addr %d %s", a.format, a.hex))
	}
	reqs = append(reqs, "info full", "info empty")
	want := cTostr(t, reqs)

	for i, c := range cases {
		t.Run(c.req, func(t *testing.T) {
			require.Equal(t, want[i], c.got)
		})
	}
	for i, a := range addrCases {
		t.Run(fmt.Sprintf("addr %v %s", a.format, a.hex), func(t *testing.T) {
			b, err := hex.DecodeString(a.hex)
			require.NoError(t, err)
			info := &fi.Info{AddrFormat: a.format, SrcAddr: b, DestAddr: b}
			require.Equal(t, want[len(cases)+i], info.String())
		})
	}
	// String prints what fi_tostr prints first, then the bits fi_tostr
	// leaves out, so it reads the same as C's wherever C names every bit.
	for i, c := range cases {
		typ, _, _ := strings.Cut(c.req, " ")
		var v uint64
		_, err := fmt.Sscan(strings.TrimPrefix(c.req, typ+" "), &v)
		require.NoError(t, err)
		var s string
		switch typ {
		case "caps":
			s = fi.Caps(v).String()
		case "op_flags":
			s = fi.Flags(v).String()
		case "mode":
			s = fi.Mode(v).String()
		case "msg_order":
			s = fi.MsgOrder(v).String()
		case "mr_mode":
			s = fi.MRMode(v).String()
		default:
			continue
		}
		t.Run("String "+c.req, func(t *testing.T) {
			if want[i] == "" {
				require.NotEmpty(t, s)
				return
			}
			require.True(t, s == want[i] || strings.HasPrefix(s, want[i]+", "), "String %q does not start with fi_tostr's %q", s, want[i])
		})
	}
	t.Run("info full", func(t *testing.T) {
		require.Equal(t, want[len(want)-2], fullInfo(t).String())
	})
	t.Run("info empty", func(t *testing.T) {
		require.Equal(t, want[len(want)-1], (*fi.Info)(nil).Clone().String())
	})
}

func TestStringKnown(t *testing.T) {
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{"caps", fi.CapMsg | fi.CapRMA, "FI_MSG, FI_RMA"},
		{"caps hmem last", fi.CapHMEM | fi.CapMsg | fi.CapDirectedRecv, "FI_MSG, FI_DIRECTED_RECV, FI_HMEM"},
		{"caps fi_tostr leaves out", fi.CapAVUserID | fi.CapPeer | fi.CapMsg, "FI_MSG, FI_AV_USER_ID, FI_PEER"},
		{"caps unnamed bit", fi.Caps(1) | fi.CapMsg, "FI_MSG, 0x1"},
		{"caps zero", fi.Caps(0), "0"},
		{"flags bit 59 is FI_CLAIM", fi.FlagDirectedRecv | fi.FlagInject, "FI_INJECT, FI_CLAIM"},
		{"flags non-op bits after op bits", fi.FlagSource | fi.FlagMsg | fi.FlagInject, "FI_INJECT, FI_MSG, FI_SOURCE"},
		{"flags completion", fi.FlagMsg | fi.FlagRecv | fi.FlagRemoteCQData, "FI_REMOTE_CQ_DATA, FI_MSG, FI_RECV"},
		{"flags unnamed bit", fi.Flags(1 << 34), "0x400000000"},
		{"flags unnamed bits", fi.Flags(1<<34|1<<62|1) | fi.FlagSend, "FI_SEND, 0x4000000400000001"},
		{"flags zero", fi.Flags(0), "0"},
		{"mode high bit first", fi.ModeBufferedRecv | fi.ModeContext, "FI_CONTEXT, FI_BUFFERED_RECV"},
		{"mode zero", fi.Mode(0), "0"},
		{"mode unnamed", fi.Mode(4), "0x4"},
		{"msg order strict", fi.OrderStrict, "FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAR, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAR, FI_ORDER_SAW, FI_ORDER_SAS"},
		{"msg order data", fi.OrderData | fi.OrderRAW, "FI_ORDER_RAW, FI_ORDER_DATA"},
		{"msg order none", fi.OrderNone, "FI_ORDER_NONE"},
		{"mr mode", fi.MRModeLocal | fi.MRModeHMEM, "FI_MR_LOCAL, FI_MR_HMEM"},
		{"mr mode unspec", fi.MRModeUnspec, "FI_MR_UNSPEC"},
		{"mr mode unnamed", fi.MRMode(1 << 20), "0x100000"},
		{"access", fi.AccessRead | fi.AccessRemoteWrite, "FI_READ, FI_REMOTE_WRITE"},
		{"access zero", fi.Access(0), "0"},
		{"ep type", fi.EPTypeRDM, "FI_EP_RDM"},
		{"ep type unknown", fi.EPType(-1), "Unknown"},
		{"protocol", fi.ProtoSockTCP, "FI_PROTO_SOCK_TCP"},
		{"protocol mxm", fi.ProtoMXM, "Unknown"},
		{"protocol provider specific", fi.Protocol(1<<31 | 5), "Provider specific"},
		{"addr format", fi.FormatSockaddrIn6, "FI_SOCKADDR_IN6"},
		{"progress", fi.ProgressManual, "FI_PROGRESS_MANUAL"},
		{"threading", fi.ThreadCompletion, "FI_THREAD_COMPLETION"},
		{"resource mgmt", fi.RMEnabled, "FI_RM_ENABLED"},
		{"resource mgmt unknown", fi.ResourceMgmt(3), "Unknown"},
		{"av type", fi.AVMap, "FI_AV_MAP"},
		{"wait obj", fi.WaitFD, "FI_WAIT_FD"},
		{"wait obj none", fi.WaitNone, "FI_WAIT_NONE"},
		{"link state", fi.LinkUp, "FI_LINK_UP"},
		{"traffic class", fi.TCBulkData, "0x203"},
		{"version api", fi.APIVersion, "1.17"},
		{"version provider", fi.MakeVersion(117, 0), "117.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.got.String())
		})
	}
}

func TestInfoStringStructure(t *testing.T) {
	t.Run("nil", func(t *testing.T) {
		require.Equal(t, "(null)", (*fi.Info)(nil).String())
		require.Equal(t, "(null)", (*fi.TxAttr)(nil).String())
		require.Equal(t, "(nil)", (*fi.NIC)(nil).String())
	})
	t.Run("nil attributes", func(t *testing.T) {
		s := (&fi.Info{}).String()
		require.Contains(t, s, "\n    fi_tx_attr: (null)\n    fi_rx_attr: (null)\n    fi_ep_attr: (null)\n"+
			"    fi_domain_attr: (null)\n    fi_fabric_attr: (null)\n    nic: (nil)\n")
		require.Contains(t, s, "\n    src_addr: (null)\n    dest_addr: (null)\n    handle: (nil)\n")
	})
	t.Run("attribute alone", func(t *testing.T) {
		require.Equal(t, "fi_fabric_attr:\n    name: fab\n    prov_name: (null)\n    prov_version: 117.0\n    api_version: 1.17\n",
			(&fi.FabricAttr{Name: "fab", ProvVersion: fi.MakeVersion(117, 0), APIVersion: fi.APIVersion}).String())
	})
	t.Run("comp order", func(t *testing.T) {
		for order, want := range map[fi.MsgOrder]string{
			0:                             "[ FI_ORDER_NONE ]",
			fi.OrderRAR:                   "[  ]",
			fi.OrderStrict | fi.OrderData: "[ FI_ORDER_STRICT, FI_ORDER_DATA ]",
			fi.OrderData:                  "[ FI_ORDER_NONE, FI_ORDER_DATA ]",
		} {
			require.Contains(t, (&fi.RxAttr{CompOrder: order}).String(), "\n    comp_order: "+want+"\n")
		}
	})
	t.Run("object references", func(t *testing.T) {
		var h fakeFid
		s := (&fi.Info{Handle: &h, DomainAttr: &fi.DomainAttr{}}).String()
		require.Contains(t, s, fmt.Sprintf("\n    handle: %p\n", &h))
		require.Contains(t, s, "\n        domain: 0x0\n")
	})
	t.Run("nic", func(t *testing.T) {
		nic := &fi.NIC{DeviceName: "mlx5_0", DeviceID: "0x101b", DeviceVersion: "0", VendorID: "0x02c9",
			Firmware: "20.33.1048", MTU: 4096, LinkState: fi.LinkUp, NetworkType: "InfiniBand"}
		want := "    nic:\n" +
			"        fi_device_attr:\n" +
			"            name: mlx5_0\n" +
			"            device_id: 0x101b\n" +
			"            device_version: 0\n" +
			"            vendor_id: 0x02c9\n" +
			"            driver: (null)\n" +
			"            firmware: 20.33.1048\n" +
			"        fi_bus_attr:\n" +
			"            bus_type: FI_BUS_UNKNOWN\n" +
			"        fi_link_attr:\n" +
			"            address: (null)\n" +
			"            mtu: 4096\n" +
			"            speed: 0\n" +
			"            state: FI_LINK_UP\n" +
			"            network_type: InfiniBand\n"
		require.True(t, strings.HasSuffix((&fi.Info{NIC: nic}).String(), "\n"+want), (&fi.Info{NIC: nic}).String())
		require.Equal(t, strings.ReplaceAll(want[4:], "\n    ", "\n"), nic.String())
	})
}

type fakeFid struct{ _ int }

func (*fakeFid) Close() error { return nil }

func TestParse(t *testing.T) {
	t.Run("bit sets read back what String prints, every bit", func(t *testing.T) {
		for _, v := range bitValues() {
			c, err := fi.ParseCaps(fi.Caps(v).String())
			require.NoError(t, err)
			require.Equal(t, fi.Caps(v), c, fi.Caps(v).String())
			m, err := fi.ParseMode(fi.Mode(v).String())
			require.NoError(t, err)
			require.Equal(t, fi.Mode(v), m)
			f, err := fi.ParseFlags(fi.Flags(v).String())
			require.NoError(t, err)
			require.Equal(t, fi.Flags(v), f, fi.Flags(v).String())
			o, err := fi.ParseMsgOrder(fi.MsgOrder(v).String())
			require.NoError(t, err)
			require.Equal(t, fi.MsgOrder(v), o)
			r, err := fi.ParseMRMode(fi.MRMode(v).String())
			require.NoError(t, err)
			require.Equal(t, fi.MRMode(v), r)
		}
	})
	t.Run("bit sets never print empty", func(t *testing.T) {
		for _, v := range bitValues() {
			for _, s := range []fmt.Stringer{fi.Caps(v), fi.Mode(v), fi.Flags(v), fi.MsgOrder(v), fi.MRMode(v), fi.Access(v)} {
				require.NotEmpty(t, s.String(), "%T(%#x)", s, v)
			}
		}
	})
	t.Run("fi_info syntax", func(t *testing.T) {
		c, err := fi.ParseCaps("FI_MSG|fi_rma| FI_AV_USER_ID |")
		require.NoError(t, err)
		require.Equal(t, fi.CapMsg|fi.CapRMA|fi.CapAVUserID, c)
		f, err := fi.ParseFlags("FI_SOURCE|FI_NUMERICHOST")
		require.NoError(t, err)
		require.Equal(t, fi.FlagSource|fi.FlagNumericHost, f)
		o, err := fi.ParseMsgOrder("FI_ORDER_STRICT, FI_ORDER_DATA")
		require.NoError(t, err)
		require.Equal(t, fi.OrderStrict|fi.OrderData, o)
		c, err = fi.ParseCaps("")
		require.NoError(t, err)
		require.Zero(t, c)
	})
	t.Run("enums accept what String prints", func(t *testing.T) {
		for v := range 6 {
			e, err := fi.ParseEPType(fi.EPType(v).String())
			require.NoError(t, err)
			require.Equal(t, fi.EPType(v), e)
		}
		for v := fi.FormatUnspec; v <= fi.FormatCXI; v++ {
			a, err := fi.ParseAddrFormat(v.String())
			require.NoError(t, err)
			require.Equal(t, v, a)
		}
		p, err := fi.ParseProtocol("fi_proto_rxm")
		require.NoError(t, err)
		require.Equal(t, fi.ProtoRXM, p)
		g, err := fi.ParseProgress("FI_PROGRESS_AUTO")
		require.NoError(t, err)
		require.Equal(t, fi.ProgressAuto, g)
		th, err := fi.ParseThreading(" FI_THREAD_DOMAIN ")
		require.NoError(t, err)
		require.Equal(t, fi.ThreadDomain, th)
		av, err := fi.ParseAVType("FI_AV_TABLE")
		require.NoError(t, err)
		require.Equal(t, fi.AVTable, av)
	})
	t.Run("errors", func(t *testing.T) {
		_, err := fi.ParseCaps("FI_MSG|FI_BOGUS")
		require.ErrorIs(t, err, fi.EINVAL)
		require.ErrorContains(t, err, `"FI_BOGUS"`)
		_, err = fi.ParseMode("FI_MSG")
		require.ErrorIs(t, err, fi.EINVAL)
		_, err = fi.ParseFlags("0xfoo")
		require.ErrorIs(t, err, fi.EINVAL)
		_, err = fi.ParseMRMode("0x100000000")
		require.ErrorIs(t, err, fi.EINVAL)
		_, err = fi.ParseEPType("FI_EP_MSG|FI_EP_RDM")
		require.ErrorIs(t, err, fi.EINVAL)
		_, err = fi.ParseAddrFormat("Unknown")
		require.ErrorIs(t, err, fi.EINVAL)
	})
}
