package getopt_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/internal/getopt"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// harnessC drives glibc's getopt_long (or getopt when the long table is
// "-") over command lines read from stdin, one a line: the word count,
// then the words, separated by 0x1f. For each it prints one line per
// option ("opt <val> <long name or -> <has arg> <arg>"), then the operands
// (argv from optind on, after glibc's permutation), or glibc's own
// diagnostic followed by "error" at the first '?', and then "end". The
// long table is argv[2]: "name,has_arg,val;..." with val 0 for a long-only
// option.
const harnessC = `
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct option longs[64];

int main(int argc, char **argv)
{
	const char *optstring = argv[1];
	int use_long = strcmp(argv[2], "-") != 0;
	int nlong = 0;
	char *spec = strdup(argv[2]);
	static char line[1 << 16];
	char *words[256];

	setvbuf(stdout, NULL, _IONBF, 0);
	dup2(1, 2);
	if (use_long) {
		for (char *e = strtok(spec, ";"); e; e = strtok(NULL, ";")) {
			char *name = e, *c1 = strchr(e, ','), *c2;
			*c1 = 0;
			c2 = strchr(c1 + 1, ',');
			*c2 = 0;
			longs[nlong].name = name;
			longs[nlong].has_arg = atoi(c1 + 1);
			longs[nlong].flag = NULL;
			longs[nlong].val = atoi(c2 + 1) ? atoi(c2 + 1) : 256 + nlong;
			nlong++;
		}
	}
	while (fgets(line, sizeof(line), stdin)) {
		int n = 0, count;
		char *p = line, *sep;

		line[strcspn(line, "\n")] = 0;
		sep = strchr(p, 0x1f);
		if (sep)
			*sep = 0;
		count = atoi(p);
		words[n++] = "prog";
		while (n <= count) {
			p = sep + 1;
			sep = strchr(p, 0x1f);
			if (sep)
				*sep = 0;
			words[n++] = p;
		}
		words[n] = NULL;
		optind = 0;
		for (;;) {
			int li = -1, c;

			c = use_long ? getopt_long(n, words, optstring, longs, &li)
				     : getopt(n, words, optstring);
			if (c == -1)
				break;
			if (c == '?' || c == ':') {
				printf("error\n");
				goto next;
			}
			printf("opt %d %s %d %s\n", c < 256 ? c : 0,
			       li >= 0 ? longs[li].name : "-", optarg != NULL,
			       optarg ? optarg : "");
		}
		for (int i = optind; i < n; i++)
			printf("operand %s\n", words[i]);
next:
		printf("end\n");
	}
	return 0;
}
`

