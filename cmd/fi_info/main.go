// Command fi_info lists the fabric interfaces gofabric's providers offer,
// with the options and output of libfabric 1.17's fi_info(1): a summary of
// each Info by default, fi_tostr's full form with -v, the providers with
// -l and the environment variables they read with -e.
//
// Options are read as C's getopt_long reads them (internal/getopt):
// clusters (-lv), attached values (-ptcp), long options with '=' or a
// separate value, unambiguous prefixes of long options (--prov), operands
// anywhere (ignored) and "--". They take effect in command-line order, as
// in C: --version prints the versions and exits 0 when it is reached, and
// an unknown capability, mode, endpoint type or address format stops the
// command there with status 22 (EINVAL).
//
// A bad option prints glibc's complaint and the usage and exits 1, as does
// -h. When nothing matches it prints "fi_getinfo: -61" as C does, then the
// reason each provider gave, one a line, and exits with status 61 (the
// errno of the failure). Any hint the error carries follows as
// "hint: ..." lines.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
	_ "github.com/gofabric/gofabric/providers/all"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// longOptions is fi_info's getopt_long table, in C's order.
var longOptions = []getopt.LongOption{
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

// spec is fi_info's command line: C's optstring and long options.
var spec = getopt.NewLong("s:n:P:c:m:t:a:p:d:f:eg:i:lhv", longOptions)

// usage is printed on stdout by -h and after a bad option.
const usage = `Usage: fi_info
  -h, --help			print this help and exit
  -s, --src_addr=ADDR		source address or name (FI_SOURCE)
  -n, --node=NAME		destination node name or address
  -P, --port=PNUM		port number or service name
  -c, --caps=CAP1|CAP2..	capabilities required: FI_MSG|FI_RMA...
  -m, --mode=MOD1|MOD2..	modes supported, all of them by default
  -t, --ep_type=EPTYPE		one endpoint type: FI_EP_MSG, FI_EP_RDM...
  -d, --domain=DOMAIN		domain name
  -f, --fabric=FABRIC		fabric name
  -a, --addr_format=FMT		address format: FI_SOCKADDR_IN...
  -p, --provider=PROV		provider name
  -e, --env			print the environment variables read
  -g, --getenv=SUBSTR		print those whose name contains SUBSTR
  -i, --info=SUBSTR		print (verbose) only entries containing SUBSTR
  -l, --list			list the providers
  -v, --verbose			print every field of each entry
  --version			print the versions and exit
`

// options are fi_info's settings, built as the options come.
type options struct {
	hints      *fi.Info
	node, port string
	flags      fi.Flags
	// substr is -g's and -i's SUBSTR; C keeps both in one variable, so
	// the last one given filters whichever output is printed.
	substr             string
	env, list, verbose bool
	exitNow            bool // -h, --version or a bad value ended the command
	status             int  // the exit status when exitNow
	stdout, stderr     io.Writer
}

func newOptions(stdout, stderr io.Writer) *options {
	h := (*fi.Info)(nil).Clone()
	// Like C fi_info, accept every mode and MR mode unless -m says which.
	h.Mode = ^fi.Mode(0)
	h.DomainAttr.MRMode = ^(fi.MRModeBasic | fi.MRModeScalable)
	return &options{hints: h, stdout: stdout, stderr: stderr}
}

// stop ends the command with status.
func (o *options) stop(status int) {
	o.exitNow, o.status = true, status
}

// invalid reports a value libfabric does not know ("error: Unrecognized
// capability: FI_BOGUS") and ends the command with EINVAL, as C's fi_info.
func (o *options) invalid(what, value string) {
	fmt.Fprintf(o.stderr, "error: Unrecognized %s: %s\n", what, value)
	o.stop(int(fi.EINVAL))
}

// apply acts on one option, in command-line order.
func (o *options) apply(opt getopt.Option) {
	h, arg := o.hints, opt.Arg
	if opt.Long == "version" {
		fmt.Fprint(o.stdout, versionText())
		o.stop(0)
		return
	}
	switch opt.Short {
	case 'h':
		fmt.Fprint(o.stdout, usage)
		o.stop(1)
	case 's':
		o.node = arg
		o.flags |= fi.FlagSource
	case 'n':
		o.node = arg
	case 'P':
		o.port = arg
	case 'c':
		// Like strtok, empty tokens ("FI_MSG|") are skipped; caps given
		// twice add up.
		for tok := range strings.SplitSeq(arg, "|") {
			c, err := fi.ParseCaps(tok)
			if err != nil {
				o.invalid("capability", tok)
				return
			}
			h.Caps |= c
		}
	case 'm':
		h.Mode = 0
		for tok := range strings.SplitSeq(arg, "|") {
			m, err := fi.ParseMode(tok)
			if err != nil || (m == 0 && tok != "") {
				o.invalid("mode", tok)
				return
			}
			h.Mode |= m
		}
	case 't':
		t, err := fi.ParseEPType(arg)
		if err != nil {
			o.invalid("endpoint type", arg)
			return
		}
		h.EPAttr.Type = t
	case 'a':
		f, err := fi.ParseAddrFormat(arg)
		if err != nil {
			o.invalid("address format", arg)
			return
		}
		h.AddrFormat = f
	case 'p':
		h.FabricAttr.ProvName = arg
	case 'd':
		h.DomainAttr.Name = arg
	case 'f':
		h.FabricAttr.Name = arg
	case 'g':
		o.substr, o.env = arg, true
	case 'e':
		o.env = true
	case 'l':
		o.list = true
	case 'i':
		o.substr, o.verbose = arg, true
	case 'v':
		o.verbose = true
	}
}

// run is fi_info with args (without the program name); it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o := newOptions(stdout, stderr)
	p := spec.Parse(args)
	for p.Next() {
		if o.apply(p.Option()); o.exitNow {
			return o.status
		}
	}
	if err := p.Err(); err != nil {
		fmt.Fprintf(stderr, "fi_info: %v\n", err)
		fmt.Fprint(stdout, usage)
		return 1
	}
	o.hints.TxAttr.Mode, o.hints.RxAttr.Mode = o.hints.Mode, o.hints.Mode

	// As C: the query runs first (-l asks for the providers only), and
	// its failure ends the command whatever was asked.
	var (
		infos []*fi.Info
		err   error
	)
	if o.list {
		infos, err = providerInfos()
	} else {
		infos, err = fi.GetInfo(context.Background(), o.node, o.port, o.flags, o.hints)
	}
	if err != nil {
		return getInfoFailed(stderr, err)
	}
	switch {
	case o.env:
		printEnv(stdout, o.substr)
	case o.verbose:
		for _, info := range infos {
			if s := info.String(); containsFold(s, o.substr) {
				fmt.Fprintf(stdout, "---\n%s", s)
			}
		}
	case o.list:
		for _, info := range infos {
			fmt.Fprintf(stdout, "%s:\n    version: %v\n", info.FabricAttr.ProvName, info.FabricAttr.ProvVersion)
		}
	default:
		for _, info := range infos {
			printSummary(stdout, info)
		}
	}
	return 0
}

