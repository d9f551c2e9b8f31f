package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunPattern(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		match    []string
		miss     []string
	}{
		{in: "", want: "^TestConformance", match: []string{"TestConformance"}},
		{in: "unit,cm", want: "^TestConformance/^(unit|cm)$",
			match: []string{"TestConformance/unit", "TestConformance/cm"}, miss: []string{"TestConformance/cmx"}},
		{in: "unit/eq,unit/cq", want: "^TestConformance/^(unit)$/^(eq|cq)$"},
	} {
		got, err := runPattern(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got)
		_, err = regexp.Compile(got)
		require.NoError(t, err)
	}
	_, err := runPattern("unit,unit/eq")
	require.Error(t, err)
	got, err := runPattern("a(b")
	require.NoError(t, err)
	require.Equal(t, `^TestConformance/^(a\(b)$`, got, "group names are literal")
}

func TestProviders(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"tcp", "shm"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "providers", p), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "providers", p, "conformance_test.go"), nil, 0o644))
	}
	got, err := providers(root, "")
	require.NoError(t, err)
	require.Equal(t, []string{"shm", "tcp"}, got)
	got, err = providers(root, "tcp")
	require.NoError(t, err)
	require.Equal(t, []string{"tcp"}, got)
	_, err = providers(root, "verbs")
	require.ErrorContains(t, err, `provider "verbs" has no conformance test`)
	_, err = providers(t.TempDir(), "")
	require.Error(t, err)
}

func TestReason(t *testing.T) {
	out := "=== RUN   TestConformance/unit/av/x\n    av.go:39: provider does not offer address vectors\n--- SKIP: TestConformance/unit/av/x (0.00s)\n"
	require.Equal(t, "av.go:39: provider does not offer address vectors", reason(out))
}

func TestCommandLine(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"-nosuchflag"}, &out, &errb))
	require.Equal(t, 2, run([]string{"extra"}, &out, &errb))
	require.Equal(t, 2, run([]string{"-C", t.TempDir()}, &out, &errb))
}

// The runner runs a provider's conformance test for real and reports
// every leaf test, in the table and the JSON file.
func TestRunsAProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on providers/tcp; -short skips it")
	}
	var out, errb bytes.Buffer
	js := filepath.Join(t.TempDir(), "r.json")
	code := run([]string{"-C", "../..", "-p", "tcp", "-t", "unit/eq", "-o", js, "-v"}, &out, &errb)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, out.String(), "provider  pass  fail  skip")
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	var rs []result
	require.NoError(t, json.Unmarshal(b, &rs))
	require.NotEmpty(t, rs)
	for _, r := range rs {
		require.Equal(t, "tcp", r.Provider)
		require.Regexp(t, `^unit/eq/`, r.Test)
		require.Equal(t, "pass", r.Result, r.Reason)
	}
}
