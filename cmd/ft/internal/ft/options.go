package ft

import (
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/getopt"
)

// The getopt option groups fabtests' programs build their optstrings from
// (include/shared.h and benchmarks/benchmark_shared.h). A program's
// optstring is "h" plus its own letters plus the groups it parses, in the
// order its C main names them.
const (
	// optsAddr are the address options (ft_parse_addr_opts): -B -P -s -a
	// -b[=port] -E[=port] -C -F.
	optsAddr = "B:P:s:a:b::E::C:F:"
	// optsFab are the fabric options (ft_parseinfo): -f -d -p -K.
	optsFab = "f:d:p:K"
	// optsHMEM are the device-memory options (ft_parse_hmem_opts): -D -i -H.
	optsHMEM = "D:i:H"
	// optsInfo are optsFab, optsHMEM, -e and -M (ft_parseinfo).
	optsInfo = optsFab + optsHMEM + "e:M:"
	// optsCS are the client-server options (ft_parsecsopts): optsAddr and
	// -I -Q -S -m -c -t -w -l.
	optsCS = optsAddr + "I:QS:mc:t:w:l"
	// optsAPI is -o (ft_parse_api_opts).
	optsAPI = "o:"
	// optsBenchmark are the benchmark options (ft_parse_benchmark_opts):
	// -v -k -j -W.
	optsBenchmark = "vkj:W:"
)

// longOptions are the long options every program takes (shared.c's
// long_opts).
var longOptions = []getopt.LongOption{
	{Name: "pin-core", Arg: getopt.RequiredArgument},
	{Name: "timeout", Arg: getopt.RequiredArgument},
	{Name: "debug-assert"},
}

// Opt is a set of the FT_OPT_* bits of struct ft_opts.options, with
// shared.h's values.
type Opt uint32

// The FT_OPT_* bits.
const (
	OptActive        Opt = 1 << 0  // FT_OPT_ACTIVE: inside a timed loop
	OptIter          Opt = 1 << 1  // FT_OPT_ITER: -I was given
	OptSize          Opt = 1 << 2  // FT_OPT_SIZE: -S N was given
	OptRxCQ          Opt = 1 << 3  // FT_OPT_RX_CQ: receive completions on a CQ
	OptTxCQ          Opt = 1 << 4  // FT_OPT_TX_CQ: transmit completions on a CQ
	OptRxCntr        Opt = 1 << 5  // FT_OPT_RX_CNTR: a receive counter
	OptTxCntr        Opt = 1 << 6  // FT_OPT_TX_CNTR: a transmit counter
	OptVerifyData    Opt = 1 << 7  // FT_OPT_VERIFY_DATA: -v
	OptAlign         Opt = 1 << 8  // FT_OPT_ALIGN: -l
	OptBW            Opt = 1 << 9  // FT_OPT_BW: a bandwidth test
	OptCQShared      Opt = 1 << 10 // FT_OPT_CQ_SHARED: one CQ for both directions
	OptOOBSync       Opt = 1 << 11 // FT_OPT_OOB_SYNC: -b, ft_sync over the socket
	OptSkipMsgAlloc  Opt = 1 << 12 // FT_OPT_SKIP_MSG_ALLOC
	OptSkipRegMR     Opt = 1 << 13 // FT_OPT_SKIP_REG_MR
	OptOOBAddrExch   Opt = 1 << 14 // FT_OPT_OOB_ADDR_EXCH: -E or -b
	OptAllocMultMR   Opt = 1 << 15 // FT_OPT_ALLOC_MULT_MR
	OptServerPersist Opt = 1 << 16 // FT_OPT_SERVER_PERSIST: -C
	OptEnableHMEM    Opt = 1 << 17 // FT_OPT_ENABLE_HMEM: -H or -D
	OptUseDevice     Opt = 1 << 18 // FT_OPT_USE_DEVICE: -D
	OptDomainEQ      Opt = 1 << 19 // FT_OPT_DOMAIN_EQ: -Q
	OptForkChild     Opt = 1 << 20 // FT_OPT_FORK_CHILD: -K
	OptSRX           Opt = 1 << 21 // FT_OPT_SRX: a shared receive context
	OptSTX           Opt = 1 << 22 // FT_OPT_STX: a shared transmit context
	OptSkipAddrExch  Opt = 1 << 23 // FT_OPT_SKIP_ADDR_EXCH
	OptPerf          Opt = 1 << 24 // FT_OPT_PERF

	// OptOOBCtrl is FT_OPT_OOB_CTRL: either use of the socket.
	OptOOBCtrl = OptOOBSync | OptOOBAddrExch
)

