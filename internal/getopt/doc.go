// Package getopt parses command lines the way glibc's getopt(3) and
// getopt_long(3) do, so that gofabric's tools (cmd/fi_info,
// cmd/fi_pingpong) accept exactly what their C libfabric counterparts
// accept and complain in the same words. Its tests run the same command
// lines through glibc (a small C harness built with gcc) and compare.
//
// What it implements, as glibc does:
//
//   - short options from an optstring ("s:n:lv"): a letter alone takes no
//     argument, "x:" requires one, "x::" takes an optional one;
//   - clusters of short options ("-lv"), and a required argument attached
//     ("-ptcp") or in the next word ("-p tcp", where the next word is taken
//     whatever it looks like: "-I -1" gives -I the argument "-1");
//   - an optional short argument only when attached ("-E5" gives "5", "-E=5"
//     gives "=5", "-E 5" gives none and leaves "5" an operand);
//   - long options (with [NewLong]): "--name", "--name=value", "--name value"
//     for a required argument, "--name=value" only for an optional one, and
//     any unambiguous prefix of a name ("--li" for "--list"); an exact name
//     wins over longer names it prefixes; prefixes shared only by entries
//     that stand for the same short option and take the same argument are
//     not ambiguous;
//   - "--" ends the options; "-" alone is an operand;
//   - operands (non-option words) anywhere: options after them are still
//     parsed and the operands are returned in their order, followed by the
//     words after "--" (GNU permutation); when the optstring starts with '+'
//     or POSIXLY_CORRECT is set, the first operand ends the options instead;
//   - without long options (plain getopt, [New]) "--name" is a cluster whose
//     first letter is '-', which is an invalid option, as in glibc.
//
// Errors are [*Error] values whose text is glibc's diagnostic without the
// leading program name ("invalid option -- 'x'", "option requires an
// argument -- 'p'", "unrecognized option '--foo'", "option '--ver' is
// ambiguous; possibilities: '--verbose' '--version'", "option '--list'
// doesn't allow an argument", "option '--node' requires an argument"); a
// tool prints "name: " and the text, as glibc prints argv[0] first.
//
// Not implemented: the '-' optstring prefix (operands returned in order as
// options), "W;" (-W foo as --foo) and getopt_long_only.
package getopt
