package fi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// giCall records the arguments of one GetInfo call to a giProv.
type giCall struct {
	node, service string
	flags         fi.Flags
	hints         *fi.Info
}

// giProv is a fake provider: GetInfo returns clones of infos, or what fn
// returns when set.
type giProv struct {
	name  string
	infos []*fi.Info
	fn    func(ctx context.Context) ([]*fi.Info, error)
	calls []giCall
}

func (p *giProv) Name() string        { return p.name }
func (p *giProv) Version() fi.Version { return fi.MakeVersion(1, 2) }

func (p *giProv) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	p.calls = append(p.calls, giCall{node, service, flags, hints})
	if p.fn != nil {
		return p.fn(ctx)
	}
	var out []*fi.Info
	for _, i := range p.infos {
		out = append(out, i.Clone())
	}
	return out, nil
}

func (p *giProv) OpenFabric(*fi.FabricAttr) (fi.Fabric, error) { return nil, fi.ENOSYS }

// giPrioProv is a giProv with a priority.
type giPrioProv struct {
	*giProv
	prio int
}

func (p giPrioProv) Priority() int { return p.prio }

// newGIProv returns a fake provider offering one Info per provider name in
// offers (its own name when none).
func newGIProv(name string, offers ...string) *giProv {
	if len(offers) == 0 {
		offers = []string{name}
	}
	p := &giProv{name: name}
	for _, o := range offers {
		p.infos = append(p.infos, &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: o}})
	}
	return p
}

// giProvNames returns the provider names of infos.
func giProvNames(infos []*fi.Info) []string {
	var names []string
	for _, i := range infos {
		names = append(names, i.FabricAttr.ProvName)
	}
	return names
}

// giCalled returns the names of the providers that were asked.
func giCalled(provs ...*giProv) []string {
	var names []string
	for _, p := range provs {
		if len(p.calls) > 0 {
			names = append(names, p.name)
		}
	}
	return names
}

func TestGetInfoSelection(t *testing.T) {
	all := []string{"shm", "tcp", "udp"}
	for _, tc := range []struct {
		name, env, hintProv string
		want, called        []string
	}{
		{name: "everything", want: []string{"shm", "tcp;ofi_rxm", "tcp", "udp"}, called: all},
		{name: "env one", env: "tcp", want: []string{"tcp;ofi_rxm", "tcp"}, called: []string{"tcp"}},
		{name: "env list keeps provider order", env: "udp,tcp", want: []string{"tcp;ofi_rxm", "tcp", "udp"}, called: []string{"tcp", "udp"}},
		{name: "env spaces and case", env: " udp , TCP ", want: []string{"tcp;ofi_rxm", "tcp", "udp"}, called: []string{"tcp", "udp"}},
		{name: "env exclude", env: "^shm", want: []string{"tcp;ofi_rxm", "tcp", "udp"}, called: []string{"tcp", "udp"}},
		{name: "env exclude list", env: "^shm,udp", want: []string{"tcp;ofi_rxm", "tcp"}, called: []string{"tcp"}},
		{name: "env exclude utility", env: "^ofi_rxm", want: []string{"shm", "tcp", "udp"}, called: all},
		{name: "env utility", env: "ofi_rxm", want: []string{"tcp;ofi_rxm"}, called: all},
		{name: "env layered", env: "tcp;ofi_rxm", want: []string{"tcp;ofi_rxm"}, called: []string{"tcp"}},
		{name: "hint core selects layerings", hintProv: "tcp", want: []string{"tcp;ofi_rxm", "tcp"}, called: []string{"tcp"}},
		{name: "hint layered", hintProv: "tcp;ofi_rxm", want: []string{"tcp;ofi_rxm"}, called: []string{"tcp"}},
		{name: "hint utility", hintProv: "ofi_rxm", want: []string{"tcp;ofi_rxm"}, called: all},
		{name: "env and hint", env: "^udp", hintProv: "udp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FI_PROVIDER", tc.env)
			shm, tcp, udp := newGIProv("shm"), newGIProv("tcp", "tcp;ofi_rxm", "tcp"), newGIProv("udp")
			var hints *fi.Info
			if tc.hintProv != "" {
				hints = &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: tc.hintProv}}
			}
			infos, err := fi.GetInfoFrom(context.Background(), []fi.Provider{shm, tcp, udp}, "", "", 0, hints)
			if tc.want == nil {
				require.ErrorIs(t, err, fi.ENODATA)
				require.Empty(t, infos)
				require.Empty(t, giCalled(shm, tcp, udp))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, giProvNames(infos))
			require.Equal(t, tc.called, giCalled(shm, tcp, udp))
		})
	}
}

