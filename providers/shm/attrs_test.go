//go:build linux

package shm_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The capabilities and the transmit and receive attributes of hints
// (fi_getinfo(3)): which ones the provider takes, as C libfabric 1.17's
// shm takes them.

// attrQuery is one set of hints: caps, tx and rx caps, tx and rx op
// flags, tx and rx sizes.
type attrQuery struct {
	caps, txCaps, rxCaps fi.Caps
	txFlags, rxFlags     fi.Flags
	txSize, rxSize       int
	declineMatch         string // Go declines where C accepts, with a reason containing this
}

func (q attrQuery) String() string {
	return fmt.Sprintf("caps=%v txcaps=%v rxcaps=%v tx=%v rx=%v txsize=%d rxsize=%d",
		q.caps, q.txCaps, q.rxCaps, q.txFlags, q.rxFlags, q.txSize, q.rxSize)
}

func (q attrQuery) hints() *fi.Info {
	h := shmHints()
	h.Caps, h.TxAttr.Caps, h.RxAttr.Caps = q.caps, q.txCaps, q.rxCaps
	h.TxAttr.OpFlags, h.RxAttr.OpFlags = q.txFlags, q.rxFlags
	h.TxAttr.Size, h.RxAttr.Size = q.txSize, q.rxSize
	return h
}

// attrResult is what GetInfo made of an attrQuery: ok and the first
// entry's values, or the error.
type attrResult struct {
	ok               bool
	txFlags, rxFlags fi.Flags
	txSize, rxSize   int
	caps             fi.Caps
	err              error
}

func goAttrs(t testing.TB, q attrQuery) attrResult {
	t.Helper()
	infos, err := fi.GetInfo(context.Background(), "", "", 0, q.hints())
	if err != nil {
		require.ErrorIs(t, err, fi.ENODATA, "%v", q)
		return attrResult{err: err}
	}
	in := infos[0]
	return attrResult{ok: true, txFlags: in.TxAttr.OpFlags, rxFlags: in.RxAttr.OpFlags,
		txSize: in.TxAttr.Size, rxSize: in.RxAttr.Size, caps: in.Caps}
}

// notImplemented are the capabilities C's shm offers and gofabric's does
// not: hints asking for one are declined with this reason.
var notImplemented = []struct {
	caps   fi.Caps
	reason string
}{
	{fi.CapHMEM, "FI_HMEM"},
}

// declineReason is the reason Go gives for caps C accepts, or "".
func declineReason(c fi.Caps) string {
	for _, n := range notImplemented {
		if c&n.caps != 0 {
			return n.reason
		}
	}
	return ""
}

// attrQueries are the hints compared with C: every capability alone in
// caps, tx caps and rx caps, every operation flag alone on each side,
// combinations, and sizes around the maxima.
func attrQueries() []attrQuery {
	capBits := []fi.Caps{fi.CapMsg, fi.CapRMA, fi.CapTagged, fi.CapAtomic, fi.CapMulticast, fi.CapCollective,
		fi.CapRead, fi.CapWrite, fi.CapRecv, fi.CapSend, fi.CapRemoteRead, fi.CapRemoteWrite, fi.CapMultiRecv,
		fi.CapTrigger, fi.CapFence, fi.CapAVUserID, fi.CapPeer, fi.CapHMEM, fi.CapVariableMsg, fi.CapRMAPmem,
		fi.CapSourceErr, fi.CapLocalComm, fi.CapRemoteComm, fi.CapSharedAV, fi.CapRMAEvent, fi.CapSource,
		fi.CapNamedRxCtx, fi.CapDirectedRecv, fi.CapMsg | fi.CapTagged | fi.CapRMA | fi.CapSource | fi.CapDirectedRecv}
	flagBits := []fi.Flags{fi.FlagMultiRecv, fi.FlagRemoteCQData, fi.FlagMore, fi.FlagPeek, fi.FlagTrigger,
		fi.FlagFence, fi.FlagPriority, fi.FlagCompletion, fi.FlagInject, fi.FlagInjectComplete,
		fi.FlagTransmitComplete, fi.FlagDeliveryComplete, fi.FlagAffinity, fi.FlagCommitComplete,
		fi.FlagMatchComplete, fi.FlagDeliveryComplete | fi.FlagCompletion, fi.FlagDeliveryComplete | fi.FlagInject,
		fi.FlagCompletion | fi.FlagInjectComplete | fi.FlagTransmitComplete | fi.FlagDeliveryComplete,
		fi.FlagMultiRecv | fi.FlagCompletion}
	sizes := [][2]int{{1, 1}, {3, 5}, {16, 0}, {0, 16}, {1024, 1024}, {1025, 0}, {0, 1025}, {2048, 0}, {0, 4096}}
	var qs []attrQuery
	for _, c := range capBits {
		qs = append(qs, attrQuery{caps: c})
		// Domain caps (FI_LOCAL_COMM, FI_SHARED_AV...) in tx_attr or
		// rx_attr caps: C declines them, kit's matcher
		// ignores them there for every provider; not shm's to decide.
		if c&fi.DomainCaps == 0 {
			qs = append(qs, attrQuery{txCaps: c}, attrQuery{rxCaps: c})
		}
	}
	for _, f := range flagBits {
		qs = append(qs, attrQuery{txFlags: f}, attrQuery{rxFlags: f})
	}
	for _, s := range sizes {
		qs = append(qs, attrQuery{txSize: s[0], rxSize: s[1]})
	}
	qs = append(qs, attrQuery{caps: fi.CapMsg | fi.CapTagged, txFlags: fi.FlagDeliveryComplete, rxFlags: fi.FlagCompletion,
		txSize: 64, rxSize: 128})
	for i := range qs {
		q := &qs[i]
		q.declineMatch = declineReason(q.caps | q.txCaps | q.rxCaps)
	}
	return qs
}

