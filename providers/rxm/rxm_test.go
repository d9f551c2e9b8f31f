//go:build linux

package rxm_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/rxm"
	_ "github.com/gofabric/gofabric/providers/tcp" // registers tcp, the core under test
)

// testName is the name rxm over tcp is registered under in these tests,
// beside tcp's own tcp;ofi_rxm.
const testName = "tcp;ofi_gorxm"

func TestMain(m *testing.M) {
	// tcp's and fabnet's tests put veth links in the host's network
	// namespace for a few seconds (their liveness and reason tests); an
	// endpoint of these tests bound to one of those addresses, running in
	// another package meanwhile, would lose it (EADDRNOTAVAIL) when the
	// link goes. Loopback is what these tests are about.
	if os.Getenv("FI_TCP_IFACE") == "" {
		_ = os.Setenv("FI_TCP_IFACE", "lo")
	}
	tcp, ok := fi.LookupProvider("tcp")
	if !ok {
		panic("rxm test: provider tcp is not registered")
	}
	fi.Register(rxm.Over(tcp, testName))
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	fabtests.Run(t, fabtests.Config{Provider: testName,
		Groups: []string{"unit/getinfo", "unit/eq", "unit/cq", "unit/cntr", "unit/av", "unit/mr"}})
}

// TestRDMEntryLikeTCP: for the same node, service, flags and hints, the
// entries rxm derives over tcp's FI_EP_MSG entries are tcp's own
// tcp;ofi_rxm entries field for field, but the name; and what tcp
// declines, rxm declines.
func TestRDMEntryLikeTCP(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	type query struct {
		node, service string
		flags         fi.Flags
		hints         func(h *fi.Info)
	}
	cases := map[string]query{
		"no hints":               {hints: func(*fi.Info) {}},
		"rdm":                    {hints: func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeRDM }},
		"source":                 {node: "127.0.0.1", service: "49999", flags: fi.FlagSource, hints: func(*fi.Info) {}},
		"source service only":    {service: "49998", flags: fi.FlagSource, hints: func(*fi.Info) {}},
		"dest":                   {node: "127.0.0.1", service: "49997", hints: func(*fi.Info) {}},
		"numeric host":           {node: "127.0.0.1", service: "49996", flags: fi.FlagNumericHost, hints: func(*fi.Info) {}},
		"tagged":                 {hints: func(h *fi.Info) { h.Caps = fi.CapTagged }},
		"msg rma":                {hints: func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapRMA }},
		"recv only":              {hints: func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapRecv }},
		"source directed recv":   {hints: func(h *fi.Info) { h.Caps = fi.CapTagged | fi.CapSource | fi.CapDirectedRecv }},
		"remote write":           {hints: func(h *fi.Info) { h.Caps = fi.CapRMA | fi.CapRemoteWrite }},
		"local comm":             {hints: func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapLocalComm }},
		"domain caps":            {hints: func(h *fi.Info) { h.DomainAttr.Caps = fi.CapRemoteComm }},
		"sizes":                  {hints: func(h *fi.Info) { h.TxAttr.Size, h.RxAttr.Size = 4096, 100 }},
		"largest sizes":          {hints: func(h *fi.Info) { h.TxAttr.Size, h.RxAttr.Size = 16384, 65536 }},
		"tx size too large":      {hints: func(h *fi.Info) { h.TxAttr.Size = 16385 }},
		"rx size too large":      {hints: func(h *fi.Info) { h.RxAttr.Size = 65537 }},
		"negative size":          {hints: func(h *fi.Info) { h.TxAttr.Size = -1 }},
		"op flags":               {hints: func(h *fi.Info) { h.TxAttr.OpFlags, h.RxAttr.OpFlags = fi.FlagDeliveryComplete, fi.FlagCompletion }},
		"inject op flag":         {hints: func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagInject | fi.FlagTransmitComplete }},
		"commit complete":        {hints: func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagCommitComplete }},
		"multi recv":             {hints: func(h *fi.Info) { h.Caps = fi.CapMsg | fi.CapMultiRecv }},
		"multi recv op flag":     {hints: func(h *fi.Info) { h.RxAttr.OpFlags = fi.FlagMultiRecv }},
		"inject size":            {hints: func(h *fi.Info) { h.TxAttr.InjectSize = 64 }},
		"inject size too large":  {hints: func(h *fi.Info) { h.TxAttr.InjectSize = 65 }},
		"iov limits":             {hints: func(h *fi.Info) { h.TxAttr.IOVLimit, h.RxAttr.IOVLimit, h.TxAttr.RMAIOVLimit = 4, 4, 4 }},
		"iov limit too large":    {hints: func(h *fi.Info) { h.TxAttr.IOVLimit = 5 }},
		"modes":                  {hints: func(h *fi.Info) { h.Mode = fi.ModeContext | fi.ModeRxCQData }},
		"mr modes":               {hints: func(h *fi.Info) { h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeVirtAddr | fi.MRModeProvKey }},
		"mr basic":               {hints: func(h *fi.Info) { h.DomainAttr.MRMode = fi.MRModeBasic }},
		"threading domain":       {hints: func(h *fi.Info) { h.DomainAttr.Threading = fi.ThreadDomain }},
		"manual progress":        {hints: func(h *fi.Info) { h.DomainAttr.DataProgress = fi.ProgressManual }},
		"auto progress":          {hints: func(h *fi.Info) { h.DomainAttr.DataProgress = fi.ProgressAuto }},
		"av table":               {hints: func(h *fi.Info) { h.DomainAttr.AVType = fi.AVTable }},
		"resource mgmt":          {hints: func(h *fi.Info) { h.DomainAttr.ResourceMgmt = fi.RMEnabled }},
		"cq data size":           {hints: func(h *fi.Info) { h.DomainAttr.CQDataSize = 8 }},
		"cq data size too large": {hints: func(h *fi.Info) { h.DomainAttr.CQDataSize = 9 }},
		"domain lo":              {hints: func(h *fi.Info) { h.DomainAttr.Name = "lo" }},
		"fabric of lo":           {hints: func(h *fi.Info) { h.FabricAttr.Name = "127.0.0.0/8" }},
		"no such domain":         {hints: func(h *fi.Info) { h.DomainAttr.Name = "nosuch0" }},
		"sockaddr_in":            {hints: func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddrIn }},
		"sockaddr":               {hints: func(h *fi.Info) { h.AddrFormat = fi.FormatSockaddr }},
		"addr str":               {hints: func(h *fi.Info) { h.AddrFormat = fi.FormatStr }},
		"msg ep":                 {hints: func(h *fi.Info) { h.EPAttr.Type = fi.EPTypeMsg }},
		"protocol":               {hints: func(h *fi.Info) { h.EPAttr.Protocol = fi.ProtoRXM }},
		"tcp protocol":           {hints: func(h *fi.Info) { h.EPAttr.Protocol = fi.ProtoSockTCP }},
		"max msg size":           {hints: func(h *fi.Info) { h.EPAttr.MaxMsgSize = 1 << 40 }},
		"tag format":             {hints: func(h *fi.Info) { h.Caps, h.EPAttr.MemTagFormat = fi.CapTagged, 0xffff }},
		"atomic":                 {hints: func(h *fi.Info) { h.Caps = fi.CapAtomic }},
	}
	getinfo := func(t *testing.T, prov string, q query) ([]*fi.Info, error) {
		h := (*fi.Info)(nil).Clone()
		q.hints(h)
		h.FabricAttr.ProvName = prov
		return fi.GetInfo(context.Background(), q.node, q.service, q.flags, h)
	}
	for name, q := range cases {
		t.Run(name, func(t *testing.T) {
			want, werr := getinfo(t, "tcp;ofi_rxm", q)
			got, err := getinfo(t, testName, q)
			if werr != nil {
				require.ErrorIs(t, werr, fi.ENODATA, "tcp")
				require.ErrorIs(t, err, fi.ENODATA, "tcp declines, so must rxm: %v", werr)
				return
			}
			require.NoError(t, err, "tcp offers: %v", want)
			require.NotEmpty(t, want)
			require.Len(t, got, len(want))
			for i, g := range got {
				require.Equal(t, testName, g.FabricAttr.ProvName)
				g.FabricAttr.ProvName = want[i].FabricAttr.ProvName
				require.Equal(t, want[i], g, "entry %d", i)
			}
		})
	}
}
