//go:build linux

package rxm_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/rxm"
)

// fakeCore is a core provider for the derivation tests: GetInfo records
// the hints rxm gives it and returns clones of entries.
type fakeCore struct {
	mu      sync.Mutex // guards hints
	hints   []*fi.Info
	entries []*fi.Info
}

func (c *fakeCore) Name() string        { return "fake" }
func (c *fakeCore) Version() fi.Version { return fi.MakeVersion(1, 0) }

func (c *fakeCore) GetInfo(_ context.Context, _, _ string, _ fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	c.mu.Lock()
	c.hints = append(c.hints, hints)
	c.mu.Unlock()
	if len(c.entries) == 0 {
		return nil, &fi.NoMatchError{Reasons: []fi.ProviderReason{{Provider: "fake", Reason: "offers nothing"}}}
	}
	var out []*fi.Info
	for _, e := range c.entries {
		out = append(out, e.Clone())
	}
	return out, nil
}

func (c *fakeCore) OpenFabric(*fi.FabricAttr) (fi.Fabric, error) { return nil, fi.ENOSYS }

// lastHints returns the hints of the core's last GetInfo.
func (c *fakeCore) lastHints(t testing.TB) *fi.Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.hints)
	return c.hints[len(c.hints)-1]
}

// TestCoreHints: the hints rxm gives the core for the application's
// (C's rxm_info_to_core).
func TestCoreHints(t *testing.T) {
	base := func(f func(h *fi.Info)) *fi.Info {
		h := (*fi.Info)(nil).Clone()
		h.Mode = fi.ModeRxCQData | fi.ModeContext
		h.EPAttr.Type = fi.EPTypeMsg
		h.TxAttr.Size, h.RxAttr.Size = 128, 128
		h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey
		f(h)
		return h
	}
	rndv := fi.CapMsg | fi.CapSend | fi.CapRecv | fi.CapRMA | fi.CapRead | fi.CapRemoteRead | fi.CapRemoteWrite
	for _, tc := range []struct {
		name  string
		env   map[string]string
		hints func(h *fi.Info)
		want  *fi.Info
	}{
		{name: "nil hints", want: base(func(*fi.Info) {})},
		{name: "tagged", hints: func(h *fi.Info) { h.Caps = fi.CapTagged | fi.CapSource | fi.CapDirectedRecv },
			want: base(func(h *fi.Info) { h.Caps = rndv })},
		{name: "msg", hints: func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapSend },
			want: base(func(h *fi.Info) {
				h.Caps = fi.CapMsg | fi.CapSend | fi.CapRMA | fi.CapRead | fi.CapRemoteRead | fi.CapRemoteWrite
			})},
		{name: "rma target",
			hints: func(h *fi.Info) { h.Caps, h.DomainAttr.MRMode = fi.CapRMA|fi.CapRemoteWrite, fi.MRModeProvKey },
			want: base(func(h *fi.Info) {
				h.Caps, h.DomainAttr.MRMode = fi.CapRMA|fi.CapRemoteWrite, fi.MRModeLocal|fi.MRModeProvKey
			})},
		{name: "rma initiator", hints: func(h *fi.Info) { h.Caps = fi.CapRMA | fi.CapRead },
			want: base(func(h *fi.Info) { h.Caps = fi.CapRMA | fi.CapRead })},
		{name: "mr basic", hints: func(h *fi.Info) { h.DomainAttr.MRMode = fi.MRModeBasic },
			want: base(func(h *fi.Info) { h.Mode |= fi.ModeLocalMR; h.DomainAttr.MRMode = fi.MRModeBasic })},
		{name: "hmem", hints: func(h *fi.Info) { h.Caps = fi.CapHMEM },
			want: base(func(h *fi.Info) { h.Caps = fi.CapHMEM; h.DomainAttr.MRMode |= fi.MRModeHMEM })},
		{name: "attributes",
			hints: func(h *fi.Info) {
				h.AddrFormat, h.SrcAddr, h.DestAddr = fi.FormatSockaddrIn, []byte{1, 2}, []byte{3}
				h.TxAttr.OpFlags, h.RxAttr.OpFlags = fi.FlagDeliveryComplete|fi.FlagTransmitComplete|fi.FlagInject, fi.FlagCompletion
				h.TxAttr.MsgOrder, h.TxAttr.CompOrder, h.RxAttr.MsgOrder = fi.OrderSAS, fi.OrderStrict, fi.OrderRAW
				h.TxAttr.Size, h.RxAttr.Size, h.TxAttr.InjectSize = 4096, 4096, 32
				h.DomainAttr.Threading, h.DomainAttr.Name, h.DomainAttr.Caps = fi.ThreadDomain, "lo", fi.CapLocalComm
				h.DomainAttr.DataProgress, h.DomainAttr.CQDataSize = fi.ProgressManual, 8
				h.FabricAttr.Name, h.FabricAttr.ProvName = "127.0.0.0/8", "fake;ofi_gorxm"
				h.EPAttr.Type, h.EPAttr.MaxMsgSize = fi.EPTypeRDM, 1<<20
			},
			want: base(func(h *fi.Info) {
				h.AddrFormat, h.SrcAddr, h.DestAddr = fi.FormatSockaddrIn, []byte{1, 2}, []byte{3}
				h.TxAttr.OpFlags = fi.FlagTransmitComplete
				h.TxAttr.MsgOrder, h.TxAttr.CompOrder, h.RxAttr.MsgOrder = fi.OrderSAS, fi.OrderStrict, fi.OrderRAW
				h.DomainAttr.Threading, h.DomainAttr.Name, h.DomainAttr.Caps = fi.ThreadDomain, "lo", fi.CapLocalComm
				h.FabricAttr.Name, h.FabricAttr.ProvName = "127.0.0.0/8", "fake"
			})},
		{name: "utility name", hints: func(h *fi.Info) { h.FabricAttr.ProvName = "OFI_GORXM" }, want: base(func(*fi.Info) {})},
		{name: "core name", hints: func(h *fi.Info) { h.FabricAttr.ProvName = "fake" },
			want: base(func(h *fi.Info) { h.FabricAttr.ProvName = "fake" })},
		{name: "msg sizes", env: map[string]string{"FI_OFI_RXM_MSG_TX_SIZE": "64", "FI_OFI_RXM_MSG_RX_SIZE": "0x100"},
			want: base(func(h *fi.Info) { h.TxAttr.Size, h.RxAttr.Size = 64, 256 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			core := &fakeCore{}
			var hints *fi.Info
			if tc.hints != nil {
				hints = (*fi.Info)(nil).Clone()
				tc.hints(hints)
			}
			_, err := rxm.Over(core, "fake;ofi_gorxm").GetInfo(context.Background(), "", "", 0, hints)
			require.ErrorIs(t, err, fi.ENODATA)
			require.Equal(t, tc.want, core.lastHints(t))
		})
	}
}

