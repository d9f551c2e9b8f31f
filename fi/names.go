package fi

import "strings"

// CoreProviderName returns the core provider of a layered name: "tcp" for
// "tcp;ofi_rxm", and name itself when it is not layered.
func CoreProviderName(name string) string {
	core, _, _ := strings.Cut(name, ";")
	return core
}
