//go:build linux

package tcp_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The transmit and receive attributes of hints (fi_getinfo(3)): which
// operation flags and queue sizes the provider takes, as C libfabric
// 1.17's tcp and tcp;ofi_rxm take them, and what the flags do.

// attrQuery is one set of hints: endpoint type, tx and rx op flags, tx and
// rx sizes.
type attrQuery struct {
	rdm     bool
	txFlags fi.Flags
	rxFlags fi.Flags
	txSize  int
	rxSize  int
}

func (q attrQuery) String() string {
	typ := "msg"
	if q.rdm {
		typ = "rdm"
	}
	return fmt.Sprintf("%s tx=%v rx=%v txsize=%d rxsize=%d", typ, q.txFlags, q.rxFlags, q.txSize, q.rxSize)
}

func (q attrQuery) hints() *fi.Info {
	h := tcpHints(fi.EPTypeMsg)
	if q.rdm {
		h.EPAttr.Type = fi.EPTypeRDM
	}
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
	err              error
}

func goAttrs(t testing.TB, q attrQuery) attrResult {
	t.Helper()
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "", 0, q.hints())
	if err != nil {
		require.ErrorIs(t, err, fi.ENODATA, "%v", q)
		return attrResult{err: err}
	}
	in := infos[0]
	return attrResult{ok: true, txFlags: in.TxAttr.OpFlags, rxFlags: in.RxAttr.OpFlags, txSize: in.TxAttr.Size, rxSize: in.RxAttr.Size}
}

// attrQueries are the hints compared with C: every operation flag alone
// on each side, a combination, and sizes around each maximum.
func attrQueries() []attrQuery {
	txBits := []fi.Flags{fi.FlagMultiRecv, fi.FlagRemoteCQData, fi.FlagMore, fi.FlagFence, fi.FlagCompletion,
		fi.FlagInject, fi.FlagInjectComplete, fi.FlagTransmitComplete, fi.FlagDeliveryComplete,
		fi.FlagCommitComplete, fi.FlagMatchComplete, fi.FlagDeliveryComplete | fi.FlagCompletion}
	rxBits := []fi.Flags{fi.FlagMultiRecv, fi.FlagRemoteCQData, fi.FlagMore, fi.FlagCompletion, fi.FlagInject,
		fi.FlagTransmitComplete, fi.FlagDeliveryComplete, fi.FlagMultiRecv | fi.FlagCompletion}
	sizes := [][2]int{{0, 0}, {1, 1}, {128, 0}, {256, 256}, {1024, 0}, {1025, 0}, {2048, 2048}, {16384, 0},
		{16385, 0}, {0, 4096}, {0, 65536}, {0, 65537}}
	var qs []attrQuery
	for _, rdm := range []bool{false, true} {
		for _, f := range txBits {
			qs = append(qs, attrQuery{rdm: rdm, txFlags: f})
		}
		for _, f := range rxBits {
			qs = append(qs, attrQuery{rdm: rdm, rxFlags: f})
		}
		for _, s := range sizes {
			qs = append(qs, attrQuery{rdm: rdm, txSize: s[0], rxSize: s[1]})
		}
	}
	return qs
}

// cAttrs asks C libfabric (cgetinfo) every query.
func cAttrs(t testing.TB, bin string, qs []attrQuery) []attrResult {
	t.Helper()
	var in strings.Builder
	for _, q := range qs {
		typ := "msg"
		if q.rdm {
			typ = "rdm"
		}
		fmt.Fprintf(&in, "%s %#x %#x %d %d\n", typ, uint64(q.txFlags), uint64(q.rxFlags), q.txSize, q.rxSize)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "FI_TCP_IFACE=lo")
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
		require.Len(t, f, 5, "cgetinfo line %q", sc.Text())
		num := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 0, 64)
			require.NoError(t, err)
			return v
		}
		rs = append(rs, attrResult{ok: true, txFlags: fi.Flags(num(f[1])), rxFlags: fi.Flags(num(f[2])),
			txSize: int(num(f[3])), rxSize: int(num(f[4]))})
	}
	require.Len(t, rs, len(qs))
	return rs
}

