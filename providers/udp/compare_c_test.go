//go:build linux

package udp_test

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// TestMatchesCProvider compares the provider's FI_EP_DGRAM entries with
// what C libfabric 1.17's udp provider reports on this machine (fi_info -v
// -p udp -t FI_EP_DGRAM), with and without FI_UDP_IFACE: the same entries,
// each with the same domain and fabric names, addresses and attributes, in
// the same order; where C declines the caps, gofabric declines too. It
// needs the C fi_info; without it the test skips, unless GOFABRIC_STRICT is set.
func TestMatchesCProvider(t *testing.T) {
	path := reftest.Tool(t, "fi_info", "libfabric-bin")
	for _, iface := range []string{"", "lo"} {
		for _, caps := range []string{"", "FI_MSG", "FI_MSG|FI_MULTICAST", "FI_MSG|FI_SOURCE", "FI_MSG|FI_SEND", "FI_RECV", "FI_MULTICAST", "FI_RMA", "FI_TAGGED"} {
			t.Run("iface="+iface+"/caps="+caps, func(t *testing.T) {
				cleanEnv(t)
				if iface != "" {
					t.Setenv("FI_UDP_IFACE", iface)
				}
				args := []string{"-v", "-p", "udp", "-t", "FI_EP_DGRAM"}
				hints := udpHints()
				if caps != "" {
					args = append(args, "-c", caps)
					var err error
					hints.Caps, err = fi.ParseCaps(caps)
					require.NoError(t, err)
				}
				var (
					out        []byte
					infos      []*fi.Info
					err, goErr error
				)
				reftest.SteadyInterfaces(t, func() {
					out, err = exec.Command(path, args...).Output()
					infos, goErr = fi.GetInfo(context.Background(), "", "", 0, hints)
				})
				var exit *exec.ExitError
				if errors.As(err, &exit) && exit.ExitCode() == int(fi.ENODATA) {
					require.ErrorIs(t, goErr, fi.ENODATA, "C declines %q; so must gofabric", caps)
					return
				}
				require.NoError(t, err, "C fi_info %v", args)
				var cEntries []string
				for _, e := range strings.Split(string(out), "---\n") {
					if e = strings.TrimSpace(e); e != "" {
						cEntries = append(cEntries, e+"\n")
					}
				}
				require.NotEmpty(t, cEntries)

				require.NoError(t, goErr)
				var goEntries []string
				for _, in := range infos {
					goEntries = append(goEntries, in.String())
				}
				require.ElementsMatch(t, cEntries, goEntries, "the same entries, byte for byte")
				require.Equal(t, names(cEntries), names(goEntries), "the same order")
			})
		}
	}
}

// names returns "domain fabric" of each entry, for order messages.
func names(entries []string) []string {
	re := regexp.MustCompile(`(?m)^ {8}name: (.*)$`)
	var out []string
	for _, e := range entries {
		var n []string
		for _, s := range re.FindAllStringSubmatch(e, -1) {
			n = append(n, s[1])
		}
		out = append(out, strings.Join(n, " "))
	}
	return slices.Clip(out)
}