// CompMethod is how a program waits for completions (-c; enum
// ft_comp_method).
type CompMethod int

// The completion methods.
const (
	CompSpin    CompMethod = iota // FT_COMP_SPIN: fi_cq_read in a loop (default)
	CompSRead                     // FT_COMP_SREAD: fi_cq_sread, fi_cntr_wait
	CompWaitSet                   // FT_COMP_WAITSET: a wait set (no program option selects it)
	CompWaitFD                    // FT_COMP_WAIT_FD: poll(2) on the CQ's wait fd
	CompYield                     // FT_COMP_YIELD: FI_WAIT_YIELD
)

// RMAOp is an RMA operation (-o; enum ft_rma_opcodes).
type RMAOp int

// The RMA operations.
const (
	RMARead      RMAOp = iota + 1 // FT_RMA_READ
	RMAWrite                      // FT_RMA_WRITE (the default)
	RMAWriteData                  // FT_RMA_WRITEDATA
)

// Defaults of struct ft_opts (INIT_OPTS) and shared.c.
const (
	defaultPort       = "9228" // the data port (-B, -P)
	defaultOOBPort    = "3000" // the out-of-band socket's port (-E, -b)
	defaultIterations = 1000
	defaultWarmup     = 10
	defaultTransfer   = 1024
	defaultWindow     = 64
	// maxCtrlMsg is FT_MAX_CTRL_MSG: the size of an address block and the
	// least a receive buffer holds.
	maxCtrlMsg = 256
	// mrKey is FT_MR_KEY, the key asked for the data buffers' MR.
	mrKey = 0xC0DE
)

// Options are the options of one run: struct ft_opts, with the hints
// kept in Session.hints.
type Options struct {
	// Flags are the FT_OPT_* bits.
	Flags Opt
	// Iterations per size (-I; by size unless OptIter) and warm-up
	// iterations before the timed ones (-w).
	Iterations, Warmup int
	// TransferSize is the size under test (-S N with OptSize).
	TransferSize int
	// WindowSize is -W: operations in flight in the bandwidth tests.
	WindowSize int
	// AVSize is the AV's count attribute.
	AVSize int
	// TxCQSize and RxCQSize override the CQ sizes (0: the tx/rx sizes).
	TxCQSize, RxCQSize int
	// SrcAddr (-s), SrcPort (-B), DstAddr (the operand) and DstPort (-P):
	// empty when not given, as C's NULL pointers.
	SrcAddr, SrcPort, DstAddr, DstPort string
	// AVName is -a.
	AVName string
	// AllSizes is -S all or -S r:...: every size of the table runs
	// (FT_ENABLE_SIZES), else only the default ones (FT_DEFAULT_SIZE).
	AllSizes bool
	// Sizes is the size table (def_test_sizes, or the -S r: range).
	Sizes []sizeParam
	// CompMethod is -c.
	CompMethod CompMethod
	// MachineReadable is -m.
	MachineReadable bool
	// RMAOp is -o read|write|writedata.
	RMAOp RMAOp
	// OOBPort is the out-of-band socket's port (-E=port, -b=port), empty
	// until the socket is used.
	OOBPort string
	// NumConnections is -C.
	NumConnections int
	// AddrFormat is -F.
	AddrFormat fi.AddrFormat
	// MRMode is the FI_MR_* mode the hints ask for (-M mr_local clears
	// FI_MR_LOCAL).
	MRMode fi.MRMode
	// ForcePrefix is -k: the provider must keep FI_MSG_PREFIX.
	ForcePrefix bool
	// Device is -i.
	Device int
	// InjectSize is -j, used when InjectSizeSet.
	InjectSize    int
	InjectSizeSet bool
	// Timeout is the C programs' timeout in seconds (--timeout; -T in
	// dgram_pingpong), negative for none: how long a wait for a receive
	// completion lasts without one. See Session.limit for what ft adds.
	Timeout int
	// TimeoutSet says Timeout came from the command line.
	TimeoutSet bool
	// PinCore is --pin-core.
	PinCore string
	// Argv is the command line, for -m's header.
	Argv []string
}