// TestGetInfoAttrsMatchC asks C libfabric 1.17 and gofabric the same
// hints, for FI_EP_MSG and FI_EP_RDM: each operation flag alone in
// tx_attr and in rx_attr, and sizes around the maxima. Where C accepts,
// gofabric must accept and return the same op flags and sizes (the
// hints' own, or the defaults when the hints leave them 0); where C
// declines, so must gofabric (FI_MULTI_RECV in the RDM receive flags
// included: C's rxm and gofabric's both take it).
func TestGetInfoAttrsMatchC(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	bin := buildC(t, "cgetinfo")
	qs := attrQueries()
	want := cAttrs(t, bin, qs)
	for i, q := range qs {
		got := goAttrs(t, q)
		c := want[i]
		switch {
		case !c.ok:
			require.False(t, got.ok, "%v: C declines, gofabric accepts: %+v", q, got)
		default:
			require.True(t, got.ok, "%v: C accepts (%+v), gofabric declines: %v", q, c, got.err)
			got.err = nil
			require.Equal(t, c, got, "%v", q)
		}
	}
}

// TestGetInfoAttrs checks, without C, the attributes C 1.17 takes:
// FI_EP_MSG tx op flags FI_INJECT, FI_INJECT_COMPLETE,
// FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE, FI_COMMIT_COMPLETE and
// FI_COMPLETION, rx op flag FI_COMPLETION, queues up to 1024 (tx) and
// 65536 (rx); FI_EP_RDM the same but FI_COMMIT_COMPLETE, queues up to
// 16384 and 65536. The result carries the hints' values; the defaults
// (256, and 2048 for RDM) are unchanged.
func TestGetInfoAttrs(t *testing.T) {
	cleanEnv(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	msgTx := []fi.Flags{fi.FlagInject, fi.FlagInjectComplete, fi.FlagTransmitComplete, fi.FlagDeliveryComplete,
		fi.FlagCommitComplete, fi.FlagCompletion, fi.FlagDeliveryComplete | fi.FlagCompletion}
	for _, rdm := range []bool{false, true} {
		def := 256
		maxTx := 1024
		if rdm {
			def, maxTx = 2048, 16384
		}
		got := goAttrs(t, attrQuery{rdm: rdm})
		require.Equal(t, attrResult{ok: true, txSize: def, rxSize: def}, got, "defaults, rdm %v", rdm)
		for _, f := range msgTx {
			q := attrQuery{rdm: rdm, txFlags: f}
			got := goAttrs(t, q)
			if rdm && f == fi.FlagCommitComplete {
				require.False(t, got.ok, "%v", q)
				require.ErrorContains(t, got.err, "FI_COMMIT_COMPLETE")
				continue
			}
			require.Equal(t, attrResult{ok: true, txFlags: f, txSize: def, rxSize: def}, got, "%v", q)
		}
		q := attrQuery{rdm: rdm, rxFlags: fi.FlagCompletion}
		require.Equal(t, attrResult{ok: true, rxFlags: fi.FlagCompletion, txSize: def, rxSize: def}, goAttrs(t, q), "%v", q)
		q = attrQuery{rdm: rdm, rxFlags: fi.FlagDeliveryComplete}
		require.False(t, goAttrs(t, q).ok, "%v", q)

		q = attrQuery{rdm: rdm, txSize: maxTx, rxSize: 65536}
		require.Equal(t, attrResult{ok: true, txSize: maxTx, rxSize: 65536}, goAttrs(t, q), "%v", q)
		q = attrQuery{rdm: rdm, txSize: 3, rxSize: 5}
		require.Equal(t, attrResult{ok: true, txSize: 3, rxSize: 5}, goAttrs(t, q), "%v", q)
		q = attrQuery{rdm: rdm, txSize: maxTx + 1}
		got = goAttrs(t, q)
		require.False(t, got.ok, "%v", q)
		require.ErrorContains(t, got.err, fmt.Sprintf("tx size %d not supported (max %d)", maxTx+1, maxTx))
		q = attrQuery{rdm: rdm, rxSize: 65537}
		got = goAttrs(t, q)
		require.False(t, got.ok, "%v", q)
		require.ErrorContains(t, got.err, "rx size 65537 not supported (max 65536)")
	}
	for _, q := range []attrQuery{{txSize: -1}, {rxSize: -1}, {rdm: true, rxSize: -5}} {
		got := goAttrs(t, q)
		require.False(t, got.ok, "%v", q)
		require.ErrorContains(t, got.err, "size -", "%v", q)
	}
	got := goAttrs(t, attrQuery{rdm: true, rxFlags: fi.FlagMultiRecv})
	require.Equal(t, attrResult{ok: true, rxFlags: fi.FlagMultiRecv, txSize: 2048, rxSize: 2048}, got, "FI_MULTI_RECV as the RDM receive default")
	got = goAttrs(t, attrQuery{rxFlags: fi.FlagMultiRecv})
	require.False(t, got.ok, "tcp's MSG endpoints have no FI_MULTI_RECV, as C's")
}

// TestOpenEndpointQueueLimits: an Info asking for queues beyond the
// provider's maxima (built by hand; GetInfo never returns one) is refused
// at open with fi.EINVAL.
func TestOpenEndpointQueueLimits(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		typ    fi.EPType
		tx, rx int
		reason string
	}{
		{fi.EPTypeMsg, 1025, 0, "tx size 1025"},
		{fi.EPTypeMsg, 0, 65537, "rx size 65537"},
		{fi.EPTypeRDM, 16385, 0, "tx size 16385"},
		{fi.EPTypeRDM, 0, 65537, "rx size 65537"},
	} {
		info := loInfo(t)
		if tc.typ == fi.EPTypeRDM {
			infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, tcpHints(fi.EPTypeRDM))
			require.NoError(t, err)
			info = infos[0]
		}
		f, err := fi.OpenFabric(info)
		require.NoError(t, err)
		d, err := f.OpenDomain(info)
		require.NoError(t, err)
		bad := info.Clone()
		if tc.tx != 0 {
			bad.TxAttr.Size = tc.tx
		}
		if tc.rx != 0 {
			bad.RxAttr.Size = tc.rx
		}
		_, err = ep.Open(d, bad)
		require.ErrorIs(t, err, fi.EINVAL, "%v", tc)
		require.ErrorContains(t, err, tc.reason)
		require.NoError(t, d.Close())
		require.NoError(t, f.Close())
	}
}

