package kit

import (
	"cmp"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Provider is the base of a provider's fi.Provider (struct fi_provider):
// its name and version. A provider embeds it and adds GetInfo and
// OpenFabric:
//
//	type provider struct{ kit.Provider }
//
//	func init() {
//		fi.Register(provider{kit.Provider{ProvName: "tcp", ProvVersion: fi.MakeVersion(117, 0)}})
//	}
type Provider struct {
	// ProvName is the registered name (fi_provider.name), libfabric's
	// where one exists ("tcp").
	ProvName string
	// ProvVersion is fi_provider.version.
	ProvVersion fi.Version
}

// Name returns ProvName (fi_provider.name).
func (p Provider) Name() string { return p.ProvName }

// Version returns ProvVersion (fi_provider.version).
func (p Provider) Version() fi.Version { return p.ProvVersion }

// Declined is a GetInfo answer of provider prov that offers nothing:
// fi.ENODATA with the one reason (and the advice, if hint is not empty)
// that fi.GetInfo reports for the provider when no provider matches
// (fi_getinfo's -FI_ENODATA, with the why that libfabric only logs).
func Declined(prov, reason, hint string) error {
	return &fi.NoMatchError{Reasons: []fi.ProviderReason{{Provider: prov, Reason: reason, Hint: hint}}}
}

// AlterInfo gives a GetInfo result the queue sizes and default operation
// flags the hints ask for, as C's ofi_alter_info does: the hints'
// tx_attr.size and rx_attr.size, def for those they leave 0, and the
// hints' tx_attr.op_flags and rx_attr.op_flags, none without them. (C
// keeps its entries' own op flags for NULL hints; a result that carries
// none gives endpoints that are neither all FI_INJECT nor deeper than the
// default.) It is for results matched against an entry whose sizes are
// the provider's maxima and whose op flags are those it takes, so that
// MatchInfo declined what exceeds them. in must have TxAttr and RxAttr.
func AlterInfo(in, hints *fi.Info, def int) {
	var tx fi.TxAttr
	var rx fi.RxAttr
	if hints != nil && hints.TxAttr != nil {
		tx = *hints.TxAttr
	}
	if hints != nil && hints.RxAttr != nil {
		rx = *hints.RxAttr
	}
	in.TxAttr.Size, in.RxAttr.Size = cmp.Or(tx.Size, def), cmp.Or(rx.Size, def)
	in.TxAttr.OpFlags, in.RxAttr.OpFlags = tx.OpFlags, rx.OpFlags
}

// QueueSizes returns the transmit and receive queue depths of an
// endpoint that provider prov opens (fi_endpoint) for info: its
// tx_attr.size and rx_attr.size, def for 0; beyond maxTx or maxRx, or
// negative, fi.EINVAL ("shm: open endpoint: tx size 2048 not supported
// (1 to 1024)").
func QueueSizes(prov string, info *fi.Info, maxTx, maxRx, def int) (tx, rx int, err error) {
	tx, rx = def, def
	if info.TxAttr != nil {
		tx = cmp.Or(info.TxAttr.Size, def)
	}
	if info.RxAttr != nil {
		rx = cmp.Or(info.RxAttr.Size, def)
	}
	switch {
	case tx < 0 || tx > maxTx:
		return 0, 0, errors.Wrapf(fi.EINVAL, "%s: open endpoint: tx size %d not supported (1 to %d)", prov, tx, maxTx)
	case rx < 0 || rx > maxRx:
		return 0, 0, errors.Wrapf(fi.EINVAL, "%s: open endpoint: rx size %d not supported (1 to %d)", prov, rx, maxRx)
	}
	return tx, rx, nil
}
