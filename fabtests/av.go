package fabtests

import (
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// addrs returns n distinct peer addresses in the provider's format,
// resolved by GetInfo from the suite's node and services.
func (s *suite) addrs(t testing.TB, typ fi.EPType, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, s.service(i+1), 0, s.hints(typ))
		skipIfAbsent(t, err, "destination resolution")
		if len(infos[0].DestAddr) == 0 {
			t.Skipf("provider %s resolves no destination address for %s:%s", s.cfg.Provider, s.cfg.Node, s.service(i+1))
		}
		out = append(out, infos[0].DestAddr)
	}
	return out
}

func (e *env) openAV(t testing.TB, typ fi.AVType) fi.AV {
	t.Helper()
	av, err := fi.OpenAV(e.domain, &fi.AVAttr{Type: typ})
	skipIfAbsent(t, err, "address vectors")
	closeOnce(t, av)
	return av
}

func testAV(t *testing.T, s *suite) {
	for _, typ := range []fi.AVType{fi.AVMap, fi.AVTable} {
		s.run(t, "insert-lookup-"+typ.String(), func(t *testing.T) {
			e := s.open(t, fi.EPTypeUnspec)
			addrs := s.addrs(t, e.info.EPAttr.Type, 4)
			av := e.openAV(t, typ)
			fas, err := av.Insert(addrs, 0)
			require.NoError(t, err)
			require.Len(t, fas, len(addrs))
			seen := map[fi.Addr]bool{}
			for i, fa := range fas {
				require.NotEqual(t, fi.AddrUnspec, fa)
				require.False(t, seen[fa], "fi_addr %d returned twice", fa)
				seen[fa] = true
				if typ == fi.AVTable {
					require.Equal(t, fi.Addr(i), fa, "FI_AV_TABLE addresses are consecutive indexes")
				}
				buf := make([]byte, 256)
				n, err := av.Lookup(fa, buf)
				require.NoError(t, err)
				require.Equal(t, addrs[i], buf[:n])
				small := make([]byte, 1)
				n, err = av.Lookup(fa, small)
				require.ErrorIs(t, err, fi.ETOOSMALL)
				require.Equal(t, len(addrs[i]), n, "ETOOSMALL reports the full length")
				require.Equal(t, addrs[i][0], small[0], "ETOOSMALL fills what fits")
			}
		})
	}

	s.run(t, "remove", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		addrs := s.addrs(t, e.info.EPAttr.Type, 2)
		av := e.openAV(t, fi.AVMap)
		fas, err := av.Insert(addrs, 0)
		require.NoError(t, err)
		require.NoError(t, av.Remove(fas[:1], 0))
		_, err = av.Lookup(fas[0], make([]byte, 256))
		requireCoded(t, err)
		requireCoded(t, av.Remove(fas[:1], 0))
		buf := make([]byte, 256)
		n, err := av.Lookup(fas[1], buf)
		require.NoError(t, err, "other addresses survive a remove")
		require.Equal(t, addrs[1], buf[:n])
	})

	s.run(t, "straddr", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		addrs := s.addrs(t, e.info.EPAttr.Type, 2)
		av := e.openAV(t, fi.AVMap)
		a, b := av.StrAddr(addrs[0]), av.StrAddr(addrs[1])
		require.NotEmpty(t, a)
		require.NotEqual(t, a, b, "distinct addresses print differently")
	})

	s.run(t, "insert-invalid", func(t *testing.T) {
		av := s.open(t, fi.EPTypeUnspec).openAV(t, fi.AVMap)
		fas, err := av.Insert([][]byte{{}}, 0)
		requireCoded(t, err)
		if len(fas) == 1 {
			require.Equal(t, fi.AddrUnspec, fas[0])
		}
		_, err = av.Lookup(0, make([]byte, 64))
		requireCoded(t, err)
	})

	s.run(t, "bound-busy", func(t *testing.T) {
		var e *env
		for _, typ := range []fi.EPType{fi.EPTypeRDM, fi.EPTypeDgram} {
			if _, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(typ)); err == nil {
				e = s.open(t, typ)
				break
			}
		}
		if e == nil {
			t.Skip("provider offers no unconnected endpoint to bind an address vector to")
		}
		av := e.openAV(t, fi.AVMap)
		x := e.endpoint(t)
		require.NoError(t, x.Bind(av, 0))
		require.ErrorIs(t, av.Close(), fi.EBUSY)
		require.NoError(t, x.Close())
		require.NoError(t, av.Close())
		require.ErrorIs(t, av.Close(), fi.EBADF)
	})
}