// sockaddr returns the sockaddr of ap.
func sockaddr(ap string) []byte {
	_, b, err := fi.SockaddrFromAddrPort(netip.MustParseAddrPort(ap))
	if err != nil {
		panic(err)
	}
	return b
}

// verbsLike is an FI_EP_MSG entry shaped as an RDMA core's: registered
// buffers (FI_MR_LOCAL), provider keys, one RMA iov, 4 bytes of CQ data.
func verbsLike() *fi.Info {
	return &fi.Info{
		Caps: fi.CapMsg | fi.CapRMA | fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite | fi.CapRemoteRead |
			fi.CapRemoteWrite | fi.CapLocalComm | fi.CapRemoteComm,
		AddrFormat: fi.FormatSockaddrIn, SrcAddr: sockaddr("192.0.2.1:0"),
		TxAttr: &fi.TxAttr{MsgOrder: fi.OrderSAS | fi.OrderRAW, InjectSize: 256, Size: 1024, IOVLimit: 4, RMAIOVLimit: 1},
		RxAttr: &fi.RxAttr{MsgOrder: fi.OrderSAS, Size: 1024, IOVLimit: 4},
		EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg, MaxMsgSize: 1 << 30, MaxOrderRAWSize: 1 << 30, MaxOrderWAWSize: 1 << 30},
		DomainAttr: &fi.DomainAttr{Name: "rxe0", MRMode: fi.MRModeLocal | fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey,
			MRKeySize: 4, CQDataSize: 4, Caps: fi.CapLocalComm | fi.CapRemoteComm},
		FabricAttr: &fi.FabricAttr{Name: "IB-0xfe80000000000000", ProvName: "fake"},
		NIC:        &fi.NIC{},
	}
}

