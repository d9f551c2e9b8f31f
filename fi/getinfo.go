package fi

import (
	"context"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// getInfoFlags are the flags fi_getinfo(3) takes.
const getInfoFlags = FlagSource | FlagNumericHost | FlagProvAttrOnly

// Prioritizer is an optional interface of a [Provider]. GetInfo asks
// providers in decreasing Priority order, so that their entries come first
// in its result; a provider without the method has priority 0. Providers of
// equal priority keep the order they are given in (by name for the
// registry). libfabric has no such call: it orders providers by load order;
// here a provider for faster hardware (verbs) can place itself before the
// socket providers.
type Prioritizer interface {
	Priority() int
}

// LookupProvider returns the registered provider of the given name (a core
// name such as "tcp", not a layered one), like fi_getinfo's search of its
// provider list.
func LookupProvider(name string) (Provider, bool) { return lookupProvider(name) }

// ProvNameMatches reports whether sel, a provider name as in
// fi_fabric_attr.prov_name hints or an FI_PROVIDER entry, selects the
// provider name name. A layered selector ("tcp;ofi_rxm") selects only that
// layering; a plain one selects every name that has it as a component:
// "tcp" selects "tcp" and "tcp;ofi_rxm", "ofi_rxm" selects "tcp;ofi_rxm" and
// "verbs;ofi_rxm". Names compare without regard to case; an empty selector
// selects everything.
func ProvNameMatches(sel, name string) bool {
	if sel == "" {
		return true
	}
	if strings.Contains(sel, ";") {
		return strings.EqualFold(sel, name)
	}
	for c := range strings.SplitSeq(name, ";") {
		if strings.EqualFold(sel, c) {
			return true
		}
	}
	return false
}

// UtilityPrefix begins the registered name of every utility provider
// ("ofi_rxm"), as in libfabric (OFI_UTIL_PREFIX).
const UtilityPrefix = "ofi_"

// IsUtilityProvider reports whether name, a registered provider's name,
// is a utility provider's: a plain name (no ';') that begins with
// UtilityPrefix, in any case, as libfabric tells them apart. A utility
// layers over core providers and names its entries "<core>;<utility>"
// ("tcp;ofi_rxm"); GetInfo asks it under every FI_PROVIDER list and hints
// prov name that does not exclude it by name.
func IsUtilityProvider(name string) bool {
	return len(name) > len(UtilityPrefix) && !strings.Contains(name, ";") &&
		strings.EqualFold(name[:len(UtilityPrefix)], UtilityPrefix)
}

// provFilter is a parsed FI_PROVIDER or FI_LOG_PROV value.
type provFilter struct {
	raw    string   // the variable's value, for messages
	names  []string // the listed names; none means no filtering
	negate bool     // the list started with '^': it names what to leave out
}

func parseProvFilter(s string) provFilter {
	f := provFilter{raw: s}
	s = strings.TrimSpace(s)
	s, f.negate = strings.CutPrefix(s, "^")
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.names = append(f.names, n)
		}
	}
	return f
}

// allows reports whether the filter lets the provider name through.
func (f provFilter) allows(name string) bool {
	if len(f.names) == 0 {
		return true
	}
	return slices.ContainsFunc(f.names, func(sel string) bool { return ProvNameMatches(sel, name) }) != f.negate
}

// mayAllow reports whether the filter may let any entry of the provider
// named name through; known holds the lower-case names of all candidate
// providers. A plain name that is no provider's is taken for a utility
// layer ("ofi_rxm") that any provider may offer. A utility provider
// (IsUtilityProvider) is left out only by an exclusion of its name: a
// positive filter selects the cores it may layer over, and filterInfos
// keeps those of its entries the filter selects (C's fi_getinfo: positive
// FI_PROVIDER filters apply to core providers only).
func (f provFilter) mayAllow(name string, known map[string]bool) bool {
	if len(f.names) == 0 {
		return true
	}
	core := CoreProviderName(name) // a registered layering ("tcp;hook") has its core's entries
	if f.negate {
		return !slices.ContainsFunc(f.names, func(sel string) bool { return strings.EqualFold(sel, core) })
	}
	if IsUtilityProvider(name) {
		return true
	}
	return slices.ContainsFunc(f.names, func(sel string) bool {
		if strings.Contains(sel, ";") {
			return strings.EqualFold(CoreProviderName(sel), core)
		}
		return strings.EqualFold(sel, core) || !known[strings.ToLower(sel)]
	})
}

// declined is the reason a filter gives for leaving a provider out.
func (f provFilter) declined(what string) string {
	if f.negate {
		return "excluded by " + what
	}
	return "not selected by " + what
}

