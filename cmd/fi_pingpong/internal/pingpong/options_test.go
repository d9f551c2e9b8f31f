//go:build linux

package pingpong

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestParseOptionsDefaults(t *testing.T) {
	var stderr bytes.Buffer
	o, err := ParseOptions(nil, &stderr)
	require.NoError(t, err)
	require.Equal(t, &Options{EPType: fi.EPTypeDgram, Iterations: 10, SrcPort: 47592, DstPort: 47592, Timeout: 30 * time.Second}, o)
	require.False(t, o.IsClient())
	require.Empty(t, stderr.String())

	o, err = ParseOptions([]string{"127.0.0.1"}, &stderr)
	require.NoError(t, err)
	require.Equal(t, &Options{EPType: fi.EPTypeDgram, Iterations: 10, SrcPort: 0, DstPort: 47592, Server: "127.0.0.1", Timeout: 30 * time.Second}, o)
	require.True(t, o.IsClient())
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want func(o *Options)
	}{
		{"provider domain", []string{"-p", "tcp", "-d", "lo"}, func(o *Options) { o.Provider, o.Domain = "tcp", "lo" }},
		{"ep msg any case", []string{"-e", "MsG"}, func(o *Options) { o.EPType = fi.EPTypeMsg }},
		{"ep rdm", []string{"-e", "rdm"}, func(o *Options) { o.EPType = fi.EPTypeRDM }},
		{"ep dgram", []string{"-edgram"}, func(o *Options) { o.EPType = fi.EPTypeDgram }},
		{"iterations", []string{"-I", "1000"}, func(o *Options) { o.Iterations = 1000 }},
		{"iterations strtol", []string{"-I", " +010"}, func(o *Options) { o.Iterations = 10 }},
		{"iterations attached", []string{"-I7"}, func(o *Options) { o.Iterations = 7 }},
		{"no iterations, as C", []string{"-I", "0"}, func(o *Options) { o.Iterations = 0 }},
		{"minus zero is zero, as strtol", []string{"-I", "-0"}, func(o *Options) { o.Iterations = 0 }},
		{"iterations max", []string{"-I", "2147483647"}, func(o *Options) { o.Iterations = 2147483647 }},
		{"size", []string{"-S", "4096"}, func(o *Options) { o.Size, o.SizeSet = 4096, true }},
		{"size 0", []string{"-S", "0"}, func(o *Options) { o.Size, o.SizeSet = 0, true }},
		{"size all", []string{"-S", "ALL"}, func(o *Options) { o.SizeAll = true }},
		{"last size wins", []string{"-S", "all", "-S", "64"}, func(o *Options) { o.Size, o.SizeSet = 64, true }},
		{"check verbose ipv6 cluster", []string{"-cv6"}, func(o *Options) { o.Check, o.Verbose, o.IPv6 = true, true, true }},
		{"cluster with value", []string{"-cI5"}, func(o *Options) { o.Check, o.Iterations = true, 5 }},
		{"mode msg", []string{"-m", "MSG"}, func(o *Options) {}},
		{"mode tagged", []string{"-m", "tagged"}, func(o *Options) { o.Tagged = true }},
		{"mode anything else is tagged", []string{"-m", "x"}, func(o *Options) { o.Tagged = true }},
		{"server port", []string{"-B", "25000"}, func(o *Options) { o.SrcPort = 25000 }},
		{"server port 0", []string{"-B", "0"}, func(o *Options) { o.SrcPort = 0 }},
		{"client ports", []string{"-P", "25000", "-B", "25001", "host"}, func(o *Options) {
			o.DstPort, o.SrcPort, o.Server = 25000, 25001, "host"
		}},
		{"client default source port", []string{"-P", "65535", "host"}, func(o *Options) { o.DstPort, o.SrcPort, o.Server = 65535, 0, "host" }},
		{"destination port 0 is the default, as in C", []string{"-P", "0", "host"}, func(o *Options) { o.DstPort, o.SrcPort, o.Server = 47592, 0, "host" }},
		{"timeout", []string{"-T", "5"}, func(o *Options) { o.Timeout = 5 * time.Second }},
		{"no timeout", []string{"-T0"}, func(o *Options) { o.Timeout = 0 }},
		{"address anywhere, first wins", []string{"a", "-I", "3", "b"}, func(o *Options) { o.Server, o.Iterations, o.SrcPort = "a", 3, 0 }},
		{"double dash", []string{"--", "-I"}, func(o *Options) { o.Server, o.SrcPort = "-I", 0 }},
		{"value after a double dash", []string{"-p", "--", "x"}, func(o *Options) { o.Provider, o.Server, o.SrcPort = "--", "x", 0 }},
		{"options after the address", []string{"host", "-cpudp", "-edgram"}, func(o *Options) {
			o.Server, o.SrcPort, o.Check, o.Provider = "host", 0, true, "udp"
		}},
		{"lone dash is an address", []string{"-"}, func(o *Options) { o.Server, o.SrcPort = "-", 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := ParseOptions(tt.args, &stderr)
			require.NoError(t, err)
			want := &Options{EPType: fi.EPTypeDgram, Iterations: 10, SrcPort: 47592, DstPort: 47592, Timeout: DefaultTimeout}
			tt.want(want)
			require.Equal(t, want, got)
			require.Empty(t, stderr.String())
		})
	}
}

func TestParseOptionsUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		prefix string
	}{
		{"help", []string{"-h"}, "Usage:\n"},
		{"help after options", []string{"-I", "5", "-h", "x"}, "Usage:\n"},
		{"unknown option", []string{"-x"}, "fi_pingpong: invalid option -- 'x'\nUsage:\n"},
		{"unknown in cluster", []string{"-cq"}, "fi_pingpong: invalid option -- 'q'\nUsage:\n"},
		{"missing argument", []string{"-p"}, "fi_pingpong: option requires an argument -- 'p'\nUsage:\n"},
		{"missing argument after a cluster", []string{"-cvI"}, "fi_pingpong: option requires an argument -- 'I'\nUsage:\n"},
		{"no long options, as C's getopt", []string{"--help"}, "fi_pingpong: invalid option -- '-'\nUsage:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := ParseOptions(tt.args, &stderr)
			require.Error(t, err)
			require.Equal(t, 1, ExitStatus(err))
			require.True(t, bytes.HasPrefix(stderr.Bytes(), []byte(tt.prefix)), stderr.String())
			for _, opt := range []string{"-B", "-P", "-d", "-p", "-e", "-I", "-S", "-c", "-m", "-T", "-h", "-v", "-6"} {
				require.Contains(t, stderr.String(), "\n "+opt+" ")
			}
		})
	}
}

func TestParseOptionsUnknownEndpoint(t *testing.T) {
	var stderr bytes.Buffer
	_, err := ParseOptions([]string{"-e", "foo"}, &stderr)
	require.ErrorIs(t, err, fi.EINVAL)
	require.Equal(t, 1, ExitStatus(err))
	require.Equal(t, "Unknown endpoint : foo\n", stderr.String())
}

