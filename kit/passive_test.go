package kit_test

import (
	"net/netip"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// testPEP is a provider's passive endpoint on the base: its "transport"
// is an address and a listening flag, under the base's Mu.
type testPEP struct {
	kit.Passive[driven]
	addr      []byte
	listening bool
	stopped   bool
	rejected  map[fi.Fid][]byte
}

func (p *testPEP) bind(addr []byte) error {
	if string(addr) == "refuse" {
		return fi.EADDRINUSE
	}
	p.addr = addr
	return nil
}

func (p *testPEP) reject(h fi.Fid, data []byte) { p.rejected[h] = data }

// Close is the provider's fi_close on the base.
func (p *testPEP) Close() error {
	if err := p.BeginClose(nil); err != nil {
		return err
	}
	p.EndClose(p.reject)
	return nil
}

// request is a connection request's handle.
type request struct{ n int }

func (*request) Close() error { return nil }

func openPEP(tb testing.TB, f *testFabric, info *fi.Info) (*testPEP, error) {
	tb.Helper()
	p := &testPEP{rejected: map[fi.Fid][]byte{}}
	return p, p.Init(&f.Fabric, info, p.bind)
}

// TestPassiveInit: Init takes only FI_EP_MSG, binds the source address or
// the wildcard address of the Info's format, holds the fabric until the
// endpoint closes, and undoes itself when the bind fails.
func TestPassiveInit(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg)
	_, err := openPEP(t, f, nil)
	require.EqualError(t, err, "tcp: open passive endpoint: nil info: "+fi.EINVAL.Error())
	_, err = openPEP(t, f, &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}})
	require.EqualError(t, err, "tcp: open passive endpoint: ep type FI_EP_RDM not supported (offers FI_EP_MSG): "+fi.EINVAL.Error())
	_, err = openPEP(t, f, &fi.Info{SrcAddr: []byte("refuse")})
	require.ErrorIs(t, err, fi.EADDRINUSE)
	require.NoError(t, f.Close(), "a refused endpoint holds no reference")

	f = openFabric(t, "tcp", fi.EPTypeMsg)
	for _, c := range []struct {
		format fi.AddrFormat
		want   netip.AddrPort
	}{
		{fi.FormatSockaddrIn, netip.MustParseAddrPort("0.0.0.0:0")},
		{fi.FormatUnspec, netip.MustParseAddrPort("0.0.0.0:0")},
		{fi.FormatSockaddrIn6, netip.MustParseAddrPort("[::]:0")},
	} {
		p, err := openPEP(t, f, &fi.Info{AddrFormat: c.format})
		require.NoError(t, err)
		ap, _, err := fi.AddrPortFromSockaddr(p.addr)
		require.NoError(t, err)
		require.Equal(t, c.want, ap, "the wildcard address of %v", c.format)
		require.NoError(t, p.Close())
	}
	p, err := openPEP(t, f, &fi.Info{AddrFormat: fi.FormatStr})
	require.NoError(t, err)
	require.Nil(t, p.addr, "no wildcard for a format that is not a sockaddr's")
	_, b, _ := fi.SockaddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:4000"))
	q, err := openPEP(t, f, &fi.Info{SrcAddr: b})
	require.NoError(t, err)
	require.Equal(t, b, q.addr)
	require.Equal(t, b, q.Info().SrcAddr)
	require.EqualError(t, f.Close(), "tcp: close fabric: 2 passive endpoints still open: "+fi.EBUSY.Error())
	for _, x := range []*testPEP{p, q} {
		require.NoError(t, x.Close())
	}
	require.NoError(t, f.Close())
}

