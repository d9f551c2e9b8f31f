//go:build verbs && cgo

package verbs

import (
	"fmt"
	"strings"
)

// offerReason says what this build found and why it offers nothing yet.
func offerReason() string {
	devs, err := listDevices()
	switch {
	case err != nil:
		return fmt.Sprintf("no RDMA device: %v", err)
	case len(devs) == 0:
		return "no RDMA device (ibv_get_device_list found none; load a driver, e.g. rdma_rxe for Soft-RoCE)"
	}
	var parts []string
	for _, d := range devs {
		for _, p := range d.ports {
			state := "down"
			if p.active {
				state = "active"
			}
			parts = append(parts, fmt.Sprintf("%s port %d (%s, %s, MTU %d)", d.name, p.num, p.linkLayer, state, p.mtu))
		}
	}
	return "found " + strings.Join(parts, ", ") + "; verbs endpoints are not implemented yet"
}
