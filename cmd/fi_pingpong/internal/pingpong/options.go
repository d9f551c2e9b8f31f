package pingpong

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// DefaultPort is the control-channel port a server listens on and a
// client connects to when -B / -P are not given (fi_pingpong's 47592).
const DefaultPort = 47592

// DefaultIterations is the -I default.
const DefaultIterations = 10

// DefaultTimeout is the -T default: the control channel waits at most this
// long for the peer, as long as the tcp provider's connection timeout
// (FI_TCP_CONN_TIMEOUT's default).
const DefaultTimeout = 30 * time.Second

// Tag is the tag every data message carries in tagged mode (-m tagged).
const Tag = 1234

// Options are fi_pingpong's command-line options (util/pingpong.c's
// struct pingpong_opts), after parsing and defaulting.
type Options struct {
	// Provider is -p: the provider name hint (fi_fabric_attr.prov_name).
	Provider string
	// Domain is -d: the domain name hint (for tcp an interface name).
	Domain string
	// EPType is -e: fi.EPTypeMsg, fi.EPTypeRDM or fi.EPTypeDgram (default).
	EPType fi.EPType
	// Iterations is -I, per message size.
	Iterations int
	// SizeAll is -S all: test every size of AllSizes.
	SizeAll bool
	// Size is -S N when SizeSet: test exactly that size.
	Size    int
	SizeSet bool
	// Check is -c: fill and verify payloads (check.go).
	Check bool
	// Tagged is -m anything but msg: FI_TAGGED with tag 1234.
	Tagged bool
	// Verbose is -v: a debug trace on stderr.
	Verbose bool
	// IPv6 is -6: the control channel uses IPv6.
	IPv6 bool
	// SrcPort is -B: the server's listening port, or the client's source
	// port (0: the kernel picks).
	SrcPort uint16
	// DstPort is -P: the client's destination port.
	DstPort uint16
	// Server is the positional argument: the server's host for the control
	// connection. Empty means this process is the server.
	Server string
	// Timeout is -T: how long the control channel may wait for the peer
	// (a read, a write, the client's connection); 0 means no limit.
	Timeout time.Duration
}

// IsClient reports whether a server address was given.
func (o *Options) IsClient() bool { return o.Server != "" }

// usage is printed on stderr by -h and after an unknown option.
const usage = `Usage:
  fi_pingpong [OPTIONS]              run as server
  fi_pingpong [OPTIONS] <srv_addr>   run as client, connecting to srv_addr

Ping-pong latency and bandwidth test between a client and a server.

Options:
 -B <src_port>        control port: server listens on it (47592), client binds it (auto)
 -P <dst_port>        control port the client connects to (47592)
 -d <domain>          domain name
 -p <provider>        provider name, e.g. tcp, udp, shm
 -e <ep_type>         endpoint type: msg|rdm|dgram (dgram)
 -I <number>          iterations per size (10)
 -S <size>            one transfer size, or 'all' (default: 64 256 1k 4k 64k 1m)
 -c                   check the data of every transfer
 -m <transmit mode>   transmit mode: msg|tagged (msg)
 -T <seconds>         give up when the peer's control channel is silent that long,
                      0 for never (30; gofabric only)
 -h                   print this help and exit
 -v                   print a debug trace
 -6                   use IPv6 for the control connection
`

// spec is fi_pingpong's command line: C's getopt optstring (plain getopt,
// no long options) and gofabric's -T.
var spec = getopt.New("hvd:p:e:I:S:B:P:cm:6T:")

// exitError carries the exit status of a command line fi_pingpong refuses
// before running, with the diagnostic already printed.
type exitError struct {
	status int
	err    error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitStatus returns the process exit status for err, as fi_pingpong's
// main computes it: 0 for nil, the status of a refused command line (1 for
// usage errors), 255 for a data-integrity failure, else the errno in err's
// chain (61 for ENODATA, 103 for ECONNABORTED...).
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.status
	}
	var ce *CheckError
	if errors.As(err, &ce) {
		return 255
	}
	c := fi.Code(err)
	if c <= 0 || c > 255 {
		return 1
	}
	return int(c)
}

// ParseOptions parses args (without the program name) as fi_pingpong's
// getopt loop does, option string "hvd:p:e:I:S:B:P:cm:6" (glibc's getopt,
// internal/getopt): clusters (-cv), attached values (-I10), options and
// the server address in any order, "--" to end the options; the first
// operand is the server address. Diagnostics go to stderr.
//
// Like the C tool, -h and getopt's complaints ("invalid option -- 'x'")
// print the usage and fail with exit status 1, and an unknown -e prints
// "Unknown endpoint : <arg>" with status 1. A number that is not one
// prints C's `Error parsing "<arg>": <strerror>` and, where the C tool
// goes on with a meaningless value (0 iterations for -I, a garbage size or
// port for -S, -B, -P), fails with status EINVAL (22) or ERANGE (34) and a
// hint giving the option's range. An empty value, 0 for C's strtol, is
// refused the same way. -I 0 runs no iterations and prints no row, as in C.
//
// -T <seconds> is gofabric's: how long a control-channel read or write,
// and the client's connection, may wait for the peer before the tool
// gives up with ETIMEDOUT (default DefaultTimeout, 0 for no limit). The C
// tool has no such option; its client waits forever on a port that
// accepts and says nothing.
func ParseOptions(args []string, stderr io.Writer) (*Options, error) {
	o := &Options{EPType: fi.EPTypeDgram, Iterations: DefaultIterations, DstPort: DefaultPort, Timeout: DefaultTimeout}
	srcPortSet := false
	p := spec.Parse(args)
	for p.Next() {
		opt := p.Option()
		if opt.Short == 'h' {
			io.WriteString(stderr, usage)
			return nil, &exitError{status: 1, err: errors.Wrap(fi.EINVAL, "pingpong: help requested")}
		}
		if err := o.set(opt.Short, opt.Arg, stderr, &srcPortSet); err != nil {
			return nil, err
		}
	}
	if err := p.Err(); err != nil {
		fmt.Fprintf(stderr, "fi_pingpong: %v\n", err)
		io.WriteString(stderr, usage)
		return nil, &exitError{status: 1, err: errors.Wrap(err, "pingpong")}
	}
	if operands := p.Operands(); len(operands) > 0 {
		o.Server = operands[0]
	}
	if !o.IsClient() && !srcPortSet {
		o.SrcPort = DefaultPort
	}
	return o, nil
}

