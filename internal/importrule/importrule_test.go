// Package importrule holds the repository-wide test of the layering rule:
// fi <- eq <- ep <- kit <- utility providers (providers/rxm) <- the
// other providers, with fabtests and cmd on top; the application layer
// (fabnet) beside them, built on fi, eq and ep only; and cgo only in
// providers/verbs and cmd/gofabric-fi (the C libfabric provider library,
// which is C's ops tables over the Go API). A utility provider layers
// over other providers through the public API only; a provider may
// import one to register a layering over itself (tcp registers
// "tcp;ofi_rxm").
package importrule

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/gofabric/gofabric"

type pkg struct {
	ImportPath string
	Deps       []string
	CgoFiles   []string
}

// layer gives each package class its rank; a package may import only
// packages of a lower rank (or the same package).
func layer(path string) (rank int, name string) {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	switch {
	case rel == "fi" || strings.HasPrefix(rel, "fi/"):
		return 0, "fi"
	case rel == "eq":
		return 1, "eq"
	case rel == "ep":
		return 2, "ep"
	case strings.HasPrefix(rel, "kit"), rel == "internal/netif", rel == "internal/sockpoll", rel == "internal/linuxonly",
		rel == "internal/rxmwire":
		return 3, "kit"
	case rel == "providers/rxm":
		return 4, "utility providers"
	case strings.HasPrefix(rel, "providers/") && rel != "providers/all":
		return 5, "providers"
	case rel == "fabnet" || strings.HasPrefix(rel, "fabnet/"):
		return 6, "application layer"
	default: // fabtests, cmd, tools: may import anything
		return 6, rel
	}
}

// applicationLayer reports whether path is in the application layer
// (fabnet: Dial, Listen, one-call endpoints), which is built on the
// public model only: it may import fi, eq and ep of this module, never
// kit or a provider, so that whatever it needs and they lack is fixed in
// them (docs/architecture.md, §1).
func applicationLayer(path string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	return rel == "fabnet" || strings.HasPrefix(rel, "fabnet/")
}

func TestApplicationLayer(t *testing.T) {
	found := false
	for _, p := range listPackages(t) {
		if !applicationLayer(p.ImportPath) {
			continue
		}
		found = true
		for _, d := range p.Deps {
			if !strings.HasPrefix(d, module+"/") || applicationLayer(d) {
				continue
			}
			if rank, name := layer(d); rank > 2 {
				t.Errorf("%s (application layer) imports %s (%s): it is built on fi, eq and ep only", p.ImportPath, d, name)
			}
		}
	}
	require.True(t, found, "no application layer package (fabnet) found")
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps,CgoFiles", module+"/...").Output()
	require.NoError(t, err, "go list")
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

func TestImportRule(t *testing.T) {
	for _, p := range listPackages(t) {
		rank, name := layer(p.ImportPath)
		for _, d := range p.Deps {
			if !strings.HasPrefix(d, module+"/") {
				continue
			}
			drank, dname := layer(d)
			if drank > rank || (drank == rank && (rank == 4 || rank == 5) && !strings.HasPrefix(d, p.ImportPath)) {
				t.Errorf("%s (%s) imports %s (%s): layering is fi <- eq <- ep <- kit <- utility providers <- providers",
					p.ImportPath, name, d, dname)
			}
		}
	}
}

// cgoAllowed are the packages that may use cgo: the verbs provider
// (libibverbs, librdmacm) and the provider library C libfabric loads
// (cmd/gofabric-fi: its ops tables are C).
var cgoAllowed = []string{module + "/providers/verbs", module + "/cmd/gofabric-fi"}

func TestCgoOnlyWhereAllowed(t *testing.T) {
	for _, p := range listPackages(t) {
		if len(p.CgoFiles) > 0 && !slices.Contains(cgoAllowed, p.ImportPath) {
			t.Errorf("%s uses cgo (%v): only %v may", p.ImportPath, p.CgoFiles, cgoAllowed)
		}
	}
}

// TestLayerRanks pins the rule itself, so a broken classifier cannot make
// TestImportRule pass vacuously.
func TestLayerRanks(t *testing.T) {
	for path, want := range map[string]int{
		module + "/fi": 0, module + "/eq": 1, module + "/ep": 2,
		module + "/kit": 3, module + "/internal/rxmwire": 3, module + "/providers/rxm": 4,
		module + "/providers/tcp": 5, module + "/fabtests": 6, module + "/cmd/fi_info": 6, module + "/fabnet": 6,
	} {
		got, _ := layer(path)
		require.Equal(t, want, got, path)
	}
}
