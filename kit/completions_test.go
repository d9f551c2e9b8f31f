package kit_test

import (
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
)

// TestBindOwn: an endpoint binds only what its own provider's fabric and
// domain opened, no AV when connected, nothing once closed; then the
// bindings' own rules apply, and Completions resolves what was bound.
func TestBindOwn(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg, fi.EPTypeRDM)
	d := openDomain(t, f, nil)
	cq, err := d.OpenCQ(nil)
	require.NoError(t, err)
	cntr, err := d.OpenCounter(nil)
	require.NoError(t, err)
	av, err := d.NewAV(nil, fi.FormatStr, func([]byte) error { return nil })
	require.NoError(t, err)
	q, err := f.OpenEQ(nil)
	require.NoError(t, err)
	foreign, err := kit.NewCQ(nil)
	require.NoError(t, err)

	var msg kit.Bindings
	msg.Init(&fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg}})
	err = kit.BindOwn[driven](&msg, "tcp", false, nil, 0)
	require.EqualError(t, err, "tcp: bind: nil object: "+fi.EINVAL.Error())
	err = kit.BindOwn[driven](&msg, "tcp", false, av, 0)
	require.EqualError(t, err, "tcp: bind: connected (FI_EP_MSG) endpoints take no address vector: "+fi.EINVAL.Error())
	err = kit.BindOwn[driven](&msg, "tcp", false, foreign, fi.FlagSend)
	require.ErrorIs(t, err, fi.EINVAL)
	require.ErrorContains(t, err, "tcp: bind: *kit.CQ is not an event queue, completion queue, counter or address vector of this provider")
	err = kit.BindOwn[undriven](&msg, "tcp", false, cq, fi.FlagSend)
	require.ErrorIs(t, err, fi.EINVAL, "another provider's CQ of the same shape")
	err = kit.BindOwn[driven](&msg, "tcp", true, cq, fi.FlagSend)
	require.EqualError(t, err, "tcp: bind: endpoint closed: "+fi.EBADF.Error())
	err = msg.CheckEnableOpen("tcp", true)
	require.EqualError(t, err, "tcp: enable: endpoint closed: "+fi.EBADF.Error())
	require.ErrorIs(t, msg.CheckEnableOpen("tcp", false), fi.ENOEQ, "the bindings' own checks")

	require.NoError(t, kit.BindOwn[driven](&msg, "tcp", false, q, 0))
	require.NoError(t, kit.BindOwn[driven](&msg, "tcp", false, cq, fi.FlagSend|fi.FlagRecv|fi.FlagSelectiveCompletion))
	require.NoError(t, kit.BindOwn[driven](&msg, "tcp", false, cntr, fi.FlagSend|fi.FlagRecv|fi.FlagRemoteWrite))
	require.ErrorIs(t, kit.BindOwn[driven](&msg, "tcp", false, cntr, fi.FlagSend), fi.EINVAL, "a second counter for FI_SEND")
	require.NoError(t, msg.CheckEnableOpen("tcp", false))

	var c kit.Completions[driven]
	c.Resolve(&msg)
	own := cq.(*kit.DomainCQ[driven])
	k := cntr.(*kit.DomainCounter[driven])
	require.Same(t, own.CQ, c.TxCQ)
	require.Same(t, own.CQ, c.RxCQ)
	require.True(t, c.TxSel)
	require.True(t, c.RxSel)
	for i, want := range []*kit.Counter{k.Counter, k.Counter, nil, nil, nil, k.Counter} {
		require.Same(t, want, c.Cntr[i], "slot %d (%v)", i, kit.CntrFlags[i])
	}
	require.Equal(t, []*driven{&own.Eps, &k.Eps}, c.Sets, "each set once")

	// Signal wakes a reader blocked on a bound queue: it runs progress
	// and goes back to its wait hook.
	done := make(chan error, 1)
	go func() {
		_, err := own.SRead(t.Context(), make([]eq.Completion, 1))
		done <- err
	}()
	waitFor := func(n int32) {
		for own.Eps.waited.Load() < n {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1)
	c.Signal()
	waitFor(2)
	msg.Release()
	require.NoError(t, cq.Close())
	require.ErrorIs(t, <-done, fi.EBADF, "closed under the reader")
	for _, o := range []fi.Fid{cntr, av, q, foreign} {
		require.NoError(t, o.Close())
	}
	require.NoError(t, d.Close())
	require.NoError(t, f.Close())
}

// TestEndpointInfo: an endpoint keeps a copy of its Info with its own
// endpoint type, and the provider's capabilities where none were asked.
func TestEndpointInfo(t *testing.T) {
	in := &fi.Info{}
	got := kit.EndpointInfo(in, fi.EPTypeRDM, fi.CapMsg|fi.CapTagged)
	require.Equal(t, fi.EPTypeRDM, got.EPAttr.Type)
	require.Equal(t, fi.CapMsg|fi.CapTagged, got.Caps)
	require.Nil(t, in.EPAttr, "the caller's Info is not changed")

	in = &fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: fi.EPTypeUnspec, MaxMsgSize: 7}}
	got = kit.EndpointInfo(in, fi.EPTypeMsg, fi.CapMsg|fi.CapRMA)
	require.Equal(t, fi.EPTypeMsg, got.EPAttr.Type)
	require.Equal(t, uint64(7), uint64(got.EPAttr.MaxMsgSize))
	require.Equal(t, fi.CapMsg, got.Caps, "asked capabilities stay")
	require.Equal(t, fi.EPTypeUnspec, in.EPAttr.Type)
}