// buildHarness compiles harnessC with gcc.
func buildHarness(t *testing.T) string {
	t.Helper()
	gcc := reftest.Tool(t, "gcc", "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "harness.c")
	require.NoError(t, os.WriteFile(src, []byte(harnessC), 0o600))
	bin := filepath.Join(dir, "harness")
	out, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	return bin
}

// goTranscript renders what the parser makes of each line as the harness
// prints glibc's.
func goTranscript(spec *getopt.Spec, lines [][]string) string {
	var b strings.Builder
	for _, args := range lines {
		p := spec.Parse(args)
		for p.Next() {
			o := p.Option()
			name := o.Long
			if name == "" {
				name = "-"
			}
			fmt.Fprintf(&b, "opt %d %s %d %s\n", o.Short, name, btoi(o.HasArg), o.Arg)
		}
		if err := p.Err(); err != nil {
			fmt.Fprintf(&b, "prog: %v\nerror\n", err)
		} else {
			for _, op := range p.Operands() {
				fmt.Fprintf(&b, "operand %s\n", op)
			}
		}
		b.WriteString("end\n")
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cTranscript runs the harness over lines.
func cTranscript(t *testing.T, bin, optstring string, longs []getopt.LongOption, lines [][]string, env ...string) string {
	t.Helper()
	table := "-"
	if longs != nil {
		var parts []string
		for _, l := range longs {
			parts = append(parts, fmt.Sprintf("%s,%d,%d", l.Name, l.Arg, l.Short))
		}
		table = strings.Join(parts, ";")
	}
	var in bytes.Buffer
	for _, args := range lines {
		in.WriteString(strconv.Itoa(len(args)))
		for _, a := range args {
			in.WriteString("\x1f" + a)
		}
		in.WriteString("\n")
	}
	cmd := exec.Command(bin, optstring, table)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = &in
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// vocabulary is what random command lines are made of: options of every
// spec, good and bad, operands and the special words.
var vocabulary = []string{
	"-l", "-v", "-lv", "-vl", "-p", "-ptcp", "tcp", "--", "-", "", "--list", "--li", "--lis", "--list=1",
	"--ver", "--vers", "--version", "--verbose", "--p", "--p=x", "--provider=x", "--prov", "--node", "--node=",
	"--s", "--src", "-x", "-E", "-E5", "-E=5", "--oob", "--oob=", "--oob=1", "--o", "--col", "--colo", "--color=red",
	"--colour", "-a-", "-a", "-ab", "-b", "-bx", "op", "op2", "-I", "-1", "-I-1", "--=", "--=x", "---", "-e=3",
	"-:", "-cv6", "-S", "all", "-m", "--help", "--h", "-h", "-e", "-g", "--getenv", "-i", "-lister", "--lister",
	"--lisp", "--lisp=q", "-6", "-c", "-d", "lo", "-\xc3\xa9", "--é",
}

// randomLines returns n command lines of up to 7 words from the
// vocabulary, some with a byte changed, from a fixed seed.
func randomLines(n int, seed uint64) [][]string {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	lines := make([][]string, 0, n)
	for range n {
		args := make([]string, r.IntN(8))
		for k := range args {
			w := vocabulary[r.IntN(len(vocabulary))]
			if w != "" && r.IntN(8) == 0 {
				b := []byte(w)
				b[r.IntN(len(b))] = "-=:abelpvxE6 "[r.IntN(13)]
				w = string(b)
			}
			args[k] = w
		}
		lines = append(lines, args)
	}
	return lines
}

// TestMatchesGlibc runs the same command lines through glibc's
// getopt_long / getopt (a C harness built with gcc) and through the
// parser, and requires the same options, arguments, operands and
// diagnostics, for fi_info's and fi_pingpong's specs and one with
// optional arguments, aliases and long-only options.
func TestMatchesGlibc(t *testing.T) {
	bin := buildHarness(t)
	fixed := [][]string{
		{"-lv"}, {"-ptcp"}, {"-p", "tcp"}, {"--ver"}, {"--p=tcp"}, {"--=x"}, {"--li=3"}, {"a", "-l", "--", "-v", "b"},
		{"-I", "-1"}, {"--help"}, {"-E", "5"}, {"-E=5"}, {"--oob", "7"}, {"--lis"}, {"--col"}, {"--liste"},
	}
	specs := []struct {
		name      string
		optstring string
		longs     []getopt.LongOption
	}{
		{"fi_info", infoOptstring, infoLongs},
		{"extra", extraOptstring, extraLongs},
		{"fi_pingpong", pingpongOptstring, nil},
		{"require order", "+ab:E::lv", extraLongs},
	}
	for i, s := range specs {
		t.Run(s.name, func(t *testing.T) {
			spec := getopt.New(s.optstring)
			if s.longs != nil {
				spec = getopt.NewLong(s.optstring, s.longs)
			}
			lines := append(append([][]string(nil), fixed...), randomLines(3000, uint64(i+1))...)
			want := cTranscript(t, bin, s.optstring, s.longs, lines)
			got := goTranscript(spec, lines)
			requireSameTranscript(t, lines, want, got)
		})
	}
	t.Run("POSIXLY_CORRECT", func(t *testing.T) {
		t.Setenv("POSIXLY_CORRECT", "1")
		lines := randomLines(1000, 99)
		want := cTranscript(t, bin, infoOptstring, infoLongs, lines)
		got := goTranscript(infoSpec, lines)
		requireSameTranscript(t, lines, want, got)
	})
}

// requireSameTranscript compares line by line and names the first command
// line that differs.
func requireSameTranscript(t *testing.T, lines [][]string, want, got string) {
	t.Helper()
	wb := strings.SplitAfter(want, "end\n")
	gb := strings.SplitAfter(got, "end\n")
	require.Len(t, gb, len(wb))
	for k := range lines {
		require.Equal(t, wb[k], gb[k], "command line %q", lines[k])
	}
}
