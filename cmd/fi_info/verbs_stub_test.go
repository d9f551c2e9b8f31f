//go:build !verbs || !cgo

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerbsStubHint checks a real hinted error: the verbs provider of a
// build without the verbs tag declines, and its hint says how to rebuild.
func TestVerbsStubHint(t *testing.T) {
	t.Setenv("FI_PROVIDER", "verbs")
	code, out, errOut := runFiInfo(t, "-p", "verbs")
	require.Equal(t, 61, code)
	require.Empty(t, out)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	require.Greater(t, len(lines), 2, errOut)
	require.Equal(t, "fi_getinfo: -61", lines[0])
	n := len(lines)
	require.True(t, strings.HasPrefix(lines[n-2], "    verbs: built without RDMA support"), lines[n-2])
	require.True(t, strings.HasPrefix(lines[n-1], "hint: rebuild with "), lines[n-1])
	require.Contains(t, lines[n-1], "-tags verbs")
	require.Equal(t, 1, strings.Count(errOut, "hint: "))
}