func TestGetInfoNoMatchReasons(t *testing.T) {
	t.Setenv("FI_PROVIDER", "^shm")
	tcpErr := errors.Wrapf(fi.ENODATA, "tcp: ep type %v not supported", fi.EPTypeDgram)
	verbsErr := errors.Wrap(fi.ENOMEM, "verbs: cannot allocate")
	provs := []fi.Provider{
		newGIProv("shm"),
		&giProv{name: "tcp", fn: func(context.Context) ([]*fi.Info, error) { return nil, tcpErr }},
		&giProv{name: "udp", fn: func(context.Context) ([]*fi.Info, error) {
			return nil, &fi.NoMatchError{Reasons: []fi.ProviderReason{{Provider: "udp", Reason: "a"}, {Reason: "b"}, {Provider: "udp", Reason: "a"}}}
		}},
		&giProv{name: "verbs", fn: func(context.Context) ([]*fi.Info, error) { return nil, verbsErr }},
		&giProv{name: "psm3", fn: func(context.Context) ([]*fi.Info, error) { return nil, nil }},
		newGIProv("rxd", "shm;ofi_rxd"),
	}
	t.Run("all decline", func(t *testing.T) {
		_, err := fi.GetInfoFrom(context.Background(), provs, "", "", 0,
			&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "nosuch;ofi_rxm"}})
		require.Error(t, err)
		require.Equal(t, fi.ENODATA, fi.Code(err))
		var nm *fi.NoMatchError
		require.ErrorAs(t, err, &nm)
		require.Len(t, nm.Reasons, 6)
		require.Equal(t, "fi: getinfo: no provider matched: "+
			"shm: excluded by FI_PROVIDER=^shm; "+
			"tcp: not selected by hints prov name \"nosuch;ofi_rxm\"; "+
			"udp: not selected by hints prov name \"nosuch;ofi_rxm\"; "+
			"verbs: not selected by hints prov name \"nosuch;ofi_rxm\"; "+
			"psm3: not selected by hints prov name \"nosuch;ofi_rxm\"; "+
			"rxd: not selected by hints prov name \"nosuch;ofi_rxm\"", err.Error())
	})
	t.Run("each provider's reason", func(t *testing.T) {
		_, err := fi.GetInfoFrom(context.Background(), provs, "", "", 0, nil)
		var nm *fi.NoMatchError
		require.ErrorAs(t, err, &nm)
		require.ErrorIs(t, err, fi.ENODATA)
		require.NotErrorIs(t, err, fi.ENOMEM, "the overall code is ENODATA, as in libfabric")
		require.Equal(t, "fi: getinfo: no provider matched: "+
			"shm: excluded by FI_PROVIDER=^shm; "+
			fmt.Sprintf("tcp: ep type %v not supported; ", fi.EPTypeDgram)+
			"udp: a; udp: b; "+
			"verbs: cannot allocate; "+
			"psm3: returned no entries; "+
			"rxd: entries shm;ofi_rxd excluded by FI_PROVIDER=^shm", err.Error())
		i := slices.IndexFunc(nm.Reasons, func(r fi.ProviderReason) bool { return r.Provider == "verbs" })
		require.Equal(t, verbsErr, nm.Reasons[i].Err)
		require.Equal(t, fi.ENOMEM, fi.Code(nm.Reasons[i].Err))
	})
}