// TestEntryFromCore: what of an rxm entry comes from the core's entry
// (C's rxm_info_to_rxm), over a core unlike tcp.
func TestEntryFromCore(t *testing.T) {
	core := &fakeCore{entries: []*fi.Info{verbsLike()}}
	p := rxm.Over(core, "fake;ofi_gorxm")
	mrModes := fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey
	hints := &fi.Info{DomainAttr: &fi.DomainAttr{MRMode: mrModes}}
	infos, err := p.GetInfo(context.Background(), "", "", 0, hints)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	in, c := infos[0], verbsLike()
	require.Equal(t, fi.EPTypeRDM, in.EPAttr.Type)
	require.Equal(t, "fake;ofi_gorxm", in.FabricAttr.ProvName)
	require.Equal(t, c.FabricAttr.Name, in.FabricAttr.Name)
	require.Equal(t, c.DomainAttr.Name, in.DomainAttr.Name)
	require.Equal(t, c.SrcAddr, in.SrcAddr)
	require.Equal(t, 192, in.TxAttr.InjectSize, "the core's inject size less the rxm header, FI_MR_LOCAL or not (C 1.17 over rxe: 192)")
	require.Equal(t, mrModes, in.DomainAttr.MRMode, "FI_MR_LOCAL is rxm's to handle")
	require.Equal(t, 1, in.TxAttr.RMAIOVLimit)
	require.Equal(t, 4, in.TxAttr.IOVLimit)
	require.Equal(t, 4, in.DomainAttr.CQDataSize)
	require.Equal(t, 4, in.DomainAttr.MRKeySize)
	require.Equal(t, c.TxAttr.MsgOrder, in.TxAttr.MsgOrder)
	require.Equal(t, c.RxAttr.MsgOrder, in.RxAttr.MsgOrder)
	require.Equal(t, 1<<30, in.EPAttr.MaxMsgSize)
	require.Equal(t, 2048, in.TxAttr.Size)
	require.Equal(t, 2048, in.RxAttr.Size)
	require.NotNil(t, in.NIC)

	// An application that registers its buffers keeps the core's
	// FI_MR_LOCAL.
	hints.DomainAttr.MRMode |= fi.MRModeLocal
	infos, err = p.GetInfo(context.Background(), "", "", 0, hints)
	require.NoError(t, err)
	require.Equal(t, mrModes|fi.MRModeLocal, infos[0].DomainAttr.MRMode)

	// One that supports none of the core's MR modes is declined.
	_, err = p.GetInfo(context.Background(), "", "", 0, &fi.Info{DomainAttr: &fi.DomainAttr{}})
	require.ErrorIs(t, err, fi.ENODATA)
	require.Contains(t, err.Error(), "fake;ofi_gorxm: mr mode FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY required")

	t.Setenv("FI_OFI_RXM_BUFFER_SIZE", "128")
	t.Setenv("FI_OFI_RXM_TX_SIZE", "4096")
	infos, err = p.GetInfo(context.Background(), "", "", 0, hints)
	require.NoError(t, err)
	require.Equal(t, 128, infos[0].TxAttr.InjectSize, "no more than the eager limit")
	require.Equal(t, 4096, infos[0].TxAttr.Size)
	hints.TxAttr = &fi.TxAttr{Size: 4097}
	_, err = p.GetInfo(context.Background(), "", "", 0, hints)
	require.ErrorIs(t, err, fi.ENODATA, "FI_OFI_RXM_TX_SIZE is the deepest queue too")
	require.Contains(t, err.Error(), "tx size 4097 not supported (max 4096)")
}

// TestGetInfoDeclines: what rxm declines, and the core's reasons under
// rxm's name.
func TestGetInfoDeclines(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	get := func(f func(h *fi.Info)) error {
		h := &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: testName}, EPAttr: &fi.EPAttr{}}
		f(h)
		_, err := fi.GetInfo(context.Background(), "", "", 0, h)
		return err
	}
	err := get(func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeDgram })
	require.ErrorIs(t, err, fi.ENODATA)
	require.Contains(t, err.Error(), testName+": ep type FI_EP_DGRAM not supported (offers FI_EP_RDM)")

	err = get(func(h *fi.Info) { h.AddrFormat = fi.FormatStr })
	require.ErrorIs(t, err, fi.ENODATA)
	require.Contains(t, err.Error(), testName+": core tcp: ")

	err = get(func(h *fi.Info) { h.TxAttr = &fi.TxAttr{Size: -2} })
	require.Contains(t, err.Error(), testName+": tx size -2 not supported")

	core := &fakeCore{entries: []*fi.Info{{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}}}}
	_, err = rxm.Over(core, "fake;ofi_gorxm").GetInfo(context.Background(), "", "", 0, nil)
	require.ErrorIs(t, err, fi.ENODATA)
	require.EqualError(t, err, "fi: getinfo: no provider matched: fake;ofi_gorxm: core provider fake returned no FI_EP_MSG entry")
}

