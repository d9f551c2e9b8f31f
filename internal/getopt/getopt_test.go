package getopt_test

import (
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
	"github.com/stretchr/testify/require"
)

// infoLongs is fi_info's long option table (util/info.c).
var infoLongs = []getopt.LongOption{
	{Name: "help", Short: 'h'},
	{Name: "src_addr", Arg: getopt.RequiredArgument, Short: 's'},
	{Name: "node", Arg: getopt.RequiredArgument, Short: 'n'},
	{Name: "port", Arg: getopt.RequiredArgument, Short: 'P'},
	{Name: "caps", Arg: getopt.RequiredArgument, Short: 'c'},
	{Name: "mode", Arg: getopt.RequiredArgument, Short: 'm'},
	{Name: "ep_type", Arg: getopt.RequiredArgument, Short: 't'},
	{Name: "domain", Arg: getopt.RequiredArgument, Short: 'd'},
	{Name: "fabric", Arg: getopt.RequiredArgument, Short: 'f'},
	{Name: "addr_format", Arg: getopt.RequiredArgument, Short: 'a'},
	{Name: "provider", Arg: getopt.RequiredArgument, Short: 'p'},
	{Name: "env", Short: 'e'},
	{Name: "getenv", Arg: getopt.RequiredArgument, Short: 'g'},
	{Name: "info", Arg: getopt.RequiredArgument, Short: 'i'},
	{Name: "list", Short: 'l'},
	{Name: "verbose", Short: 'v'},
	{Name: "version"},
}

const infoOptstring = "s:n:P:c:m:t:a:p:d:f:eg:i:lhv"

var infoSpec = getopt.NewLong(infoOptstring, infoLongs)

// extraLongs exercise optional arguments and aliases: "list" and "lister"
// stand for the same option, "col" and "color" are long-only and so
// distinct.
var extraLongs = []getopt.LongOption{
	{Name: "alpha", Short: 'a'},
	{Name: "beta", Arg: getopt.RequiredArgument, Short: 'b'},
	{Name: "oob", Arg: getopt.OptionalArgument, Short: 'E'},
	{Name: "list", Short: 'l'},
	{Name: "lister", Short: 'l'},
	{Name: "lisp", Arg: getopt.RequiredArgument, Short: 'l'},
	{Name: "color", Arg: getopt.OptionalArgument},
	{Name: "colour", Arg: getopt.OptionalArgument},
}

const extraOptstring = "ab:E::lv-"

var extraSpec = getopt.NewLong(extraOptstring, extraLongs)

// aliasSpec has two names for -l.
var aliasSpec = getopt.NewLong("l", []getopt.LongOption{{Name: "list", Short: 'l'}, {Name: "lister", Short: 'l'}})

// pingpongSpec is fi_pingpong's plain getopt.
const pingpongOptstring = "hvd:p:e:I:S:B:P:cm:6"

var pingpongSpec = getopt.New(pingpongOptstring)

func short(c byte, arg ...string) getopt.Option {
	o := getopt.Option{Short: c}
	if len(arg) > 0 {
		o.Arg, o.HasArg = arg[0], true
	}
	return o
}

