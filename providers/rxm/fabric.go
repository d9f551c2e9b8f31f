package rxm

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// fabric is an opened rxm fabric (struct fid_fabric; C's struct
// rxm_fabric): the core provider's fabric beneath it, and the parameters
// as they were when it opened. kit.Fabric counts the domains and event
// queues opened on it, gives Close its fi.EBUSY rule and opens rxm's own
// event queues. Safe for concurrent use.
type fabric struct {
	prov   *provider
	core   fi.Fabric
	params params
	// connTimeout bounds a series of refused connection attempts: the
	// core fabric's ConnTimeout when it has one, else
	// defaultConnTimeout.
	connTimeout time.Duration
	kit.Fabric[epSet]
}

// connTimeouter is a core fabric that says how long a connection attempt
// may take (tcp's FI_TCP_CONN_TIMEOUT).
type connTimeouter interface{ ConnTimeout() time.Duration }

// defaultConnTimeout bounds a series of refused connection attempts when
// the core fabric does not say (no ConnTimeout method): 30 s, the tcp
// provider's default FI_TCP_CONN_TIMEOUT. A variable for the tests.
var defaultConnTimeout = 30 * time.Second

// coreConnTimeout returns the connect timeout of core: its ConnTimeout
// if it has one and it is positive, else defaultConnTimeout.
func coreConnTimeout(core fi.Fabric) time.Duration {
	if ct, ok := core.(connTimeouter); ok {
		if d := ct.ConnTimeout(); d > 0 {
			return d
		}
	}
	return defaultConnTimeout
}

// fabric is a fabric with rxm's event queues (kit.Fabric's).
var _ interface {
	fi.Fabric
	eq.EQOpener
} = (*fabric)(nil)

// Close closes the fabric (fi_close), then the core's: fi.EBUSY while
// rxm domains or event queues are open, fi.EBADF once closed. An error of
// the core's close comes back after the rxm fabric has closed.
func (f *fabric) Close() error { return closeOver(f.CloseWith, f.core, f.Prov(), "fabric") }

// closeOver closes an rxm object through closeWith (its kit base's
// CloseWith), closing the core's object beneath as the teardown; the
// core's error, if any, comes back wrapped, the rxm object closed.
func closeOver(closeWith func(teardown func()) error, core fi.Fid, prov, what string) error {
	var cerr error
	if err := closeWith(func() { cerr = core.Close() }); err != nil {
		return err
	}
	return errors.Wrapf(cerr, "%s: close %s: core %s", prov, what, what)
}

// OpenDomain opens an rxm domain of the fabric for info, an entry rxm's
// GetInfo returned (fi_domain(3); C's rxm_domain_open): the core's domain
// for the core entry that rxm's hints for info select (coreHints), and
// rxm's own objects over it.
func (f *fabric) OpenDomain(info *fi.Info) (fi.Domain, error) {
	d := &domain{fabric: f}
	if err := d.Init(&f.Fabric, info, nil); err != nil {
		return nil, err
	}
	if info.Caps&fi.CapAtomic != 0 {
		d.atomicMRs = kit.NewMRTable(info.DomainAttr.MRMode)
	}
	ci, err := f.coreEntry(info)
	if err == nil {
		d.coreInfo = ci
		d.core, err = f.core.OpenDomain(ci)
		err = errors.Wrapf(err, "%s: open domain: core provider %s", f.Prov(), f.prov.core.Name())
	}
	if err != nil {
		_ = d.Domain.Close()
		return nil, err
	}
	return d, nil
}

// coreEntry returns the core provider's FI_EP_MSG entry for an rxm
// domain of info: the first GetInfo returns for the hints rxm derives from
// info, which carry its addresses, fabric and domain names.
func (f *fabric) coreEntry(info *fi.Info) (*fi.Info, error) {
	h := coreHints(info, f.params, f.Prov())
	infos, err := f.prov.core.GetInfo(context.Background(), "", "", 0, h)
	if err != nil {
		return nil, err
	}
	for _, in := range infos {
		if in != nil && in.EPAttr != nil && in.EPAttr.Type == fi.EPTypeMsg {
			return in, nil
		}
	}
	return nil, errors.Wrapf(fi.ENODATA, "no FI_EP_MSG entry for domain %q", info.DomainAttr.Name)
}