// providerInfos is fi_getinfo with FI_PROV_ATTR_ONLY as C's fi_info -l
// sees it: one entry per registered provider with only its name and
// version, whatever FI_PROVIDER and the hints select.
func providerInfos() ([]*fi.Info, error) {
	var infos []*fi.Info
	for _, name := range fi.Providers() {
		p, ok := fi.LookupProvider(name)
		if !ok {
			continue
		}
		info := (*fi.Info)(nil).Clone()
		info.FabricAttr.ProvName = name
		info.FabricAttr.ProvVersion = p.Version()
		infos = append(infos, info)
	}
	if len(infos) == 0 {
		return nil, &fi.NoMatchError{}
	}
	return infos, nil
}

// containsFold is C's strcasestr test: whether s contains substr in any
// case.
func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}

// modulePath is gofabric's module.
const modulePath = "github.com/gofabric/gofabric"

// versionText is --version's output: C 1.17's three lines (the tool's
// version, libfabric's and its API's), then gofabric's own version.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	return fmt.Sprintf("fi_info: %v.0\nlibfabric: %v.0\nlibfabric api: %v\ngofabric: %s\n",
		fi.APIVersion, fi.APIVersion, fi.APIVersion, moduleVersion(bi, ok))
}

// moduleVersion names the gofabric build bi describes: the module's
// version when it was built from a released or pseudo-versioned module,
// else "(devel)" followed by the VCS revision and "+dirty" for a
// modified checkout, when the build recorded them.
func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(unknown)"
	}
	v := bi.Main.Version
	if bi.Main.Path != modulePath {
		if i := slices.IndexFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == modulePath }); i >= 0 {
			v = bi.Deps[i].Version
		}
	}
	if v != "" && v != "(devel)" {
		return v
	}
	v = "(devel)"
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}