func long(c byte, name string, arg ...string) getopt.Option {
	o := short(c, arg...)
	o.Long = name
	return o
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		spec     *getopt.Spec
		args     []string
		opts     []getopt.Option
		operands []string
	}{
		{"nothing", infoSpec, nil, nil, nil},
		{"cluster", infoSpec, []string{"-lv"}, []getopt.Option{short('l'), short('v')}, nil},
		{"attached value", infoSpec, []string{"-ptcp"}, []getopt.Option{short('p', "tcp")}, nil},
		{"separate value", infoSpec, []string{"-p", "tcp"}, []getopt.Option{short('p', "tcp")}, nil},
		{"cluster ending in a value", infoSpec, []string{"-lvptcp"}, []getopt.Option{short('l'), short('v'), short('p', "tcp")}, nil},
		{"cluster then the value", infoSpec, []string{"-lp", "tcp"}, []getopt.Option{short('l'), short('p', "tcp")}, nil},
		{"value that looks like an option", pingpongSpec, []string{"-I", "-1"}, []getopt.Option{short('I', "-1")}, nil},
		{"value that is a double dash", infoSpec, []string{"-p", "--", "-l"}, []getopt.Option{short('p', "--"), short('l')}, nil},
		{"empty value", infoSpec, []string{"-p", ""}, []getopt.Option{short('p', "")}, nil},
		{"attached equals is part of the value", infoSpec, []string{"-p=tcp"}, []getopt.Option{short('p', "=tcp")}, nil},
		{"long", infoSpec, []string{"--list"}, []getopt.Option{long('l', "list")}, nil},
		{"long with equals", infoSpec, []string{"--provider=tcp"}, []getopt.Option{long('p', "provider", "tcp")}, nil},
		{"long with empty equals", infoSpec, []string{"--node="}, []getopt.Option{long('n', "node", "")}, nil},
		{"long with separate value", infoSpec, []string{"--provider", "tcp"}, []getopt.Option{long('p', "provider", "tcp")}, nil},
		{"long value that looks like an option", infoSpec, []string{"--provider", "-l"}, []getopt.Option{long('p', "provider", "-l")}, nil},
		{"long value keeps later equals", infoSpec, []string{"--caps=a=b"}, []getopt.Option{long('c', "caps", "a=b")}, nil},
		{"long prefix", infoSpec, []string{"--li", "--prov", "x"}, []getopt.Option{long('l', "list"), long('p', "provider", "x")}, nil},
		{"long prefix of a required", infoSpec, []string{"--s=1.2.3.4"}, []getopt.Option{long('s', "src_addr", "1.2.3.4")}, nil},
		{"long only", infoSpec, []string{"--version"}, []getopt.Option{long(0, "version")}, nil},
		{"long only by prefix", infoSpec, []string{"--vers"}, []getopt.Option{long(0, "version")}, nil},
		{"exact name wins over a longer one", extraSpec, []string{"--list"}, []getopt.Option{long('l', "list")}, nil},
		{"prefix of aliases is not ambiguous", aliasSpec, []string{"--lis"}, []getopt.Option{long('l', "list")}, nil},
		{"alias by prefix", extraSpec, []string{"--liste"}, []getopt.Option{long('l', "lister")}, nil},
		{"optional short attached", extraSpec, []string{"-E5"}, []getopt.Option{short('E', "5")}, nil},
		{"optional short attached equals", extraSpec, []string{"-E=5"}, []getopt.Option{short('E', "=5")}, nil},
		{"optional short alone", extraSpec, []string{"-E", "5"}, []getopt.Option{short('E')}, []string{"5"}},
		{"optional short ends a cluster", extraSpec, []string{"-aEv"}, []getopt.Option{short('a'), short('E', "v")}, nil},
		{"optional long", extraSpec, []string{"--oob=7"}, []getopt.Option{long('E', "oob", "7")}, nil},
		{"optional long empty", extraSpec, []string{"--oob="}, []getopt.Option{long('E', "oob", "")}, nil},
		{"optional long alone", extraSpec, []string{"--oob", "7"}, []getopt.Option{long('E', "oob")}, []string{"7"}},
		{"dash as an option letter", extraSpec, []string{"-a-"}, []getopt.Option{short('a'), short('-')}, nil},
		{"operands are permuted", infoSpec, []string{"a", "-l", "b", "-p", "x", "c"}, []getopt.Option{short('l'), short('p', "x")}, []string{"a", "b", "c"}},
		{"double dash ends options", infoSpec, []string{"a", "-l", "--", "-v", "b"}, []getopt.Option{short('l')}, []string{"a", "-v", "b"}},
		{"only the first double dash counts", infoSpec, []string{"--", "--", "-l"}, nil, []string{"--", "-l"}},
		{"lone dash is an operand", infoSpec, []string{"-", "-l"}, []getopt.Option{short('l')}, []string{"-"}},
		{"empty word is an operand", infoSpec, []string{"", "-l"}, []getopt.Option{short('l')}, []string{""}},
		{"plus stops at the first operand", getopt.New("+lv"), []string{"-l", "a", "-v"}, []getopt.Option{short('l')}, []string{"a", "-v"}},
		{"plain getopt pingpong", pingpongSpec, []string{"-cv6", "-I10", "-S", "all", "host"}, []getopt.Option{
			short('c'), short('v'), short('6'), short('I', "10"), short('S', "all"),
		}, []string{"host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, operands, err := tt.spec.ParseAll(tt.args)
			require.NoError(t, err)
			require.Equal(t, tt.opts, opts)
			require.Equal(t, tt.operands, operands)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		spec *getopt.Spec
		args []string
		kind getopt.ErrorKind
		msg  string
		opts int // options returned before the error
	}{
		{"invalid short", infoSpec, []string{"-x"}, getopt.InvalidOption, "invalid option -- 'x'", 0},
		{"invalid in a cluster", infoSpec, []string{"-lvx"}, getopt.InvalidOption, "invalid option -- 'x'", 2},
		{"equals after a flag", infoSpec, []string{"-e=3"}, getopt.InvalidOption, "invalid option -- '='", 1},
		{"colon is never an option", infoSpec, []string{"-:"}, getopt.InvalidOption, "invalid option -- ':'", 0},
		{"raw byte", infoSpec, []string{"-\xc3\xa9"}, getopt.InvalidOption, "invalid option -- '\xc3'", 0},
		{"missing short argument", infoSpec, []string{"-p"}, getopt.MissingArgument, "option requires an argument -- 'p'", 0},
		{"missing at the end of a cluster", infoSpec, []string{"-lp"}, getopt.MissingArgument, "option requires an argument -- 'p'", 1},
		{"unrecognized long", infoSpec, []string{"--foo"}, getopt.UnrecognizedOption, "unrecognized option '--foo'", 0},
		{"unrecognized long keeps the value", infoSpec, []string{"--fo=bar"}, getopt.UnrecognizedOption, "unrecognized option '--fo=bar'", 0},
		{"triple dash", infoSpec, []string{"---"}, getopt.UnrecognizedOption, "unrecognized option '---'", 0},
		{"ambiguous", infoSpec, []string{"--ver"}, getopt.AmbiguousOption, "option '--ver' is ambiguous; possibilities: '--verbose' '--version'", 0},
		{"ambiguous with value", infoSpec, []string{"--p=tcp"}, getopt.AmbiguousOption, "option '--p=tcp' is ambiguous; possibilities: '--port' '--provider'", 0},
		{"ambiguous alias and other", extraSpec, []string{"--lis"}, getopt.AmbiguousOption, "option '--lis' is ambiguous; possibilities: '--list' '--lisp'", 0},
		{"long-only options are distinct", extraSpec, []string{"--col"}, getopt.AmbiguousOption, "option '--col' is ambiguous; possibilities: '--color' '--colour'", 0},
		{"no argument allowed", infoSpec, []string{"--list=3"}, getopt.UnexpectedArgument, "option '--list' doesn't allow an argument", 0},
		{"no argument allowed names the full option", infoSpec, []string{"--li="}, getopt.UnexpectedArgument, "option '--list' doesn't allow an argument", 0},
		{"missing long argument", infoSpec, []string{"-l", "--node"}, getopt.MissingArgument, "option '--node' requires an argument", 1},
		{"missing long argument by prefix", infoSpec, []string{"--s"}, getopt.MissingArgument, "option '--src_addr' requires an argument", 0},
		{"plain getopt has no long options", pingpongSpec, []string{"--help"}, getopt.InvalidOption, "invalid option -- '-'", 0},
		{"stops at the first mistake", infoSpec, []string{"-l", "-x", "-y"}, getopt.InvalidOption, "invalid option -- 'x'", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, _, err := tt.spec.ParseAll(tt.args)
			require.Error(t, err)
			var ge *getopt.Error
			require.ErrorAs(t, err, &ge)
			require.Equal(t, tt.kind, ge.Kind)
			require.Equal(t, tt.msg, err.Error())
			require.ErrorIs(t, err, fi.EINVAL)
			require.Equal(t, fi.EINVAL, fi.Code(err))
			require.Len(t, opts, tt.opts)
		})
	}
}

