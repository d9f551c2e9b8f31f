//go:build linux

package tcp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is an opened tcp domain (struct fid_domain; fi_domain(3)): the
// objects of one interface address. It has completion queues
// (kit.Domain's), counters, memory regions, and address vectors; the
// queues' reads drive the progress of the endpoints bound to them.
// kit.Domain counts what is open on it and gives Close its
// fi.EBUSY rule ("tcp: close domain: 2 endpoints and 1 cq still open").
// Safe for concurrent use.
type domain struct {
	kit.Domain[epSet]
	fabric *fabric
	// mrs is the domain's MR table (kit.Domain's), which peers' RMA
	// operations are checked against.
	mrs *kit.MRTable
	// prog is the progress of the domain's connections (wait.go).
	prog progGroup
}

// Close closes the domain (fi_close; kit.Domain's rules), and the epoll
// instance of its connections' progress with it.
func (d *domain) Close() error { return d.CloseWith(d.closeProg) }

// OpenCounter opens a counter (fi_cntr_open): the framework's software
// counter, progressed as the domain's CQs are.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) { return d.NewCounter(attr) }

// RegisterMR registers memory (fi_mr_regattr) in the domain's table, with
// the C provider's MR mode: keys are the application's requested keys and
// remote addresses are offsets from MRAttr.Offset. The region holds a
// reference on the domain until it closes; its Desc is the *kit.MR.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return d.NewMR(attr, flags)
}

// OpenAV opens an address vector (fi_av_open) of peer sockaddrs
// (sockaddr_in, sockaddr_in6); FI_AV_MAP and FI_AV_TABLE both give dense
// indexes. The provider's FI_EP_MSG endpoints name their peer in Connect
// and use none.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	return d.NewAV(attr, d.Info().AddrFormat, checkPeerName)
}

// checkPeerName vets an AV address: a sockaddr with an address and a
// port.
func checkPeerName(b []byte) error {
	ap, _, err := fi.AddrPortFromSockaddr(b)
	if err != nil {
		return errors.Wrap(err, "tcp: av: address")
	}
	if !ap.Addr().IsValid() || ap.Port() == 0 {
		return errors.Wrapf(fi.EINVAL, "tcp: av: address %v has no address or port", ap)
	}
	return nil
}

// completionQueue and counter are the domain's CQs and counters; they
// drive the progress of the endpoints in their Eps.
type (
	completionQueue = kit.DomainCQ[epSet]
	counter         = kit.DomainCounter[epSet]
)

var (
	_ fi.Domain        = (*domain)(nil)
	_ eq.CounterOpener = (*domain)(nil)
	_ fi.MRRegistrar   = (*domain)(nil)
	_ fi.AVOpener      = (*domain)(nil)
)
