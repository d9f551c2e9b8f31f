//go:build verbs && cgo

package ft

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The verbs column of the interop matrix: every program that runs on MSG
// endpoints, Go server with C client and C server with Go client, over
// gofabric's verbs provider and C's on an RDMA device (in CI, Soft-RoCE
// in the VM that VERBS_VM names; scripts/test.sh shares FABTESTS_BIN
// with it). The same runners as tcp's check the same output.
//
// unexpected_msg -e msg needs tagged messages on MSG endpoints, which
// neither C's verbs nor gofabric's has: both sides exit 61 (ENODATA,
// runfabtests.sh's "Notrun"), which the pair checks.
//
// The pairs of each group run two at a time (verbsPairsAtOnce): under
// the VM's emulated CPUs most of a pair's time is the C program's setup,
// which keeps one CPU busy (unless -S names one size, ft_alloc_msgs
// allocates, writes and registers a window of 64 buffers of the table's
// largest size, 8 MiB, each way: 1 GiB), so two at once take about half
// as long. The guest needs the memory for two such sides
// (scripts/test.sh gives it 4 GiB); more would not fit.
//
// Left out: the programs that run on FI_EP_RDM (rdm, rdm_tagged_*,
// rdm_cntr_pingpong, rdm_multi_client, rdm_rma_event, msg_inject,
// rdm_atomic, unexpected_msg -e rdm, and the -e rdm runs of bw and
// rma_bw): C runs them over ofi_rxm on verbs, and gofabric has no
// FI_EP_RDM over verbs yet.

// verbsHost returns the IPv4 address of the host's RDMA device, where the
// pairs run, skipping the test on a host without one.
func verbsHost(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/sys/class/infiniband"); err != nil {
		t.Skip("this host has no RDMA device (no /sys/class/infiniband); run the verbs tests in the Soft-RoCE VM (README)")
	}
	h := (*fi.Info)(nil).Clone()
	h.EPAttr.Type = fi.EPTypeMsg
	h.FabricAttr.ProvName = "verbs"
	h.DomainAttr.MRMode = fi.MRModeLocal | fi.MRModeAllocated | fi.MRModeProvKey | fi.MRModeVirtAddr // ft's
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "", "", 0, h)
	require.NoError(t, err, "the verbs provider offers FI_EP_MSG entries on this host's device")
	for _, in := range infos {
		if ap, _, err := fi.AddrPortFromSockaddr(in.SrcAddr); err == nil && ap.Addr().Unmap().Is4() {
			return ap.Addr().Unmap().String()
		}
	}
	t.Fatalf("no verbs entry has an IPv4 source address: %v", infos[0].SrcAddr)
	return ""
}

// verbsPairsAtOnce is how many verbs pairs run at once, whatever
// -parallel allows.
const verbsPairsAtOnce = 2

func TestVerbsInterop(t *testing.T) {
	pairHosts.Store("verbs", verbsHost(t))
	fabtestsBin(t)
	slots := make(chan struct{}, verbsPairsAtOnce)
	parallel := func(t *testing.T) {
		t.Parallel()
		slots <- struct{}{}
		t.Cleanup(func() { <-slots })
	}
	ways := func(f func(server, client string)) {
		f("go", "c")
		f("c", "go")
	}
	t.Run("pingpong", func(t *testing.T) {
		for _, v := range pingpongVariants {
			ways(func(server, client string) {
				p := pair{prov: "verbs", prog: "msg_pingpong", server: server, client: client, v: v}
				t.Run(p.name(), func(t *testing.T) {
					parallel(t)
					runPair(t, p)
				})
			})
		}
	})
	t.Run("bandwidth", func(t *testing.T) {
		var ps []bwPair
		add := func(prog string, extra []string, vs ...bwVariant) {
			for _, v := range vs {
				ways(func(server, client string) {
					ps = append(ps, bwPair{prov: "verbs", prog: prog, server: server, client: client, extra: extra, v: v})
				})
			}
		}
		add("msg_bw", nil, bwPlain, bwVerify, bwE)
		add("bw", []string{"-e", "msg"}, bwOnly(bwPlain), bwOnly(bwVerify))
		for _, o := range []string{"write", "read", "writedata"} {
			add("rma_bw", []string{"-e", "msg", "-o", o}, bwPlain)
		}
		add("rma_bw", []string{"-e", "msg", "-o", "writedata"}, bwVerify)
		add("rma_bw", []string{"-e", "msg", "-o", "read"}, bwB)
		for _, p := range ps {
			t.Run(p.name(), func(t *testing.T) {
				parallel(t)
				srv, cli := runBWPair(t, p)
				checkBWRows(t, p, srv, cli)
			})
		}
	})
	t.Run("functional", func(t *testing.T) {
		var ps []fpair
		for _, v := range oobVariants {
			ps = append(ps, bothWays(fpair{prov: "verbs", prog: "msg", variant: v.name, args: v.args})...)
		}
		// verbs carries 55 bytes of private data (56 in a REQ, less the
		// provider's header), as C's does.
		ps = append(ps, bothWays(fpair{prov: "verbs", prog: "cm_data", variant: "plain", args: []string{"-q", cmPortPlaceholder}, cmData: 55})...)
		ps = append(ps, bothWays(fpair{prov: "verbs", prog: "unexpected_msg", variant: "-e_msg", args: []string{"-e", "msg", "-I", "5", "-b=" + oobPlaceholder}, status: int(fi.ENODATA)})...)
		for _, p := range ps {
			t.Run(p.name(), func(t *testing.T) {
				parallel(t)
				runFunctional(t, p)
			})
		}
		// The connection manager's refusal before the server's listen
		// (TestClientWaitsForLateListen), over verbs.
		for _, flag := range []string{"-E", "-b"} {
			t.Run("verbs/msg/late_listen/"+flag, func(t *testing.T) {
				parallel(t)
				runLateListen(t, "verbs", flag)
			})
		}
	})
}
