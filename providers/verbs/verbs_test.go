package verbs_test

import (
	"context"
	"testing"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/verbs"
	"github.com/stretchr/testify/require"
)

// GetInfo for verbs offers FI_EP_MSG entries where a device is up (the
// Soft-RoCE VM, built with the tag), and otherwise declines with
// fi.ENODATA and a reason a user can act on: how to build the provider,
// or which devices it found. FI_EP_RDM is declined with its reason.
func TestGetInfoSaysWhy(t *testing.T) {
	// The entries need FI_RX_CQ_DATA and their MR mode: an application
	// declares them.
	hints := &fi.Info{Mode: fi.ModeRxCQData, FabricAttr: &fi.FabricAttr{ProvName: "verbs"},
		DomainAttr: &fi.DomainAttr{MRMode: fi.MRModeLocal | fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey}}
	infos, err := fi.GetInfo(context.Background(), "", "", 0, hints)
	if err == nil {
		require.NotEmpty(t, infos)
		for _, i := range infos {
			// The FI_EP_MSG entries, then the FI_EP_DGRAM ones, as C lists them.
			require.Contains(t, []fi.EPType{fi.EPTypeMsg, fi.EPTypeDgram}, i.EPAttr.Type)
		}
		require.Equal(t, fi.EPTypeMsg, infos[0].EPAttr.Type, "the first entry")
		for _, i := range infos {
			require.NotZero(t, i.DomainAttr.CQDataSize, "hints that declare FI_RX_CQ_DATA get remote CQ data")
		}
		// As in C (vrb_check_rx_attr, vrb_alter_info): hints that neither
		// declare FI_RX_CQ_DATA nor ask for CQ data (fi_pingpong's) get
		// entries without CQ data that do not require the mode; hints
		// that ask for CQ data without the mode get none.
		plain := &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "verbs"}, DomainAttr: hints.DomainAttr}
		infos, err = fi.GetInfo(context.Background(), "", "", 0, plain)
		require.NoError(t, err, "hints without FI_RX_CQ_DATA")
		for _, i := range infos {
			require.Zero(t, i.DomainAttr.CQDataSize, "cq_data_size without FI_RX_CQ_DATA")
			require.Zero(t, i.Mode&fi.ModeRxCQData, "mode without FI_RX_CQ_DATA in the hints")
		}
		rxOnly := plain.Clone()
		rxOnly.RxAttr = &fi.RxAttr{Mode: fi.ModeRxCQData}
		infos, err = fi.GetInfo(context.Background(), "", "", 0, rxOnly)
		require.NoError(t, err, "hints that declare FI_RX_CQ_DATA in the rx mode only")
		for _, i := range infos {
			require.NotZero(t, i.DomainAttr.CQDataSize, "cq_data_size with FI_RX_CQ_DATA in the rx mode")
			require.NotZero(t, i.RxAttr.Mode&fi.ModeRxCQData, "rx mode")
			require.Zero(t, i.Mode&fi.ModeRxCQData, "mode: as C, the bit only where the hints' mode has it")
		}
		want := plain.Clone()
		want.DomainAttr.CQDataSize = 4
		_, err = fi.GetInfo(context.Background(), "", "", 0, want)
		require.ErrorContains(t, err, "FI_RX_CQ_DATA", "hints that ask for CQ data without the entries' mode")
		rdm := &fi.Info{Mode: fi.ModeRxCQData, DomainAttr: hints.DomainAttr, FabricAttr: &fi.FabricAttr{ProvName: "verbs"}, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}}
		_, err = fi.GetInfo(context.Background(), "", "", 0, rdm)
		require.ErrorIs(t, err, fi.ENODATA)
		require.ErrorContains(t, err, "not implemented")
		_, err = fi.OpenFabric(&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "verbs", Name: "x"}})
		require.ErrorIs(t, err, fi.ENODATA)
		return
	}
	require.ErrorIs(t, err, fi.ENODATA)
	var nm *fi.NoMatchError
	require.ErrorAs(t, err, &nm)
	require.Len(t, nm.Reasons, 1)
	require.Equal(t, "verbs", nm.Reasons[0].Provider)
	require.Regexp(t, `build tag 'verbs'|no RDMA device|found .* port`, nm.Reasons[0].Reason)
	_, err = fi.OpenFabric(&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "verbs", Name: "x"}})
	require.ErrorIs(t, err, fi.ENODATA)
}