// buildCGetInfo compiles testdata/cgetinfo.c, or calls reftest.Missing
// when gcc or the libfabric headers are not installed.
func buildCGetInfo(tb testing.TB) string {
	tb.Helper()
	if _, err := os.Stat("/usr/include/rdma/fabric.h"); err != nil {
		reftest.Missing(tb, "libfabric headers (package libfabric-dev) not installed: %v", err)
	}
	gcc := reftest.Tool(tb, "gcc", "gcc")
	bin := filepath.Join(tb.TempDir(), "cgetinfo")
	out, err := exec.Command(gcc, "-std=c11", "-O1", "-o", bin, filepath.Join("testdata", "cgetinfo.c"), "-lfabric").CombinedOutput()
	require.NoError(tb, err, "gcc: %s", out)
	return bin
}

// cAttrs asks C libfabric (cgetinfo) every query.
func cAttrs(t testing.TB, bin string, qs []attrQuery) []attrResult {
	t.Helper()
	var in strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&in, "%#x %#x %#x %#x %#x %d %d\n", uint64(q.caps), uint64(q.txCaps), uint64(q.rxCaps),
			uint64(q.txFlags), uint64(q.rxFlags), q.txSize, q.rxSize)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "FI_PROVIDER=shm")
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "cgetinfo: %s", stderr.String())
	var rs []attrResult
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if f[0] == "err" {
			require.Equal(t, []string{"err", strconv.Itoa(int(fi.ENODATA))}, f, "cgetinfo fails only with FI_ENODATA")
			rs = append(rs, attrResult{})
			continue
		}
		require.Len(t, f, 6, "cgetinfo line %q", sc.Text())
		num := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 0, 64)
			require.NoError(t, err)
			return v
		}
		rs = append(rs, attrResult{ok: true, txFlags: fi.Flags(num(f[1])), rxFlags: fi.Flags(num(f[2])),
			txSize: int(num(f[3])), rxSize: int(num(f[4])), caps: fi.Caps(num(f[5]))})
	}
	require.Len(t, rs, len(qs))
	return rs
}

// TestGetInfoAttrsMatchC asks C libfabric 1.17 and gofabric the same
// hints: each capability alone in caps, tx caps and rx caps, each
// operation flag alone in tx_attr and in rx_attr, and queue sizes around
// the maxima. Where C accepts, gofabric must accept and return the same
// op flags, sizes (the hints' own, or 1024 when they leave them 0) and
// caps (but for those it does not implement); where C declines, so must
// gofabric. The exception is what gofabric's shm does not implement
// and declines with its reason: FI_HMEM. FI_MULTI_RECV (caps, rx caps,
// rx op flag) is taken as C takes it.
func TestGetInfoAttrsMatchC(t *testing.T) {
	bin := buildCGetInfo(t)
	qs := attrQueries()
	want := cAttrs(t, bin, qs)
	var unimpl fi.Caps
	for _, n := range notImplemented {
		unimpl |= n.caps
	}
	for i, q := range qs {
		got := goAttrs(t, q)
		c := want[i]
		switch {
		case !c.ok:
			assert.False(t, got.ok, "%v: C declines, gofabric accepts: %+v", q, got)
		case q.declineMatch != "":
			if assert.False(t, got.ok, "%v: gofabric declines (C accepts: %+v)", q, c) {
				assert.ErrorContains(t, got.err, q.declineMatch, "%v", q)
				assert.ErrorContains(t, got.err, "not implemented", "%v", q)
			}
		case !got.ok:
			t.Errorf("%v: C accepts (%+v), gofabric declines: %v", q, c, got.err)
		default:
			c.caps &^= unimpl
			assert.Equal(t, c, got, "%v", q)
		}
	}
}

