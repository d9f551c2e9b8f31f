//go:build linux

package udp_test

import (
	"context"
	"os"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/udp"
	"github.com/stretchr/testify/require"
)

// cleanEnv unsets the variables that steer the provider, restoring them
// at cleanup.
func cleanEnv(t testing.TB) {
	for _, v := range []string{"FI_PROVIDER", "FI_UDP_IFACE"} {
		t.Setenv(v, "")
		require.NoError(t, os.Unsetenv(v))
	}
}

// udpHints returns hints selecting the udp provider's datagram endpoints.
func udpHints() *fi.Info {
	h := (*fi.Info)(nil).Clone()
	h.FabricAttr.ProvName = "udp"
	h.EPAttr.Type = fi.EPTypeDgram
	return h
}

// loInfo returns the provider's entry for 127.0.0.1 with caps (all when
// 0).
func loInfo(t testing.TB, caps fi.Caps) *fi.Info {
	t.Helper()
	h := udpHints()
	h.Caps = caps
	h.DomainAttr.Name = "lo"
	h.AddrFormat = fi.FormatSockaddrIn
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	require.NoError(t, err)
	return infos[0]
}

// node is an endpoint with its objects, all closed at cleanup.
type node struct {
	info   *fi.Info
	fabric fi.Fabric
	domain fi.Domain
	eq     eq.EventQueue
	txcq   eq.CompletionQueue
	rxcq   eq.CompletionQueue
	av     fi.AV
	ep     ep.Endpoint
	msg    ep.Msg
	name   []byte
}

// newNode opens, binds (AV, CQs and, with withEQ, an EQ) and enables an
// endpoint for info.
func newNode(t testing.TB, info *fi.Info, withEQ bool) *node {
	t.Helper()
	n := &node{info: info}
	var err error
	n.fabric, err = fi.OpenFabric(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.fabric.Close()) })
	n.domain, err = n.fabric.OpenDomain(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.domain.Close()) })
	n.eq, err = eq.OpenEQ(n.fabric, &eq.Attr{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.eq.Close()) })
	for _, q := range []*eq.CompletionQueue{&n.txcq, &n.rxcq} {
		*q, err = eq.OpenCQ(n.domain, &eq.CQAttr{Format: eq.FormatMsg})
		require.NoError(t, err)
		c := *q
		t.Cleanup(func() { require.NoError(t, c.Close()) })
	}
	n.av, err = fi.OpenAV(n.domain, &fi.AVAttr{Type: fi.AVTable})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.av.Close()) })
	n.ep, err = ep.Open(n.domain, info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.ep.Close()) })
	require.NoError(t, n.ep.Bind(n.txcq, fi.FlagSend))
	require.NoError(t, n.ep.Bind(n.rxcq, fi.FlagRecv))
	require.NoError(t, n.ep.Bind(n.av, 0))
	if withEQ {
		require.NoError(t, n.ep.Bind(n.eq, 0))
	}
	require.NoError(t, n.ep.Enable())
	n.msg = n.ep.(ep.Msg)
	buf := make([]byte, 64)
	l, err := n.ep.(ep.Namer).Name(buf)
	require.NoError(t, err)
	n.name = buf[:l]
	return n
}

// insert inserts addr into n's AV.
func (n *node) insert(t testing.TB, addr []byte) fi.Addr {
	t.Helper()
	fa, err := n.av.Insert([][]byte{addr}, 0)
	require.NoError(t, err)
	return fa[0]
}

// readOne waits for one completion (or error entry) on q.
func readOne(t testing.TB, q eq.CompletionQueue) (eq.Completion, fi.Addr, *eq.CQError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	var c [1]eq.Completion
	var src [1]fi.Addr
	for {
		n, err := q.ReadFrom(c[:], src[:])
		switch {
		case n == 1:
			return c[0], src[0], nil
		case err == fi.EAVAIL:
			e, err := q.ReadErr()
			require.NoError(t, err)
			return eq.Completion{}, fi.AddrUnspec, e
		case err != fi.EAGAIN:
			require.NoError(t, err)
		}
		require.NoError(t, ctx.Err(), "no completion")
	}
}
