//go:build linux

package udp

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is an opened udp domain (struct fid_domain; fi_domain(3)): the
// objects of one interface address. It opens address vectors, completion
// queues (kit.Domain's, whose reads drive the progress of the endpoints
// bound to them) and endpoints. Like the C provider (fi_udp(7): "no
// support for counters"; cntr_cnt and mr_cnt are 0) it has no counters
// and no memory registration: eq.OpenCounter and fi.RegisterMR give
// ENOSYS. kit.Domain counts what is open on it and gives Close its
// fi.EBUSY rule ("udp: close domain: 1 endpoint and 1 av still open").
// Safe for concurrent use.
type domain struct{ kit.Domain[epSet] }

var (
	_ fi.Domain   = (*domain)(nil)
	_ fi.AVOpener = (*domain)(nil)
)

// addrVector is the domain's AV; its CQs are kit.DomainCQ[epSet]
// (kit.Completions).
type addrVector = kit.DomainAV[epSet]

// OpenAV opens an address vector (fi_av_open) of struct sockaddr_in or
// sockaddr_in6 peer addresses, in the family of the domain's address
// format; FI_AV_MAP and FI_AV_TABLE both give dense indexes.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	format := d.Info().AddrFormat
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
	return d.NewAV(attr, format, check)
}