// TestParseOptionsBadNumbers checks strtol's rules as the C tool applies
// them, with C's message, and what follows: where C goes on with a
// meaningless value (-I runs 0 iterations, -S, -B and -P garbage), this
// tool stops with the errno and a hint giving the option's range.
func TestParseOptionsBadNumbers(t *testing.T) {
	const inval, rng = "Invalid argument", "Numerical result out of range"
	tests := []struct {
		flag, val, msg, hint string
	}{
		{"-I", "abc", inval, "-I takes the number of iterations per size: 0 to 2147483647"},
		{"-I", "", inval, ""},
		{"-I", "0x10", inval, ""},
		{"-I", "5 ", inval, ""},
		{"-I", " ", inval, ""},
		{"-I", "+", inval, ""},
		{"-I", "-9x", inval, ""},
		{"-I", "-1", rng, "-I takes the number of iterations per size: 0 to 2147483647"},
		{"-I", "2147483648", rng, ""},
		{"-I", "99999999999999999999x", rng, ""},
		{"-S", "1k", inval, "-S takes a transfer size in bytes, or 'all': 0 to 2147483647"},
		{"-S", "-1", rng, ""},
		{"-S", "4294967296", rng, ""},
		{"-B", "abc", inval, "-B takes the control port to listen on or bind (0: any): 0 to 65535"},
		{"-P", "65536", rng, "-P takes the server's control port (0: 47592): 0 to 65535"},
		{"-P", "-1", rng, ""},
		{"-T", "-1", rng, "-T takes seconds (0: no limit): 0 to 2147483647"},
		{"-T", "1.5", inval, ""},
	}
	for _, tt := range tests {
		t.Run(tt.flag+" "+tt.val, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := ParseOptions([]string{tt.flag, tt.val}, &stderr)
			require.Equal(t, "Error parsing \""+tt.val+"\": "+tt.msg+"\n", stderr.String())
			code := fi.EINVAL
			if tt.msg == rng {
				code = fi.Errno(unix.ERANGE)
			}
			require.ErrorIs(t, err, code)
			require.Equal(t, int(code), ExitStatus(err))
			hints := errors.GetAllHints(err)
			require.Len(t, hints, 1)
			if tt.hint != "" {
				require.Equal(t, tt.hint, hints[0])
			}
		})
	}
}

// TestMainRefusesBadIterations runs the tool as a user would type it:
// "fi_pingpong -I -1" exits non-zero before opening anything, saying why.
func TestMainRefusesBadIterations(t *testing.T) {
	for _, args := range [][]string{{"-I", "-1"}, {"-I-1"}, {"-I", "abc"}, {"-I", ""}, {"-cI", "-1", "127.0.0.1"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(args, &stdout, &stderr)
			require.NotZero(t, code)
			require.Empty(t, stdout.String())
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			require.Len(t, lines, 2, stderr.String())
			require.True(t, strings.HasPrefix(lines[0], "Error parsing \""), lines[0])
			require.Equal(t, "hint: -I takes the number of iterations per size: 0 to 2147483647", lines[1])
		})
	}
}

func TestExitStatus(t *testing.T) {
	require.Equal(t, 0, ExitStatus(nil))
	require.Equal(t, 61, ExitStatus(errors.Wrap(&fi.NoMatchError{}, "x")))
	require.Equal(t, 103, ExitStatus(errors.Wrap(fi.ECONNABORTED, "x")))
	require.Equal(t, 255, ExitStatus(errors.Wrap(&CheckError{Iteration: 1}, "x")))
	require.Equal(t, 1, ExitStatus(errors.Wrap(fi.EOTHER, "x")))
}

// TestParseErrorsMatchC gives command lines that C's fi_pingpong refuses
// before doing anything to both tools: the same exit status and the same
// first line on stderr (glibc's getopt complaint), then the usage.
func TestParseErrorsMatchC(t *testing.T) {
	path := cPingpong(t)
	for _, args := range [][]string{
		{"-x"}, {"-cq"}, {"-p"}, {"-cvI"}, {"--help"}, {"-h"}, {"-v", "-h", "host"}, {"host", "-x"}, {"-e", "foo"}, {"-:"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(path, args...)
			var cerr bytes.Buffer
			cmd.Stderr = &cerr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			var stdout, stderr bytes.Buffer
			code := Main(args, &stdout, &stderr)
			require.Equal(t, ee.ExitCode(), code)
			cline, crest, _ := strings.Cut(cerr.String(), "\n")
			gline, grest, _ := strings.Cut(stderr.String(), "\n")
			require.Equal(t, strings.Replace(cline, path+":", "fi_pingpong:", 1), gline)
			require.Equal(t, strings.HasPrefix(crest, "Usage:"), strings.HasPrefix(grest, "Usage:"))
			require.Empty(t, stdout.String())
		})
	}
}
