package shm

import "github.com/gofabric/gofabric/fi"

// paramDisableCMA is C's FI_SHM_DISABLE_CMA: large messages and RMA then
// always go through the bounce buffers (and inline pieces).
var paramDisableCMA = fi.DefineParam(provName, "disable_cma", fi.ParamBool,
	"Do not use cross-memory attach (process_vm_readv/writev); copy large messages through shared bounce buffers (default: no)")

// cmaDisabled reads FI_SHM_DISABLE_CMA.
func cmaDisabled() bool {
	b, err := paramDisableCMA.Bool()
	return err == nil && b
}
