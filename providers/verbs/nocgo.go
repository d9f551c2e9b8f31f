//go:build !verbs || !cgo

package verbs

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// GetInfo declines (fi_getinfo) with ENODATA: the build has no RDMA
// support; the reason's hint says how to get it.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	return nil, declined(offerReason(), rebuildHint)
}

// OpenFabric opens a fabric (fi_fabric): there is none in this build.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	return nil, errors.WithHint(errors.Wrapf(fi.ENODATA, "verbs: open fabric: %s", offerReason()), rebuildHint)
}

// offerReason says why a build without the verbs tag offers nothing.
func offerReason() string {
	return "built without RDMA support (it needs cgo and the build tag 'verbs')"
}

// rebuildHint says how to build with RDMA support.
const rebuildHint = "rebuild with CGO_ENABLED=1 and -tags verbs (go build -tags verbs; needs libibverbs-dev and librdmacm-dev)"
