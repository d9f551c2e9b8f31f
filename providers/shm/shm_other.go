//go:build !linux

package shm

import (
	"context"
	"runtime"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// The shm provider runs on Linux only: its peers attach to each other's
// memory with process_vm_readv and process_vm_writev and share regions in
// /dev/shm. Elsewhere the package registers a provider of the same name that
// offers nothing, so that the API compiles on every OS and GetInfo's ENODATA
// names "shm" and says why.

// provider is the stand-in for the shm provider (struct fi_provider
// "shm") on systems other than Linux.
type provider struct{}

func init() { fi.Register(provider{}) }

var _ fi.Provider = provider{}

// Name returns "shm".
func (provider) Name() string { return "shm" }

// Version returns the C provider's version, 117.0, as on Linux.
func (provider) Version() fi.Version { return fi.MakeVersion(117, 0) }

// GetInfo declines (fi_getinfo) with ENODATA: "shm: available on Linux
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
		errors.Wrapf(fi.ENODATA, "shm: %savailable on Linux only (this is %s/%s)", op, runtime.GOOS, runtime.GOARCH),
		"run the program on Linux (a VM or container will do) to use the shm provider; elsewhere gofabric's API compiles but offers no transport")
}