// TestParserOrder checks that options come one at a time, in command-line
// order, so that a tool can act on each (fi_info --version stops at once)
// before a later mistake is seen.
func TestParserOrder(t *testing.T) {
	p := infoSpec.Parse([]string{"op1", "--version", "-x", "op2"})
	require.True(t, p.Next())
	require.Equal(t, long(0, "version"), p.Option())
	require.NoError(t, p.Err())
	require.Equal(t, []string{"op1"}, p.Operands())
	require.False(t, p.Next())
	require.EqualError(t, p.Err(), "invalid option -- 'x'")
	require.False(t, p.Next(), "a stopped parser stays stopped")
}

func TestPosixlyCorrect(t *testing.T) {
	t.Setenv("POSIXLY_CORRECT", "")
	opts, operands, err := infoSpec.ParseAll([]string{"-l", "extra", "-x"})
	require.NoError(t, err)
	require.Equal(t, []getopt.Option{short('l')}, opts)
	require.Equal(t, []string{"extra", "-x"}, operands)
}

func TestOptionName(t *testing.T) {
	require.Equal(t, "-p", short('p').Name())
	require.Equal(t, "--provider", long('p', "provider").Name())
	require.Equal(t, "--version", long(0, "version").Name())
}

func TestBadSpecs(t *testing.T) {
	for _, optstring := range []string{"a:b:a", ":a::;", "a:::b"} {
		require.Panics(t, func() { getopt.New(optstring) }, optstring)
	}
	for _, l := range []getopt.LongOption{{Name: ""}, {Name: "a=b"}, {Name: "x", Arg: 3}} {
		require.Panics(t, func() { getopt.NewLong("", []getopt.LongOption{l}) }, l.Name)
	}
	require.NotPanics(t, func() { getopt.New("+:ab::c:") })
}

