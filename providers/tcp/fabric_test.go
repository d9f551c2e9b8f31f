//go:build linux

package tcp_test

import (
	"context"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// openFabric opens the fabric of the provider's loopback entry.
func openFabric(t testing.TB) (*fi.Info, fi.Fabric) {
	t.Helper()
	cleanEnv(t)
	h := tcpHints(fi.EPTypeMsg)
	h.DomainAttr.Name = "lo"
	h.AddrFormat = fi.FormatSockaddrIn
	infos, err := fi.GetInfo(context.Background(), "", "", 0, h)
	require.NoError(t, err)
	f, err := fi.OpenFabric(infos[0])
	require.NoError(t, err)
	return infos[0], f
}

func TestFabricCloseRules(t *testing.T) {
	info, f := openFabric(t)
	q, err := eq.OpenEQ(f, nil)
	require.NoError(t, err)
	require.ErrorIs(t, f.Close(), fi.EBUSY, "an open EQ keeps the fabric open")
	_, err = q.Read()
	require.ErrorIs(t, err, fi.EAGAIN, "a refused close leaves the fabric's EQ working")
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	require.NoError(t, q.Close())
	require.ErrorIs(t, q.Close(), fi.EBADF)
	require.ErrorIs(t, f.Close(), fi.EBUSY, "an open domain keeps the fabric open")
	require.Equal(t, info, d.Info())
	require.NoError(t, d.Close())
	require.ErrorIs(t, d.Close(), fi.EBADF)
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), fi.EBADF)

	_, err = f.OpenDomain(info)
	require.ErrorIs(t, err, fi.EBADF, "open domain on a closed fabric")
	_, err = eq.OpenEQ(f, nil)
	require.ErrorIs(t, err, fi.EBADF, "open eq on a closed fabric")
}

func TestDomainCloseRules(t *testing.T) {
	tests := []struct {
		name string
		open func(t *testing.T, d fi.Domain) fi.Fid
	}{{
		name: "cq",
		open: func(t *testing.T, d fi.Domain) fi.Fid {
			q, err := eq.OpenCQ(d, &eq.CQAttr{Format: eq.FormatData})
			require.NoError(t, err)
			return q
		},
	}, {
		name: "counter",
		open: func(t *testing.T, d fi.Domain) fi.Fid {
			c, err := eq.OpenCounter(d, nil)
			require.NoError(t, err)
			return c
		},
	}, {
		name: "mr",
		open: func(t *testing.T, d fi.Domain) fi.Fid {
			mr, err := fi.RegisterMR(d, &fi.MRAttr{Buf: make([]byte, 64), Access: fi.AccessRemoteRead, RequestedKey: 5}, 0)
			require.NoError(t, err)
			require.Equal(t, uint64(5), mr.Key(), "FI_MR_PROV_KEY is not set: the requested key is the key")
			return mr
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, f := openFabric(t)
			d, err := f.OpenDomain(info)
			require.NoError(t, err)
			obj := tt.open(t, d)
			require.ErrorIs(t, d.Close(), fi.EBUSY, "an open %s keeps the domain open", tt.name)
			require.ErrorIs(t, f.Close(), fi.EBUSY)
			require.NoError(t, obj.Close())
			require.ErrorIs(t, obj.Close(), fi.EBADF, "second close")
			require.NoError(t, d.Close(), "a second close of the child released nothing twice")
			require.NoError(t, f.Close())
		})
	}
}

func TestDomainAfterClose(t *testing.T) {
	info, f := openFabric(t)
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	_, err = eq.OpenCQ(d, nil)
	require.ErrorIs(t, err, fi.EBADF)
	_, err = eq.OpenCounter(d, nil)
	require.ErrorIs(t, err, fi.EBADF)
	_, err = fi.RegisterMR(d, &fi.MRAttr{Buf: make([]byte, 8)}, 0)
	require.ErrorIs(t, err, fi.EBADF)
	require.NoError(t, f.Close())
}

func TestDomainFailedOpenReleases(t *testing.T) {
	info, f := openFabric(t)
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	_, err = eq.OpenCQ(d, &eq.CQAttr{Size: -1})
	require.ErrorIs(t, err, fi.EINVAL)
	_, err = eq.OpenCounter(d, &eq.CounterAttr{Events: 99})
	require.ErrorIs(t, err, fi.EINVAL)
	_, err = fi.RegisterMR(d, &fi.MRAttr{Buf: make([]byte, 8), Access: 1 << 40}, 0)
	require.ErrorIs(t, err, fi.EINVAL)
	require.NoError(t, d.Close(), "failed opens hold no reference")
	_, err = eq.OpenEQ(f, &eq.Attr{Size: -1})
	require.ErrorIs(t, err, fi.EINVAL)
	require.NoError(t, f.Close())
}

func TestDomainAV(t *testing.T) {
	info, f := openFabric(t)
	d, err := f.OpenDomain(info)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()); require.NoError(t, f.Close()) })
	av, err := fi.OpenAV(d, &fi.AVAttr{})
	require.NoError(t, err, "RDM endpoints address peers through an AV")
	_, err = av.Insert([][]byte{sockaddrIn([4]byte{127, 0, 0, 1}, 0)}, 0)
	require.ErrorIs(t, err, fi.EINVAL, "a peer address needs a port")
	_, err = av.Insert([][]byte{{1, 2, 3}}, 0)
	require.ErrorIs(t, err, fi.EINVAL, "not a sockaddr")
	e, err := ep.Open(d, info)
	require.NoError(t, err)
	require.ErrorIs(t, e.Bind(av, 0), fi.EINVAL, "FI_EP_MSG endpoints take no address vector")
	require.NoError(t, e.Close())
	require.NoError(t, av.Close())
}

func TestOpenChecks(t *testing.T) {
	info, f := openFabric(t)
	t.Cleanup(func() { require.NoError(t, f.Close()) })

	other := info.Clone()
	other.FabricAttr.Name = "198.51.100.0/24"
	_, err := f.OpenDomain(other)
	require.ErrorIs(t, err, fi.EINVAL, "an entry of another fabric")

	dgram := info.Clone()
	dgram.EPAttr.Type = fi.EPTypeDgram
	_, err = f.OpenDomain(dgram)
	require.ErrorIs(t, err, fi.EINVAL)

	_, err = f.OpenDomain(&fi.Info{})
	require.ErrorIs(t, err, fi.EINVAL)

	_, err = fi.OpenFabric(other)
	require.ErrorIs(t, err, fi.ENODATA, "a subnet of no interface")
	require.ErrorContains(t, err, "198.51.100.0/24")

	anyf := info.Clone()
	anyf.FabricAttr.Name = "TCP-IP"
	g, err := fi.OpenFabric(anyf)
	require.NoError(t, err, "the wildcard entry's fabric opens")
	require.NoError(t, g.Close())

	t.Setenv("FI_TCP_NODELAY", "sometimes")
	_, err = fi.OpenFabric(info)
	require.ErrorIs(t, err, fi.EINVAL)
	require.ErrorContains(t, err, "FI_TCP_NODELAY")
}