// ProviderReason is why one provider returned nothing from GetInfo.
type ProviderReason struct {
	// Provider is the provider's name (layered where the reason is about a
	// layering).
	Provider string
	// Reason says why, e.g. "ep type FI_EP_DGRAM not supported" or
	// "excluded by FI_PROVIDER=^shm".
	Reason string
	// Hint is advice for the user, when there is some: what to change so
	// that the provider answers ("rebuild with the build tag 'verbs'",
	// "set hints.Mode"). GetInfo attaches it to its error with
	// errors.WithHint, so errors.GetAllHints and errors.FlattenHints of
	// cockroachdb/errors find it.
	Hint string
	// Err is the error the provider returned, when it returned one that
	// is not a *NoMatchError; nil otherwise. Its own hints, if any, are
	// attached to GetInfo's error too.
	Err error
}

// String returns "provider: reason".
func (r ProviderReason) String() string { return r.Provider + ": " + r.Reason }

// NoMatchError is the error of a GetInfo that found nothing: fi_getinfo's
// -FI_ENODATA with the reason each provider declined. It unwraps to
// ENODATA. Providers (through kit.MatchInfo) return one too; GetInfo
// merges their reasons into its own.
type NoMatchError struct {
	Reasons []ProviderReason
}

// Error returns "fi: getinfo: no provider matched: " and the reasons,
// separated by "; ".
func (e *NoMatchError) Error() string {
	var b strings.Builder
	b.WriteString("fi: getinfo: no provider matched")
	if len(e.Reasons) == 0 {
		b.WriteString(": no providers")
	}
	for i, r := range e.Reasons {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// Unwrap returns ENODATA.
func (e *NoMatchError) Unwrap() error { return ENODATA }

// GetInfo returns the fabric services available through the registered
// providers that reach node and service and satisfy hints, best first
// (fi_getinfo(3)). It is [GetInfoFrom] over the registered providers, in
// name order before priorities apply.
func GetInfo(ctx context.Context, node, service string, flags Flags, hints *Info) ([]*Info, error) {
	return GetInfoFrom(ctx, registered(), node, service, flags, hints)
}

// GetInfoFrom is GetInfo over an explicit list of providers instead of the
// registry, for tests and embedders, as sql.OpenDB is to sql.Open.
//
// Node, service and hints follow fi_getinfo(3): zero hints are wildcards
// except Mode (zero means the application supports no mode bits), nil
// hints ask for everything, and flags may hold FlagSource (node and service
// name the local address; one of them must be set), FlagNumericHost (node
// must be a numeric address) and FlagProvAttrOnly (one default Info per
// provider with only FabricAttr.ProvName and ProvVersion set; providers are
// not asked). Other flags give EBADFLAGS and bad combinations EINVAL. A node
// that is an FI_ADDR_STR URI, or any node when hints.AddrFormat is
// FormatStr, takes no service.
//
// Providers are asked in decreasing [Prioritizer] priority, ties in the
// order given, and their entries are concatenated, each provider's in its
// own order. The FI_PROVIDER environment variable, read on every call,
// selects providers as in libfabric: a comma-separated list of names to
// use, or, starting with '^', of names to leave out; hints.FabricAttr.ProvName
// selects too. Both match entry provider names as [ProvNameMatches] does,
// so "tcp" keeps "tcp;ofi_rxm" entries and "tcp;ofi_rxm" keeps only those.
// A provider whose entries none of them could select is not asked; a
// utility provider ([IsUtilityProvider], "ofi_rxm") is asked under every
// list of names (they select the cores it layers over, as in libfabric),
// and left out only by an exclusion of its own name ("^ofi_rxm").
//
// When nothing matches, the error has a *NoMatchError (ENODATA) in its
// chain that gives each provider's reason; the advice that goes with the
// reasons is attached with errors.WithHint (cockroachdb/errors'
// GetAllHints finds it): the hints of the providers' reasons and errors,
// how to register a provider when none is, and what left every provider
// out when FI_PROVIDER or hints.FabricAttr.ProvName did. A done ctx stops
// the search between providers with fi.ContextError's error (ECANCELED or
// ETIMEDOUT, and the context's own error).
func GetInfoFrom(ctx context.Context, provs []Provider, node, service string, flags Flags, hints *Info) ([]*Info, error) {
	if err := checkGetInfoArgs(node, service, flags, hints); err != nil {
		return nil, err
	}
	provs, err := orderProviders(provs)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(provs))
	for _, p := range provs {
		known[strings.ToLower(p.Name())] = true
	}
	env := parseProvFilter(os.Getenv("FI_PROVIDER"))
	var hintSel provFilter
	if hints != nil && hints.FabricAttr != nil && hints.FabricAttr.ProvName != "" {
		hintSel = provFilter{raw: hints.FabricAttr.ProvName, names: []string{hints.FabricAttr.ProvName}}
	}
	envWhat := "FI_PROVIDER=" + env.raw
	hintWhat := "hints prov name " + strconv.Quote(hintSel.raw)

	log := Logger("core")
	var (
		out     []*Info
		reasons []ProviderReason
		// filtered counts the reasons that are a filter's.
		filtered int
	)
	for _, p := range provs {
		if err := ContextError(ctx); err != nil {
			return nil, errors.Wrap(err, "fi: getinfo")
		}
		name := p.Name()
		switch {
		case !env.mayAllow(name, known):
			reasons = append(reasons, ProviderReason{Provider: name, Reason: env.declined(envWhat)})
			filtered++
			continue
		case !hintSel.mayAllow(name, known):
			reasons = append(reasons, ProviderReason{Provider: name, Reason: hintSel.declined(hintWhat)})
			filtered++
			continue
		case flags&FlagProvAttrOnly != 0:
			info := (*Info)(nil).Clone()
			info.FabricAttr.ProvName = name
			info.FabricAttr.ProvVersion = p.Version()
			out = append(out, info)
			continue
		}
		infos, err := p.GetInfo(ctx, node, service, flags, hints)
		if err != nil {
			if cerr := ContextError(ctx); cerr != nil {
				return nil, errors.Wrap(cerr, "fi: getinfo")
			}
			if Code(err) == ENODATA {
				log.Info("getinfo: provider declined", "provider", name, "err", err)
			} else {
				log.Warn("getinfo: provider failed", "provider", name, "err", err)
			}
			reasons = appendReasons(reasons, name, err)
			continue
		}
		kept, reason, byFilter := filterInfos(p, infos, env, envWhat, hintSel, hintWhat)
		if len(kept) == 0 {
			reasons = append(reasons, ProviderReason{Provider: name, Reason: reason})
			if byFilter {
				filtered++
			}
		}
		out = append(out, kept...)
	}
	if len(out) == 0 {
		var filters []string
		if len(env.names) > 0 {
			filters = append(filters, envWhat)
		}
		if len(hintSel.names) > 0 {
			filters = append(filters, hintWhat)
		}
		return nil, noMatch(provs, reasons, filtered, strings.Join(filters, " and "))
	}
	return out, nil
}

// noMatch returns GetInfo's error when nothing matched: a NoMatchError of
// reasons with their hints attached, and advice of its own when no
// provider is registered, or when filtered of the reasons, all of them,
// are those of filters (FI_PROVIDER, hints prov name).
func noMatch(provs []Provider, reasons []ProviderReason, filtered int, filters string) error {
	var err error = &NoMatchError{Reasons: reasons}
	var hints []string
	add := func(h string) {
		if h != "" && !slices.Contains(hints, h) {
			hints = append(hints, h)
		}
	}
	switch {
	case len(provs) == 0:
		add(`no provider is registered: import one for its side effect, as in import _ "github.com/gofabric/gofabric/providers/all"`)
	case filtered == len(reasons) && filters != "":
		names := make([]string, len(provs))
		for i, p := range provs {
			names[i] = p.Name()
		}
		add(filters + " left out every provider: name one of the registered providers (" +
			strings.Join(names, ", ") + "), or unset FI_PROVIDER and hints.FabricAttr.ProvName to ask them all")
	}
	for _, r := range reasons {
		add(r.Hint)
		if r.Err != nil {
			for _, h := range errors.GetAllHints(r.Err) {
				add(h)
			}
		}
	}
	for _, h := range hints {
		err = errors.WithHint(err, h)
	}
	return err
}

// checkGetInfoArgs validates GetInfo's arguments.
func checkGetInfoArgs(node, service string, flags Flags, hints *Info) error {
	if bad := flags &^ getInfoFlags; bad != 0 {
		return wrapf(EBADFLAGS, "fi: getinfo: flags %v are not getinfo flags (want FI_SOURCE, FI_NUMERICHOST, FI_PROV_ATTR_ONLY)", bad)
	}
	if flags&FlagSource != 0 && node == "" && service == "" {
		return wrapf(EINVAL, "fi: getinfo: FI_SOURCE needs a node or a service")
	}
	strNode := strings.Contains(node, "://") || (node != "" && hints != nil && hints.AddrFormat == FormatStr)
	if strNode && service != "" {
		return wrapf(EINVAL, "fi: getinfo: node %q is an address string and takes no service (got %q)", node, service)
	}
	if flags&FlagNumericHost != 0 && node != "" && !strNode {
		if _, err := netip.ParseAddr(node); err != nil {
			return wrapf(EINVAL, "fi: getinfo: FI_NUMERICHOST set but node %q is not a numeric address", node)
		}
	}
	if hints == nil {
		return nil
	}
	for _, a := range []struct {
		what string
		b    []byte
	}{{"src", hints.SrcAddr}, {"dest", hints.DestAddr}} {
		if len(a.b) == 0 {
			continue
		}
		switch hints.AddrFormat {
		case FormatSockaddr, FormatSockaddrIn, FormatSockaddrIn6:
			_, f, err := AddrPortFromSockaddr(a.b)
			if err != nil {
				return errors.Wrapf(err, "fi: getinfo: hints %s addr", a.what)
			}
			if hints.AddrFormat != FormatSockaddr && f != hints.AddrFormat {
				return wrapf(EINVAL, "fi: getinfo: hints %s addr is %v, not %v", a.what, f, hints.AddrFormat)
			}
		}
	}
	return nil
}

// orderProviders checks provs and returns them sorted by decreasing
// priority, ties in the given order.
func orderProviders(provs []Provider) ([]Provider, error) {
	seen := make(map[string]bool, len(provs))
	for i, p := range provs {
		if p == nil {
			return nil, wrapf(EINVAL, "fi: getinfo: provider %d is nil", i)
		}
		if seen[p.Name()] {
			return nil, wrapf(EINVAL, "fi: getinfo: provider %q listed twice", p.Name())
		}
		seen[p.Name()] = true
	}
	provs = slices.Clone(provs)
	slices.SortStableFunc(provs, func(a, b Provider) int { return priority(b) - priority(a) })
	return layeringsFirst(provs), nil
}

// layeringsFirst moves each registered layering ("tcp;ofi_rxm") to just
// before its core provider ("tcp") when that is in provs too, keeping
// the order otherwise: libfabric lists a utility provider's entries
// before those of the core it layers over.
func layeringsFirst(provs []Provider) []Provider {
	names := make(map[string]bool, len(provs))
	for _, p := range provs {
		names[strings.ToLower(p.Name())] = true
	}
	moved := func(p Provider) bool {
		n := p.Name()
		return strings.Contains(n, ";") && names[strings.ToLower(CoreProviderName(n))]
	}
	out := make([]Provider, 0, len(provs))
	for _, p := range provs {
		if moved(p) {
			continue
		}
		for _, l := range provs {
			if moved(l) && strings.EqualFold(CoreProviderName(l.Name()), p.Name()) {
				out = append(out, l)
			}
		}
		out = append(out, p)
	}
	return out
}

func priority(p Provider) int {
	if pp, ok := p.(Prioritizer); ok {
		return pp.Priority()
	}
	return 0
}

// appendReasons adds the reasons of a provider's GetInfo error.
func appendReasons(reasons []ProviderReason, name string, err error) []ProviderReason {
	var nm *NoMatchError
	if !errors.As(err, &nm) {
		msg := strings.TrimSuffix(err.Error(), ": "+Code(err).Error())
		msg = strings.TrimPrefix(msg, name+": ")
		return append(reasons, ProviderReason{Provider: name, Reason: msg, Err: err})
	}
	if len(nm.Reasons) == 0 {
		return append(reasons, ProviderReason{Provider: name, Reason: "no entry matched"})
	}
	for _, r := range nm.Reasons {
		if r.Provider == "" {
			r.Provider = name
		}
		if !slices.ContainsFunc(reasons, func(o ProviderReason) bool { return o.Provider == r.Provider && o.Reason == r.Reason }) {
			reasons = append(reasons, r)
		}
	}
	return reasons
}

// filterInfos fills in the provider fields of a provider's entries and
// keeps those the filters select; when none is kept it says why, and
// whether a filter left them out.
func filterInfos(p Provider, infos []*Info, env provFilter, envWhat string, hintSel provFilter, hintWhat string) ([]*Info, string, bool) {
	kept := infos[:0:0]
	var envOut, hintOut []string
	for _, info := range infos {
		if info == nil {
			continue
		}
		if info.FabricAttr == nil {
			info.FabricAttr = &FabricAttr{}
		}
		if info.FabricAttr.ProvName == "" {
			info.FabricAttr.ProvName = p.Name()
		}
		if info.FabricAttr.ProvVersion == 0 {
			info.FabricAttr.ProvVersion = p.Version()
		}
		pn := info.FabricAttr.ProvName
		switch {
		case !env.allows(pn):
			if !slices.Contains(envOut, pn) {
				envOut = append(envOut, pn)
			}
		case !hintSel.allows(pn):
			if !slices.Contains(hintOut, pn) {
				hintOut = append(hintOut, pn)
			}
		default:
			kept = append(kept, info)
		}
	}
	switch {
	case len(kept) > 0:
		return kept, "", false
	case len(envOut) > 0:
		return nil, "entries " + strings.Join(envOut, ", ") + " " + env.declined(envWhat), true
	case len(hintOut) > 0:
		return nil, "entries " + strings.Join(hintOut, ", ") + " " + hintSel.declined(hintWhat), true
	}
	return nil, "returned no entries", false
}