// TestMSGQueueDepths: a connection opened with queue sizes from the
// hints takes that many operations, and the next one gets fi.EAGAIN:
// receives (128, and the maximum, 65536, posted on the side that receives
// nothing) and sends (128, and the maximum, 1024: delivery-complete sends
// to a peer with no receive posted stay pending until it posts them, then
// all complete, in order).
func TestMSGQueueDepths(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct{ tx, rx int }{{128, 128}, {1024, 65536}} {
		t.Run(fmt.Sprintf("tx%d-rx%d", tc.tx, tc.rx), func(t *testing.T) {
			p := connectPairWith(t, func(h *fi.Info) {
				h.TxAttr.Size, h.RxAttr.Size = tc.tx, tc.rx
				h.TxAttr.OpFlags = fi.FlagDeliveryComplete
			}, 0)
			defer p.close(t)
			require.Equal(t, tc.tx, p.client.ep.Info().TxAttr.Size)
			require.Equal(t, tc.rx, p.server.ep.Info().RxAttr.Size)

			// The client receives nothing: its receive queue fills.
			for i := range tc.rx {
				require.NoError(t, p.client.msg().Recv(make([]byte, 8), nil, fi.AddrUnspec, i), "receive %d of %d", i, tc.rx)
			}
			require.ErrorIs(t, p.client.msg().Recv(make([]byte, 8), nil, fi.AddrUnspec, nil), fi.EAGAIN, "receive %d", tc.rx)

			payload := []byte("queued")
			for i := range tc.tx {
				require.NoError(t, p.client.msg().Send(payload, nil, fi.AddrUnspec, i), "send %d of %d", i, tc.tx)
			}
			require.ErrorIs(t, p.client.msg().Send(payload, nil, fi.AddrUnspec, nil), fi.EAGAIN, "send %d", tc.tx)
			var c [16]eq.Completion
			n, err := p.client.cq.Read(c[:])
			require.Zero(t, n, "a delivery-complete send completed before the peer posted a receive")
			require.ErrorIs(t, err, fi.EAGAIN)

			sent := min(tc.tx, tc.rx)
			bufs := make([][]byte, sent)
			for i := range sent {
				bufs[i] = make([]byte, 8)
				require.NoError(t, p.server.msg().Recv(bufs[i], nil, fi.AddrUnspec, i), "receive %d", i)
			}
			for i := range sent {
				got := poll(t, p.server.cq)
				require.Equal(t, i, got.Context, "receive order")
				require.Equal(t, payload, bufs[i][:got.Len])
			}
			for i := range sent {
				require.Equal(t, i, poll(t, p.client.cq).Context, "send order")
			}
		})
	}
}

