package kit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// testDomain is a provider's domain on the base, with the abilities a
// provider adds in a line each.
type testDomain struct{ kit.Domain[driven] }

func (d *testDomain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) { return d.NewCounter(attr) }

func (d *testDomain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return d.NewMR(attr, flags)
}

var (
	_ fi.Domain        = (*testDomain)(nil)
	_ eq.CQOpener      = (*testDomain)(nil)
	_ eq.CounterOpener = (*testDomain)(nil)
	_ fi.MRRegistrar   = (*testDomain)(nil)
)

func openDomain(tb testing.TB, f *testFabric, mrs *kit.MRTable) *testDomain {
	tb.Helper()
	d := new(testDomain)
	require.NoError(tb, d.Init(&f.Fabric, &fi.Info{DomainAttr: &fi.DomainAttr{Name: "lo"}, AddrFormat: fi.FormatSockaddrIn}, mrs))
	return d
}

// TestDomainInit: Init checks the Info, keeps a copy, and holds the
// fabric until the domain closes; a closed fabric opens no domain.
func TestDomainInit(t *testing.T) {
	f := openFabric(t, "shm", fi.EPTypeRDM)
	var bad kit.Domain[driven]
	err := bad.Init(&f.Fabric, &fi.Info{DomainAttr: &fi.DomainAttr{}, EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg}}, nil)
	require.EqualError(t, err, "shm: open domain: ep type FI_EP_MSG not supported (offers FI_EP_RDM): "+fi.EINVAL.Error())
	require.NoError(t, f.Close(), "a refused domain holds no reference")

	f = openFabric(t, "shm", fi.EPTypeRDM)
	info := &fi.Info{DomainAttr: &fi.DomainAttr{Name: "shm"}}
	d := new(testDomain)
	require.NoError(t, d.Init(&f.Fabric, info, nil))
	info.DomainAttr.Name = "changed"
	require.Equal(t, "shm", d.Info().DomainAttr.Name, "the domain keeps a copy")
	require.Nil(t, d.MRs())
	require.ErrorIs(t, f.Close(), fi.EBUSY)
	require.NoError(t, d.Close())
	require.Equal(t, fi.EBADF, d.Close(), "closed: bare EBADF")
	require.NoError(t, f.Close())
	err = new(testDomain).Init(&f.Fabric, info, nil)
	require.ErrorIs(t, err, fi.EBADF)
	require.EqualError(t, err, "shm: open domain: fabric closed: "+fi.EBADF.Error())
}

// TestDomainClose: the domain's Close counts what is open on it by kind,
// in the provider's words; CloseWith's teardown runs once, when the
// domain closes, and closing releases the fabric and the MR table.
func TestDomainClose(t *testing.T) {
	busy := ": " + fi.EBUSY.Error()
	f := openFabric(t, "tcp")
	mrs := kit.NewMRTable(0)
	d := openDomain(t, f, mrs)
	require.NoError(t, d.Acquire(kit.KindEndpoint, "open endpoint"))
	require.NoError(t, d.Acquire(kit.KindEndpoint, "open endpoint"))
	cq, err := d.OpenCQ(nil)
	require.NoError(t, err)
	cntr, err := d.OpenCounter(nil)
	require.NoError(t, err)
	av, err := d.NewAV(nil, fi.FormatSockaddrIn, nil)
	require.NoError(t, err)
	mr, err := d.RegisterMR(&fi.MRAttr{Buf: make([]byte, 8), RequestedKey: 7}, 0)
	require.NoError(t, err)
	teardowns := 0
	require.EqualError(t, d.CloseWith(func() { teardowns++ }),
		"tcp: close domain: 2 endpoints, 1 cq, 1 counter, 1 av and 1 mr still open"+busy)
	d.Release(kit.KindEndpoint)
	d.Release(kit.KindEndpoint)
	for _, x := range []fi.Fid{cq, cntr, av, mr} {
		require.NoError(t, x.Close())
	}
	require.NoError(t, d.CloseWith(func() { teardowns++ }))
	require.Equal(t, 1, teardowns)
	_, err = mrs.Register(&fi.MRAttr{Buf: make([]byte, 8), RequestedKey: 8}, 0)
	require.Error(t, err, "the domain's close closed its MR table")
	require.NoError(t, f.Close(), "the domain released its fabric")

	err = d.Acquire(kit.KindEndpoint, "open endpoint")
	require.ErrorIs(t, err, fi.EBADF)
	require.EqualError(t, err, "tcp: open endpoint: domain closed: "+fi.EBADF.Error())
	_, err = d.OpenCQ(nil)
	require.EqualError(t, err, "tcp: open cq: domain closed: "+fi.EBADF.Error())
}