func TestGetInfoNoMatchTexts(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	_, err := fi.GetInfoFrom(context.Background(), nil, "", "", 0, nil)
	require.ErrorIs(t, err, fi.ENODATA)
	require.EqualError(t, err, "fi: getinfo: no provider matched: no providers")

	t.Setenv("FI_PROVIDER", "tcp")
	tcp := &giProv{name: "tcp", fn: func(context.Context) ([]*fi.Info, error) {
		return nil, errors.Wrap(fi.ENODATA, "tcp: getinfo: no interface")
	}}
	_, err = fi.GetInfoFrom(context.Background(), []fi.Provider{newGIProv("shm"), tcp}, "", "", 0, nil)
	require.EqualError(t, err, "fi: getinfo: no provider matched: shm: not selected by FI_PROVIDER=tcp; tcp: getinfo: no interface")

	// A name that is no provider's may be a utility layer: every provider
	// is asked.
	t.Setenv("FI_PROVIDER", "ofi_rxm")
	_, err = fi.GetInfoFrom(context.Background(), []fi.Provider{newGIProv("shm")}, "", "", 0, nil)
	require.EqualError(t, err, "fi: getinfo: no provider matched: shm: entries shm not selected by FI_PROVIDER=ofi_rxm")
}

func TestGetInfoOrder(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	a, c := newGIProv("a"), newGIProv("c")
	b := giPrioProv{newGIProv("b"), 5}
	z := giPrioProv{newGIProv("z"), -1}

	infos, err := fi.GetInfoFrom(context.Background(), []fi.Provider{z, c, a, b}, "", "", 0, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "a", "z"}, giProvNames(infos), "priority first, then the given order")

	fi.SetRegistryForTest(t, z, c, a, b)
	infos, err = fi.GetInfo(context.Background(), "", "", 0, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a", "c", "z"}, giProvNames(infos), "registry ties go by name")
}

// TestGetInfoLayeringBeforeCore: a registered layering ("tcp;ofi_rxm")
// is asked just before its core provider, wherever names or priorities
// put it, as C lists ofi_rxm's entries before the core's; one whose core
// is not registered keeps its place.
func TestGetInfoLayeringBeforeCore(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	fi.SetRegistryForTest(t, newGIProv("tcp"), newGIProv("a"), newGIProv("tcp;ofi_rxm"), newGIProv("shm"),
		newGIProv("zz;ofi_rxm"), giPrioProv{newGIProv("verbs;ofi_rxm"), 3}, newGIProv("verbs"))
	infos, err := fi.GetInfo(context.Background(), "", "", 0, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "shm", "tcp;ofi_rxm", "tcp", "verbs;ofi_rxm", "verbs", "zz;ofi_rxm"}, giProvNames(infos))
}

func TestGetInfoRegistry(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	tcp := newGIProv("tcp")
	fi.SetRegistryForTest(t, tcp)
	p, ok := fi.LookupProvider("tcp")
	require.True(t, ok)
	require.Same(t, tcp, p)
	_, ok = fi.LookupProvider("shm")
	require.False(t, ok)

	hints := &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg}}
	infos, err := fi.GetInfo(context.Background(), "10.0.0.1", "7471", 0, hints)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	require.Equal(t, []giCall{{"10.0.0.1", "7471", 0, hints}}, tcp.calls, "arguments reach the provider unchanged")

	fi.SetRegistryForTest(t)
	_, err = fi.GetInfo(context.Background(), "", "", 0, nil)
	require.ErrorIs(t, err, fi.ENODATA)
}

func TestGetInfoFillsProvider(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	p := &giProv{name: "tcp", fn: func(context.Context) ([]*fi.Info, error) {
		return []*fi.Info{{}, nil, {FabricAttr: &fi.FabricAttr{ProvName: "tcp;ofi_rxm", ProvVersion: 7}}}, nil
	}}
	infos, err := fi.GetInfoFrom(context.Background(), []fi.Provider{p}, "", "", 0, nil)
	require.NoError(t, err)
	require.Len(t, infos, 2, "nil entries are dropped")
	require.Equal(t, "tcp", infos[0].FabricAttr.ProvName)
	require.Equal(t, fi.MakeVersion(1, 2), infos[0].FabricAttr.ProvVersion)
	require.Equal(t, "tcp;ofi_rxm", infos[1].FabricAttr.ProvName)
	require.Equal(t, fi.Version(7), infos[1].FabricAttr.ProvVersion)
}

