package rxm

import (
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is an opened rxm domain (struct fid_domain; C's struct
// rxm_domain): the core provider's domain beneath it, and rxm's own
// completion queues, counters and address vectors, the kit's. kit.Domain
// counts what is open on it and gives Close its fi.EBUSY rule. Safe for
// concurrent use.
type domain struct {
	// core is the core provider's domain, opened for coreInfo, the core
	// entry of this domain: its connections' endpoints are opened from it.
	core     fi.Domain
	coreInfo *fi.Info
	fabric   *fabric
	// mrKey counts rxm's internal registrations: their keys are
	// rxmKeyBase | mrKey (C's rxm_domain mr_key).
	mrKey atomic.Uint64
	// atomicMRs records the application's registrations under their
	// core keys, with their buffers, rights and remote addresses in the
	// domain's MR mode, for the atomics peers apply here (C's rxm keeps
	// its own MR map for them too); nil unless the domain has FI_ATOMIC,
	// as C records them only then.
	atomicMRs *kit.MRTable
	kit.Domain[epSet]
}

// domain is a domain with counters, address vectors and memory
// registration; kit.Domain opens its completion queues.
var _ interface {
	fi.Domain
	eq.CQOpener
	eq.CounterOpener
	fi.AVOpener
	fi.MRRegistrar
} = (*domain)(nil)

// Close closes the domain (fi_close), then the core's: fi.EBUSY while
// objects opened on it are open, fi.EBADF once closed. An error of the
// core's close comes back after the rxm domain has closed.
func (d *domain) Close() error {
	err := closeOver(d.CloseWith, d.core, d.fabric.Prov(), "domain")
	if d.atomicMRs != nil && !errors.Is(err, fi.EBUSY) {
		d.atomicMRs.Close()
	}
	return err
}

// OpenCounter opens a counter (fi_cntr_open): the kit's software counter.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) { return d.NewCounter(attr) }

// OpenAV opens an address vector (fi_av_open; C's util_av under rxm) of
// rxm endpoint names, which are the core's listening addresses in the
// domain's address format.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	return d.NewAV(attr, d.Info().AddrFormat, d.checkName)
}

// checkName vets an AV address: in a sockaddr format, one with an
// address and a port (an rxm endpoint's name is its listener's).
func (d *domain) checkName(b []byte) error {
	switch d.Info().AddrFormat {
	case fi.FormatSockaddr, fi.FormatSockaddrIn, fi.FormatSockaddrIn6:
	default:
		return nil
	}
	switch ap, _, err := fi.AddrPortFromSockaddr(b); {
	case err != nil:
		return errors.Wrapf(err, "%d bytes are no sockaddr", len(b))
	case !ap.Addr().IsValid() || ap.Port() == 0:
		return errors.Wrapf(fi.EINVAL, "%v is no endpoint name (it needs an address and a port)", ap)
	}
	return nil
}

// RegisterMR registers memory (fi_mr_regattr; C's rxm_mr_regattr) with
// the core domain, for the access asked plus what rxm's rendezvous needs
// of it (a send buffer is read by the peer, a receive buffer reads into
// it). The region's Key is the core's, which peers use; its Desc is the
// rxm region itself, from which rxm finds the core's. In a domain with
// FI_ATOMIC rxm records the region, with the access asked, for the
// peers' atomics (atomic.go). It holds a reference on the domain until
// it closes.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	if attr == nil {
		return nil, errors.Wrapf(fi.EINVAL, "%s: register mr: nil attributes", d.fabric.Prov())
	}
	if err := d.Acquire(kit.KindMR, "register mr"); err != nil {
		return nil, err
	}
	ca := *attr
	if ca.Access&fi.AccessSend != 0 {
		ca.Access |= fi.AccessRemoteRead
	}
	if ca.Access&fi.AccessRecv != 0 {
		ca.Access |= fi.AccessRead
	}
	core, err := fi.RegisterMR(d.core, &ca, flags)
	if err != nil {
		d.Release(kit.KindMR)
		return nil, errors.Wrapf(err, "%s: register mr", d.fabric.Prov())
	}
	m := &memRegion{domain: d, core: core}
	if d.atomicMRs != nil {
		rec := *attr
		if m.atomic, err = d.atomicMRs.Insert(&rec, core.Key()); err != nil {
			_ = core.Close()
			d.Release(kit.KindMR)
			return nil, errors.Wrapf(err, "%s: register mr", d.fabric.Prov())
		}
	}
	return m, nil
}

// memRegion is an rxm memory region (struct fid_mr; C's struct rxm_mr):
// the core's region, registered for it. Safe for concurrent use.
type memRegion struct {
	domain *domain
	core   fi.MR
	// atomic is its record for the peers' atomics, nil without FI_ATOMIC.
	atomic *kit.MR
	closed atomic.Bool
}

var _ fi.MR = (*memRegion)(nil)

// Key returns the core region's key (fi_mr_key), which peers use.
func (m *memRegion) Key() uint64 { return m.core.Key() }

// Desc returns the region itself (fi_mr_desc): rxm's data calls take it
// and pass the core's descriptor on.
func (m *memRegion) Desc() any { return m }

// Close deregisters the region from the core (fi_close) and lets the
// domain close; later calls return fi.EBADF.
func (m *memRegion) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return fi.EBADF
	}
	if m.atomic != nil {
		_ = m.atomic.Close()
	}
	err := m.core.Close()
	m.domain.Release(kit.KindMR)
	if err != nil {
		return errors.Wrapf(err, "%s: close mr", m.domain.fabric.Prov())
	}
	return nil
}