// TestPassiveBind: fi_pep_bind takes one event queue of the provider's
// own, with no flags, and holds it until the endpoint closes.
func TestPassiveBind(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg)
	p, err := openPEP(t, f, &fi.Info{})
	require.NoError(t, err)
	q, err := f.OpenEQ(nil)
	require.NoError(t, err)

	require.ErrorIs(t, p.Bind(q, fi.FlagSend), fi.EBADFLAGS)
	var other kit.Fabric[undriven]
	require.NoError(t, other.Init("udp", 0, &fi.FabricAttr{}))
	oq, err := other.OpenEQ(nil)
	require.NoError(t, err)
	err = p.Bind(oq, 0)
	require.ErrorIs(t, err, fi.EINVAL)
	require.EqualError(t, err, "tcp: passive endpoint: bind: *kit.FabricEQ[github.com/gofabric/gofabric/kit_test.undriven] is not a tcp event queue: "+fi.EINVAL.Error())
	require.NoError(t, oq.Close())
	require.NoError(t, other.Close())

	require.NoError(t, p.Bind(q, 0))
	err = p.Bind(q, 0)
	require.ErrorIs(t, err, fi.EINVAL)
	require.EqualError(t, err, "tcp: passive endpoint: bind: an event queue is already bound: "+fi.EINVAL.Error())
	require.EqualError(t, q.Close(), "tcp: close eq: 1 endpoint still bound: "+fi.EBUSY.Error())

	require.NoError(t, p.BeginClose(nil))
	require.ErrorIs(t, p.Bind(q, 0), fi.EBADF)
	p.EndClose(p.reject)
	require.NoError(t, q.Close(), "the closed endpoint released its queue")
	require.NoError(t, f.Close(), "and its fabric")
}

// TestPassiveCM: the passive endpoint's fi_cm(3) calls on the base:
// Listen needs a bound queue and runs once; SetName works until then;
// Name has the ETOOSMALL rule; a request taken in is reported as
// eq.ConnReq from the provider's object and can be rejected once with
// data of at most the limit; Close rejects what is pending; every call
// after Close gives EBADF.
func TestPassiveCM(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg)
	p, err := openPEP(t, f, &fi.Info{AddrFormat: fi.FormatSockaddrIn})
	require.NoError(t, err)
	start := func() error { p.listening = true; return nil }

	err = p.ListenWith(start)
	require.ErrorIs(t, err, fi.ENOEQ)
	require.EqualError(t, err, "tcp: listen: no event queue bound: "+fi.ENOEQ.Error())
	require.False(t, p.listening)
	q, err := f.OpenEQ(nil)
	require.NoError(t, err)
	require.NoError(t, p.Bind(q, 0))

	require.NoError(t, p.SetNameWith([]byte("name"), p.bind))
	buf := make([]byte, 2)
	n, err := p.NameWith(buf, func() []byte { return p.addr })
	require.Equal(t, fi.ETOOSMALL, err, "bare ETOOSMALL")
	require.Equal(t, 4, n)
	require.Equal(t, "na", string(buf))
	n, err = p.NameWith(make([]byte, 8), func() []byte { return p.addr })
	require.NoError(t, err)
	require.Equal(t, 4, n)

	require.ErrorIs(t, p.AddRequestLocked(&request{}), fi.EOPBADSTATE, "not listening yet")
	// A listen(2) that fails leaves the endpoint idle: the application
	// may fix the cause and listen again.
	require.ErrorIs(t, p.ListenWith(func() error { return fi.EADDRINUSE }), fi.EADDRINUSE)
	require.Equal(t, ep.CMIdle, p.Backlog.State())
	require.NoError(t, p.ListenWith(start))
	require.True(t, p.listening)
	require.ErrorIs(t, p.ListenWith(start), fi.EOPBADSTATE)
	err = p.SetNameWith([]byte("other"), p.bind)
	require.ErrorIs(t, err, fi.EOPBADSTATE)
	require.EqualError(t, err, "tcp: passive endpoint: setname: already listening: "+fi.EOPBADSTATE.Error())

	r1, r2, r3 := &request{1}, &request{2}, &request{3}
	for _, r := range []*request{r1, r2, r3} {
		p.Mu.Lock()
		err := p.AddRequestLocked(r)
		p.Mu.Unlock()
		require.NoError(t, err)
		p.PostRequest(p, p.RequestInfo(r, p.addr, nil), []byte("hello"))
	}
	ev, err := q.Read()
	require.NoError(t, err)
	req := ev.(*eq.ConnReq)
	require.Same(t, p, req.Fid, "the event names the provider's object")
	require.Same(t, r1, req.Info.Handle)
	require.Equal(t, "hello", string(req.Data))

	err = p.RejectWith(r1, make([]byte, 9), 8, p.reject)
	require.ErrorIs(t, err, fi.EINVAL)
	require.NoError(t, p.RejectWith(r1, []byte("no"), 8, p.reject))
	require.Equal(t, "no", string(p.rejected[r1]))
	err = p.RejectWith(r1, nil, 8, p.reject)
	require.ErrorIs(t, err, fi.EINVAL, "rejected already")
	require.ErrorContains(t, err, "tcp: reject")
	require.ErrorIs(t, p.RejectWith(&request{9}, nil, 8, p.reject), fi.EINVAL, "not a request of this endpoint")
	require.NoError(t, p.CloseRequest(r2, p.reject))
	require.Contains(t, p.rejected, r2)
	require.Nil(t, p.rejected[r2], "closing a request rejects it without data")
	require.ErrorIs(t, p.CloseRequest(r2, p.reject), fi.EINVAL)

	require.NoError(t, p.BeginClose(func() { p.stopped = true }))
	require.True(t, p.stopped)
	err = p.BeginClose(nil)
	require.ErrorIs(t, err, fi.EBADF)
	require.EqualError(t, err, "tcp: close passive endpoint: already closed: "+fi.EBADF.Error())
	p.Mu.Lock()
	require.ErrorIs(t, p.AddRequestLocked(&request{4}), fi.EBADF)
	p.Mu.Unlock()
	p.EndClose(p.reject)
	require.Contains(t, p.rejected, r3, "Close rejects the pending requests")
	require.Equal(t, ep.CMClosed, p.Backlog.State())
	_, err = p.NameWith(buf, func() []byte { return p.addr })
	require.ErrorIs(t, err, fi.EBADF)
	require.ErrorIs(t, p.SetNameWith(nil, p.bind), fi.EBADF)
	require.ErrorIs(t, p.ListenWith(start), fi.EBADF)
	require.NoError(t, q.Close())
	require.NoError(t, f.Close())
}

