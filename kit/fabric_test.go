package kit_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// driven is a provider's set of driven endpoints as the bases see it: a
// kit.Driver whose hooks count their calls.
type driven struct {
	kit.Set[*int]
	progressed, waited atomic.Int32
}

func (s *driven) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }

func (s *driven) progress() { s.progressed.Add(1) }

func (s *driven) wait(ctx context.Context) error {
	s.waited.Add(1)
	<-ctx.Done()
	return nil
}

// undriven is a set that is no kit.Driver: its queues get no hooks.
type undriven struct{ kit.Set[*int] }

// testFabric is a provider's fabric on the base.
type testFabric struct{ kit.Fabric[driven] }

func openFabric(tb testing.TB, prov string, types ...fi.EPType) *testFabric {
	tb.Helper()
	f := new(testFabric)
	require.NoError(tb, f.Init(prov, fi.MakeVersion(117, 0), &fi.FabricAttr{Name: "TEST-IP"}, types...))
	return f
}

// TestFabricInit: Init copies the attributes with the provider's name and
// version and the current API version, and refuses nil ones naming the
// provider.
func TestFabricInit(t *testing.T) {
	var f kit.Fabric[driven]
	err := f.Init("tcp", fi.MakeVersion(117, 0), nil)
	require.ErrorIs(t, err, fi.EINVAL)
	require.EqualError(t, err, "tcp: open fabric: nil attributes: "+fi.EINVAL.Error())

	attr := &fi.FabricAttr{Name: "192.0.2.0/24", ProvName: "tcp;ofi_rxm"}
	require.NoError(t, f.Init("tcp", fi.MakeVersion(117, 0), attr))
	require.Equal(t, "tcp", f.Prov())
	require.Equal(t, "192.0.2.0/24", f.Attr().Name)
	require.Equal(t, "tcp", f.Attr().ProvName, "the provider's own name")
	require.Equal(t, fi.MakeVersion(117, 0), f.Attr().ProvVersion)
	require.Equal(t, fi.APIVersion, f.Attr().APIVersion, "the current API version for none")
	require.Equal(t, "tcp;ofi_rxm", attr.ProvName, "the caller's attributes are copied, not changed")
}

// TestFabricClose: the fabric's Close says what is open on it, by kind,
// naming the provider; CloseWith's teardown runs once, when the fabric
// closes; then bare EBADF.
func TestFabricClose(t *testing.T) {
	busy := ": " + fi.EBUSY.Error()
	f := openFabric(t, "tcp", fi.EPTypeMsg)
	var d kit.Domain[driven]
	require.NoError(t, d.Init(&f.Fabric, &fi.Info{DomainAttr: &fi.DomainAttr{}}, nil))
	q, err := f.OpenEQ(nil)
	require.NoError(t, err)
	require.NoError(t, f.Acquire(kit.KindPassiveEndpoint, "open passive endpoint"))
	teardowns := 0
	teardown := func() { teardowns++ }
	require.EqualError(t, f.CloseWith(teardown), "tcp: close fabric: 1 domain, 1 passive endpoint and 1 eq still open"+busy)
	f.Release(kit.KindPassiveEndpoint)
	require.NoError(t, q.Close())
	require.EqualError(t, f.CloseWith(teardown), "tcp: close fabric: 1 domain still open"+busy)
	require.Zero(t, teardowns, "no teardown while the fabric is in use")
	require.NoError(t, d.Close())
	require.NoError(t, f.CloseWith(teardown))
	require.Equal(t, 1, teardowns)
	require.Equal(t, fi.EBADF, f.CloseWith(teardown), "closed: bare EBADF")
	require.Equal(t, 1, teardowns)

	err = f.Acquire(kit.KindPassiveEndpoint, "open passive endpoint")
	require.ErrorIs(t, err, fi.EBADF)
	require.EqualError(t, err, "tcp: open passive endpoint: fabric closed: "+fi.EBADF.Error())
	_, err = f.OpenEQ(nil)
	require.ErrorIs(t, err, fi.EBADF)
}

// TestCheckDomainInfo: fi_domain's checks of the Info, in the provider's
// words.
func TestCheckDomainInfo(t *testing.T) {
	f := openFabric(t, "tcp", fi.EPTypeMsg, fi.EPTypeRDM)
	ok := &fi.Info{DomainAttr: &fi.DomainAttr{}, FabricAttr: &fi.FabricAttr{Name: "TEST-IP"}, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}}
	require.NoError(t, f.CheckDomainInfo(ok))
	require.NoError(t, f.CheckDomainInfo(&fi.Info{DomainAttr: &fi.DomainAttr{}}), "no fabric, no endpoint type")
	for _, c := range []struct {
		info *fi.Info
		msg  string
	}{
		{nil, "tcp: open domain: info has no domain attributes"},
		{&fi.Info{}, "tcp: open domain: info has no domain attributes"},
		{&fi.Info{DomainAttr: &fi.DomainAttr{}, FabricAttr: &fi.FabricAttr{Name: "OTHER"}},
			`tcp: open domain: info is of fabric "OTHER", not "TEST-IP"`},
		{&fi.Info{DomainAttr: &fi.DomainAttr{}, EPAttr: &fi.EPAttr{Type: fi.EPTypeDgram}},
			"tcp: open domain: ep type FI_EP_DGRAM not supported (offers FI_EP_MSG and FI_EP_RDM)"},
	} {
		err := f.CheckDomainInfo(c.info)
		require.ErrorIs(t, err, fi.EINVAL)
		require.EqualError(t, err, c.msg+": "+fi.EINVAL.Error())
	}
	err := f.CheckEPType("open endpoint", &fi.Info{EPAttr: &fi.EPAttr{Type: fi.EPTypeSockStream}},
		fi.EPTypeMsg, fi.EPTypeRDM, fi.EPTypeDgram)
	require.EqualError(t, err, "tcp: open endpoint: ep type FI_EP_SOCK_STREAM not supported (offers FI_EP_MSG, FI_EP_RDM and FI_EP_DGRAM): "+fi.EINVAL.Error())
}

