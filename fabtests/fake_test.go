package fabtests_test

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fakeProvider is an in-process provider built only from the framework's
// shared pieces (kit's EQ, CQ, counter, AV, MR table and bind base),
// with no transport. It exists to run the unit groups of the suite on the
// framework itself, the way database/sql tests its fake driver.
type fakeProvider struct{}

func init() { fi.Register(fakeProvider{}) }

const fakeName = "fake"

func fakeInfos() []*fi.Info {
	base := func(typ fi.EPType, caps fi.Caps) *fi.Info {
		return &fi.Info{
			Caps:       caps,
			AddrFormat: fi.FormatSockaddrIn,
			TxAttr:     &fi.TxAttr{Caps: caps, InjectSize: 64, Size: 256, IOVLimit: 4, RMAIOVLimit: 4, MsgOrder: fi.OrderSAS},
			RxAttr:     &fi.RxAttr{Caps: caps, Size: 256, IOVLimit: 4, MsgOrder: fi.OrderSAS},
			EPAttr:     &fi.EPAttr{Type: typ, Protocol: fi.ProtoUnspec, MaxMsgSize: 1 << 20, TxCtxCnt: 1, RxCtxCnt: 1},
			DomainAttr: &fi.DomainAttr{
				Name: "fake0", Threading: fi.ThreadSafe, ControlProgress: fi.ProgressAuto,
				DataProgress: fi.ProgressManual, ResourceMgmt: fi.RMEnabled, AVType: fi.AVUnspec,
				MRMode: 0, MRKeySize: 8, CQDataSize: 8, CQCnt: 64, EPCnt: 64, TxCtxCnt: 64,
				RxCtxCnt: 64, MaxEPTxCtx: 1, MaxEPRxCtx: 1, CntrCnt: 64, MRIOVLimit: 1, MRCnt: 1024,
			},
			FabricAttr: &fi.FabricAttr{Name: "fake", ProvName: fakeName, ProvVersion: fi.MakeVersion(1, 0), APIVersion: fi.APIVersion},
		}
	}
	rw := fi.CapSend | fi.CapRecv | fi.CapRead | fi.CapWrite | fi.CapRemoteRead | fi.CapRemoteWrite
	return []*fi.Info{
		base(fi.EPTypeMsg, fi.CapMsg|fi.CapRMA|rw|fi.CapSource),
		base(fi.EPTypeRDM, fi.CapMsg|fi.CapTagged|fi.CapRMA|rw|fi.CapSource|fi.CapDirectedRecv),
	}
}

func (fakeProvider) Name() string        { return fakeName }
func (fakeProvider) Version() fi.Version { return fi.MakeVersion(1, 0) }

func (fakeProvider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	return kit.MatchInfo(ctx, fakeName, fakeInfos(), node, service, flags, hints)
}

func (fakeProvider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr.Name != "fake" {
		return nil, errors.Wrapf(fi.ENODATA, "fake: open fabric: no fabric %q", attr.Name)
	}
	return &fakeFabric{}, nil
}

type fakeFabric struct{ ref kit.Ref }

func (f *fakeFabric) Close() error { return f.ref.BeginClose() }

func (f *fakeFabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	if f.ref.Closed() {
		return nil, fi.EBADF
	}
	return &fakeDomain{info: info.Clone(), mrs: kit.NewMRTable(info.DomainAttr.MRMode)}, nil
}

func (f *fakeFabric) OpenEQ(attr *eq.Attr) (eq.EventQueue, error) { return kit.NewEQ(attr) }

type fakeDomain struct {
	ref  kit.Ref
	info *fi.Info
	mrs  *kit.MRTable
}

func (d *fakeDomain) Close() error {
	if err := d.ref.BeginClose(); err != nil {
		return err
	}
	d.mrs.Close()
	return nil
}

func (d *fakeDomain) Info() *fi.Info { return d.info }

func (d *fakeDomain) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) { return kit.NewCQ(attr) }

func (d *fakeDomain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) {
	return kit.NewCounter(attr)
}

func (d *fakeDomain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	return kit.NewAV(attr, fi.FormatSockaddrIn, func(a []byte) error {
		if len(a) != 16 {
			return errors.Wrapf(fi.EINVAL, "fake: address of %d bytes, want a 16-byte sockaddr_in", len(a))
		}
		return nil
	}), nil
}

func (d *fakeDomain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return d.mrs.Register(attr, flags)
}

func (d *fakeDomain) OpenEndpoint(info *fi.Info) (ep.Endpoint, error) {
	x := &fakeEP{info: info.Clone()}
	x.b.Init(info)
	return x, nil
}

// fakeEP is an endpoint with bindings and no transport.
type fakeEP struct {
	ref  kit.Ref
	info *fi.Info
	b    kit.Bindings
}

func (x *fakeEP) Bind(obj fi.Fid, flags fi.Flags) error { return x.b.Bind(obj, flags) }
func (x *fakeEP) Enable() error                         { return x.b.CheckEnable() }
func (x *fakeEP) Cancel(any) error                      { return fi.ENOENT }
func (x *fakeEP) Info() *fi.Info                        { return x.info }

func (x *fakeEP) Close() error {
	if err := x.ref.BeginClose(); err != nil {
		return err
	}
	x.b.Release()
	return nil
}

var (
	_ fi.Provider      = fakeProvider{}
	_ eq.EQOpener      = (*fakeFabric)(nil)
	_ eq.CQOpener      = (*fakeDomain)(nil)
	_ eq.CounterOpener = (*fakeDomain)(nil)
	_ fi.AVOpener      = (*fakeDomain)(nil)
	_ fi.MRRegistrar   = (*fakeDomain)(nil)
	_ ep.Opener        = (*fakeDomain)(nil)
)
