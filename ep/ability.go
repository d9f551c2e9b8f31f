package ep

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// The optional abilities of an endpoint, found without a type assertion
// that panics (x.(ep.CM) on an shm endpoint): each As function returns
// the ability, or an error that says why the endpoint does not have it:
// fi.ENOSYS when its provider does not implement the ability at all, or
// when the endpoint was opened without the capability that enables it
// (its Info's caps lack FI_MSG, FI_TAGGED, FI_RMA, FI_ATOMIC or
// FI_MULTICAST, or it is not an FI_EP_MSG endpoint for connection
// management), as libfabric's fi_no_* operations answer -FI_ENOSYS.

// AsMsg returns x's fi_msg(3) ability.
func AsMsg(x Endpoint) (Msg, error) { return as[Msg](x, "fi_msg(3)", fi.CapMsg) }

// AsTagged returns x's fi_tagged(3) ability.
func AsTagged(x Endpoint) (Tagged, error) { return as[Tagged](x, "fi_tagged(3)", fi.CapTagged) }

// AsRMA returns x's fi_rma(3) ability.
func AsRMA(x Endpoint) (RMA, error) { return as[RMA](x, "fi_rma(3)", fi.CapRMA) }

// AsAtomic returns x's fi_atomic(3) ability.
func AsAtomic(x Endpoint) (Atomic, error) { return as[Atomic](x, "fi_atomic(3)", fi.CapAtomic) }

// AsJoiner returns x's fi_join ability (fi_cm(3), FI_MULTICAST).
func AsJoiner(x Endpoint) (Joiner, error) { return as[Joiner](x, "fi_join", fi.CapMulticast) }

// AsCM returns x's connection management (fi_cm(3)): an FI_EP_MSG
// endpoint's.
func AsCM(x Endpoint) (CM, error) {
	cm, err := as[CM](x, "fi_cm(3)", 0)
	if err != nil {
		return nil, err
	}
	if in := x.Info(); in != nil && in.EPAttr != nil && in.EPAttr.Type != fi.EPTypeMsg && in.EPAttr.Type != fi.EPTypeUnspec {
		return nil, errors.Wrapf(fi.ENOSYS, "ep: fi_cm(3): %s endpoints do not connect (FI_EP_MSG ones do)", in.EPAttr.Type)
	}
	return cm, nil
}

// AsOptions returns x's options (fi_setopt, fi_getopt).
func AsOptions(x Endpoint) (Options, error) { return as[Options](x, "fi_setopt/fi_getopt", 0) }

// as returns x as ability T, named what, which capability enables (0:
// none needed).
func as[T any](x Endpoint, what string, capability fi.Caps) (T, error) {
	var zero T
	if x == nil {
		return zero, errors.Wrapf(fi.EINVAL, "ep: %s: no endpoint", what)
	}
	a, ok := x.(T)
	if !ok {
		return zero, errors.Wrapf(fi.ENOSYS, "ep: %s: %s's endpoints do not implement it", what, provOf(x))
	}
	if in := x.Info(); capability != 0 && in != nil && in.Caps&capability == 0 {
		return zero, errors.Wrapf(fi.ENOSYS, "ep: %s: the endpoint was opened without %v (ask for it in the hints' caps)",
			what, capability)
	}
	return a, nil
}

// provOf names x's provider for messages.
func provOf(x Endpoint) string {
	if in := x.Info(); in != nil && in.FabricAttr != nil && in.FabricAttr.ProvName != "" {
		return in.FabricAttr.ProvName
	}
	return "the provider"
}