// TestPassiveEQOptional: a provider that takes the requests itself
// listens without an event queue, and PostRequest then posts nothing.
func TestPassiveEQOptional(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg)
	p, err := openPEP(t, f, &fi.Info{})
	require.NoError(t, err)
	p.EQOptional = true
	require.NoError(t, p.ListenWith(func() error { return nil }))
	r := &request{}
	p.Mu.Lock()
	require.NoError(t, p.AddRequestLocked(r))
	p.Mu.Unlock()
	p.PostRequest(p, p.RequestInfo(r, nil, nil), nil)
	require.NoError(t, p.Close())
	require.Contains(t, p.rejected, r)
	require.NoError(t, f.Close())
}

// TestRequestInfo: a request's Info is the endpoint's with the handle and
// the addresses, its format the source sockaddr's.
func TestRequestInfo(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg)
	p, err := openPEP(t, f, &fi.Info{AddrFormat: fi.FormatSockaddrIn, Caps: fi.CapMsg})
	require.NoError(t, err)
	_, src, _ := fi.SockaddrFromAddrPort(netip.MustParseAddrPort("[::1]:4000"))
	_, dst, _ := fi.SockaddrFromAddrPort(netip.MustParseAddrPort("[::1]:5000"))
	r := &request{}
	info := p.RequestInfo(r, src, dst)
	require.Same(t, r, info.Handle)
	require.Equal(t, src, info.SrcAddr)
	require.Equal(t, dst, info.DestAddr)
	require.Equal(t, fi.FormatSockaddrIn6, info.AddrFormat)
	require.Equal(t, fi.CapMsg, info.Caps)
	require.Nil(t, p.Info().Handle, "the endpoint's own Info is not changed")
	require.NoError(t, p.Close())
	require.NoError(t, f.Close())
}

// TestConnRequest: an Info names the provider's own request, none, or
// another provider's, which opens no endpoint.
func TestConnRequest(t *testing.T) {
	r := &request{7}
	got, err := kit.ConnRequest[*request]("tcp", &fi.Info{Handle: r})
	require.NoError(t, err)
	require.Same(t, r, got)
	got, err = kit.ConnRequest[*request]("tcp", &fi.Info{})
	require.NoError(t, err)
	require.Nil(t, got)
	q, err := kit.NewCQ(nil)
	require.NoError(t, err)
	defer q.Close()
	_, err = kit.ConnRequest[*request]("tcp", &fi.Info{Handle: q})
	require.EqualError(t, err, "tcp: open endpoint: handle *kit.CQ is not a tcp connection request: "+fi.EINVAL.Error())
}
