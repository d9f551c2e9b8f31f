//go:build verbs && cgo

package all

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/rxm"
	_ "github.com/gofabric/gofabric/providers/verbs" // registers verbs first
)

// init registers rxm over verbs as "verbs;ofi_rxm", C's name for its
// ofi_rxm layered on verbs (fi_rxm(7)): FI_EP_RDM endpoints over the RDMA
// device's connected queue pairs. Only builds with the verbs tag have it:
// without the tag verbs offers nothing, and neither would rxm over it.
// rxm over tcp (tcp;ofi_rxm) is registered by providers/tcp itself.
func init() {
	if v, ok := fi.LookupProvider("verbs"); ok {
		fi.Register(rxm.Over(v, "verbs;ofi_rxm"))
	}
}