// set applies one option.
func (o *Options) set(c byte, val string, stderr io.Writer, srcPortSet *bool) error {
	switch c {
	case 'v':
		o.Verbose = true
	case 'c':
		o.Check = true
	case '6':
		o.IPv6 = true
	case 'd':
		o.Domain = val
	case 'p':
		o.Provider = val
	case 'e':
		switch strings.ToLower(val) {
		case "msg":
			o.EPType = fi.EPTypeMsg
		case "rdm":
			o.EPType = fi.EPTypeRDM
		case "dgram":
			o.EPType = fi.EPTypeDgram
		default:
			fmt.Fprintf(stderr, "Unknown endpoint : %s\n", val)
			return &exitError{status: 1, err: errors.Wrapf(fi.EINVAL, "pingpong: unknown endpoint type %q", val)}
		}
	case 'I':
		n, err := parseNumber(val, 0, math.MaxInt32, "-I takes the number of iterations per size", stderr)
		if err != nil {
			return err
		}
		o.Iterations = n
	case 'S':
		if strings.EqualFold(val, "all") {
			o.SizeAll, o.SizeSet = true, false
			return nil
		}
		n, err := parseNumber(val, 0, math.MaxInt32, "-S takes a transfer size in bytes, or 'all'", stderr)
		if err != nil {
			return err
		}
		o.Size, o.SizeSet, o.SizeAll = n, true, false
	case 'B', 'P':
		what := "-B takes the control port to listen on or bind (0: any)"
		if c == 'P' {
			what = "-P takes the server's control port (0: 47592)"
		}
		n, err := parseNumber(val, 0, math.MaxUint16, what, stderr)
		if err != nil {
			return err
		}
		switch {
		case c == 'B':
			o.SrcPort, *srcPortSet = uint16(n), true
		case n == 0: // as C: no port is the default one
			o.DstPort = DefaultPort
		default:
			o.DstPort = uint16(n)
		}
	case 'm':
		o.Tagged = !strings.EqualFold(val, "msg")
	case 'T':
		n, err := parseNumber(val, 0, math.MaxInt32, "-T takes seconds (0: no limit)", stderr)
		if err != nil {
			return err
		}
		o.Timeout = time.Duration(n) * time.Second
	}
	return nil
}

// parseNumber is parseInt with the range min..max, where "" is no number;
// on error it returns an exitError whose status is the errno and whose
// hint is "<what>: min to max".
func parseNumber(s string, min, max int64, what string, stderr io.Writer) (int, error) {
	n, err := parseInt(s, max, stderr)
	var code fi.Errno
	switch {
	case err != nil:
	case s == "": // strtol's 0, for C; a mistake here
		code = fi.EINVAL
	case int64(n) < min:
		code = errRange
	}
	if code != 0 {
		fmt.Fprintf(stderr, "Error parsing \"%s\": %s\n", s, code.Error())
		err = errors.Wrapf(code, "pingpong: parse %q", s)
	}
	if err != nil {
		err = errors.WithHintf(err, "%s: %d to %d", what, min, max)
		return 0, &exitError{status: int(fi.Code(err)), err: err}
	}
	return n, nil
}

// parseInt parses s as C's strtol in base 10 followed by fi_pingpong's
// checks: leading white space and a sign are allowed, "" is 0, trailing
// characters give EINVAL, a value outside 0..max gives ERANGE (an overflow
// of long is reported before trailing characters, a negative value after
// them). On error it prints `Error parsing "<s>": <strerror>` on stderr.
func parseInt(s string, max int64, stderr io.Writer) (int, error) {
	fail := func(code fi.Errno) (int, error) {
		fmt.Fprintf(stderr, "Error parsing \"%s\": %s\n", s, code.Error())
		return 0, errors.Wrapf(code, "pingpong: parse %q", s)
	}
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var v uint64
	overflow := false
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if v > (math.MaxInt64-uint64(s[i]-'0'))/10 {
			overflow = true
		} else {
			v = v*10 + uint64(s[i]-'0')
		}
		i++
	}
	if i == start {
		// No digits: strtol consumed nothing, so the whole string is left.
		if s == "" {
			return 0, nil
		}
		return fail(fi.EINVAL)
	}
	switch {
	case overflow:
		return fail(errRange)
	case i != len(s):
		return fail(fi.EINVAL)
	case neg && v != 0, v > uint64(max):
		return fail(errRange)
	}
	return int(v), nil
}

// errRange is the code of an option value out of range: ERANGE, 34 as
// on Linux (fi.Errno keeps Linux's errno numbers on every OS).
const errRange fi.Errno = 34
