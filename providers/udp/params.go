//go:build linux

package udp

import "github.com/gofabric/gofabric/fi"

// paramIface is the provider's one environment variable
// (fi_param_define(3); fi_info -e lists it), FI_UDP_IFACE, which means
// what it means to the C provider.
var paramIface = fi.DefineParam(provName, "iface", fi.ParamString,
	"Name of the network interface to use, e.g. eth0 (default: every interface that is up)")

// params are the provider's settings, read from the environment by
// loadParams when GetInfo runs and when a fabric opens.
type params struct {
	// iface restricts the provider to one interface (FI_UDP_IFACE); empty
	// means every interface that is up.
	iface string
}

// loadParams reads the provider's environment variables.
func loadParams() params {
	var p params
	if v, ok := paramIface.Lookup(); ok {
		p.iface = v
	}
	return p
}