// TestDomainMR: NewMR registers in the domain's table, under the
// provider's name; a domain without a table has no memory registration.
func TestDomainMR(t *testing.T) {
	f := openFabric(t, "tcp")
	d := openDomain(t, f, kit.NewMRTable(0))
	buf := make([]byte, 64)
	mr, err := d.RegisterMR(&fi.MRAttr{Buf: buf, Access: fi.AccessRemoteWrite, RequestedKey: 7}, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(7), mr.Key())
	got, err := d.MRs().Verify(7, 8, 16, fi.AccessRemoteWrite)
	require.NoError(t, err)
	require.Equal(t, buf[8:24], got)
	_, err = d.RegisterMR(&fi.MRAttr{Buf: buf, RequestedKey: 7}, 0)
	require.ErrorIs(t, err, fi.ENOKEY)
	require.ErrorContains(t, err, "tcp: register mr: key 7 already in use")
	require.NoError(t, mr.Close())
	require.NoError(t, d.Close())

	d = openDomain(t, f, nil)
	_, err = d.NewMR(&fi.MRAttr{Buf: buf}, 0)
	require.ErrorIs(t, err, fi.ENOSYS)
	require.EqualError(t, err, "tcp: register mr: the domain has no memory registration: "+fi.ENOSYS.Error())
	require.NoError(t, d.Close())
	require.NoError(t, f.Close())
}

// TestDomainQueueHooks: the domain's CQs and counters get the hooks of
// the provider's set, whose endpoints a read then drives, and a blocked
// read sleeps in the wait hook; a set that is no Driver gives none.
func TestDomainQueueHooks(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := openFabric(t, "tcp")
	d := openDomain(t, f, nil)
	cq, err := d.OpenCQ(nil)
	require.NoError(t, err)
	q := cq.(*kit.DomainCQ[driven])
	buf := make([]eq.Completion, 1)
	_, err = cq.Read(buf)
	require.Equal(t, fi.EAGAIN, err)
	require.Equal(t, int32(1), q.Eps.progressed.Load(), "a read runs the progress hook")
	done := make(chan error, 1)
	go func() {
		_, err := cq.SRead(context.Background(), buf)
		done <- err
	}()
	for q.Eps.waited.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, q.Complete(eq.Completion{Context: "x"}, fi.AddrUnspec))
	require.NoError(t, <-done, "the entry woke the reader out of the wait hook")
	require.Equal(t, "x", buf[0].Context)

	cntr, err := d.OpenCounter(nil)
	require.NoError(t, err)
	cntr.Read()
	require.Equal(t, int32(1), cntr.(*kit.DomainCounter[driven]).Eps.progressed.Load(), "a counter read runs the progress hook")
	require.NoError(t, cntr.Close())
	require.NoError(t, cq.Close())
	require.NoError(t, d.Close())
	require.NoError(t, f.Close())

	var uf kit.Fabric[undriven]
	require.NoError(t, uf.Init("udp", 0, &fi.FabricAttr{}))
	var ud kit.Domain[undriven]
	require.NoError(t, ud.Init(&uf, &fi.Info{DomainAttr: &fi.DomainAttr{}}, nil))
	ucq, err := ud.OpenCQ(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ucq.SRead(ctx, buf)
	require.ErrorIs(t, err, fi.ECANCELED, "no hooks: SRead waits on its context alone")
	require.NoError(t, ucq.Close())
	require.NoError(t, ud.Close())
	require.NoError(t, uf.Close())
}

// TestDomainAV: NewAV's AV vets addresses with the provider's check and
// names the provider.
func TestDomainAV(t *testing.T) {
	f := openFabric(t, "shm")
	d := openDomain(t, f, nil)
	check := func(b []byte) error {
		if len(b) == 0 {
			return errors.New("empty")
		}
		return nil
	}
	av, err := d.NewAV(nil, fi.FormatStr, check)
	require.NoError(t, err)
	_, ok := av.(*kit.DomainAV[driven])
	require.True(t, ok, "the provider's own AV type")
	addrs, err := av.Insert([][]byte{[]byte("fi_shm://a")}, 0)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	_, err = av.Insert([][]byte{nil}, 0)
	require.Error(t, err)
	require.NoError(t, av.Close())
	require.NoError(t, d.Close())
	require.NoError(t, f.Close())
}

// handCQ is a provider's CQ as providers built it before the bases: the
// child CQ and the set, the hooks installed by hand.
type handCQ struct {
	*kit.ChildCQ
	eps driven
}

// BenchmarkDomainCQRead measures an empty read, through the
// eq.CompletionQueue interface, of a domain's CQ whose set drives
// progress: the base's (DomainCQ, its hooks from Driver) and one built by
// hand, as providers did before the bases. The hooks a provider gives
// are called as they are, so the two cost the same.
func BenchmarkDomainCQRead(b *testing.B) {
	f := openFabric(b, "tcp")
	d := openDomain(b, f, nil)
	base, err := d.OpenCQ(nil)
	require.NoError(b, err)
	c, err := kit.OpenChildCQ(&d.Ref, nil, "tcp")
	require.NoError(b, err)
	h := &handCQ{ChildCQ: c}
	h.SetProgress(h.eps.progress)
	h.SetWaiter(h.eps.wait)
	for _, q := range []struct {
		name string
		cq   eq.CompletionQueue
	}{{"base", base}, {"by-hand", h}} {
		b.Run(q.name, func(b *testing.B) {
			buf := make([]eq.Completion, 1)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = q.cq.Read(buf)
			}
		})
	}
}
