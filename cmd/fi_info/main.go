// Command fi_info lists the fabric interfaces gofabric's providers offer,
// with the options and output of libfabric 1.17's fi_info(1): a summary of
// each Info by default, fi_tostr's full form with -v, the providers with
// -l and the environment variables they read with -e.
//
// When nothing matches it prints "fi_getinfo: -61" as C does, then the
// reason each provider gave, one a line, and exits with status 61 (the
// errno of the failure). Bad options exit with status 1, unknown option
// values with 22 (EINVAL).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/all"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage is printed by -h and after a bad option.
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

// options are fi_info's command-line options.
type options struct {
	src, node, port                     string
	caps, mode, epType, addrFormat      string
	domain, fabric, prov, getenv, infoS string
	env, list, verbose, version, help   bool
}

// parse reads args. Every option has its short and long spelling, each
// with one or two dashes and its value after '=' or as the next argument;
// arguments that are not options are ignored, as C's getopt_long leaves
// them.
func parse(args []string) (*options, error) {
	var o options
	fs := flag.NewFlagSet("fi_info", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	str := func(p *string, short, long string) {
		fs.StringVar(p, short, "", "")
		fs.StringVar(p, long, "", "")
	}
	boolean := func(p *bool, short, long string) {
		if short != "" {
			fs.BoolVar(p, short, false, "")
		}
		fs.BoolVar(p, long, false, "")
	}
	str(&o.src, "s", "src_addr")
	str(&o.node, "n", "node")
	str(&o.port, "P", "port")
	str(&o.caps, "c", "caps")
	str(&o.mode, "m", "mode")
	str(&o.epType, "t", "ep_type")
	str(&o.domain, "d", "domain")
	str(&o.fabric, "f", "fabric")
	str(&o.addrFormat, "a", "addr_format")
	str(&o.prov, "p", "provider")
	str(&o.getenv, "g", "getenv")
	str(&o.infoS, "i", "info")
	boolean(&o.env, "e", "env")
	boolean(&o.list, "l", "list")
	boolean(&o.verbose, "v", "verbose")
	boolean(&o.help, "h", "help")
	boolean(&o.version, "", "version")
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return &o, nil
		}
		args = fs.Args()[1:]
	}
}

// hints builds fi_getinfo's hints, node, service and flags from o. A value
// that names nothing libfabric knows gives an "error: ..." message.
func (o *options) hints() (h *fi.Info, node, service string, flags fi.Flags, msg string) {
	h = (*fi.Info)(nil).Clone()
	// Like C fi_info, accept every mode and MR mode unless -m says which.
	h.Mode = ^fi.Mode(0)
	h.DomainAttr.MRMode = ^(fi.MRModeBasic | fi.MRModeScalable)
	if o.mode != "" {
		h.Mode = 0
		for tok := range strings.SplitSeq(o.mode, "|") {
			m, err := fi.ParseMode(tok)
			if err != nil || (m == 0 && tok != "") {
				return nil, "", "", 0, "Unrecognized mode: " + tok
			}
			h.Mode |= m
		}
	}
	h.TxAttr.Mode, h.RxAttr.Mode = h.Mode, h.Mode
	for tok := range strings.SplitSeq(o.caps, "|") {
		c, err := fi.ParseCaps(tok)
		if err != nil {
			return nil, "", "", 0, "Unrecognized capability: " + tok
		}
		h.Caps |= c
	}
	if o.epType != "" {
		t, err := fi.ParseEPType(o.epType)
		if err != nil {
			return nil, "", "", 0, "Unrecognized endpoint type: " + o.epType
		}
		h.EPAttr.Type = t
	}
	if o.addrFormat != "" {
		f, err := fi.ParseAddrFormat(o.addrFormat)
		if err != nil {
			return nil, "", "", 0, "Unrecognized address format: " + o.addrFormat
		}
		h.AddrFormat = f
	}
	h.DomainAttr.Name = o.domain
	h.FabricAttr.Name = o.fabric
	h.FabricAttr.ProvName = o.prov
	node = o.node
	if o.src != "" {
		node, flags = o.src, fi.FlagSource
	}
	return h, node, o.port, flags, ""
}

// run is fi_info with args (without the program name); it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "fi_info: %v\n", err)
		fmt.Fprint(stdout, usage)
		return 1
	}
	switch {
	case o.help:
		fmt.Fprint(stdout, usage)
		return 1
	case o.version:
		fmt.Fprintf(stdout, "fi_info: %v.0\nlibfabric: %v.0\nlibfabric api: %v\n", fi.APIVersion, fi.APIVersion, fi.APIVersion)
		return 0
	case o.env || o.getenv != "":
		printEnv(stdout, o.getenv)
		return 0
	case o.list:
		for _, name := range fi.Providers() {
			if p, ok := fi.LookupProvider(name); ok {
				fmt.Fprintf(stdout, "%s:\n    version: %v\n", name, p.Version())
			}
		}
		return 0
	}
	hints, node, service, flags, msg := o.hints()
	if msg != "" {
		fmt.Fprintf(stderr, "error: %s\n", msg)
		return int(fi.EINVAL)
	}
	infos, err := fi.GetInfo(context.Background(), node, service, flags, hints)
	if err != nil {
		return getInfoFailed(stderr, err)
	}
	for _, info := range infos {
		switch {
		case o.verbose || o.infoS != "":
			if s := info.String(); strings.Contains(s, o.infoS) {
				fmt.Fprintf(stdout, "---\n%s", s)
			}
		default:
			printSummary(stdout, info)
		}
	}
	return 0
}

// getInfoFailed prints a GetInfo error as C does ("fi_getinfo: -61"),
// followed by each provider's reason or the error's text, and returns the
// exit status: the error's code.
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
	if code <= 0 || code > 255 {
		return 1
	}
	return int(code)
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
// every one when it is empty) as fi_info -e and -g do.
func printEnv(w io.Writer, substr string) {
	for _, p := range fi.Params() {
		if !strings.Contains(strings.ToLower(p.Name), strings.ToLower(substr)) {
			continue
		}
		help := p.Help
		if p.Prov != "" {
			help = p.Prov + ": " + help
		}
		fmt.Fprintf(w, "# %s: %v\n# %s\n", p.Name, p.Type, help)
		if v, ok := p.Lookup(); ok {
			fmt.Fprintf(w, "%s=%s\n", p.Name, v)
		}
		fmt.Fprintln(w)
	}
}