// getInfoFailed prints a GetInfo error as C does ("fi_getinfo: -61"),
// followed by each provider's reason or the error's text and the hints,
// and returns the exit status: the error's code.
func getInfoFailed(stderr io.Writer, err error) int {
	code := fi.Code(err)
	fmt.Fprintf(stderr, "fi_getinfo: %d\n", -int(code))
	var nm *fi.NoMatchError
	if errors.As(err, &nm) && len(nm.Reasons) > 0 {
		for _, r := range nm.Reasons {
			fmt.Fprintf(stderr, "    %v\n", r)
		}
	} else {
		fmt.Fprintf(stderr, "    %v\n", err)
	}
	printHints(stderr, err)
	if code <= 0 || code > 255 {
		return 1
	}
	return int(code)
}

// printHints prints the hints of err (cockroachdb/errors' WithHint), and
// of the errors behind a NoMatchError's reasons, one "hint: " line each.
func printHints(w io.Writer, err error) {
	hints := errors.GetAllHints(err)
	var nm *fi.NoMatchError
	if errors.As(err, &nm) {
		for _, r := range nm.Reasons {
			if r.Err != nil {
				hints = append(hints, errors.GetAllHints(r.Err)...)
			}
		}
	}
	var seen []string
	for _, h := range hints {
		if slices.Contains(seen, h) {
			continue
		}
		seen = append(seen, h)
		fmt.Fprintf(w, "hint: %s\n", strings.ReplaceAll(h, "\n", "\n      "))
	}
}

// printSummary prints info as fi_info does without -v.
func printSummary(w io.Writer, info *fi.Info) {
	var (
		fab = info.FabricAttr
		dom = info.DomainAttr
		ep  = info.EPAttr
	)
	if fab == nil {
		fab = &fi.FabricAttr{}
	}
	if dom == nil {
		dom = &fi.DomainAttr{}
	}
	if ep == nil {
		ep = &fi.EPAttr{}
	}
	fmt.Fprintf(w, "provider: %s\n    fabric: %s\n    domain: %s\n    version: %v\n    type: %v\n    protocol: %v\n",
		cstr(fab.ProvName), cstr(fab.Name), cstr(dom.Name), fab.ProvVersion, ep.Type, ep.Protocol)
}

// cstr prints an unset string as C prints NULL.
func cstr(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

// printEnv prints the parameters whose names contain substr (in any case;
// every one when it is empty) as fi_info -e and -g do; a value with a
// space is quoted, as C quotes it.
func printEnv(w io.Writer, substr string) {
	for _, p := range fi.Params() {
		if !containsFold(p.Name, substr) {
			continue
		}
		help := p.Help
		if p.Prov != "" {
			help = p.Prov + ": " + help
		}
		fmt.Fprintf(w, "# %s: %v\n# %s\n", p.Name, p.Type, help)
		if v, ok := p.Lookup(); ok {
			if strings.Contains(v, " ") {
				v = `"` + v + `"`
			}
			fmt.Fprintf(w, "%s=%s\n", p.Name, v)
		}
		fmt.Fprintln(w)
	}
}