// TestMSGDefaultOpFlags: the tx op flags of the hints are the endpoint's
// default flags (fi_endpoint(3) op_flags) for the calls that take none:
// FI_DELIVERY_COMPLETE and FI_TRANSMIT_COMPLETE (which the C provider
// treats alike) complete a send only once the peer has placed it, which
// needs a posted receive; FI_INJECT_COMPLETE and no flag complete it once
// written; FI_COMPLETION reports under FI_SELECTIVE_COMPLETION; FI_INJECT
// makes the buffer the application's again when Send returns (and limits
// sends to the inject size, 128 bytes).
func TestMSGDefaultOpFlags(t *testing.T) {
	cleanEnv(t)
	for _, f := range []fi.Flags{0, fi.FlagInjectComplete, fi.FlagDeliveryComplete, fi.FlagTransmitComplete} {
		t.Run(f.String(), func(t *testing.T) {
			p := connectPairWith(t, func(h *fi.Info) { h.TxAttr.OpFlags = f }, 0)
			defer p.close(t)
			require.Equal(t, f, p.client.ep.Info().TxAttr.OpFlags)
			waits := f&(fi.FlagDeliveryComplete|fi.FlagTransmitComplete) != 0
			msg := []byte("delivered?")
			require.NoError(t, p.client.msg().Send(msg, nil, fi.AddrUnspec, "s"))
			if !waits {
				require.Equal(t, "s", poll(t, p.client.cq).Context, "a plain send completes once written")
			} else {
				// No receive is posted: the message waits in the peer's
				// socket, whatever the peer's progress does, and no ACK
				// can come.
				var c [1]eq.Completion
				for range 1000 {
					n, err := p.client.cq.Read(c[:])
					require.Zero(t, n, "the send completed before the peer had a receive for it")
					require.ErrorIs(t, err, fi.EAGAIN)
				}
			}
			buf := make([]byte, 64)
			require.NoError(t, p.server.msg().Recv(buf, nil, fi.AddrUnspec, "r"))
			if waits {
				require.Equal(t, "s", poll(t, p.client.cq).Context)
				// The peer placed the message and reported it before it
				// sent the ACK: its completion is there already.
				var c [1]eq.Completion
				n, err := p.server.cq.Read(c[:])
				require.NoError(t, err, "the receive completed before the ACK went out")
				require.Equal(t, 1, n)
				require.Equal(t, "r", c[0].Context)
				require.Equal(t, msg, buf[:c[0].Len])
				return
			}
			got := poll(t, p.server.cq)
			require.Equal(t, msg, buf[:got.Len])
		})
	}

	t.Run("FI_COMPLETION", func(t *testing.T) {
		for _, f := range []fi.Flags{0, fi.FlagCompletion} {
			p := connectPairWith(t, func(h *fi.Info) { h.TxAttr.OpFlags, h.RxAttr.OpFlags = f, f }, fi.FlagSelectiveCompletion)
			buf := make([]byte, 8)
			require.NoError(t, p.server.msg().Recv(buf, nil, fi.AddrUnspec, "r"))
			require.NoError(t, p.client.msg().Send([]byte("x"), nil, fi.AddrUnspec, "s"))
			// A marker that always reports closes each side's queue.
			require.NoError(t, p.server.msg().RecvMsg(&ep.Message{IOV: [][]byte{make([]byte, 8)}, Context: "r-mark"}, fi.FlagCompletion))
			require.NoError(t, p.client.msg().SendMsg(&ep.Message{IOV: [][]byte{[]byte("y")}, Context: "s-mark"}, fi.FlagCompletion))
			for _, q := range []struct {
				cq   eq.CompletionQueue
				ctx  string
				mark string
			}{{p.client.cq, "s", "s-mark"}, {p.server.cq, "r", "r-mark"}} {
				got := poll(t, q.cq)
				if f != 0 {
					require.Equal(t, q.ctx, got.Context, "FI_COMPLETION in op flags reports")
					got = poll(t, q.cq)
				}
				require.Equal(t, q.mark, got.Context, "op flags %v", f)
			}
			p.close(t)
		}
	})

	t.Run("inject-with-FI_DELIVERY_COMPLETE", func(t *testing.T) {
		// fi_inject has no completion to delay: as in C, an inject does
		// not wait for the peer's ACK even when the default op flags ask
		// for delivery complete, so it holds no queue entry once written
		// (a peer with no receive posted does not stop them).
		p := connectPairWith(t, func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagDeliveryComplete }, 0)
		defer p.close(t)
		for i := range 2 * 256 {
			require.NoError(t, p.client.msg().Inject([]byte("i"), fi.AddrUnspec), "inject %d", i)
			require.NoError(t, p.client.msg().InjectData([]byte("d"), uint64(i), fi.AddrUnspec), "injectdata %d", i)
		}
	})

	t.Run("FI_INJECT", func(t *testing.T) {
		p := connectPairWith(t, func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagInject }, 0)
		defer p.close(t)
		buf := make([]byte, 16)
		require.NoError(t, p.server.msg().Recv(buf, nil, fi.AddrUnspec, "r"))
		msg := []byte("injected")
		require.NoError(t, p.client.msg().Send(msg, nil, fi.AddrUnspec, "s"))
		copy(msg, "CLOBBER!")
		require.Equal(t, "s", poll(t, p.client.cq).Context)
		got := poll(t, p.server.cq)
		require.Equal(t, "injected", string(buf[:got.Len]))
		require.ErrorIs(t, p.client.msg().Send(make([]byte, 129), nil, fi.AddrUnspec, nil), fi.EINVAL)

		// FI_INJECT means nothing to a read (fi_rma(3)): a read with it
		// as the default flag reads; a write injects.
		target := make([]byte, 64)
		copy(target, "remote bytes")
		mr, err := fi.RegisterMR(p.server.domain, &fi.MRAttr{Buf: target,
			Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: 0x51}, 0)
		require.NoError(t, err)
		defer mr.Close()
		rma := p.client.ep.(ep.RMA)
		rbuf := make([]byte, 12)
		require.NoError(t, rma.Read(rbuf, nil, fi.AddrUnspec, 0, 0x51, "read"))
		require.Equal(t, "read", poll(t, p.client.cq).Context)
		require.Equal(t, "remote bytes", string(rbuf))
		w := []byte("written")
		require.NoError(t, rma.Write(w, nil, fi.AddrUnspec, 32, 0x51, "write"))
		copy(w, "CLOBBER")
		require.Equal(t, "write", poll(t, p.client.cq).Context)
		require.NoError(t, rma.Read(rbuf[:7], nil, fi.AddrUnspec, 32, 0x51, "read"))
		require.Equal(t, "read", poll(t, p.client.cq).Context)
		require.Equal(t, "written", string(rbuf[:7]))
	})
}

