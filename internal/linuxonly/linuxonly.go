// Package linuxonly is the stand-in that a provider which runs on Linux
// only registers on other systems: a provider of the same name and
// version that offers nothing, so that the API compiles on every OS and
// GetInfo's fi.ENODATA names the provider and says why.
package linuxonly

import (
	"context"
	"runtime"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Register registers the stand-in for provider name of version v (fi.Register).
func Register(name string, v fi.Version) { fi.Register(provider{name, v}) }

// provider is a stand-in (struct fi_provider) that declines everything.
type provider struct {
	name    string
	version fi.Version
}

var _ fi.Provider = provider{}

// Name returns the provider's name.
func (p provider) Name() string { return p.name }

// Version returns the version the provider has on Linux.
func (p provider) Version() fi.Version { return p.version }

// GetInfo declines (fi_getinfo) with ENODATA: "tcp: available on Linux
// only (this is darwin/arm64)", with a hint.
func (p provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	return nil, p.unavailable("")
}

// OpenFabric opens a fabric (fi_fabric): there is none on this system.
func (p provider) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	return nil, p.unavailable("open fabric: ")
}

// unavailable is ENODATA saying that the provider needs Linux, with the
// advice as a hint; op, if not empty, names the call.
func (p provider) unavailable(op string) error {
	return errors.WithHint(
		errors.Wrapf(fi.ENODATA, "%s: %savailable on Linux only (this is %s/%s)", p.name, op, runtime.GOOS, runtime.GOARCH),
		"run the program on Linux (a VM or container will do) to use the "+p.name+" provider; elsewhere gofabric's API compiles but offers no transport")
}