func TestParams(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	get := func() error {
		_, err := fi.GetInfo(context.Background(), "", "", 0, &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: testName}})
		return err
	}
	for name, val := range map[string]string{
		"FI_OFI_RXM_BUFFER_SIZE": "103", "FI_OFI_RXM_TX_SIZE": "x", "FI_OFI_RXM_RX_SIZE": "0x80000000",
		"FI_OFI_RXM_MSG_TX_SIZE": "-1", "FI_OFI_RXM_USE_RNDV_WRITE": "maybe",
	} {
		t.Run(name+"="+val, func(t *testing.T) {
			t.Setenv(name, val)
			p, _ := fi.LookupProvider(testName)
			_, err := p.GetInfo(context.Background(), "", "", 0, nil)
			require.ErrorIs(t, err, fi.EINVAL)
			require.Contains(t, err.Error(), name)
			require.ErrorIs(t, get(), fi.ENODATA, "fi.GetInfo reports it as rxm's reason")
			_, err = p.OpenFabric(&fi.FabricAttr{Name: "127.0.0.0/8"})
			require.ErrorIs(t, err, fi.EINVAL, "a fabric reads them too")
		})
	}
	for _, name := range []string{"FI_OFI_RXM_USE_RNDV_WRITE", "FI_OFI_RXM_ENABLE_PASSTHRU"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "yes")
			err := get()
			require.ErrorIs(t, err, fi.ENODATA)
			require.Contains(t, err.Error(), testName+": "+name+" is set: ")
			require.Contains(t, errors.FlattenHints(err), "unset the variable")
			t.Setenv(name, "0")
			require.NoError(t, get())
		})
	}
	t.Run("listed", func(t *testing.T) {
		var names []string
		for _, p := range fi.Params() {
			if p.Prov == "ofi_rxm" {
				require.True(t, strings.HasPrefix(p.Name, "FI_OFI_RXM_"), p.Name)
				require.NotEmpty(t, p.Help, p.Name)
				names = append(names, strings.TrimPrefix(p.Name, "FI_OFI_RXM_"))
			}
		}
		slices.Sort(names)
		require.Equal(t, []string{"BUFFER_SIZE", "CM_PROGRESS_INTERVAL", "COMP_PER_PROGRESS", "CQ_EQ_FAIRNESS",
			"DATA_AUTO_PROGRESS", "DEF_TCP_WAIT_OBJ", "DEF_WAIT_OBJ", "EAGER_LIMIT", "ENABLE_DIRECT_SEND",
			"ENABLE_DYN_RBUF", "ENABLE_PASSTHRU", "MSG_RX_SIZE", "MSG_TX_SIZE", "RX_SIZE", "SAR_LIMIT",
			"TX_SIZE", "USE_RNDV_WRITE", "USE_SRX"}, names, "C 1.17's ofi_rxm variables")
	})
	t.Run("queue sizes", func(t *testing.T) {
		t.Setenv("FI_OFI_RXM_RX_SIZE", "100")
		infos, err := fi.GetInfo(context.Background(), "", "", 0, &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: testName}})
		require.NoError(t, err)
		for _, in := range infos {
			require.Equal(t, 2048, in.TxAttr.Size)
			require.Equal(t, 100, in.RxAttr.Size)
		}
	})
}

// spyCore is tcp seen through: it records what rxm opens on it and
// closes.
type spyCore struct {
	fi.Provider
	mu      sync.Mutex // guards fabrics
	fabrics []*spyFabric
}

type spyFabric struct {
	fi.Fabric
	attr    fi.FabricAttr
	closed  bool
	domains []*spyDomain
}

type spyDomain struct {
	fi.Domain
	info   *fi.Info
	closed bool
	mrs    []fi.MRAttr
}

func (s *spyCore) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	f, err := s.Provider.OpenFabric(attr)
	if err != nil {
		return nil, err
	}
	sf := &spyFabric{Fabric: f, attr: *attr}
	s.mu.Lock()
	s.fabrics = append(s.fabrics, sf)
	s.mu.Unlock()
	return sf, nil
}

func (f *spyFabric) Close() error {
	err := f.Fabric.Close()
	f.closed = f.closed || err == nil
	return err
}

func (f *spyFabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	d, err := f.Fabric.OpenDomain(info)
	if err != nil {
		return nil, err
	}
	sd := &spyDomain{Domain: d, info: info}
	f.domains = append(f.domains, sd)
	return sd, nil
}

func (d *spyDomain) Close() error {
	err := d.Domain.Close()
	d.closed = d.closed || err == nil
	return err
}

