package getopt

import (
	"os"
	"strings"

	"github.com/gofabric/gofabric/fi"
)

// ArgKind says whether an option takes an argument (getopt_long's has_arg).
type ArgKind int

// The argument kinds, with getopt_long's values.
const (
	// NoArgument: the option takes no argument (no_argument).
	NoArgument ArgKind = iota
	// RequiredArgument: the option needs one, attached or in the next
	// word (required_argument, "x:").
	RequiredArgument
	// OptionalArgument: the option takes one only when attached
	// (optional_argument, "x::").
	OptionalArgument
)

// LongOption is one entry of getopt_long's longopts table.
type LongOption struct {
	// Name is the option's name without the leading "--".
	Name string
	// Arg says whether it takes an argument.
	Arg ArgKind
	// Short is the short option this one stands for (the table entry's
	// val), reported as [Option.Short]; 0 for an option with no short
	// form.
	Short byte
}

// Spec is a program's options: getopt's optstring and, for getopt_long,
// the longopts table. It is immutable and safe for concurrent use.
type Spec struct {
	short        [256]ArgKind
	known        [256]bool
	longs        []LongOption
	hasLongs     bool
	requireOrder bool
}

// New returns the spec of getopt(3) with optstring: each option letter,
// followed by ':' when it requires an argument or "::" when it takes an
// optional one; a leading '+' stops the parse at the first operand. Words
// starting with "--" are not long options. It panics on a malformed
// optstring (a ':' or ';' as an option, a letter listed twice).
func New(optstring string) *Spec {
	s := &Spec{}
	s.parseOptstring(optstring)
	return s
}

// NewLong returns the spec of getopt_long(3) with optstring (as for New)
// and the longopts table longs, searched in order. It panics on a
// malformed optstring or a long option whose name is empty or holds '='.
func NewLong(optstring string, longs []LongOption) *Spec {
	s := New(optstring)
	for _, l := range longs {
		if l.Name == "" || strings.Contains(l.Name, "=") || l.Arg < NoArgument || l.Arg > OptionalArgument {
			panic("getopt: bad long option " + l.Name)
		}
	}
	s.longs = append([]LongOption(nil), longs...)
	s.hasLongs = true
	return s
}

func (s *Spec) parseOptstring(optstring string) {
	if strings.HasPrefix(optstring, "+") {
		s.requireOrder = true
		optstring = optstring[1:]
	}
	// A leading ':' asks glibc not to print; errors are returned here
	// anyway.
	optstring = strings.TrimPrefix(optstring, ":")
	for i := 0; i < len(optstring); i++ {
		c := optstring[i]
		if c == ':' || c == ';' || s.known[c] {
			panic("getopt: malformed optstring " + optstring)
		}
		s.known[c] = true
		switch {
		case strings.HasPrefix(optstring[i+1:], "::"):
			s.short[c] = OptionalArgument
			i += 2
		case strings.HasPrefix(optstring[i+1:], ":"):
			s.short[c] = RequiredArgument
			i++
		}
	}
}

// Option is one option found on the command line.
type Option struct {
	// Short is the option letter: the one typed, or the short option a
	// long option stands for; 0 for a long option without one.
	Short byte
	// Long is the long option's full name when it was given in long form
	// (even as a prefix), "" for a short option.
	Long string
	// Arg is the option's argument; HasArg says whether there was one,
	// which tells an optional argument that is empty ("--name=") from
	// none.
	Arg    string
	HasArg bool
}

// Name returns the option as a user would type it: "-p" or "--provider".
func (o Option) Name() string {
	if o.Long != "" {
		return "--" + o.Long
	}
	return "-" + string([]byte{o.Short})
}

// ErrorKind is the kind of mistake an [Error] reports.
type ErrorKind int

// The kinds of command-line mistakes, each with glibc's wording.
const (
	// InvalidOption: a short option letter not in the optstring.
	InvalidOption ErrorKind = iota + 1
	// MissingArgument: an option that requires an argument ended the
	// command line.
	MissingArgument
	// UnrecognizedOption: a long option that matches no name.
	UnrecognizedOption
	// AmbiguousOption: a long option prefix that matches several names.
	AmbiguousOption
	// UnexpectedArgument: "--name=value" for an option that takes no
	// argument.
	UnexpectedArgument
)

// Error is a command-line mistake. It unwraps to fi.EINVAL.
type Error struct {
	// Kind says what went wrong.
	Kind ErrorKind
	// Option is the option concerned: the short letter as a one-byte
	// string, or the long option with its dashes as glibc names it (the
	// full name for a missing or unexpected argument, the words typed for
	// an unrecognized or ambiguous one).
	Option string
	// Candidates are the long options an ambiguous prefix matches, with
	// their dashes, in table order.
	Candidates []string
}

// Error returns glibc's diagnostic without the program name.
func (e *Error) Error() string {
	switch e.Kind {
	case InvalidOption:
		return "invalid option -- '" + e.Option + "'"
	case MissingArgument:
		if strings.HasPrefix(e.Option, "--") {
			return "option '" + e.Option + "' requires an argument"
		}
		return "option requires an argument -- '" + e.Option + "'"
	case UnrecognizedOption:
		return "unrecognized option '" + e.Option + "'"
	case AmbiguousOption:
		var b strings.Builder
		b.WriteString("option '" + e.Option + "' is ambiguous; possibilities:")
		for _, c := range e.Candidates {
			b.WriteString(" '" + c + "'")
		}
		return b.String()
	case UnexpectedArgument:
		return "option '" + e.Option + "' doesn't allow an argument"
	}
	return "bad option '" + e.Option + "'"
}

// Unwrap returns fi.EINVAL: a bad command line is an invalid argument.
func (e *Error) Unwrap() error { return fi.EINVAL }

