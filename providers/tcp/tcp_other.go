//go:build !linux

package tcp

import (
	"context"
	"runtime"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// The tcp provider runs on Linux only: it drives its sockets through epoll
// and Linux's socket options. Elsewhere the package registers a provider of
// the same name that offers nothing, so that the API compiles on every OS
// and GetInfo's ENODATA names "tcp" and says why.

// provider is the stand-in for the tcp provider (struct fi_provider
// "tcp") on systems other than Linux.
type provider struct{}

func init() { fi.Register(provider{}) }

var _ fi.Provider = provider{}

// Name returns "tcp".
func (provider) Name() string { return "tcp" }

// Version returns the C provider's version, 117.0, as on Linux.
func (provider) Version() fi.Version { return fi.MakeVersion(117, 0) }

// GetInfo declines (fi_getinfo) with ENODATA: "tcp: available on Linux
// only (this is darwin/arm64)", with a hint.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	return nil, unavailable("")
}

// OpenFabric opens a fabric (fi_fabric): there is none on this system.
func (provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	return nil, unavailable("open fabric: ")
}

// unavailable is ENODATA saying that the provider needs Linux, with the
// advice as a hint; op, if not empty, names the call.
func unavailable(op string) error {
	return errors.WithHint(
		errors.Wrapf(fi.ENODATA, "tcp: %savailable on Linux only (this is %s/%s)", op, runtime.GOOS, runtime.GOARCH),
		"run the program on Linux (a VM or container will do) to use the tcp provider; elsewhere gofabric's API compiles but offers no transport")
}