func (d *spyDomain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	d.mrs = append(d.mrs, *attr)
	return fi.RegisterMR(d.Domain, attr, flags)
}

// TestObjectsOverCore: rxm's fabric, domain and memory regions open the
// core's beneath them through the public API, and close them; rxm's own
// objects keep fi_close(3)'s rules.
func TestObjectsOverCore(t *testing.T) {
	tcp, ok := fi.LookupProvider("tcp")
	require.True(t, ok)
	core := &spyCore{Provider: tcp}
	const name = "tcp;ofi_spyrxm"
	p := rxm.Over(core, name)
	infos, err := p.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, nil)
	require.NoError(t, err)
	info := infos[0]

	f, err := p.OpenFabric(info.FabricAttr)
	require.NoError(t, err)
	require.Len(t, core.fabrics, 1)
	cf := core.fabrics[0]
	require.Equal(t, "tcp", cf.attr.ProvName, "the core's fabric is opened under the core's name")
	require.Equal(t, info.FabricAttr.Name, cf.attr.Name)

	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	require.Len(t, cf.domains, 1)
	cd := cf.domains[0]
	require.Equal(t, fi.EPTypeMsg, cd.info.EPAttr.Type, "the core's domain is opened for a core entry")
	require.Equal(t, info.DomainAttr.Name, cd.info.DomainAttr.Name)
	require.Equal(t, info.SrcAddr, cd.info.SrcAddr)
	require.Equal(t, info, d.Info())

	err = f.Close()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, name+": close fabric: 1 domain still open: "+fi.EBUSY.Error())

	buf := make([]byte, 64)
	mr, err := fi.RegisterMR(d, &fi.MRAttr{Buf: buf, Access: fi.AccessSend | fi.AccessRecv, RequestedKey: 9}, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(9), mr.Key(), "the key is the core's, which tcp takes as requested")
	require.True(t, mr.Desc() == any(mr), "the descriptor is rxm's region")
	require.Len(t, cd.mrs, 1)
	require.Equal(t, fi.AccessSend|fi.AccessRecv|fi.AccessRemoteRead|fi.AccessRead, cd.mrs[0].Access,
		"the rendezvous reads send buffers and reads into receive buffers")
	_, err = fi.RegisterMR(d, &fi.MRAttr{Buf: buf, RequestedKey: 9}, 0)
	require.ErrorIs(t, err, fi.ENOKEY, "the core's error, with its code")

	cq, err := eq.OpenCQ(d, &eq.CQAttr{Size: 8})
	require.NoError(t, err)
	cntr, err := eq.OpenCounter(d, &eq.CounterAttr{})
	require.NoError(t, err)
	av, err := fi.OpenAV(d, nil)
	require.NoError(t, err)
	_, err = av.Insert([][]byte{sockaddr("127.0.0.1:0")}, 0)
	require.ErrorIs(t, err, fi.EINVAL, "port 0 names no endpoint")
	require.ErrorContains(t, err, name+": av insert: address 0: 127.0.0.1:0 is no endpoint name")
	q, err := eq.OpenEQ(f, &eq.Attr{})
	require.NoError(t, err)

	err = d.Close()
	require.ErrorIs(t, err, fi.EBUSY)
	require.EqualError(t, err, name+": close domain: 1 cq, 1 counter, 1 av and 1 mr still open: "+fi.EBUSY.Error())
	for _, o := range []fi.Fid{mr, cq, cntr, av} {
		require.NoError(t, o.Close())
		require.ErrorIs(t, o.Close(), fi.EBADF)
	}
	require.False(t, cd.closed)
	require.NoError(t, d.Close())
	require.True(t, cd.closed, "closing rxm's domain closes the core's")
	require.ErrorIs(t, d.Close(), fi.EBADF)
	_, err = fi.RegisterMR(d, &fi.MRAttr{Buf: buf}, 0)
	require.ErrorIs(t, err, fi.EBADF)

	require.ErrorIs(t, f.Close(), fi.EBUSY, "the event queue")
	require.NoError(t, q.Close())
	require.False(t, cf.closed)
	require.NoError(t, f.Close())
	require.True(t, cf.closed, "closing rxm's fabric closes the core's")
	require.ErrorIs(t, f.Close(), fi.EBADF)

	_, err = p.OpenFabric(&fi.FabricAttr{Name: "no such fabric"})
	require.ErrorIs(t, err, fi.ENODATA, "tcp's answer for an unknown fabric")
	require.Contains(t, err.Error(), name+": open fabric: core provider tcp: ")
}