// rdmDCMsg is one message of TestRDMDeliveryComplete.
type rdmDCMsg struct {
	name   string
	size   int
	tagged bool
}

// TestRDMDeliveryComplete: on RDM endpoints FI_DELIVERY_COMPLETE (and
// FI_TRANSMIT_COMPLETE), as the tx op flags of the hints or on the call,
// completes a send only once the peer has placed the message: eager ones
// carry tcp's delivery-complete flag and complete on the peer's ACK,
// which it sends when the payload is in (a posted receive, or a buffer
// of its own when none is posted yet); rendezvous ones complete on
// read-done, after the peer read the data. The peer here never makes
// progress until it reads its CQ, so no completion can come before.
func TestRDMDeliveryComplete(t *testing.T) {
	cleanEnv(t)
	msgs := []rdmDCMsg{{"eager", 100, false}, {"tagged", 1000, true}, {"rndv", 100000, false}, {"tagged-rndv", 70000, true}}
	for _, mode := range []string{"default-dc", "default-tc", "per-op-dc", "unexpected"} {
		t.Run(mode, func(t *testing.T) {
			var def fi.Flags
			switch mode {
			case "default-dc", "unexpected":
				def = fi.FlagDeliveryComplete
			case "default-tc":
				def = fi.FlagTransmitComplete
			}
			modify := func(h *fi.Info) { h.TxAttr = &fi.TxAttr{OpFlags: def} }
			x, y := openRDMSideWith(t, nil, modify, 0), openRDMSideWith(t, nil, modify, 0)
			require.Equal(t, def, x.e.Info().TxAttr.OpFlags)
			toY := insertName(t, x, y)
			insertName(t, y, x)
			for _, m := range msgs {
				payload := seeded(m.size, m.size)
				buf := make([]byte, m.size)
				if mode != "unexpected" {
					postRDMRecv(t, y, m, buf)
				}
				send := func() error {
					switch {
					case mode == "per-op-dc" && m.tagged:
						return x.tagged().TSendMsg(&ep.TaggedMessage{IOV: [][]byte{payload}, Addr: toY, Tag: 7, Context: m.name}, fi.FlagDeliveryComplete)
					case mode == "per-op-dc":
						return x.msg().SendMsg(&ep.Message{IOV: [][]byte{payload}, Addr: toY, Context: m.name}, fi.FlagDeliveryComplete)
					case m.tagged:
						return x.tagged().TSend(payload, nil, toY, 7, m.name)
					}
					return x.msg().Send(payload, nil, toY, m.name)
				}
				_, err := sendRetry(t, x, send)
				require.NoError(t, err, m.name)
				var c [1]eq.Completion
				for range 1000 {
					n, err := x.cq.Read(c[:])
					require.Zero(t, n, "%s: the send completed before the peer made any progress", m.name)
					require.ErrorIs(t, err, fi.EAGAIN, m.name)
				}
				if mode == "unexpected" {
					// The peer takes the message in while no receive is
					// posted: an eager one is then in its buffer, and
					// the send completes (fi_cq(3)); a rendezvous one
					// waits for a receive to read into.
					if m.size <= 16384 {
						got := nextSkipping(t, x, y)
						require.Equal(t, m.name, got.c.Context)
					}
					postRDMRecv(t, y, m, buf)
				}
				got := next(t, y, x) // x serves the rendezvous reads
				require.Nil(t, got.err, "%s: %v", m.name, got.err)
				require.Equal(t, m.name+"-r", got.c.Context)
				require.Equal(t, payload, buf[:got.c.Len], m.name)
				if mode != "unexpected" || m.size > 16384 {
					got = next(t, x, y)
					require.Nil(t, got.err, "%s: %v", m.name, got.err)
					require.Equal(t, m.name, got.c.Context)
				}
			}
		})
	}

	t.Run("control", func(t *testing.T) {
		// Without the flags an eager send completes once written, while
		// the peer makes no progress at all.
		x, y := openRDMSide(t), openRDMSide(t)
		toY := insertName(t, x, y)
		insertName(t, y, x)
		for _, f := range []fi.Flags{0, fi.FlagInjectComplete} {
			_, err := sendRetry(t, x, func() error {
				return x.msg().SendMsg(&ep.Message{IOV: [][]byte{[]byte("plain")}, Addr: toY, Context: "plain"}, f)
			})
			require.NoError(t, err)
			got := next(t, x)
			require.Nil(t, got.err)
			require.Equal(t, "plain", got.c.Context)
		}
	})
}