func TestGetInfoProvAttrOnly(t *testing.T) {
	t.Setenv("FI_PROVIDER", "^udp")
	tcp, udp := newGIProv("tcp", "tcp;ofi_rxm", "tcp"), newGIProv("udp")
	infos, err := fi.GetInfoFrom(context.Background(), []fi.Provider{tcp, udp}, "", "", fi.FlagProvAttrOnly, nil)
	require.NoError(t, err)
	require.Empty(t, giCalled(tcp, udp), "providers are not asked")
	require.Len(t, infos, 1)
	require.Equal(t, "tcp", infos[0].FabricAttr.ProvName)
	require.Equal(t, fi.MakeVersion(1, 2), infos[0].FabricAttr.ProvVersion)
	require.NotNil(t, infos[0].EPAttr)
	require.NotNil(t, infos[0].DomainAttr)
}

func TestGetInfoContext(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		p := newGIProv("tcp")
		_, err := fi.GetInfoFrom(ctx, []fi.Provider{p}, "", "", 0, nil)
		require.ErrorIs(t, err, fi.ECANCELED)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, p.calls)
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		_, err := fi.GetInfoFrom(ctx, []fi.Provider{newGIProv("tcp")}, "", "", 0, nil)
		require.ErrorIs(t, err, fi.ETIMEDOUT)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("between providers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first := &giProv{name: "a", fn: func(context.Context) ([]*fi.Info, error) {
			cancel()
			return []*fi.Info{{}}, nil
		}}
		second := newGIProv("b")
		infos, err := fi.GetInfoFrom(ctx, []fi.Provider{first, second}, "", "", 0, nil)
		require.ErrorIs(t, err, fi.ECANCELED)
		require.Nil(t, infos)
		require.Empty(t, second.calls)
	})
	t.Run("inside a provider", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := &giProv{name: "a", fn: func(ctx context.Context) ([]*fi.Info, error) {
			cancel()
			return nil, errors.Wrap(ctx.Err(), "a: resolve")
		}}
		_, err := fi.GetInfoFrom(ctx, []fi.Provider{p}, "", "", 0, nil)
		require.ErrorIs(t, err, fi.ECANCELED)
		var nm *fi.NoMatchError
		require.False(t, errors.As(err, &nm), "a cancelled search is not a no-match")
	})
}

