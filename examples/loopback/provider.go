package loopback

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// Names and limits of what the provider offers.
const (
	provName   = "loopback"
	fabricName = "loopback"
	domainName = "loopback"
	// queueSize is tx_attr.size and rx_attr.size: sends waiting per
	// endpoint, and receives posted and messages waiting per endpoint.
	queueSize = 256
	// iovLimit is tx_attr.iov_limit and rx_attr.iov_limit.
	iovLimit = 4
	// injectSize is tx_attr.inject_size: what an inject copies.
	injectSize = 64
	// maxMsgSize is ep_attr.max_msg_size.
	maxMsgSize = 1 << 30
	// cmDataSize is the private data fi_connect, fi_accept and fi_reject
	// carry (FI_OPT_CM_DATA_SIZE).
	cmDataSize = 256
)

var provVersion = fi.MakeVersion(1, 0)

// provider is the loopback provider (struct fi_provider), registered
// under "loopback". kit.Provider gives it Name and Version.
type provider struct{ kit.Provider }

var _ fi.Provider = provider{}

func init() {
	fi.Register(provider{kit.Provider{ProvName: provName, ProvVersion: provVersion}})
}

// GetInfo returns the entries of offered that satisfy hints, with node
// and service resolved into their addresses (fi_getinfo(3)); kit.MatchInfo
// does the matching and says why each entry was declined.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	return kit.MatchInfo(ctx, provName, offered, node, service, flags, hints)
}

// offered are the provider's entries, best first. MatchInfo clones what
// it returns, so they are shared.
var offered = []*fi.Info{
	offer(fi.EPTypeMsg, fi.CapMsg|fi.CapSend|fi.CapRecv),
	offer(fi.EPTypeRDM, fi.CapMsg|fi.CapSend|fi.CapRecv|fi.CapSource),
}

// offer returns the entry for an endpoint type with caps.
func offer(typ fi.EPType, caps fi.Caps) *fi.Info {
	return &fi.Info{
		Caps:       caps,
		AddrFormat: fi.FormatSockaddrIn,
		TxAttr: &fi.TxAttr{Caps: caps, MsgOrder: fi.OrderSAS, InjectSize: injectSize,
			Size: queueSize, IOVLimit: iovLimit},
		RxAttr: &fi.RxAttr{Caps: caps, MsgOrder: fi.OrderSAS, Size: queueSize, IOVLimit: iovLimit},
		EPAttr: &fi.EPAttr{Type: typ, MaxMsgSize: maxMsgSize, TxCtxCnt: 1, RxCtxCnt: 1},
		DomainAttr: &fi.DomainAttr{
			Name: domainName, Threading: fi.ThreadSafe,
			ControlProgress: fi.ProgressAuto, DataProgress: fi.ProgressAuto,
			ResourceMgmt: fi.RMEnabled, MRKeySize: 8, CQDataSize: 8,
			CQCnt: 1024, EPCnt: 1024, TxCtxCnt: 1024, RxCtxCnt: 1024,
			MaxEPTxCtx: 1, MaxEPRxCtx: 1, CntrCnt: 1024, MRIOVLimit: 1, MRCnt: 1 << 16,
		},
		FabricAttr: &fi.FabricAttr{Name: fabricName, ProvName: provName,
			ProvVersion: provVersion, APIVersion: fi.APIVersion},
	}
}

// OpenFabric opens the loopback fabric (fi_fabric(3)); any other name
// gives fi.ENODATA.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	if attr != nil && attr.Name != fabricName {
		return nil, errors.Wrapf(fi.ENODATA, "%s: open fabric: no fabric %q (offers %q)", provName, attr.Name, fabricName)
	}
	f := &fabric{}
	if err := f.Init(provName, provVersion, attr, fi.EPTypeMsg, fi.EPTypeRDM); err != nil {
		return nil, err
	}
	return f, nil
}
