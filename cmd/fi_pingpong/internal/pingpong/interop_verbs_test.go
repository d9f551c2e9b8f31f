//go:build verbs && cgo

package pingpong

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/all" // verbs, and rxm over it as verbs;ofi_rxm
	"github.com/stretchr/testify/require"
)

// requireVerbs skips t on a host without an RDMA device (these machines
// have one only inside the Soft-RoCE VM that VERBS_VM names) and
// requires gofabric's verbs provider to offer FI_EP_MSG entries there.
func requireVerbs(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/class/infiniband"); err != nil {
		t.Skip("this host has no RDMA device (no /sys/class/infiniband); run the verbs tests in the Soft-RoCE VM (README)")
	}
	h := (*fi.Info)(nil).Clone()
	h.EPAttr.Type = fi.EPTypeMsg
	h.FabricAttr.ProvName = "verbs"
	h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeAllocated | fi.MRModeProvKey | fi.MRModeVirtAddr // the tool's
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := fi.GetInfo(ctx, "", "", 0, h)
	require.NoError(t, err, "the verbs provider offers FI_EP_MSG entries on this host's device")
}

// TestInteropVerbsMsg runs the Go tool over gofabric's verbs provider
// against the C fi_pingpong (-p verbs -e msg), as client and as server,
// with -c: each side verifies the payloads the other built.
func TestInteropVerbsMsg(t *testing.T) {
	requireVerbs(t)
	tests := []struct {
		name  string
		args  []string
		sizes int
	}{
		{"default sizes", []string{"-I", "10", "-c"}, 6},
		{"all sizes", []string{"-I", "3", "-S", "all", "-c"}, 46},
	}
	for _, tt := range tests {
		for _, goClient := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/go client", false: "/go server"}[goClient]
			t.Run(name, func(t *testing.T) {
				cargs := append([]string{"-p", "verbs", "-e", "msg"}, tt.args...)
				o, err := ParseOptions(cargs, &bytes.Buffer{})
				require.NoError(t, err)
				runInterop(t, o, cargs, goClient, NewFabricTransport, tt.sizes)
			})
		}
	}
}

// TestInteropVerbsRDM runs the Go tool over gofabric's rxm on its verbs
// provider (-p verbs -e rdm, which both libraries serve as
// verbs;ofi_rxm) against the C fi_pingpong, as client and as server,
// untagged and tagged, with -c: each side verifies the payloads the other
// built. -S all covers C rxm's three paths over verbs both ways: eager up
// to 16 KiB, SAR segments up to 128 KiB, the read rendezvous above. The C
// processes run with FI_UNIVERSE_SIZE=127: C's rxm sizes its one verbs
// CQ by it (256 entries a peer by default), above rxe's max_cqe (32767)
// otherwise; gofabric reads no such variable.
func TestInteropVerbsRDM(t *testing.T) {
	requireVerbs(t)
	h := (*fi.Info)(nil).Clone()
	h.EPAttr.Type = fi.EPTypeRDM
	h.FabricAttr.ProvName = "verbs"
	h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeAllocated | fi.MRModeProvKey | fi.MRModeVirtAddr // the tool's
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	require.NoError(t, err, "rxm over verbs offers FI_EP_RDM entries on this host's device")
	require.Equal(t, "verbs;ofi_rxm", infos[0].FabricAttr.ProvName)
	t.Setenv("FI_UNIVERSE_SIZE", "127")
	tests := []struct {
		name  string
		args  []string
		sizes int
	}{
		{"default sizes", []string{"-I", "10", "-c"}, 6},
		{"all sizes", []string{"-I", "3", "-S", "all", "-c"}, 46},
		{"tagged default sizes", []string{"-m", "tagged", "-I", "10", "-c"}, 6},
		{"tagged all sizes", []string{"-m", "tagged", "-I", "3", "-S", "all", "-c"}, 46},
	}
	for _, tt := range tests {
		for _, goClient := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/go client", false: "/go server"}[goClient]
			t.Run(name, func(t *testing.T) {
				cargs := append([]string{"-p", "verbs", "-e", "rdm"}, tt.args...)
				o, err := ParseOptions(cargs, &bytes.Buffer{})
				require.NoError(t, err)
				runInterop(t, o, cargs, goClient, NewFabricTransport, tt.sizes)
			})
		}
	}
}

// TestInteropVerbsDgram runs the Go tool over gofabric's verbs provider
// (-p verbs -e dgram: UD queue pairs, FI_ADDR_IB_UD names exchanged over
// the control connection) against the C fi_pingpong over C's verbs
// provider, as client and as server, with -c: each side verifies the
// payloads the other built. Both tools leave the entries' 40-byte
// FI_MSG_PREFIX before each receive (the Global Route Header lands there)
// and send the payload as is; max_msg_size is the port's MTU (1 KiB on
// rxe over a 1500-byte netdev), so "all sizes" stops there.
func TestInteropVerbsDgram(t *testing.T) {
	requireVerbs(t)
	h := (*fi.Info)(nil).Clone()
	h.EPAttr.Type = fi.EPTypeDgram
	h.FabricAttr.ProvName = "verbs"
	h.Mode = fi.ModeContext | fi.ModeContext2 | fi.ModeMsgPrefix // the tool's
	h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeAllocated | fi.MRModeProvKey | fi.MRModeVirtAddr
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	require.NoError(t, err, "the verbs provider offers FI_EP_DGRAM entries on this host's device")
	require.Equal(t, 40, infos[0].EPAttr.MsgPrefixSize, "C's msg_prefix_size")
	require.NotZero(t, infos[0].RxAttr.Mode&fi.ModeMsgPrefix, "rx mode FI_MSG_PREFIX, as C's")
	tests := []struct {
		name  string
		args  []string
		sizes int
	}{
		{"one size", []string{"-I", "5", "-S", "64", "-c"}, 1},
		{"default sizes", []string{"-I", "5", "-c"}, -1},
		{"all sizes", []string{"-I", "2", "-S", "all", "-c"}, -1},
	}
	maxMsg := infos[0].EPAttr.MaxMsgSize
	for _, tt := range tests {
		for _, goClient := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/go client", false: "/go server"}[goClient]
			t.Run(name, func(t *testing.T) {
				cargs := append([]string{"-p", "verbs", "-e", "dgram"}, tt.args...)
				o, err := ParseOptions(cargs, &bytes.Buffer{})
				require.NoError(t, err)
				sizes := tt.sizes
				if sizes < 0 { // the sizes up to the port's MTU: 3 and 21 for 1 KiB
					sizes = len(Sizes(o, maxMsg))
				}
				runInterop(t, o, cargs, goClient, NewFabricTransport, sizes)
			})
		}
	}
}
