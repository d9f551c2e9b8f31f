package ft

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/internal/getopt"
)

// program is one fabtests program: its C main's options and setup, and
// its run() over the Session's shared machinery. Each lives in a file
// named after it (rdm_pingpong.go) and registers itself from init.
type program struct {
	// name is the program's name without the "fi_" of its C binary.
	name string
	// desc is the one-line description of its usage.
	desc string
	// optstring is the C main's getopt string, built from the opts*
	// groups ("h" first, then the program's own letters and the groups).
	optstring string
	// usage prints the option lines of the usage (the groups' helpers and
	// the program's own lines).
	usage func(w io.Writer)
	// init changes INIT_OPTS before parsing, as some C mains do (may be
	// nil).
	init func(s *Session)
	// parse handles the program's own letters before the common parsers;
	// it reports whether it handled the option (may be nil).
	parse func(s *Session, o getopt.Option) (bool, error)
	// setup is the C main's work between parsing and run(): mostly the
	// hints (may be nil).
	setup func(s *Session) error
	// run is the program's run().
	run func(s *Session) error

	specOnce sync.Once
	spec     *getopt.Spec
}

// getoptSpec returns the program's getopt_long table.
func (p *program) getoptSpec() *getopt.Spec {
	p.specOnce.Do(func() { p.spec = getopt.NewLong(p.optstring, longOptions) })
	return p.spec
}

// programs are the registered programs by name.
var programs = map[string]*program{}

// register adds p to the programs ft runs; a program file calls it from
// init.
func register(p *program) {
	if _, dup := programs[p.name]; dup {
		panic("ft: program " + p.name + " registered twice")
	}
	programs[p.name] = p
}

// lookup finds a program by its name with or without the "fi_" prefix.
func lookup(name string) *program {
	return programs[strings.TrimPrefix(name, "fi_")]
}

// Main runs ft with args as os.Args holds them: args[0] is how ft was
// invoked, args[1] names the fabtests program (with or without its "fi_"
// prefix) and the rest are that C program's options and operand. Results
// go to stdout in the C program's format, diagnostics to stderr. It
// returns the exit status the C program would: 0 on success, 1 for a bad
// command line, -h or an unknown program, else the errno of the failure
// (see exitStatus).
func Main(args []string, stdout, stderr io.Writer) int {
	self := "ft"
	if len(args) > 0 {
		self = filepath.Base(args[0])
	}
	if len(args) < 2 {
		topUsage(stderr, self)
		return 1
	}
	p := lookup(args[1])
	if p == nil {
		fmt.Fprintf(stderr, "%s: unknown program %q\n", self, args[1])
		topUsage(stderr, self)
		return 1
	}
	display := self + " " + p.name
	s := newSession(p, args, stdout, stderr)
	if p.init != nil {
		p.init(s)
	}
	err := s.parse(p.getoptSpec(), args[2:])
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", display, ue.err)
		}
		printUsage(stderr, display, p)
		return 1
	}
	if err == nil && s.opts.PinCore != "" {
		if perr := pinCore(s.opts.PinCore); perr != nil {
			fmt.Fprintf(stderr, "%s: [warn] Pin to core %s failed: %v\n", display, s.opts.PinCore, perr)
		}
	}
	if err == nil && p.setup != nil {
		err = p.setup(s)
	}
	if err == nil {
		err = s.runLocked(p)
	}
	// As in C, a failing close is reported but does not change the
	// status.
	if cerr := s.close(); cerr != nil {
		fmt.Fprintf(stderr, "%s: [warn] close: %v\n", display, cerr)
	}
	if err != nil {
		printErr(stderr, display, err)
	}
	return exitStatus(err)
}

// runLocked runs the program, on one thread when it busy-polls
// (CompSpin). The runtime preempts a goroutine that has run for 10 ms; with
// a processor idle, it may resume the goroutine on another thread, which
// the kernel can wake on the CPU where the peer polls, and the two then
// share that CPU for milliseconds (cmd/fi_pingpong's loop, which does the
// same, says more). A program that blocks in its waits keeps the runtime's
// freedom: a locked thread would cost a thread switch at every wake-up.
func (s *Session) runLocked(p *program) error {
	if s.opts.CompMethod == CompSpin {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	return p.run(s)
}

// topUsage lists the programs.
func topUsage(w io.Writer, self string) {
	fmt.Fprintf(w, "Usage: %s PROGRAM [OPTIONS] [<server address>]\n\n", self)
	fmt.Fprintf(w, "Runs a libfabric fabtests program over gofabric; it pairs with the C\nprogram of the same name (fi_PROGRAM) as either side. PROGRAM may carry\nthe fi_ prefix. \"%s PROGRAM -h\" lists its options.\n\nPrograms:\n", self)
	names := make([]string, 0, len(programs))
	for n := range programs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-24s %s\n", n, programs[n].desc)
	}
}

