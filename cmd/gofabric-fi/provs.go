//go:build cgo && linux

package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/errors"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/shm" // registers shm
	_ "github.com/gofabric/gofabric/providers/tcp" // registers tcp
	_ "github.com/gofabric/gofabric/providers/udp" // registers udp
)

// builtinEnv names the gofabric providers that register under C's name.
const builtinEnv = "GOFABRIC_FI_BUILTIN"

// offered lists the gofabric providers the library offers, in the order
// fi_prov_ini hands them out (verbs is added under its build tag).
var offered = []string{"tcp", "shm", "udp"}

// Core-internal getinfo flags (OFI_GETINFO_INTERNAL, OFI_CORE_PROV_ONLY,
// OFI_GETINFO_HIDDEN, OFI_OFFLOAD_PROV_ONLY: bits 58 to 61), which the
// core passes to providers, e.g. when a utility provider asks for core
// entries.
const (
	coreInternalFlags fi.Flags = 0xf << 58
	coreProvOnly      fi.Flags = 1 << 59
)

// getinfoFlags are the public flags fi_getinfo takes.
const getinfoFlags = fi.FlagSource | fi.FlagNumericHost | fi.FlagProvAttrOnly

// builtinMinor is the minor version of a provider standing in for a
// built-in one: above every 1.17.x release's (revision times 10).
const builtinMinor = 999

// slot is one registered provider: a struct fi_provider of the C side.
type slot struct {
	index int
	// cname is the name C libfabric knows ("gotcp", or "tcp" standing in).
	cname string
	// goName is the gofabric provider's name ("tcp").
	goName  string
	p       fi.Provider
	version fi.Version
	// builtin: the provider stands in for C's of its name and offers only
	// core entries.
	builtin bool
	// util: the slot is C's utility provider ofi_gorxm, gofabric's rxm
	// over the library's core providers (p is a rxmLayers).
	util bool
	log  *slog.Logger
}

// registry holds the plan of fi_prov_ini calls and the slots handed out.
var registry struct {
	mu    sync.Mutex // guards everything below
	plan  []*slot    // nil until the first fi_prov_ini
	next  int        // the next plan entry to hand out
	slots []*slot    // by index: the handed-out slots
}

// nextSlot returns the provider for the next fi_prov_ini call, or nil
// when every provider is registered. self is the library's path.
func nextSlot(self string) *slot {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.plan == nil {
		registry.plan = makePlan(self, os.Getenv(builtinEnv), os.Getenv("FI_PROVIDER_PATH"))
		for _, s := range registry.plan {
			if s.builtin && s.goName == "tcp" {
				noSharedRx()
			}
		}
	}
	if registry.next >= len(registry.plan) || registry.next >= maxSlots {
		return nil
	}
	s := registry.plan[registry.next]
	s.index = registry.next
	registry.next++
	registry.slots = append(registry.slots, s)
	return s
}

// rxmSRXEnv is C ofi_rxm's switch for shared receive contexts, which it
// asks of every core provider whose name contains "tcp" unless told
// otherwise; gofabric's providers have none.
const rxmSRXEnv = "FI_OFI_RXM_USE_SRX"

// noSharedRx turns C ofi_rxm's shared receive contexts off, unless the
// user set the variable, when gofabric's tcp stands in for C's (whose
// ofi_rxm layering would otherwise fail at fi_domain).
func noSharedRx() {
	if _, set := os.LookupEnv(rxmSRXEnv); !set {
		os.Setenv(rxmSRXEnv, "0")
	}
}

// slotAt returns the handed-out slot n, or nil.
func slotAt(n int) *slot {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if n < 0 || n >= len(registry.slots) {
		return nil
	}
	return registry.slots[n]
}

// makePlan returns the providers in the order fi_prov_ini hands them out:
// those the library's file names ask for first, then the others in the
// order of offered. builtins is GOFABRIC_FI_BUILTIN's value, provPath
// FI_PROVIDER_PATH's.
func makePlan(self, builtins, provPath string) []*slot {
	stand := map[string]bool{}
	for n := range strings.SplitSeq(builtins, ",") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			stand[n] = true
		}
	}
	var all []*slot
	for _, name := range offered {
		p, ok := fi.LookupProvider(name)
		if !ok {
			continue
		}
		s := &slot{cname: "go" + name, goName: name, p: p, version: p.Version()}
		if stand[name] {
			s.cname, s.builtin = name, true
			s.version = fi.MakeVersion(s.version.Major(), builtinMinor)
		}
		s.log = fi.Logger(s.cname)
		all = append(all, s)
	}
	if u := rxmSlot(all); u != nil {
		all = append(all, u)
	}
	var plan []*slot
	for _, want := range ownNames(self, provPath) {
		i := slices.IndexFunc(all, func(s *slot) bool {
			return strings.EqualFold(want, s.cname) || strings.EqualFold(want, "go"+s.goName)
		})
		if i >= 0 {
			plan = append(plan, all[i])
			all = slices.Delete(all, i, i+1)
		}
	}
	return append(plan, all...)
}