func TestGetInfoArgs(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	in6 := func() []byte {
		_, b, err := fi.ParseAddr("fi_sockaddr_in6://[::1]:1")
		require.NoError(t, err)
		return b
	}()
	for _, tc := range []struct {
		name          string
		node, service string
		flags         fi.Flags
		hints         *fi.Info
		code          fi.Errno // 0: the provider is asked
	}{
		{name: "source without node or service", flags: fi.FlagSource, code: fi.EINVAL},
		{name: "source with service", service: "4000", flags: fi.FlagSource},
		{name: "source with node", node: "10.0.0.1", flags: fi.FlagSource},
		{name: "not a getinfo flag", flags: fi.FlagMsg, code: fi.EBADFLAGS},
		{name: "numeric host rejects a name", node: "localhost", flags: fi.FlagNumericHost, code: fi.EINVAL},
		{name: "numeric host ipv4", node: "127.0.0.1", flags: fi.FlagNumericHost},
		{name: "numeric host ipv6 with zone", node: "fe80::1%lo", flags: fi.FlagNumericHost},
		{name: "numeric host with uri", node: "fi_sockaddr_in://1.2.3.4:1", flags: fi.FlagNumericHost},
		{name: "uri with service", node: "fi_sockaddr_in://1.2.3.4:1", service: "2", code: fi.EINVAL},
		{name: "addr str node with service", node: "foo", service: "2", hints: &fi.Info{AddrFormat: fi.FormatStr}, code: fi.EINVAL},
		{name: "addr str node", node: "fi_shm://foo", hints: &fi.Info{AddrFormat: fi.FormatStr}},
		{name: "addr str service only", service: "2", hints: &fi.Info{AddrFormat: fi.FormatStr}},
		{name: "hints addr of other family", hints: &fi.Info{AddrFormat: fi.FormatSockaddrIn, SrcAddr: in6}, code: fi.EINVAL},
		{name: "hints addr too short", hints: &fi.Info{AddrFormat: fi.FormatSockaddrIn6, DestAddr: in6[:20]}, code: fi.EINVAL},
		{name: "hints sockaddr of either family", hints: &fi.Info{AddrFormat: fi.FormatSockaddr, DestAddr: in6}},
		{name: "hints opaque addr", hints: &fi.Info{SrcAddr: []byte{1, 2, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newGIProv("tcp")
			infos, err := fi.GetInfoFrom(context.Background(), []fi.Provider{p}, tc.node, tc.service, tc.flags, tc.hints)
			if tc.code != 0 {
				require.ErrorIs(t, err, tc.code)
				require.Equal(t, tc.code, fi.Code(err))
				require.Empty(t, p.calls)
				return
			}
			require.NoError(t, err)
			require.Len(t, infos, 1)
			require.Equal(t, []giCall{{tc.node, tc.service, tc.flags, tc.hints}}, p.calls)
		})
	}
	t.Run("bad provider lists", func(t *testing.T) {
		_, err := fi.GetInfoFrom(context.Background(), []fi.Provider{newGIProv("a"), nil}, "", "", 0, nil)
		require.ErrorIs(t, err, fi.EINVAL)
		_, err = fi.GetInfoFrom(context.Background(), []fi.Provider{newGIProv("a"), newGIProv("a")}, "", "", 0, nil)
		require.ErrorIs(t, err, fi.EINVAL)
	})
}

func TestProvNameMatches(t *testing.T) {
	for _, tc := range []struct {
		sel, name string
		want      bool
	}{
		{"", "tcp", true},
		{"tcp", "tcp", true},
		{"TCP", "tcp", true},
		{"tcp", "tcp;ofi_rxm", true},
		{"ofi_rxm", "tcp;ofi_rxm", true},
		{"tcp;ofi_rxm", "tcp;ofi_rxm", true},
		{"tcp;ofi_rxm", "tcp", false},
		{"tcp;ofi_rxm", "verbs;ofi_rxm", false},
		{"tcp", "udp", false},
		{"tc", "tcp", false},
		{"ofi_rxm", "tcp", false},
	} {
		t.Run(tc.sel+"/"+tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, fi.ProvNameMatches(tc.sel, tc.name))
		})
	}
}

// TestGetInfoHints checks that the advice that goes with a GetInfo failure
// reaches the user as cockroachdb/errors hints, and that wrapping the error
// keeps them.
func TestGetInfoHints(t *testing.T) {
	t.Setenv("FI_PROVIDER", "")
	hintsOf := func(err error) string {
		t.Helper()
		require.ErrorIs(t, err, fi.ENODATA)
		var nm *fi.NoMatchError
		require.ErrorAs(t, err, &nm, "the reasons stay reachable")
		return errors.FlattenHints(errors.Wrapf(err, "app: find a fabric for %s", "rank 0"))
	}
	t.Run("no provider registered", func(t *testing.T) {
		_, err := fi.GetInfoFrom(context.Background(), nil, "", "", 0, nil)
		require.Contains(t, hintsOf(err), `import _ "github.com/gofabric/gofabric/providers/all"`)
	})
	t.Run("every provider filtered out", func(t *testing.T) {
		t.Setenv("FI_PROVIDER", "tpc")
		_, err := fi.GetInfoFrom(context.Background(), []fi.Provider{newGIProv("tcp"), newGIProv("udp")}, "", "", 0, nil)
		h := hintsOf(err)
		require.Contains(t, h, "FI_PROVIDER=tpc left out every provider")
		require.Contains(t, h, "(tcp, udp)")

		t.Setenv("FI_PROVIDER", "")
		_, err = fi.GetInfoFrom(context.Background(), []fi.Provider{newGIProv("tcp")}, "", "", 0,
			&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: "shm"}})
		require.Contains(t, hintsOf(err), `hints prov name "shm" left out every provider`)
	})
	t.Run("providers' hints", func(t *testing.T) {
		provs := []fi.Provider{
			&giProv{name: "a", fn: func(context.Context) ([]*fi.Info, error) {
				return nil, &fi.NoMatchError{Reasons: []fi.ProviderReason{{Reason: "needs mode bits", Hint: "set hints.Mode"}}}
			}},
			&giProv{name: "b", fn: func(context.Context) ([]*fi.Info, error) {
				return nil, errors.WithHint(errors.Wrap(fi.ENODATA, "b: built without it"), "rebuild with -tags b")
			}},
			&giProv{name: "c", fn: func(context.Context) ([]*fi.Info, error) {
				return nil, &fi.NoMatchError{Reasons: []fi.ProviderReason{{Reason: "same advice", Hint: "set hints.Mode"}}}
			}},
		}
		_, err := fi.GetInfoFrom(context.Background(), provs, "", "", 0, nil)
		require.Equal(t, []string{"set hints.Mode", "rebuild with -tags b"}, errors.GetAllHints(err), "each hint once")
		require.Equal(t, "set hints.Mode\n--\nrebuild with -tags b", hintsOf(err))
		require.Equal(t, "fi: getinfo: no provider matched: a: needs mode bits; b: built without it; c: same advice", err.Error(),
			"hints stay out of the message")
	})
	t.Run("no hint without advice", func(t *testing.T) {
		_, err := fi.GetInfoFrom(context.Background(), []fi.Provider{&giProv{name: "a"}}, "", "", 0, nil)
		require.Empty(t, hintsOf(err))
	})
}