// insertName inserts b's name into a's AV and returns its fi.Addr.
func insertName(t testing.TB, a, b *rdmSide) fi.Addr {
	t.Helper()
	fa, err := a.av.Insert([][]byte{b.name(t)}, 0)
	require.NoError(t, err)
	return fa[0]
}

// postRDMRecv posts s's receive for m into buf, with context m.name+"-r".
func postRDMRecv(t testing.TB, s *rdmSide, m rdmDCMsg, buf []byte) {
	t.Helper()
	if m.tagged {
		require.NoError(t, s.tagged().TRecv(buf, nil, fi.AddrUnspec, 7, 0, m.name+"-r"))
		return
	}
	require.NoError(t, s.msg().Recv(buf, nil, fi.AddrUnspec, m.name+"-r"))
}

// nextSkipping is next on s while others make progress, for an entry of
// s alone: the others' completions are not expected meanwhile.
func nextSkipping(t testing.TB, s *rdmSide, others ...*rdmSide) entry {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var c [1]eq.Completion
	for {
		n, err := s.cq.Read(c[:])
		if n == 1 {
			return entry{c: c[0]}
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		for _, o := range others {
			n, err := o.cq.Read(c[:])
			require.Zero(t, n, "unexpected completion %+v", c[0])
			require.ErrorIs(t, err, fi.EAGAIN)
		}
		require.True(t, time.Now().Before(deadline), "no completion within 5 s")
	}
}

// TestRDMQueueDepths: an RDM endpoint opened with an rx size from the
// hints takes that many posted receives of each kind, and the next gets
// fi.EAGAIN.
func TestRDMQueueDepths(t *testing.T) {
	cleanEnv(t)
	for _, n := range []int{5, 4096} {
		s := openRDMSideWith(t, nil, func(h *fi.Info) { h.RxAttr = &fi.RxAttr{Size: n} }, 0)
		require.Equal(t, n, s.e.Info().RxAttr.Size)
		buf := make([]byte, 8)
		for i := range n {
			require.NoError(t, s.msg().Recv(buf, nil, fi.AddrUnspec, i), "receive %d of %d", i, n)
			require.NoError(t, s.tagged().TRecv(buf, nil, fi.AddrUnspec, 1, 0, i), "tagged receive %d of %d", i, n)
		}
		require.ErrorIs(t, s.msg().Recv(buf, nil, fi.AddrUnspec, nil), fi.EAGAIN)
		require.ErrorIs(t, s.tagged().TRecv(buf, nil, fi.AddrUnspec, 1, 0, nil), fi.EAGAIN)
	}
}

// TestRDMDefaultOpFlags: on RDM endpoints too the hints' op flags are the
// defaults of the calls that take none: FI_COMPLETION reports sends and
// receives under FI_SELECTIVE_COMPLETION, FI_INJECT makes a send's buffer
// the application's again at once (64 bytes at most).
func TestRDMDefaultOpFlags(t *testing.T) {
	cleanEnv(t)
	for _, f := range []fi.Flags{0, fi.FlagCompletion} {
		modify := func(h *fi.Info) { h.TxAttr, h.RxAttr = &fi.TxAttr{OpFlags: f}, &fi.RxAttr{OpFlags: f} }
		x := openRDMSideWith(t, nil, modify, fi.FlagSelectiveCompletion)
		y := openRDMSideWith(t, nil, modify, fi.FlagSelectiveCompletion)
		toY := insertName(t, x, y)
		insertName(t, y, x)
		buf := make([]byte, 8)
		require.NoError(t, y.msg().Recv(buf, nil, fi.AddrUnspec, "r"))
		require.NoError(t, y.msg().RecvMsg(&ep.Message{IOV: [][]byte{make([]byte, 8)}, Context: "r-mark"}, fi.FlagCompletion))
		_, err := sendRetry(t, x, func() error { return x.msg().Send([]byte("x"), nil, toY, "s") })
		require.NoError(t, err)
		_, err = sendRetry(t, x, func() error {
			return x.msg().SendMsg(&ep.Message{IOV: [][]byte{[]byte("y")}, Addr: toY, Context: "s-mark"}, fi.FlagCompletion)
		})
		require.NoError(t, err)
		for _, q := range []struct {
			s         *rdmSide
			ctx, mark string
		}{{x, "s", "s-mark"}, {y, "r", "r-mark"}} {
			got := next(t, q.s, x, y)
			require.Nil(t, got.err)
			if f != 0 {
				require.Equal(t, q.ctx, got.c.Context, "FI_COMPLETION in op flags reports")
				got = next(t, q.s, x, y)
				require.Nil(t, got.err)
			}
			require.Equal(t, q.mark, got.c.Context, "op flags %v", f)
		}
	}

	x := openRDMSideWith(t, nil, func(h *fi.Info) { h.TxAttr = &fi.TxAttr{OpFlags: fi.FlagInject} }, 0)
	y := openRDMSide(t)
	toY := insertName(t, x, y)
	insertName(t, y, x)
	buf := make([]byte, 16)
	require.NoError(t, y.msg().Recv(buf, nil, fi.AddrUnspec, "r"))
	msg := []byte("injected")
	_, err := sendRetry(t, x, func() error { return x.msg().Send(msg, nil, toY, "s") })
	require.NoError(t, err)
	copy(msg, "CLOBBER!")
	got := next(t, y, x)
	require.Nil(t, got.err)
	require.Equal(t, "injected", string(buf[:got.c.Len]))
	require.ErrorIs(t, x.msg().Send(make([]byte, 65), nil, toY, nil), fi.EINVAL)
}