// ownNames returns the provider names (X of libX-fi.so) of the files in
// the library's own directory and in provPath's directories that are this
// library (the same file, through links).
func ownNames(self, provPath string) []string {
	if self == "" {
		return nil
	}
	st, err := os.Stat(self)
	if err != nil {
		return nil
	}
	dirs := []string{filepath.Dir(self)}
	for d := range strings.SplitSeq(strings.TrimPrefix(provPath, "@"), ":") {
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	var names []string
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, "fi.so") {
				continue
			}
			fst, err := os.Stat(filepath.Join(d, n))
			if err != nil || !os.SameFile(st, fst) {
				continue
			}
			n = strings.TrimSuffix(strings.TrimPrefix(n, "lib"), "fi.so")
			n = strings.TrimSuffix(n, "-")
			if n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// goProvName translates a provider name of C hints (prov_name, possibly
// layered and with excluded names: "gotcp;^ofi_rxm") into gofabric's:
// this provider's C name becomes its gofabric name, excluded names are
// dropped.
func (s *slot) goProvName(cname string) string {
	var parts []string
	for n := range strings.SplitSeq(cname, ";") {
		switch {
		case n == "" || strings.HasPrefix(n, "^"):
		case strings.EqualFold(n, s.cname):
			parts = append(parts, s.goName)
		default:
			if l, ok := s.p.(rxmLayers); ok {
				if c := l.coreNamed(n, true); c != nil {
					n = c.goName
				}
			}
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ";")
}

// rxmUtilName is the C name of the library's utility provider: gofabric's
// rxm (providers/rxm), which C's ofi_rxm would clash with in name. C
// takes a provider whose name starts with "ofi_" for a utility provider:
// it asks it for entries whenever the hints name a core provider or none,
// names its entries "<core>;ofi_gorxm" and opens their fabric through it.
const rxmUtilName = "ofi_gorxm"

// rxmGoName is the utility part of gofabric's name for rxm over a core
// ("tcp;ofi_rxm").
const rxmGoName = "ofi_rxm"

// rxmSlot returns the slot of ofi_gorxm over the core slots that have a
// gofabric rxm layering registered, or nil when none has. A core standing
// in for C's (builtin) is left to C's own ofi_rxm.
func rxmSlot(cores []*slot) *slot {
	var l rxmLayers
	for _, c := range cores {
		if c.builtin {
			continue
		}
		if p, ok := fi.LookupProvider(c.goName + ";" + rxmGoName); ok {
			l.cores = append(l.cores, c)
			l.layers = append(l.layers, p)
		}
	}
	if len(l.cores) == 0 {
		return nil
	}
	return &slot{cname: rxmUtilName, goName: rxmGoName, util: true, p: l, version: l.layers[0].Version(), log: fi.Logger(rxmUtilName)}
}

// rxmLayers is ofi_gorxm's gofabric provider: the rxm layerings
// ("tcp;ofi_rxm") of the library's core slots.
type rxmLayers struct {
	cores  []*slot       // the core slots
	layers []fi.Provider // their layerings, in the same order
}

// Name returns gofabric's name of the utility part.
func (l rxmLayers) Name() string { return rxmGoName }

// Version returns the layerings' version.
func (l rxmLayers) Version() fi.Version { return l.layers[0].Version() }

// coreNamed returns the core slot named n, in C's name or (c false) in
// gofabric's, or nil.
func (l rxmLayers) coreNamed(n string, c bool) *slot {
	for _, s := range l.cores {
		if (c && strings.EqualFold(n, s.cname)) || (!c && strings.EqualFold(n, s.goName)) {
			return s
		}
	}
	return nil
}

// GetInfo returns the entries of the layerings the hints' provider name
// (gofabric's: "tcp", "tcp;ofi_rxm", "ofi_rxm" or none) selects, each
// named by its layering ("tcp;ofi_rxm"); when none has an entry, the
// reasons of all.
func (l rxmLayers) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	sel := ""
	if hints != nil && hints.FabricAttr != nil {
		sel = hints.FabricAttr.ProvName
	}
	var (
		out     []*fi.Info
		reasons []fi.ProviderReason
		last    error
	)
	for i, p := range l.layers {
		core := l.cores[i].goName
		if sel != "" && !strings.EqualFold(sel, p.Name()) && !strings.EqualFold(sel, core) && !strings.EqualFold(sel, rxmGoName) {
			continue
		}
		h := hints.Clone()
		if h == nil {
			h = &fi.Info{}
		}
		if h.FabricAttr == nil {
			h.FabricAttr = &fi.FabricAttr{}
		}
		h.FabricAttr.ProvName = p.Name()
		infos, err := p.GetInfo(ctx, node, service, flags, h)
		if err != nil {
			var nm *fi.NoMatchError
			if errors.As(err, &nm) {
				reasons = append(reasons, nm.Reasons...)
			}
			last = err
			continue
		}
		out = append(out, infos...)
	}
	switch {
	case len(out) > 0:
		return out, nil
	case len(reasons) > 0:
		return nil, &fi.NoMatchError{Reasons: reasons}
	case last != nil:
		return nil, last
	}
	return nil, errors.Wrapf(fi.ENODATA, "%s: getinfo: provider name %q names no core of this library", rxmUtilName, sel)
}

// OpenFabric opens the fabric of the layering attr names ("tcp;ofi_rxm").
func (l rxmLayers) OpenFabric(attr *fi.FabricAttr) (fi.Fabric, error) {
	for _, p := range l.layers {
		if attr != nil && strings.EqualFold(attr.ProvName, p.Name()) {
			return p.OpenFabric(attr)
		}
	}
	name := ""
	if attr != nil {
		name = attr.ProvName
	}
	return nil, errors.Wrapf(fi.EINVAL, "%s: fabric: provider name %q is no layering of this library", rxmUtilName, name)
}

// cProvName is the prov_name C is to see for an entry of gofabric
// provider name g: in getinfo entries, nothing for a core provider's
// (the core fills it) and the core's C name for ofi_gorxm's (the core
// appends ";ofi_gorxm"); in events, the whole C name.
func (s *slot) cProvName(g string, event bool) string {
	if !s.util {
		if event {
			return s.cname
		}
		return ""
	}
	core, _, _ := strings.Cut(g, ";")
	c := s.p.(rxmLayers).coreNamed(core, false)
	if c == nil {
		return ""
	}
	if event {
		return c.cname + ";" + s.cname
	}
	return c.cname
}

// basicMap is what FI_MR_BASIC means since libfabric 1.5 (fi_mr(3)):
// virtual addresses, allocated memory, provider keys.
const basicMap = fi.MRModeVirtAddr | fi.MRModeAllocated | fi.MRModeProvKey

// v1Auto asks mrResult to pick FI_MR_BASIC or FI_MR_SCALABLE.
const v1Auto = fi.MRModeBasic | fi.MRModeScalable

// mrHints splits the MR mode of C hints into gofabric's (which has no
// FI_MR_BASIC and FI_MR_SCALABLE, the registration modes of API 1.0) and
// the v1 mode the entries must report: FI_MR_BASIC or FI_MR_SCALABLE
// asked for in hints (any API), or either for FI_MR_UNSPEC under an API
// before 1.5 (v1Auto); 0 when gofabric's modes apply. ok is false for
// combinations C declines.
func mrHints(api fi.Version, m fi.MRMode) (goMode, report fi.MRMode, ok bool) {
	old := api != 0 && api < fi.MakeVersion(1, 5)
	switch {
	case m == fi.MRModeBasic:
		return basicMap, fi.MRModeBasic, true
	case m == fi.MRModeScalable:
		return 0, fi.MRModeScalable, true
	case m&v1Auto != 0:
		return 0, 0, false
	case old && m != fi.MRModeUnspec:
		return 0, 0, false
	case old:
		return basicMap, v1Auto, true
	}
	return m, 0, true
}

// mrResult returns the v1 mode an entry of gofabric MR mode m reports
// for report (from mrHints), or false when the entry cannot serve it:
// FI_MR_SCALABLE is offset addressing with the application's keys
// (gofabric's mode 0), FI_MR_BASIC needs virtual addresses and provider
// keys.
func mrResult(m, report fi.MRMode) (fi.MRMode, bool) {
	scalable := m == 0
	basic := m&^basicMap == 0 && m&(fi.MRModeVirtAddr|fi.MRModeProvKey) == fi.MRModeVirtAddr|fi.MRModeProvKey
	switch {
	case report == fi.MRModeScalable && scalable, report == v1Auto && scalable:
		return fi.MRModeScalable, true
	case report == fi.MRModeBasic && basic, report == v1Auto && basic:
		return fi.MRModeBasic, true
	}
	return 0, false
}

// mrFromV1 is the gofabric MR mode of an fi_info (from an earlier getinfo)
// that carries a v1 mode.
func mrFromV1(m fi.MRMode) fi.MRMode {
	switch m {
	case fi.MRModeBasic:
		return basicMap
	case fi.MRModeScalable:
		return 0
	}
	return m
}

// getInfo is the provider's fi_getinfo: the gofabric provider's GetInfo
// for flags without the core's internal bits. A provider standing in for
// a built-in one, and every provider asked with OFI_CORE_PROV_ONLY (by a
// utility provider), returns only its core entries. api is the
// application's API version, which decides what MR modes mean.
func (s *slot) getInfo(api fi.Version, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	coreOnly := s.builtin || flags&coreProvOnly != 0
	flags &^= coreInternalFlags
	if bad := flags &^ getinfoFlags; bad != 0 {
		return nil, errors.Wrapf(fi.EBADFLAGS, "%s: getinfo: flags %v are not getinfo flags", s.cname, bad)
	}
	if flags&fi.FlagSource != 0 && node == "" && service == "" {
		return nil, errors.Wrapf(fi.EINVAL, "%s: getinfo: FI_SOURCE needs a node or a service", s.cname)
	}
	report := fi.MRModeUnspec
	if hints != nil {
		var m fi.MRMode
		if hints.DomainAttr != nil {
			m = hints.DomainAttr.MRMode
		}
		goMode, r, ok := mrHints(api, m)
		if !ok {
			return nil, errors.Wrapf(fi.ENODATA, "%s: getinfo: mr_mode %v is not valid for API %v", s.cname, m, api)
		}
		if r != 0 {
			hints = hints.Clone()
			if hints.DomainAttr == nil {
				hints.DomainAttr = &fi.DomainAttr{}
			}
			hints.DomainAttr.MRMode, report = goMode, r
		}
	} else if api != 0 && api < fi.MakeVersion(1, 5) {
		report = v1Auto
	}
	if hints != nil && wantsAtomics(hints) {
		return nil, errors.Wrapf(fi.ENODATA, "%s: getinfo: FI_ATOMIC: the library does not carry atomic operations to C yet", s.cname)
	}
	infos, err := s.p.GetInfo(context.Background(), node, service, flags, hints)
	if err != nil {
		return nil, err
	}
	for _, i := range infos {
		dropAtomics(i)
	}
	if report != 0 {
		infos = slices.DeleteFunc(infos, func(i *fi.Info) bool {
			if i.DomainAttr == nil {
				return true
			}
			m, ok := mrResult(i.DomainAttr.MRMode, report)
			i.DomainAttr.MRMode = m
			return !ok
		})
		if len(infos) == 0 {
			return nil, errors.Wrapf(fi.ENODATA, "%s: getinfo: no entry offers mr_mode %v", s.cname, report)
		}
	}
	if coreOnly {
		infos = slices.DeleteFunc(infos, func(i *fi.Info) bool {
			return i.FabricAttr != nil && strings.Contains(i.FabricAttr.ProvName, ";")
		})
		if len(infos) == 0 {
			return nil, errors.Wrapf(fi.ENODATA, "%s: getinfo: no core entry matches", s.cname)
		}
	}
	return infos, nil
}

// code returns the errno of a Go error, logging control-path failures
// the way C providers do with FI_WARN (FI_LOG_LEVEL=warn shows them).
func (s *slot) code(op string, err error) fi.Errno {
	if err == nil {
		return fi.SUCCESS
	}
	c := fi.Code(err)
	if c == fi.SUCCESS || c < 0 {
		c = fi.EOTHER
	}
	if s != nil {
		if c == fi.ENODATA || c == fi.EAGAIN {
			s.log.Info(op, "err", err.Error())
		} else {
			s.log.Warn(op, "err", err.Error())
		}
	}
	return c
}

// errnoOf returns the errno of a data-path error without allocating when
// it is a bare fi.Errno (as the data path returns).
func errnoOf(err error) fi.Errno {
	if e, ok := err.(fi.Errno); ok {
		return e
	}
	if e, ok := err.(syscall.Errno); ok && e != 0 {
		return fi.Code(e)
	}
	c := fi.Code(err)
	if c == fi.SUCCESS {
		c = fi.EOTHER
	}
	return c
}

// wantsAtomics reports whether hints ask for FI_ATOMIC, which the
// library's ops tables do not carry yet (every atomic entry point returns
// -FI_ENOSYS), in the entry or either side's caps.
func wantsAtomics(h *fi.Info) bool {
	c := h.Caps
	if h.TxAttr != nil {
		c |= h.TxAttr.Caps
	}
	if h.RxAttr != nil {
		c |= h.RxAttr.Caps
	}
	return c&fi.CapAtomic != 0
}

// dropAtomics removes FI_ATOMIC from an entry's caps, which a provider
// may offer (gofabric's shm does) but the library cannot carry yet.
func dropAtomics(i *fi.Info) {
	i.Caps &^= fi.CapAtomic
	if i.TxAttr != nil {
		i.TxAttr.Caps &^= fi.CapAtomic
	}
	if i.RxAttr != nil {
		i.RxAttr.Caps &^= fi.CapAtomic
	}
}