func TestIsUtilityProvider(t *testing.T) {
	for name, want := range map[string]bool{
		"ofi_rxm": true, "OFI_RXD": true, "ofi_gorxm": true,
		"tcp": false, "ofi_": false, "ofi": false, "tcp;ofi_rxm": false, "ofi_rxm;hook": false, "": false,
	} {
		require.Equal(t, want, fi.IsUtilityProvider(name), name)
	}
}

// TestGetInfoUtilityProvider: a registered utility provider ("ofi_rxm",
// entries "<core>;ofi_rxm") is asked under every FI_PROVIDER list and
// hints prov name but an exclusion of its own name, and its entries are
// kept as the filters select them, as C's fi_getinfo does.
func TestGetInfoUtilityProvider(t *testing.T) {
	for _, tc := range []struct {
		name, env, hintProv string
		want, called        []string
	}{
		{name: "everything", want: []string{"tcp;ofi_rxm", "verbs;ofi_rxm", "tcp", "verbs"},
			called: []string{"ofi_rxm", "tcp", "verbs"}},
		{name: "env core", env: "tcp", want: []string{"tcp;ofi_rxm", "tcp"}, called: []string{"ofi_rxm", "tcp"}},
		{name: "env core, other case", env: "TCP", want: []string{"tcp;ofi_rxm", "tcp"}, called: []string{"ofi_rxm", "tcp"}},
		{name: "env utility", env: "ofi_rxm", want: []string{"tcp;ofi_rxm", "verbs;ofi_rxm"}, called: []string{"ofi_rxm"}},
		{name: "env layered", env: "tcp;ofi_rxm", want: []string{"tcp;ofi_rxm"}, called: []string{"ofi_rxm", "tcp"}},
		{name: "env exclude utility", env: "^ofi_rxm", want: []string{"tcp", "verbs"}, called: []string{"tcp", "verbs"}},
		{name: "env exclude utility, other case", env: "^OFI_RXM", want: []string{"tcp", "verbs"}, called: []string{"tcp", "verbs"}},
		{name: "env exclude core", env: "^tcp", want: []string{"verbs;ofi_rxm", "verbs"}, called: []string{"ofi_rxm", "verbs"}},
		{name: "env exclude layering", env: "^tcp;ofi_rxm", want: []string{"verbs;ofi_rxm", "tcp", "verbs"},
			called: []string{"ofi_rxm", "tcp", "verbs"}},
		{name: "hint core", hintProv: "tcp", want: []string{"tcp;ofi_rxm", "tcp"}, called: []string{"ofi_rxm", "tcp"}},
		{name: "hint utility", hintProv: "ofi_rxm", want: []string{"tcp;ofi_rxm", "verbs;ofi_rxm"}, called: []string{"ofi_rxm"}},
		{name: "hint layered", hintProv: "tcp;ofi_rxm", want: []string{"tcp;ofi_rxm"}, called: []string{"ofi_rxm", "tcp"}},
		{name: "hint other layered", hintProv: "verbs;ofi_rxm", want: []string{"verbs;ofi_rxm"}, called: []string{"ofi_rxm", "verbs"}},
		{name: "env core and hint utility", env: "verbs", hintProv: "ofi_rxm", want: []string{"verbs;ofi_rxm"}, called: []string{"ofi_rxm"}},
		{name: "env excludes utility, hint asks for it", env: "^ofi_rxm", hintProv: "ofi_rxm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FI_PROVIDER", tc.env)
			rxm := newGIProv("ofi_rxm", "tcp;ofi_rxm", "verbs;ofi_rxm")
			tcp, verbs := newGIProv("tcp"), newGIProv("verbs")
			var hints *fi.Info
			if tc.hintProv != "" {
				hints = &fi.Info{FabricAttr: &fi.FabricAttr{ProvName: tc.hintProv}}
			}
			fi.SetRegistryForTest(t, verbs, rxm, tcp)
			infos, err := fi.GetInfo(context.Background(), "", "", 0, hints)
			if tc.want == nil {
				require.ErrorIs(t, err, fi.ENODATA)
				require.Contains(t, err.Error(), "ofi_rxm: excluded by FI_PROVIDER=^ofi_rxm")
				require.Empty(t, giCalled(rxm))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, giProvNames(infos))
			require.Equal(t, tc.called, giCalled(rxm, tcp, verbs))
		})
	}
	t.Run("entries no filter selects", func(t *testing.T) {
		t.Setenv("FI_PROVIDER", "udp")
		rxm, udp := newGIProv("ofi_rxm", "tcp;ofi_rxm"), newGIProv("udp")
		infos, err := fi.GetInfoFrom(context.Background(), []fi.Provider{rxm, udp}, "", "", 0, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"udp"}, giProvNames(infos))
		require.Equal(t, []string{"ofi_rxm", "udp"}, giCalled(rxm, udp), "the utility is asked, its entries left out")
	})
}

