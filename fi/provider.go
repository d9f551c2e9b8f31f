package fi

import (
	"context"
	"slices"
	"sync"
)

// Provider is a fabric provider: the Go form of struct fi_provider. A
// provider package registers one from its init function with [Register];
// applications select it through GetInfo hints or FI_PROVIDER.
//
// Implementations must be safe for concurrent use.
type Provider interface {
	// Name is the provider's registered name, libfabric's where one exists
	// ("tcp", "shm", "verbs", "udp").
	Name() string
	// Version is the provider's version (fi_provider.version).
	Version() Version
	// GetInfo returns the provider's Info entries that satisfy hints, best
	// first, with node, service and flags already validated by [GetInfo]
	// (fi_provider.getinfo). When it offers nothing it returns an error
	// with ENODATA in its chain and a reason in the text.
	GetInfo(ctx context.Context, node, service string, flags Flags, hints *Info) ([]*Info, error)
	// OpenFabric opens the fabric attr names (fi_provider.fabric).
	OpenFabric(attr *FabricAttr) (Fabric, error)
}

// registry holds the registered providers.
var registry struct {
	mu sync.RWMutex // guards m
	m  map[string]Provider
}

// Register makes a provider available to GetInfo and OpenFabric under
// p.Name(). It is meant to be called from a provider package's init, like
// database/sql.Register, and panics if p is nil, its name is empty, or a
// provider of that name is already registered.
//
// A name that begins with UtilityPrefix ("ofi_rxm") registers a utility
// provider, as in libfabric: one that layers over core providers, whose
// entries are named "<core>;<name>". GetInfo asks it whenever FI_PROVIDER
// or the hints' prov name select any provider and do not exclude it by
// name, and OpenFabric hands it the fabrics of the layered names that end
// in its name. A layered name ("tcp;hook") registers one layering of one
// core.
func Register(p Provider) {
	if p == nil {
		panic("fi: Register provider is nil")
	}
	name := p.Name()
	if name == "" {
		panic("fi: Register provider with empty name")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.m[name]; dup {
		panic("fi: Register called twice for provider " + name)
	}
	if registry.m == nil {
		registry.m = make(map[string]Provider)
	}
	registry.m[name] = p
}

// Providers returns the names of the registered providers, sorted.
func Providers() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// registered returns the registered providers sorted by name.
func registered() []Provider {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	ps := make([]Provider, 0, len(registry.m))
	for _, p := range registry.m {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b Provider) int {
		switch {
		case a.Name() < b.Name():
			return -1
		case a.Name() > b.Name():
			return 1
		}
		return 0
	})
	return ps
}

// lookupProvider finds a registered provider by name.
func lookupProvider(name string) (Provider, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	p, ok := registry.m[name]
	return p, ok
}