// TestGetInfoAttrs checks, without C, what C 1.17's shm takes in hints:
// tx op flags FI_COMPLETION, FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE
// and FI_DELIVERY_COMPLETE; rx op flags FI_COMPLETION and FI_MULTI_RECV
// (and FI_MULTI_RECV in caps and rx caps); queues of 1 to 1024
// entries. The result carries the hints' values; without hints (or with
// zeros) the entry is the one it always was: no op flags, 1024 deep.
func TestGetInfoAttrs(t *testing.T) {
	def := attrResult{ok: true, txSize: 1024, rxSize: 1024}
	got := goAttrs(t, attrQuery{})
	got.caps = 0
	require.Equal(t, def, got, "defaults")
	infos, err := fi.GetInfo(context.Background(), "", "", 0, nil)
	require.NoError(t, err)
	for _, in := range infos {
		if in.FabricAttr.ProvName == "shm" {
			require.Zero(t, in.TxAttr.OpFlags)
			require.Zero(t, in.RxAttr.OpFlags)
			require.Equal(t, 1024, in.TxAttr.Size)
			require.Equal(t, 1024, in.RxAttr.Size)
		}
	}

	for _, f := range []fi.Flags{fi.FlagCompletion, fi.FlagInjectComplete, fi.FlagTransmitComplete,
		fi.FlagDeliveryComplete, fi.FlagDeliveryComplete | fi.FlagCompletion} {
		got := goAttrs(t, attrQuery{txFlags: f})
		got.caps = 0
		require.Equal(t, attrResult{ok: true, txFlags: f, txSize: 1024, rxSize: 1024}, got, "tx %v", f)
	}
	got = goAttrs(t, attrQuery{rxFlags: fi.FlagCompletion})
	got.caps = 0
	require.Equal(t, attrResult{ok: true, rxFlags: fi.FlagCompletion, txSize: 1024, rxSize: 1024}, got)
	for _, q := range []attrQuery{{txFlags: fi.FlagInject}, {txFlags: fi.FlagCommitComplete}, {rxFlags: fi.FlagDeliveryComplete},
		{txSize: 1025}, {rxSize: 1025}, {txSize: -1}, {rxSize: -1}} {
		got := goAttrs(t, q)
		require.False(t, got.ok, "%v", q)
	}
	got = goAttrs(t, attrQuery{txSize: 3, rxSize: 5})
	require.Equal(t, 3, got.txSize)
	require.Equal(t, 5, got.rxSize)

	got = goAttrs(t, attrQuery{rxFlags: fi.FlagMultiRecv | fi.FlagCompletion})
	require.True(t, got.ok, "rx op flags FI_MULTI_RECV|FI_COMPLETION: %v", got.err)
	require.Equal(t, fi.FlagMultiRecv|fi.FlagCompletion, got.rxFlags)
	for _, q := range []attrQuery{{caps: fi.CapMultiRecv}, {rxCaps: fi.CapMultiRecv}} {
		got := goAttrs(t, q)
		require.True(t, got.ok, "%v: %v", q, got.err)
		require.NotZero(t, got.caps&fi.CapMultiRecv, "%v", q)
	}
}

// TestOpenEndpointQueueLimits: an Info asking for queues beyond the
// provider's maxima (built by hand; GetInfo never returns one) is refused
// at open with fi.EINVAL.
func TestOpenEndpointQueueLimits(t *testing.T) {
	for _, tc := range []struct {
		tx, rx int
		reason string
	}{{1025, 0, "tx size 1025"}, {0, 1025, "rx size 1025"}, {-1, 0, "tx size -1"}} {
		infos, err := fi.GetInfo(context.Background(), "", "", 0, shmHints())
		require.NoError(t, err)
		f, err := fi.OpenFabric(infos[0])
		require.NoError(t, err)
		d, err := f.OpenDomain(infos[0])
		require.NoError(t, err)
		bad := infos[0].Clone()
		bad.TxAttr.Size, bad.RxAttr.Size = tc.tx, tc.rx
		_, err = ep.Open(d, bad)
		require.ErrorIs(t, err, fi.EINVAL, "%v", tc)
		require.ErrorContains(t, err, tc.reason)
		require.NoError(t, d.Close())
		require.NoError(t, f.Close())
	}
}