// defaultOptions returns INIT_OPTS.
func defaultOptions() Options {
	return Options{
		Flags:          OptRxCQ | OptTxCQ,
		Iterations:     defaultIterations,
		Warmup:         defaultWarmup,
		NumConnections: 1,
		TransferSize:   defaultTransfer,
		WindowSize:     defaultWindow,
		AVSize:         1,
		Sizes:          defaultSizes(),
		RMAOp:          RMAWrite,
		MRMode:         fi.MRModeLocal | fi.MRModeEndpoint | fi.MRModeAllocated | fi.MRModeProvKey | fi.MRModeVirtAddr,
		Timeout:        -1,
	}
}

// Has reports whether all of flags are set (ft_check_opts).
func (o *Options) Has(flags Opt) bool { return o.Flags&flags == flags }

// IsClient reports whether a server address was given (opts.dst_addr).
func (o *Options) IsClient() bool { return o.DstAddr != "" }

// parse parses args (the program's options and operands) with spec, the
// program's getopt table, applying each option in command-line order as
// the C program's loop does: the program's own parser first, then the
// common ones. The first operand is the server's address.
func (s *Session) parse(spec *getopt.Spec, args []string) error {
	p := spec.Parse(args)
	for p.Next() {
		o := p.Option()
		if o.Long != "" {
			if err := s.parseLong(o); err != nil {
				return err
			}
			continue
		}
		if o.Short == 'h' {
			return &usageError{}
		}
		if s.prog.parse != nil {
			handled, err := s.prog.parse(s, o)
			if err != nil {
				return err
			}
			if handled {
				continue
			}
		}
		if err := s.parseCommon(o); err != nil {
			return err
		}
	}
	if err := p.Err(); err != nil {
		return &usageError{err: err}
	}
	if ops := p.Operands(); len(ops) > 0 {
		s.opts.DstAddr = ops[0]
	}
	return nil
}

// parseLong handles the long options (ft_parse_long_opts).
func (s *Session) parseLong(o getopt.Option) error {
	switch o.Long {
	case "pin-core":
		s.opts.PinCore = o.Arg
	case "timeout":
		n, err := atoi(o, o.Arg)
		if err != nil {
			return err
		}
		s.opts.Timeout, s.opts.TimeoutSet = n, true
	case "debug-assert":
		// C replaces its asserts with spin loops for a debugger; ft has
		// no asserts to replace.
	}
	return nil
}

