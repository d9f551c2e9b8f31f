package fabtests

import (
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// env is an opened fabric and domain of the provider under test.
type env struct {
	info   *fi.Info
	fabric fi.Fabric
	domain fi.Domain
}

// open finds the provider's first Info for endpoint type typ (any when
// EPTypeUnspec) and opens its fabric and domain, closing both at cleanup.
// It skips when the provider offers no such endpoint type.
func (s *suite) open(t testing.TB, typ fi.EPType) *env {
	t.Helper()
	infos, err := fi.GetInfo(s.ctx(t), "", "", 0, s.hints(typ))
	skipIfAbsent(t, err, "endpoint type "+typ.String())
	require.NotEmpty(t, infos)
	e := &env{info: infos[0]}
	e.fabric, err = fi.OpenFabric(e.info)
	require.NoError(t, err, "open fabric")
	t.Cleanup(func() { require.NoError(t, e.fabric.Close(), "close fabric") })
	e.domain, err = e.fabric.OpenDomain(e.info)
	require.NoError(t, err, "open domain")
	t.Cleanup(func() { require.NoError(t, e.domain.Close(), "close domain") })
	return e
}

// endpoint opens an active endpoint on e's domain, skipping when the
// domain has none; the caller closes it.
func (e *env) endpoint(t testing.TB) ep.Endpoint {
	t.Helper()
	x, err := ep.Open(e.domain, e.info)
	skipIfAbsent(t, err, "active endpoints")
	return x
}

// closeOnce closes f at cleanup unless the test closed it already.
func closeOnce(t testing.TB, f fi.Fid) {
	t.Cleanup(func() { _ = f.Close() })
}