// openSelective opens an endpoint from hints that modify changes, its CQ
// bound with FI_SELECTIVE_COMPLETION in both directions.
func openSelective(t testing.TB, modify func(*fi.Info)) *node {
	t.Helper()
	h := shmHints()
	modify(h)
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	require.NoError(t, err)
	n := &node{}
	n.fabric, err = fi.OpenFabric(infos[0])
	require.NoError(t, err)
	n.domain, err = n.fabric.OpenDomain(infos[0])
	require.NoError(t, err)
	n.av, err = fi.OpenAV(n.domain, &fi.AVAttr{Type: fi.AVTable})
	require.NoError(t, err)
	n.cq, err = eq.OpenCQ(n.domain, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	n.ep, err = ep.Open(n.domain, infos[0])
	require.NoError(t, err)
	require.NoError(t, n.ep.Bind(n.av, 0))
	require.NoError(t, n.ep.Bind(n.cq, fi.FlagSend|fi.FlagRecv|fi.FlagSelectiveCompletion))
	require.NoError(t, n.ep.Enable())
	buf := make([]byte, 128)
	k, err := n.ep.(ep.Namer).Name(buf)
	require.NoError(t, err)
	n.name = buf[:k]
	return n
}

// TestDefaultOpFlagCompletion: FI_COMPLETION as the tx and rx op flags of
// the hints reports the sends and receives of the calls that take no
// flags under FI_SELECTIVE_COMPLETION (fi_endpoint(3)); without it they
// are not reported, and a marker sent with FI_COMPLETION always is.
func TestDefaultOpFlagCompletion(t *testing.T) {
	for _, f := range []fi.Flags{0, fi.FlagCompletion} {
		modify := func(h *fi.Info) { h.TxAttr.OpFlags, h.RxAttr.OpFlags = f, f }
		x, y := openSelective(t, modify), openSelective(t, modify)
		require.Equal(t, f, x.ep.Info().TxAttr.OpFlags)
		require.Equal(t, f, x.ep.Info().RxAttr.OpFlags)
		toY := x.insert(t, y.name)
		for _, size := range []int{8, 4096} {
			buf := make([]byte, size)
			require.NoError(t, y.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "r"))
			require.NoError(t, y.ep.(ep.Msg).RecvMsg(&ep.Message{IOV: [][]byte{make([]byte, size)}, Addr: fi.AddrUnspec, Context: "r-mark"}, fi.FlagCompletion))
			require.NoError(t, x.ep.(ep.Msg).Send(make([]byte, size), nil, toY, "s"))
			require.NoError(t, x.ep.(ep.Msg).SendMsg(&ep.Message{IOV: [][]byte{make([]byte, size)}, Addr: toY, Context: "s-mark"}, fi.FlagCompletion))
			for _, q := range []struct {
				n         *node
				ctx, mark string
			}{{x, "s", "s-mark"}, {y, "r", "r-mark"}} {
				c, _ := pollAll(t, q.n, x, y)
				if f != 0 {
					require.Equal(t, q.ctx, c.Context, "FI_COMPLETION in op flags reports, size %d", size)
					c, _ = pollAll(t, q.n, x, y)
				}
				require.Equal(t, q.mark, c.Context, "op flags %v, size %d", f, size)
			}
		}
		x.close(t)
		y.close(t)
	}
}

// TestRxQueueDepth: an endpoint opened with an rx size from the hints
// takes that many posted receives of each kind (tagged and untagged), and
// the next gets fi.EAGAIN.
func TestRxQueueDepth(t *testing.T) {
	for _, n := range []int{5, 1024} {
		x := openSelective(t, func(h *fi.Info) { h.RxAttr.Size = n })
		require.Equal(t, n, x.ep.Info().RxAttr.Size)
		buf := make([]byte, 8)
		for i := range n {
			require.NoError(t, x.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, i), "receive %d of %d", i, n)
			require.NoError(t, x.ep.(ep.Tagged).TRecv(buf, nil, fi.AddrUnspec, 1, 0, i), "tagged receive %d of %d", i, n)
		}
		require.ErrorIs(t, x.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, nil), fi.EAGAIN)
		require.ErrorIs(t, x.ep.(ep.Tagged).TRecv(buf, nil, fi.AddrUnspec, 1, 0, nil), fi.EAGAIN)
		x.close(t)
	}
}
