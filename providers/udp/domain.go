//go:build linux

package udp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is an opened udp domain (struct fid_domain; fi_domain(3)): the
// objects of one interface address. It opens address vectors, completion
// queues and endpoints. Like the C provider (fi_udp(7): "no support for
// counters"; cntr_cnt and mr_cnt are 0) it has no counters and no memory
// registration: eq.OpenCounter and fi.RegisterMR give ENOSYS. Safe for
// concurrent use.
type domain struct {
	// ref counts the AVs, CQs and endpoints opened on the domain; Close
	// returns EBUSY while any is open.
	ref    kit.Ref
	fabric *fabric
	info   *fi.Info
}

var (
	_ fi.Domain   = (*domain)(nil)
	_ fi.AVOpener = (*domain)(nil)
	_ eq.CQOpener = (*domain)(nil)
)

// Info returns the Info the domain was opened with.
func (d *domain) Info() *fi.Info { return d.info }

// Close closes the domain (fi_close). While endpoints, AVs or CQs opened on
// it are open it returns fi.EBUSY, saying which ("udp: close domain: 1
// endpoint and 1 av still open"); once closed, bare fi.EBADF. Closing lets
// the fabric close.
func (d *domain) Close() error {
	if err := d.ref.BeginCloseFor("udp: close domain", kit.KindEndpoint); err != nil {
		return err
	}
	d.fabric.ref.Release()
	return nil
}

// acquire takes a reference on the domain for an object opened on it.
func (d *domain) acquire(op string) error {
	if err := d.ref.Acquire(); err != nil {
		return errors.Wrapf(err, "udp: %s: domain closed", op)
	}
	return nil
}

// OpenAV opens an address vector (fi_av_open) of struct sockaddr_in or
// sockaddr_in6 peer addresses, in the family of the domain's address
// format; FI_AV_MAP and FI_AV_TABLE both give dense indexes.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	format := d.info.AddrFormat
	check := func(b []byte) error {
		ap, f, err := fi.AddrPortFromSockaddr(b)
		switch {
		case err != nil:
			return errors.Wrap(err, "udp: av")
		case (format == fi.FormatSockaddrIn || format == fi.FormatSockaddrIn6) && f != format:
			return errors.Wrapf(fi.EINVAL, "udp: av: address %v is not of the domain's format %v", ap, format)
		case !ap.Addr().IsValid() || ap.Addr().IsUnspecified() || ap.Port() == 0:
			return errors.Wrapf(fi.EINVAL, "udp: av: address %v has no host or port", ap)
		}
		return nil
	}
	if format != fi.FormatSockaddrIn6 {
		format = fi.FormatSockaddrIn
	}
	a, err := kit.OpenChildAV(&d.ref, attr, format, check, "udp")
	if err != nil {
		return nil, err
	}
	return &addrVector{ChildAV: a}, nil
}

// OpenCQ opens a completion queue (fi_cq_open): the framework's software
// CQ, which holds a reference on the domain until it closes. Reading it
// drives the progress of the endpoints bound to it.
func (d *domain) OpenCQ(attr *eq.CQAttr) (eq.CompletionQueue, error) {
	c, err := kit.OpenChildCQ(&d.ref, attr, "udp")
	if err != nil {
		return nil, err
	}
	q := &completionQueue{ChildCQ: c}
	c.SetProgress(q.eps.progress)
	c.SetWaiter(q.eps.wait)
	return q, nil
}

// addrVector is a software AV that releases its domain's reference when
// it closes.
type addrVector struct{ *kit.ChildAV }

// completionQueue is a software CQ that releases its domain's reference
// when it closes.
type completionQueue struct {
	*kit.ChildCQ
	// eps are the endpoints bound to the queue, whose progress reading it
	// drives.
	eps epSet
}
