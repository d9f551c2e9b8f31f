//go:build verbs && cgo

package verbs

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cFiInfo is the C fi_info of the Soft-RoCE VM (libfabric-bin).
const cFiInfo = "/usr/bin/fi_info"

// cEntries runs C's `fi_info -p verbs -t FI_EP_MSG -v` and returns the
// text of each entry (from "fi_info:" to its last line, with the newline)
// whose provider is plain "verbs".
func cEntries(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cFiInfo, "-p", "verbs", "-t", "FI_EP_MSG", "-v").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var entries []string
	for _, e := range strings.Split(string(out), "---\n") {
		if strings.HasPrefix(e, "fi_info:\n") && strings.Contains(e, "\n        prov_name: verbs\n") {
			entries = append(entries, e)
		}
	}
	return entries
}

// entryKey names an entry by its domain and source address lines.
func entryKey(e string) string {
	var dom, src string
	for _, l := range strings.Split(e, "\n") {
		switch {
		case strings.HasPrefix(l, "        name: ") && dom == "":
			dom = strings.TrimSpace(l)
		case strings.HasPrefix(l, "    src_addr: "):
			src = strings.TrimSpace(l)
		}
	}
	return dom + " " + src
}

// firstDiff returns the first line where got and want differ, or "".
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  go: " + gl + "\n   c: " + wl
		}
	}
	return ""
}

// The FI_EP_MSG entries print byte for byte as C's fi_info -v prints the
// same domain's entry for the same source address, in C's order; C's
// FI_SOCKADDR_IB entries are the only ones without a Go counterpart.
func TestMsgEntriesMatchC(t *testing.T) {
	if _, err := exec.LookPath(cFiInfo); err != nil {
		t.Skipf("no C fi_info at %s (%v); run the tests in the Soft-RoCE VM (README)", cFiInfo, err)
	}
	devs, err := listDevices()
	if err != nil || len(devs) == 0 {
		t.Skipf("this host has no RDMA device (%v); run the tests in the Soft-RoCE VM (README)", err)
	}
	got, err := msgEntries()
	require.NoError(t, err)
	require.NotEmpty(t, got, "no FI_EP_MSG entry for %v", devs)
	want := cEntries(t)
	byKey := map[string]string{}
	var order []string
	for _, w := range want {
		k := entryKey(w)
		byKey[k] = w
		if strings.Contains(w, "\n    addr_format: FI_SOCKADDR_IB\n") {
			t.Logf("C entry %q has no Go counterpart (FI_SOCKADDR_IB is left out)", k)
			continue
		}
		order = append(order, k)
	}
	var gotKeys []string
	for _, g := range got {
		s := g.String()
		k := entryKey(s)
		gotKeys = append(gotKeys, k)
		w, ok := byKey[k]
		if !ok {
			t.Errorf("Go entry %q: C lists none for that domain and address", k)
			continue
		}
		if d := firstDiff(s, w); d != "" {
			t.Errorf("entry %q differs from C's at %s", k, d)
		}
	}
	require.Equal(t, order, gotKeys, "entries (domain, source address) in C's order")
	if !t.Failed() {
		t.Logf("%d Go entries match C's byte for byte", len(got))
	}
	attrs, err := queryDevices(defTxSize, defRxSize, defTxIOVLimit, defRxIOVLimit, defInlineSize)
	require.NoError(t, err)
	for _, a := range attrs {
		t.Logf("%+v", a)
	}
}

// linkSpeed follows ofi_vrb_speed's table; rxe's port (2.5 Gb/s, 1X) is
// 2500000000, and unknown codes give 0.
func TestInfoLinkSpeed(t *testing.T) {
	require.Equal(t, 2500000000, linkSpeed(1, 1))
	require.Equal(t, 100000000000, linkSpeed(32, 2))
	require.Equal(t, 12*14000000000, linkSpeed(16, 8))
	require.Equal(t, 0, linkSpeed(64, 2))
	require.Equal(t, 0, linkSpeed(1, 3))
	require.Equal(t, 384, withDefault(1048576, 384))
	require.Equal(t, 1, withDefault(1, 4))
	require.Equal(t, 27, minNonZero(32, 27))
	require.Equal(t, 32, minNonZero(32, 0))
}