// FuzzParse checks that no command line makes the parser panic or loop,
// and what holds for every parse: options and operands come from the
// words given, in order, and an error is an *Error with EINVAL.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"-lv", "-ptcp", "--provider\x00tcp", "--ver", "--p=tcp", "a\x00-l\x00--\x00-v", "-E=5\x00--oob",
		"-I\x00-1", "--", "-", "", "---", "--=x", "-lp", "--lis", "-\xff",
	} {
		f.Add(seed)
	}
	specs := []*getopt.Spec{infoSpec, extraSpec, pingpongSpec, getopt.New("+ab:c::")}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		for _, spec := range specs {
			opts, operands, err := spec.ParseAll(args)
			if err != nil {
				var ge *getopt.Error
				require.ErrorAs(t, err, &ge)
				require.NotEmpty(t, err.Error())
				require.ErrorIs(t, err, fi.EINVAL)
			}
			require.LessOrEqual(t, len(opts), len(line)+1)
			// Operands are words of args, in their order.
			k := 0
			for _, op := range operands {
				for k < len(args) && args[k] != op {
					k++
				}
				require.Less(t, k, len(args), "operand %q is not a word of %q (in order)", op, args)
				k++
			}
			for _, o := range opts {
				if o.HasArg && o.Arg != "" {
					require.True(t, strings.Contains(line, o.Arg), "argument %q not in %q", o.Arg, line)
				}
				if o.Long == "" {
					require.NotZero(t, o.Short)
				}
			}
		}
	})
}
