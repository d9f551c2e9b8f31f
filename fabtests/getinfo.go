package fabtests

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func testGetInfo(t *testing.T, s *suite) {
	s.run(t, "results", func(t *testing.T) {
		infos, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(fi.EPTypeUnspec))
		require.NoError(t, err)
		require.NotEmpty(t, infos)
		for _, in := range infos {
			require.NotNil(t, in.FabricAttr)
			require.NotNil(t, in.DomainAttr)
			require.NotNil(t, in.EPAttr)
			require.NotNil(t, in.TxAttr)
			require.NotNil(t, in.RxAttr)
			s.requireOwn(t, in)
			require.NotEmpty(t, in.FabricAttr.Name, "fabric name")
			require.NotEmpty(t, in.DomainAttr.Name, "domain name")
			require.NotEqual(t, fi.EPTypeUnspec, in.EPAttr.Type)
			require.NotZero(t, in.Caps&fi.PrimaryCaps, "no primary capability")
			// The primary caps of the attributes are the entry's too
			// (fi_getinfo(3): the entry's caps cover its attributes').
			require.Zero(t, in.TxAttr.Caps&fi.PrimaryCaps&^in.Caps, "tx caps %v beyond the entry's %v", in.TxAttr.Caps, in.Caps)
			require.Zero(t, in.RxAttr.Caps&fi.PrimaryCaps&^in.Caps, "rx caps %v beyond the entry's %v", in.RxAttr.Caps, in.Caps)
			require.NotEqual(t, fi.FormatUnspec, in.AddrFormat)
		}
	})

	s.run(t, "hints-roundtrip", func(t *testing.T) {
		// An Info the provider returned, used as hints, must match again
		// (libfabric's fi_getinfo_test "hints from info").
		infos, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(fi.EPTypeUnspec))
		require.NoError(t, err)
		for _, in := range infos {
			h := in.Clone()
			h.SrcAddr, h.DestAddr, h.Handle = nil, nil, nil
			again, err := fi.GetInfo(s.ctx(t), "", "", 0, h)
			if err != nil && !s.stillOffered(t, in) {
				// The entry's interface went away meanwhile (another
				// program's network namespace): nothing to hold the
				// provider to.
				t.Logf("%s %s: domain %q of fabric %q is gone from the host since the first listing", in.FabricAttr.ProvName, in.EPAttr.Type, in.DomainAttr.Name, in.FabricAttr.Name)
				continue
			}
			require.NoError(t, err, "hints from %s %s", in.FabricAttr.ProvName, in.EPAttr.Type)
			require.NotEmpty(t, again)
			for _, a := range again {
				require.Equal(t, in.EPAttr.Type, a.EPAttr.Type)
				require.Equal(t, in.Caps&fi.PrimaryCaps, a.Caps&fi.PrimaryCaps&in.Caps)
			}
		}
	})

	s.run(t, "primary-caps", func(t *testing.T) {
		// Asking for any one primary capability an Info offers returns
		// Infos that have it.
		infos, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(fi.EPTypeUnspec))
		require.NoError(t, err)
		for _, in := range infos {
			for c := fi.Caps(1); c != 0; c <<= 1 {
				if in.Caps&fi.PrimaryCaps&c == 0 {
					continue
				}
				h := s.hints(in.EPAttr.Type)
				h.Caps = c
				got, err := fi.GetInfo(s.ctx(t), "", "", 0, h)
				require.NoError(t, err, "caps %v", c)
				for _, g := range got {
					require.NotZero(t, g.Caps&c, "asked for %v, got %v", c, g.Caps)
				}
			}
		}
	})

	s.run(t, "unsupported-ep-type", func(t *testing.T) {
		infos, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(fi.EPTypeUnspec))
		require.NoError(t, err)
		offered := map[fi.EPType]bool{}
		for _, in := range infos {
			offered[in.EPAttr.Type] = true
		}
		for _, typ := range []fi.EPType{fi.EPTypeMsg, fi.EPTypeRDM, fi.EPTypeDgram} {
			if offered[typ] {
				continue
			}
			_, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(typ))
			require.ErrorIs(t, err, fi.ENODATA, "ep type %v is not offered", typ)
			require.Contains(t, err.Error(), s.cfg.Provider, "ENODATA must say why the provider declined")
			return
		}
		t.Skip("provider offers every endpoint type; no unsupported one to ask for")
	})

	s.run(t, "fi_provider-exclude", func(t *testing.T) {
		t.Setenv("FI_PROVIDER", "^"+s.cfg.Provider)
		_, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(fi.EPTypeUnspec))
		require.ErrorIs(t, err, fi.ENODATA)
		require.Contains(t, err.Error(), s.cfg.Provider)
	})

	s.run(t, "fi_provider-include", func(t *testing.T) {
		t.Setenv("FI_PROVIDER", s.cfg.Provider)
		infos, err := fi.GetInfo(s.ctx(t), "", "", 0, nil)
		require.NoError(t, err)
		for _, in := range infos {
			s.requireOwn(t, in)
		}
	})

	s.run(t, "source", func(t *testing.T) {
		infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, s.service(0), fi.FlagSource, s.hints(fi.EPTypeUnspec))
		skipIfAbsent(t, err, "FI_SOURCE resolution of "+s.cfg.Node)
		for _, in := range infos {
			require.NotEmpty(t, in.SrcAddr, "FI_SOURCE sets the source address")
			require.Empty(t, in.DestAddr)
		}
	})

	s.run(t, "dest", func(t *testing.T) {
		infos, err := fi.GetInfo(s.ctx(t), s.cfg.Node, s.service(0), 0, s.hints(fi.EPTypeUnspec))
		skipIfAbsent(t, err, "resolution of "+s.cfg.Node)
		for _, in := range infos {
			require.NotEmpty(t, in.DestAddr, "node and service without FI_SOURCE set the destination")
		}
	})

	s.run(t, "numerichost", func(t *testing.T) {
		_, err := fi.GetInfo(s.ctx(t), "localhost", s.service(0), fi.FlagNumericHost, s.hints(fi.EPTypeUnspec))
		requireCoded(t, err)
		require.True(t, strings.Contains(err.Error(), "localhost"), "the error names the node: %v", err)
	})
}

// service returns the i-th service the suite may use.
func (s *suite) service(i int) string {
	if s.cfg.Service != "" && i == 0 {
		return s.cfg.Service
	}
	return strconv.Itoa(49152 + i)
}

// requireOwn fails unless in is an entry of the provider under test: its
// provider name is Config.Provider, or has it as its core ("tcp;ofi_rxm"
// for "tcp"; a layered Config.Provider, "tcp;ofi_rxm", names only its
// own entries).
func (s *suite) requireOwn(t testing.TB, in *fi.Info) {
	t.Helper()
	name := in.FabricAttr.ProvName
	if name != s.cfg.Provider {
		require.Equal(t, s.cfg.Provider, fi.CoreProviderName(name), "entry of provider %s", name)
	}
}

// stillOffered reports whether the provider still offers an entry of in's
// fabric, domain and endpoint type.
func (s *suite) stillOffered(t testing.TB, in *fi.Info) bool {
	infos, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(in.EPAttr.Type))
	if err != nil {
		return false
	}
	for _, a := range infos {
		if a.FabricAttr.Name == in.FabricAttr.Name && a.DomainAttr.Name == in.DomainAttr.Name {
			return true
		}
	}
	return false
}