// parseCommon applies one of the options every program shares, with the
// meaning ft_parse_benchmark_opts, ft_parseinfo, ft_parse_addr_opts,
// ft_parse_hmem_opts, ft_parsecsopts and ft_parse_api_opts give it. The
// program's optstring has already refused letters it does not take.
func (s *Session) parseCommon(o getopt.Option) error {
	opts, h := &s.opts, s.hints
	var err error
	switch o.Short {
	// ft_parse_benchmark_opts
	case 'v':
		opts.Flags |= OptVerifyData
	case 'k':
		h.Mode |= fi.ModeMsgPrefix
		opts.ForcePrefix = true
	case 'j':
		if opts.InjectSize, err = atoi(o, o.Arg); err != nil {
			return err
		}
		h.TxAttr.InjectSize = opts.InjectSize
		opts.InjectSizeSet = true
	case 'W':
		if opts.WindowSize, err = atoi(o, o.Arg); err != nil {
			return err
		}
		if opts.WindowSize <= 0 {
			return errors.Wrapf(fi.EINVAL, "-W %s: the window size must be at least 1", o.Arg)
		}

	// ft_parseinfo
	case 'f':
		h.FabricAttr.Name = o.Arg
	case 'd':
		h.DomainAttr.Name = o.Arg
	case 'p':
		h.FabricAttr.ProvName = o.Arg
	case 'e':
		t, ok := prefixChoice(o.Arg, []choice[fi.EPType]{{"msg", 3, fi.EPTypeMsg}, {"rdm", 3, fi.EPTypeRDM}, {"dgram", 5, fi.EPTypeDgram}})
		if !ok {
			return errors.Wrapf(fi.EINVAL, "-e %s: the endpoint type is one of msg, rdm, dgram", o.Arg)
		}
		h.EPAttr.Type = t
	case 'M':
		if hasPrefixFold(o.Arg, "mr_local") {
			opts.MRMode &^= fi.MRModeLocal
		}
	case 'K':
		opts.Flags |= OptForkChild
		return errors.WithHint(errors.Wrap(fi.ENOSYS, "-K: a Go program cannot fork(2) a copy of itself after setting up its endpoint"),
			"runs with -K need the C programs on both sides")

	// ft_parse_hmem_opts
	case 'D':
		opts.Flags |= OptEnableHMEM | OptUseDevice
		return errors.Wrapf(fi.ENOSYS, "-D %s: device memory (FI_HMEM interfaces) is not supported by gofabric", o.Arg)
	case 'i':
		if opts.Device, err = atoi(o, o.Arg); err != nil {
			return err
		}
	case 'H':
		opts.Flags |= OptEnableHMEM

	// ft_parse_addr_opts
	case 's':
		opts.SrcAddr = o.Arg
	case 'B':
		opts.SrcPort = o.Arg
	case 'P':
		opts.DstPort = o.Arg
	case 'b', 'E':
		if o.Short == 'b' {
			opts.Flags |= OptOOBSync
		}
		opts.Flags |= OptOOBAddrExch
		// C skips the optional argument's first character, meant to be
		// the '=' of "-E=3001"; "-E3001" gives the port "001" there and
		// here.
		if o.HasArg && len(o.Arg) > 1 {
			opts.OOBPort = o.Arg[1:]
		} else {
			opts.OOBPort = defaultOOBPort
		}
	case 'F':
		f, ok := prefixChoice(o.Arg, []choice[fi.AddrFormat]{
			{"fi_sockaddr_in6", 15, fi.FormatSockaddrIn6},
			{"fi_sockaddr_in", 14, fi.FormatSockaddrIn},
			{"fi_sockaddr_ib", 14, fi.FormatSockaddrIB},
			{"fi_sockaddr", 11, fi.FormatSockaddr},
		})
		if !ok {
			return errors.Wrapf(fi.EINVAL, "-F %s: the address format is one of fi_sockaddr, fi_sockaddr_in, fi_sockaddr_in6, fi_sockaddr_ib", o.Arg)
		}
		opts.AddrFormat = f
	case 'C':
		opts.Flags |= OptServerPersist
		if opts.NumConnections, err = atoi(o, o.Arg); err != nil {
			return err
		}
	case 'a':
		opts.AVName = o.Arg

	// ft_parsecsopts
	case 'I':
		opts.Flags |= OptIter
		if opts.Iterations, err = atoi(o, o.Arg); err != nil {
			return err
		}
		if opts.Iterations < 0 {
			return errors.Wrapf(fi.EINVAL, "-I %s: the iteration count cannot be negative", o.Arg)
		}
	case 'Q':
		opts.Flags |= OptDomainEQ
	case 'S':
		return s.parseSizes(o)
	case 'm':
		opts.MachineReadable = true
	case 'c':
		m, ok := prefixChoice(o.Arg, []choice[CompMethod]{{"sread", 5, CompSRead}, {"fd", 2, CompWaitFD}, {"yield", 5, CompYield}, {"spin", 4, CompSpin}})
		if !ok {
			return errors.Wrapf(fi.EINVAL, "-c %s: the completion method is one of spin, sread, fd, yield", o.Arg)
		}
		opts.CompMethod = m
	case 't':
		switch {
		case hasPrefixFold(o.Arg, "counter"):
			opts.Flags |= OptRxCntr | OptTxCntr
			opts.Flags &^= OptRxCQ | OptTxCQ
		case hasPrefixFold(o.Arg, "queue"):
		default:
			return errors.Wrapf(fi.EINVAL, "-t %s: the completion type is queue or counter", o.Arg)
		}
	case 'w':
		if opts.Warmup, err = atoi(o, o.Arg); err != nil {
			return err
		}
		if opts.Warmup < 0 {
			return errors.Wrapf(fi.EINVAL, "-w %s: the warm-up count cannot be negative", o.Arg)
		}
	case 'l':
		opts.Flags |= OptAlign

	// ft_parse_api_opts
	case 'o':
		return s.parseAPI(o)

	default:
		// A letter in the program's optstring that neither it nor the
		// common parsers handle: a program table bug.
		return errors.AssertionFailedf("ft: option -%c is in %s's optstring but nothing handles it", o.Short, s.prog.name)
	}
	return nil
}