// ofProv is a fake provider whose OpenFabric records the attributes and
// returns an ofFabric naming it.
type ofProv struct {
	*giProv
	got *fi.FabricAttr
}

func (p *ofProv) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	p.got = attr
	return ofFabric(p.name), nil
}

// ofFabric is a fabric that says which provider opened it.
type ofFabric string

func (ofFabric) Close() error                           { return nil }
func (ofFabric) OpenDomain(*fi.Info) (fi.Domain, error) { return nil, fi.ENOSYS }

// TestOpenFabricLayered: a layered name opens the fabric of the provider
// registered under the whole name, else under its last component (the
// utility on top), else under its first (the core), as C's fi_fabric
// does, and that provider gets the attributes with the layered name.
func TestOpenFabricLayered(t *testing.T) {
	reg := func(names ...string) {
		var provs []fi.Provider
		for _, n := range names {
			provs = append(provs, &ofProv{giProv: newGIProv(n)})
		}
		fi.SetRegistryForTest(t, provs...)
	}
	reg("tcp", "verbs", "ofi_rxm", "tcp;hook")
	for name, want := range map[string]string{
		"tcp":           "tcp",
		"tcp;ofi_rxm":   "ofi_rxm",
		"verbs;ofi_rxm": "ofi_rxm",
		"tcp;hook":      "tcp;hook",
		"tcp;ofi_none":  "tcp",
		"verbs;hook":    "verbs",
	} {
		attr := &fi.FabricAttr{Name: "f", ProvName: name}
		f, err := fi.OpenFabric(&fi.Info{FabricAttr: attr})
		require.NoError(t, err, name)
		require.Equal(t, ofFabric(want), f, name)
		p, ok := fi.LookupProvider(want)
		require.True(t, ok)
		require.Same(t, attr, p.(*ofProv).got, "%s: the attributes reach the provider as they are", name)
	}
	for _, name := range []string{"udp", "udp;ofi_none", "ofi_none", ""} {
		_, err := fi.OpenFabric(&fi.Info{FabricAttr: &fi.FabricAttr{ProvName: name}})
		require.ErrorIs(t, err, fi.ENODATA, name)
	}
	_, err := fi.OpenFabric(&fi.Info{})
	require.ErrorIs(t, err, fi.EINVAL)
}