// Parser walks one command line as a loop of getopt_long calls does, one
// option per [Parser.Next]. Not safe for concurrent use.
type Parser struct {
	spec     *Spec
	args     []string
	i        int // next word
	cluster  int // position in args[i] of the next short option, 0 if none
	inOrder  bool
	opt      Option
	err      error
	done     bool
	operands []string
}

// Parse starts parsing args (without the program name) with s.
func (s *Spec) Parse(args []string) *Parser {
	_, posix := os.LookupEnv("POSIXLY_CORRECT")
	return &Parser{spec: s, args: args, inOrder: s.requireOrder || posix}
}

// ParseAll parses all of args with s and returns the options in order and
// the operands, or the first error.
func (s *Spec) ParseAll(args []string) ([]Option, []string, error) {
	p := s.Parse(args)
	var opts []Option
	for p.Next() {
		opts = append(opts, p.Option())
	}
	return opts, p.Operands(), p.Err()
}

// Next finds the next option, which [Parser.Option] then returns. It
// returns false at the end of the options or at the first mistake, which
// [Parser.Err] then returns.
func (p *Parser) Next() bool {
	if p.done {
		return false
	}
	if p.cluster == 0 {
		if !p.advance() {
			p.done = true
			return false
		}
		a := p.args[p.i]
		if p.spec.hasLongs && strings.HasPrefix(a, "--") {
			p.i++
			return p.long(a[2:])
		}
		p.cluster = 1
	}
	return p.short()
}

// advance moves to the next word that holds options, collecting operands
// on the way; it reports false at the end of the options.
func (p *Parser) advance() bool {
	for ; p.i < len(p.args); p.i++ {
		a := p.args[p.i]
		switch {
		case a == "--":
			p.operands = append(p.operands, p.args[p.i+1:]...)
			p.i = len(p.args)
			return false
		case len(a) < 2 || a[0] != '-':
			if p.inOrder {
				p.operands = append(p.operands, p.args[p.i:]...)
				p.i = len(p.args)
				return false
			}
			p.operands = append(p.operands, a)
		default:
			return true
		}
	}
	return false
}

// short handles the option letter at p.cluster in the current word.
func (p *Parser) short() bool {
	a := p.args[p.i]
	c := a[p.cluster]
	p.cluster++
	rest := a[p.cluster:]
	last := rest == ""
	if last {
		p.i++
		p.cluster = 0
	}
	if !p.spec.known[c] {
		return p.fail(&Error{Kind: InvalidOption, Option: string([]byte{c})})
	}
	p.opt = Option{Short: c}
	switch p.spec.short[c] {
	case NoArgument:
		return true
	case OptionalArgument:
		if !last {
			p.opt.Arg, p.opt.HasArg = rest, true
			p.i++
			p.cluster = 0
		}
		return true
	}
	switch {
	case !last:
		p.opt.Arg = rest
		p.i++
		p.cluster = 0
	case p.i < len(p.args):
		p.opt.Arg = p.args[p.i]
		p.i++
	default:
		return p.fail(&Error{Kind: MissingArgument, Option: string([]byte{c})})
	}
	p.opt.HasArg = true
	return true
}

// long handles a word "--" + text; p.i is already past it.
func (p *Parser) long(text string) bool {
	name, value, hasValue := strings.Cut(text, "=")
	longs := p.spec.longs
	found := -1
	for k, l := range longs {
		if l.Name == name {
			found = k
			break
		}
	}
	if found < 0 {
		var ambiguous []int
		for k, l := range longs {
			if !strings.HasPrefix(l.Name, name) {
				continue
			}
			switch {
			case found < 0:
				found = k
			case !sameOption(longs[found], l):
				if ambiguous == nil {
					ambiguous = append(ambiguous, found)
				}
				ambiguous = append(ambiguous, k)
			}
		}
		if ambiguous != nil {
			e := &Error{Kind: AmbiguousOption, Option: "--" + text}
			for _, k := range ambiguous {
				e.Candidates = append(e.Candidates, "--"+longs[k].Name)
			}
			return p.fail(e)
		}
	}
	if found < 0 {
		return p.fail(&Error{Kind: UnrecognizedOption, Option: "--" + text})
	}
	l := longs[found]
	p.opt = Option{Short: l.Short, Long: l.Name}
	switch {
	case hasValue && l.Arg == NoArgument:
		return p.fail(&Error{Kind: UnexpectedArgument, Option: "--" + l.Name})
	case hasValue:
		p.opt.Arg, p.opt.HasArg = value, true
	case l.Arg == RequiredArgument && p.i < len(p.args):
		p.opt.Arg, p.opt.HasArg = p.args[p.i], true
		p.i++
	case l.Arg == RequiredArgument:
		return p.fail(&Error{Kind: MissingArgument, Option: "--" + l.Name})
	}
	return true
}

// sameOption reports whether two long options are one for glibc's
// ambiguity rule: the same argument kind and the same short option.
// Options without a short form are all distinct.
func sameOption(a, b LongOption) bool {
	return a.Short != 0 && a.Short == b.Short && a.Arg == b.Arg
}

func (p *Parser) fail(err *Error) bool {
	p.err, p.done = err, true
	return false
}

// Option returns the option the last successful [Parser.Next] found.
func (p *Parser) Option() Option { return p.opt }

// Err returns the mistake that stopped the parse, or nil.
func (p *Parser) Err() error { return p.err }

// Operands returns the non-option words in their order, followed by the
// words after "--" (or, in POSIX order, from the first operand on). After
// the end of the options it holds them all; after an error, those seen
// before it.
func (p *Parser) Operands() []string { return p.operands }