// TestFabricEQHooks: the fabric's EQs get the hooks of the provider's
// set only with DrivenEQ, and reading such an EQ drives progress; a set
// that is no Driver gives none.
func TestFabricEQHooks(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := openFabric(t, "tcp")
	plain, err := f.OpenEQ(nil)
	require.NoError(t, err)
	_, err = plain.Read()
	require.Equal(t, fi.EAGAIN, err)
	require.Zero(t, plain.(*kit.FabricEQ[driven]).Eps.progressed.Load(), "no hooks without DrivenEQ")

	f.DrivenEQ = true
	q, err := f.OpenEQ(&eq.Attr{WaitObj: fi.WaitUnspec})
	require.NoError(t, err)
	s := &q.(*kit.FabricEQ[driven]).Eps
	_, err = q.Read()
	require.Equal(t, fi.EAGAIN, err)
	require.Equal(t, int32(1), s.progressed.Load(), "a read runs the progress hook")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = q.SRead(ctx)
	require.ErrorIs(t, err, fi.ECANCELED)
	require.NoError(t, q.Close())
	require.NoError(t, plain.Close())

	var u kit.Fabric[undriven]
	require.NoError(t, u.Init("udp", 0, &fi.FabricAttr{}))
	u.DrivenEQ = true
	uq, err := u.OpenEQ(nil)
	require.NoError(t, err)
	_, err = uq.Read()
	require.Equal(t, fi.EAGAIN, err)
	require.NoError(t, uq.Close())
	require.NoError(t, u.Close())
	require.NoError(t, f.Close())
}

// TestProvider: the provider base's name and version, and GetInfo's
// decline with its reason and advice.
func TestProvider(t *testing.T) {
	p := kit.Provider{ProvName: "tcp", ProvVersion: fi.MakeVersion(117, 0)}
	require.Equal(t, "tcp", p.Name())
	require.Equal(t, fi.MakeVersion(117, 0), p.Version())

	err := kit.Declined("tcp", "FI_MULTI_RECV is not implemented", "use a receive per message")
	require.ErrorIs(t, err, fi.ENODATA)
	var nm *fi.NoMatchError
	require.ErrorAs(t, err, &nm)
	require.Equal(t, []fi.ProviderReason{{Provider: "tcp", Reason: "FI_MULTI_RECV is not implemented", Hint: "use a receive per message"}}, nm.Reasons)
}

// TestAlterInfo: a result gets the hints' queue sizes and op flags, the
// default size and no op flags without them (ofi_alter_info).
func TestAlterInfo(t *testing.T) {
	entry := func() *fi.Info {
		return &fi.Info{TxAttr: &fi.TxAttr{Size: 1024, OpFlags: fi.FlagInject}, RxAttr: &fi.RxAttr{Size: 65536, OpFlags: fi.FlagCompletion}}
	}
	in := entry()
	kit.AlterInfo(in, nil, 256)
	require.Equal(t, 256, in.TxAttr.Size)
	require.Equal(t, 256, in.RxAttr.Size)
	require.Zero(t, in.TxAttr.OpFlags)
	require.Zero(t, in.RxAttr.OpFlags)

	in = entry()
	kit.AlterInfo(in, &fi.Info{TxAttr: &fi.TxAttr{Size: 16, OpFlags: fi.FlagDeliveryComplete}, RxAttr: &fi.RxAttr{}}, 256)
	require.Equal(t, 16, in.TxAttr.Size)
	require.Equal(t, 256, in.RxAttr.Size)
	require.Equal(t, fi.FlagDeliveryComplete, in.TxAttr.OpFlags)
	require.Zero(t, in.RxAttr.OpFlags)
}

// TestQueueSizes: an endpoint's queue depths from its Info, the default
// for 0, EINVAL beyond the maxima or below 0, in the provider's words.
func TestQueueSizes(t *testing.T) {
	tx, rx, err := kit.QueueSizes("shm", &fi.Info{}, 1024, 1024, 256)
	require.NoError(t, err)
	require.Equal(t, [2]int{256, 256}, [2]int{tx, rx})
	tx, rx, err = kit.QueueSizes("shm", &fi.Info{TxAttr: &fi.TxAttr{Size: 8}, RxAttr: &fi.RxAttr{Size: 1024}}, 1024, 1024, 256)
	require.NoError(t, err)
	require.Equal(t, [2]int{8, 1024}, [2]int{tx, rx})
	_, _, err = kit.QueueSizes("shm", &fi.Info{TxAttr: &fi.TxAttr{Size: 2048}}, 1024, 1024, 256)
	require.EqualError(t, err, "shm: open endpoint: tx size 2048 not supported (1 to 1024): "+fi.EINVAL.Error())
	_, _, err = kit.QueueSizes("tcp", &fi.Info{RxAttr: &fi.RxAttr{Size: -1}}, 1024, 65536, 256)
	require.ErrorIs(t, err, fi.EINVAL)
	require.EqualError(t, err, "tcp: open endpoint: rx size -1 not supported (1 to 65536): "+fi.EINVAL.Error())
}
