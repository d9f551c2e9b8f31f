package verbs

import (
	"github.com/gofabric/gofabric/fi"
)

// provName is the provider's registered name, libfabric's.
const provName = "verbs"

// provVersion is the version the C provider of libfabric 1.17 reports
// (fi_info: "version: 117.0").
var provVersion = fi.MakeVersion(117, 0)

// provider is the verbs provider (struct fi_provider "verbs").
type provider struct{}

func init() { fi.Register(provider{}) }

var _ fi.Provider = provider{}

// Name returns "verbs".
func (provider) Name() string { return provName }

// Version returns the C provider's version, 117.0.
func (provider) Version() fi.Version { return provVersion }

// declined is GetInfo's ENODATA with one reason and the advice, if any,
// that goes with it.
func declined(reason, hint string) error {
	return &fi.NoMatchError{Reasons: []fi.ProviderReason{{Provider: provName, Reason: reason, Hint: hint}}}
}