// parseSizes handles -S: "all", a range "r:start,inc,end", or one size.
func (s *Session) parseSizes(o getopt.Option) error {
	opts := &s.opts
	switch {
	case hasPrefixFold(o.Arg, "all"):
		opts.AllSizes = true
	case hasPrefixFold(o.Arg, "r:"):
		sizes, err := parseRange(o.Arg)
		if err != nil {
			return err
		}
		opts.AllSizes, opts.Sizes = true, sizes
	default:
		n, err := atoi(o, o.Arg)
		if err != nil {
			return err
		}
		if n < 0 {
			return errors.Wrapf(fi.EINVAL, "-S %s: a size cannot be negative", o.Arg)
		}
		opts.Flags |= OptSize
		opts.TransferSize = n
	}
	return nil
}

// parseAPI handles -o (ft_parse_api_opts): the RMA operation, or the
// message kind of msg_pingpong.
func (s *Session) parseAPI(o getopt.Option) error {
	h := s.hints
	switch strings.ToLower(o.Arg) {
	case "read":
		h.Caps |= fi.CapRead | fi.CapRemoteRead
		s.opts.RMAOp = RMARead
	case "writedata":
		h.Caps |= fi.CapWrite | fi.CapRemoteWrite
		h.Mode |= fi.ModeRxCQData
		h.DomainAttr.CQDataSize = 4
		s.opts.RMAOp = RMAWriteData
		s.cqFormat = eq.FormatData
	case "write":
		h.Caps |= fi.CapWrite | fi.CapRemoteWrite
		s.opts.RMAOp = RMAWrite
	case "msg":
		h.Caps |= fi.CapMsg
	case "tagged":
		h.Caps |= fi.CapTagged
	default:
		return errors.Wrapf(fi.EINVAL, "-o %s: the operation is one of read, write, writedata, msg, tagged", o.Arg)
	}
	return nil
}

// atoi reads an option's number. C's atoi reads what digits it finds and
// makes 0 of the rest; ft refuses what is not a whole number instead.
func atoi(o getopt.Option, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, errors.Wrapf(fi.EINVAL, "%s %s: not a number", o.Name(), v)
	}
	return n, nil
}

// choice is one word an option takes: C compares the first n letters of
// the argument with word, ignoring case (strncasecmp).
type choice[T any] struct {
	word string
	n    int
	val  T
}

// prefixChoice returns the value of the first choice whose first n
// letters begin arg, as C's chain of strncasecmp calls picks it.
func prefixChoice[T any](arg string, choices []choice[T]) (T, bool) {
	for _, c := range choices {
		if hasPrefixFold(arg, c.word[:c.n]) {
			return c.val, true
		}
	}
	var zero T
	return zero, false
}

// hasPrefixFold reports whether s begins with prefix, ignoring ASCII
// case, as strncasecmp(prefix, s, len(prefix)) == 0.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
