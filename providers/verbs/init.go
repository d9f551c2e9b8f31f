package verbs

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// provName is the provider's registered name, libfabric's.
const provName = "verbs"

// provVersion is the version the C provider of libfabric 1.17 reports
// (fi_info: "version: 117.0").
var provVersion = fi.MakeVersion(117, 0)

// provider is the verbs provider (struct fi_provider "verbs"); kit.Provider
// gives its name, "verbs", and the C provider's version, 117.0.
type provider struct{ kit.Provider }

func init() { fi.Register(provider{kit.Provider{ProvName: provName, ProvVersion: provVersion}}) }

var _ fi.Provider = provider{}

// declined is GetInfo's ENODATA with one reason and the advice, if any,
// that goes with it.
func declined(reason, hint string) error { return kit.Declined(provName, reason, hint) }
