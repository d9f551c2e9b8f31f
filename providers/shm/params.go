//go:build linux

package shm

import (
	"time"

	"github.com/gofabric/gofabric/fi"
)

// paramDisableCMA is C's FI_SHM_DISABLE_CMA: large messages and RMA then
// always go through the bounce buffers (and inline pieces).
var paramDisableCMA = fi.DefineParam(provName, "disable_cma", fi.ParamBool,
	"Do not use cross-memory attach (process_vm_readv/writev); copy large messages through shared bounce buffers (default: no)")

// paramCheckInterval is gofabric's FI_SHM_CHECK_INTERVAL: how long a
// reader blocked in SRead or a counter Wait sleeps at most before it
// checks the endpoints' peers (checkPeers).
var paramCheckInterval = fi.DefineParam(provName, "check_interval", fi.ParamInt,
	"Milliseconds a blocked reader (fi_cq_sread, fi_cntr_wait) sleeps at most before it checks for dead peers and broken inboxes (gofabric only; default: 1000)")

// cmaDisabled reads FI_SHM_DISABLE_CMA.
func cmaDisabled() bool {
	b, err := paramDisableCMA.Bool()
	return err == nil && b
}

// Check intervals.
const (
	// defaultCheckInterval is FI_SHM_CHECK_INTERVAL's default.
	defaultCheckInterval = time.Second
	// checkEvery is how often a polling endpoint checks its peers.
	checkEvery = 100 * time.Millisecond
)

// checkInterval reads FI_SHM_CHECK_INTERVAL; values below 10 ms count as
// 10 ms.
func checkInterval() time.Duration {
	ms, err := paramCheckInterval.Int()
	if err != nil || ms <= 0 {
		return defaultCheckInterval
	}
	return max(time.Duration(ms)*time.Millisecond, 10*time.Millisecond)
}
