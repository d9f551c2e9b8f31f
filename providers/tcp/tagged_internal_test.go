//go:build linux

package tcp

import (
	"context"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// connected returns two connected endpoints of this package on loopback,
// each with its CQ, for tests of internals.
func connected(t *testing.T) (a, b *endpoint, acq, bcq eq.CompletionQueue) {
	t.Helper()
	t.Setenv("FI_TCP_IFACE", "lo")
	h := (*fi.Info)(nil).Clone()
	h.FabricAttr.ProvName, h.EPAttr.Type = provName, fi.EPTypeMsg
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "0", fi.FlagSource, h)
	require.NoError(t, err)
	f, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	p, err := ep.OpenPassive(f, infos[0])
	require.NoError(t, err)
	require.NoError(t, p.Bind(q, 0))
	require.NoError(t, p.Listen())
	name := make([]byte, 64)
	n, err := p.Name(name)
	require.NoError(t, err)
	open := func(info *fi.Info) (*endpoint, eq.CompletionQueue, fi.Domain) {
		d, err := f.OpenDomain(info)
		require.NoError(t, err)
		cq, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatTagged})
		require.NoError(t, err)
		x, err := ep.Open(d, info)
		require.NoError(t, err)
		require.NoError(t, x.Bind(q, 0))
		require.NoError(t, x.Bind(cq, fi.FlagSend|fi.FlagRecv))
		require.NoError(t, x.Enable())
		return x.(*endpoint), cq, d
	}
	a, acq, ad := open(infos[0])
	require.NoError(t, a.Connect(name[:n], nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := q.SRead(ctx)
	require.NoError(t, err)
	b, bcq, bd := open(ev.(*eq.ConnReq).Info)
	require.NoError(t, b.Accept(nil))
	for range 2 {
		_, err := q.SRead(ctx)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, c := range []fi.Fid{a, b, acq, bcq, ad, bd, p, q, f} {
			require.NoError(t, c.Close())
		}
	})
	return a, b, acq, bcq
}

// RDM connections carry tagged messages in rxm's raw form (op 0, tag
// flag); a plain MSG endpoint drops a peer that sends one.
func TestTaggedFormOnRDMConnections(t *testing.T) {
	a, b, acq, bcq := connected(t)
	a.dp.tagged, b.dp.tagged = true, true // as the RDM layer sets them
	rbuf := make([]byte, 64)
	require.NoError(t, b.Recv(rbuf, nil, fi.AddrUnspec, "r"))
	x := txArgs{niov: 1, ctx: "s", tagged: true, tag: 0x4d2, data: 7, flags: fi.FlagRemoteCQData}
	x.iov[0] = []byte("tagged")
	require.NoError(t, a.post(&x, txSend))
	var c [1]eq.Completion
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n == 0; n, _ = bcq.Read(c[:]) {
		require.True(t, time.Now().Before(deadline), "no receive completion")
	}
	require.Equal(t, fi.FlagRecv|fi.FlagTagged|fi.FlagRemoteCQData, c[0].Flags)
	require.Equal(t, uint64(0x4d2), c[0].Tag)
	require.Equal(t, uint64(7), c[0].Data)
	require.Equal(t, "tagged", string(rbuf[:c[0].Len]))
	for n := 0; n == 0; n, _ = acq.Read(c[:]) {
		require.True(t, time.Now().Before(deadline), "no send completion")
	}
	require.Equal(t, fi.FlagSend|fi.FlagTagged, c[0].Flags)
}
