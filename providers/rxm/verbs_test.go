//go:build verbs && cgo

package rxm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/gofabric/gofabric/providers/rxm"
	_ "github.com/gofabric/gofabric/providers/verbs" // registers verbs, the core under test
)

// verbsName is the name rxm over Go's verbs is registered under in these
// tests.
const verbsName = "verbs;ofi_gorxm"

func init() {
	v, ok := fi.LookupProvider("verbs")
	if !ok {
		panic("rxm test: provider verbs is not registered")
	}
	fi.Register(rxm.Over(v, verbsName))
}

// verbsMRMode is the MR mode of rxm's entries over verbs: the core's
// but FI_MR_LOCAL, which rxm handles (an application declares the rest,
// as C's fabtests do).
const verbsMRMode = fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey

// rdmaNode returns the IPv4 address of the RDMA device's netdev (in the
// Soft-RoCE VM, rxe0's eth0), from verbs' own entries; without a device
// the test is skipped (failed under GOFABRIC_STRICT=1).
func rdmaNode(t *testing.T) string {
	hints := &fi.Info{Mode: fi.ModeRxCQData, FabricAttr: &fi.FabricAttr{ProvName: "verbs"},
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeMsg},
		DomainAttr: &fi.DomainAttr{MRMode: fi.MRModeLocal | verbsMRMode}}
	infos, err := fi.GetInfo(context.Background(), "", "", 0, hints)
	if err != nil {
		reftest.Missing(t, "no RDMA device with an address for verbs (%v); run in the Soft-RoCE VM (README)", err)
		return ""
	}
	for _, in := range infos {
		if ap, _, err := fi.AddrPortFromSockaddr(in.SrcAddr); err == nil && ap.Addr().Is4() {
			return ap.Addr().String()
		}
	}
	reftest.Missing(t, "no verbs entry with an IPv4 address (%d entries)", len(infos))
	return ""
}

// TestConformanceVerbsRDM runs fabtests' FI_EP_RDM groups over rxm
// layered on Go's verbs provider (FI_MR_LOCAL: registered bounce
// buffers, SAR from 16385 to 131072 bytes, read rendezvous above, RMA
// with rkeys and virtual addresses).
func TestConformanceVerbsRDM(t *testing.T) {
	node := rdmaNode(t)
	infos, err := fi.GetInfo(context.Background(), node, "0", fi.FlagSource,
		&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: verbsName}, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM},
			DomainAttr: &fi.DomainAttr{MRMode: verbsMRMode}})
	require.NoError(t, err)
	require.Equal(t, 192, infos[0].TxAttr.InjectSize, "the core's inline size less the rxm header, as C 1.17 over rxe")
	fabtests.Run(t, fabtests.Config{
		Provider: verbsName,
		Hints:    &fi.Info{FabricAttr: &fi.FabricAttr{}, EPAttr: &fi.EPAttr{}, DomainAttr: &fi.DomainAttr{MRMode: verbsMRMode}},
		Node:     node,
		Groups:   []string{"rdm", "tagged", "rma/rdm", "atomic", "multi-recv", "wait", "context"},
		// The VM under -race runs an atomic round trip between two
		// processes in 25-30 ms: atomic/ops/2proc's 301 calls take
		// about 8 s, one step of the suite.
		Timeout: 30 * time.Second,
	})
}
