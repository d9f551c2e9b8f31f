package tcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

type rdmSide struct {
	e  ep.Endpoint
	cq eq.CompletionQueue
	av fi.AV
}

func openRDMSide(t testing.TB) *rdmSide {
	hints := &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}, Caps: fi.CapMsg | fi.CapTagged | fi.CapSource | fi.CapDirectedRecv,
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"}}
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, hints)
	require.NoError(t, err)
	info := infos[0]
	fab, err := fi.OpenFabric(info)
	require.NoError(t, err)
	dom, err := fab.OpenDomain(info)
	require.NoError(t, err)
	cq, err := eq.OpenCQ(dom, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	av, err := fi.OpenAV(dom, &fi.AVAttr{})
	require.NoError(t, err)
	e, err := ep.Open(dom, info)
	require.NoError(t, err)
	require.NoError(t, e.Bind(cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, e.Bind(av, 0))
	require.NoError(t, e.Enable())
	t.Cleanup(func() { e.Close(); av.Close(); cq.Close(); dom.Close(); fab.Close() })
	return &rdmSide{e: e, cq: cq, av: av}
}

// rdmPair opens two RDM endpoints on loopback, each in the other's AV.
func rdmPair(t testing.TB) (x, y *rdmSide, toY, toX fi.Addr) {
	x, y = openRDMSide(t), openRDMSide(t)
	name := make([]byte, 64)
	n, err := y.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	fa, err := x.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	n, err = x.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	fb, err := y.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	return x, y, fa[0], fb[0]
}

func TestRDMDebug(t *testing.T) {
	a, b := openRDMSide(t), openRDMSide(t)
	name := make([]byte, 64)
	n, err := b.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	fas, err := a.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	n, err = a.e.(ep.Namer).Name(name)
	require.NoError(t, err)
	_, err = b.av.Insert([][]byte{name[:n]}, 0)
	require.NoError(t, err)
	for _, size := range []int{10, 20000, 1 << 20} {
		rbuf := make([]byte, size)
		require.NoError(t, b.e.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
		sbuf := make([]byte, size)
		for i := range sbuf {
			sbuf[i] = byte(i)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := a.e.(ep.Msg).Send(sbuf, nil, fas[0], "s")
			if err != fi.EAGAIN {
				require.NoError(t, err)
				break
			}
			require.True(t, time.Now().Before(deadline))
			a.cq.Read(make([]eq.Completion, 1))
		}
		got := 0
		comps := make([]eq.Completion, 4)
		for got < 2 {
			require.True(t, time.Now().Before(deadline), "size %d got %d", size, got)
			for _, q := range []eq.CompletionQueue{a.cq, b.cq} {
				k, err := q.Read(comps)
				if err == fi.EAVAIL {
					e, _ := q.ReadErr()
					t.Fatalf("err %v", e)
				}
				if k > 0 {
					t.Logf("size %d: %+v", size, comps[:k])
					got += k
				}
			}
		}
		require.Equal(t, sbuf, rbuf)
	}
}

func TestRDMDebugSimul(t *testing.T) {
	for iter := 0; iter < 50; iter++ {
		a, b := openRDMSide(t), openRDMSide(t)
		name := make([]byte, 64)
		n, _ := b.e.(ep.Namer).Name(name)
		fa, err := a.av.Insert([][]byte{name[:n]}, 0)
		require.NoError(t, err)
		n, _ = a.e.(ep.Namer).Name(name)
		fb, err := b.av.Insert([][]byte{name[:n]}, 0)
		require.NoError(t, err)
		sides := []*rdmSide{a, b}
		dests := []fi.Addr{fa[0], fb[0]}
		for _, s := range sides {
			require.NoError(t, s.e.(ep.Msg).Recv(make([]byte, 8), nil, fi.AddrUnspec, "r"))
		}
		sent := []bool{false, false}
		got := []int{0, 0}
		deadline := time.Now().Add(5 * time.Second)
		comps := make([]eq.Completion, 4)
		for got[0] < 2 || got[1] < 2 {
			require.True(t, time.Now().Before(deadline), "iter %d sent %v got %v", iter, sent, got)
			for i, s := range sides {
				if !sent[i] {
					err := s.e.(ep.Msg).SendMsg(&ep.Message{IOV: [][]byte{[]byte("fin\x00")}, Addr: dests[i], Context: "s"}, fi.FlagTransmitComplete)
					if err == nil {
						sent[i] = true
					} else if err != fi.EAGAIN {
						t.Fatalf("iter %d side %d: %v", iter, i, err)
					}
				}
				k, err := s.cq.Read(comps)
				if err == fi.EAVAIL {
					e, _ := s.cq.ReadErr()
					t.Fatalf("iter %d side %d err %v", iter, i, e)
				}
				got[i] += max(k, 0)
			}
		}
	}
}