// printUsage prints a program's usage (ft_usage and the program's own
// lines).
func printUsage(w io.Writer, display string, p *program) {
	fmt.Fprintf(w, "Usage:\n  %s [OPTIONS]          run as the server\n  %s [OPTIONS] <host>   run as a client of the server on host\n\n%s\n\nOptions:\n", display, display, p.desc)
	p.usage(w)
}

// opt prints one option line of a usage.
func opt(w io.Writer, flag, desc string) {
	fmt.Fprintf(w, "%-30s %s\n", flag, desc)
}

// usageAddr lists the address options (ft_addr_usage).
func usageAddr(w io.Writer) {
	opt(w, "-B <src_port>", "source port: the server's data port, or the client's own (9228)")
	opt(w, "-P <dst_port>", "the server's data port, for a client (9228)")
	opt(w, "-s <address>", "source address")
	opt(w, "-b[=<oob_port>]", "exchange addresses and synchronize over a TCP socket (port 3000)")
	opt(w, "-E[=<oob_port>]", "exchange addresses over a TCP socket (port 3000)")
	opt(w, "-C <number>", "number of client connections the server takes")
	opt(w, "-F <addr_format>", "address format: fi_sockaddr, fi_sockaddr_in, fi_sockaddr_in6 (default: any)")
}

// usageCommon lists the options of every program (ft_usage).
func usageCommon(w io.Writer) {
	usageAddr(w)
	opt(w, "-f <fabric>", "fabric name")
	opt(w, "-d <domain>", "domain name")
	opt(w, "-p <provider>", "provider name: tcp, udp, shm, verbs")
	opt(w, "-e <ep_type>", "endpoint type: msg, rdm, dgram (programs that take it; default rdm)")
	opt(w, "-M <mode>", "leave a memory registration mode out of the hints: mr_local")
	opt(w, "-K", "fork a child after setup (C only: refused here)")
	opt(w, "-a <av name>", "name of a shared address vector (refused: gofabric has none)")
	opt(w, "-h", "print this help and exit")
}

// usageHMEM lists the device-memory options (ft_hmem_usage).
func usageHMEM(w io.Writer) {
	opt(w, "-D <device_iface>", "device memory interface: cuda, ze, neuron (refused: gofabric has none)")
	opt(w, "-i <device_id>", "device number (0)")
	opt(w, "-H", "ask the provider for FI_HMEM")
}

// usageCS lists the client-server options (ft_csusage's own lines).
func usageCS(w io.Writer) {
	opt(w, "-I <number>", "iterations per size (by size: 10000 below 64k, 1000 below 1m, 100)")
	opt(w, "-Q", "bind the EQ to the domain (refused: gofabric binds it to the endpoint)")
	opt(w, "-w <number>", "untimed warm-up iterations (10)")
	opt(w, "-S <size>", "one transfer size, a range r:start,inc,end, or all (default: 64 256 1k 4k 64k 1m)")
	opt(w, "-l", "align the data buffers to a page")
	opt(w, "-m", "print results as YAML")
	usageHMEM(w)
	opt(w, "-t <type>", "completions on a queue or counter (queue)")
	opt(w, "-c <method>", "wait for completions by spin or sread (fd and yield: refused by gofabric's queues)")
}

// usageBenchmark lists the benchmark options (ft_benchmark_usage).
func usageBenchmark(w io.Writer) {
	opt(w, "-v", "fill and check every timed payload")
	opt(w, "-k", "require the provider's message prefix mode (FI_MSG_PREFIX)")
	opt(w, "-j <size>", "inject messages smaller than this (default: the provider's inject size)")
	opt(w, "-W <number>", "window: messages in flight in bandwidth tests (64)")
}

// usageLong lists the long options (ft_longopts_usage).
func usageLong(w io.Writer) {
	opt(w, "--pin-core <core_list>", "run on these cores, e.g. 0,2-4")
	opt(w, "--timeout <seconds>", "give up on a receive after this long without one (ft bounds every wait for a peer it has heard from by 60 s otherwise)")
	opt(w, "--debug-assert", "accepted for C's sake; ft has no asserts")
}
