//go:build verbs && cgo

package verbs

import (
	"testing"

	"github.com/gofabric/gofabric/fabtests"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// TestConformance runs the conformance suite over the RDMA device (in the
// Soft-RoCE VM: rxe0 on eth0): every group that has FI_EP_MSG tests, with
// hints that declare the entries' FI_RX_CQ_DATA and MR mode, as C's
// fabtests do. It skips on a host without a device. The FI_EP_RDM halves
// and rma/rdm skip (no FI_EP_RDM over verbs yet), and unit/av (MSG domains
// have no address vectors).
func TestConformance(t *testing.T) {
	ip := rdmaAddr(t)
	// librdmacm opens every device at its first use in a process and
	// keeps it open until exit (rdma_get_devices' list): open them
	// before the suite starts counting descriptors, so that the first
	// group is not charged with them as leaked.
	devs, err := listDevices()
	require.NoError(t, err)
	for _, d := range devs {
		_, err := findContext(d.name)
		require.NoError(t, err)
	}
	fabtests.Run(t, fabtests.Config{
		Provider: "verbs",
		// The entries' mode FI_RX_CQ_DATA (the suite then posts a
		// receive for each write with remote CQ data, as fi_rma(3) asks)
		// and MR mode (FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED,
		// FI_MR_PROV_KEY).
		Hints: &fi.Info{Mode: fi.ModeRxCQData, FabricAttr: &fi.FabricAttr{}, EPAttr: &fi.EPAttr{},
			DomainAttr: &fi.DomainAttr{MRMode: msgMRMode}},
		Node:   ip.String(),
		Groups: []string{"unit", "cm", "msg", "rma", "close", "concurrency", "badinput", "faults", "wait", "context"},
		Exclude: map[string]string{
			"msg/truncate": "a receive shorter than the message completes with IBV_WC_LOC_LEN_ERR (fi.ETRUNC) " +
				"and moves the RC queue pair to the error state (IBTA 10.8.3), so the connection cannot carry on, " +
				"and verbs reports neither the placed length nor the excess; C's verbs provider behaves the same",
		},
	})
}

// TestConformanceDgramMulticast runs the suite's dgram and multicast
// groups over the device's FI_EP_DGRAM entries (UD queue pairs, ud.go;
// joins through rdma_cm, mcast.go), with hints that declare the entries'
// MR mode and no FI_MSG_PREFIX (the provider then gives the Global Route
// Header room of its own). The multicast group runs in the VM's own
// network namespace (Config.HostNetwork: rxe0 lives on its eth0, whose
// qemu hub has no other port): two and more processes join one group,
// each receives, and leaving (closing the group) stops the datagrams.
// It skips on a host without a device.
func TestConformanceDgramMulticast(t *testing.T) {
	ip := rdmaAddr(t)
	devs, err := listDevices()
	require.NoError(t, err)
	for _, d := range devs {
		_, err := findContext(d.name)
		require.NoError(t, err)
	}
	fabtests.Run(t, fabtests.Config{
		Provider: "verbs",
		Hints: &fi.Info{Mode: fi.ModeRxCQData, FabricAttr: &fi.FabricAttr{}, EPAttr: &fi.EPAttr{},
			DomainAttr: &fi.DomainAttr{MRMode: msgMRMode}},
		Node:        ip.String(),
		Groups:      []string{"dgram", "multicast"},
		HostNetwork: true,
	})
}
