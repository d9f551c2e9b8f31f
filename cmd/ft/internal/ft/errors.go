package ft

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// usageError is a command line the program refuses: a bad option (err,
// glibc's complaint), -h, or an unknown program. The usage goes to stderr
// and the exit status is 1 (EXIT_FAILURE), as in C.
type usageError struct {
	err error // nil for -h
}

func (e *usageError) Error() string {
	if e.err == nil {
		return "usage requested"
	}
	return e.err.Error()
}

func (e *usageError) Unwrap() error { return e.err }

// exitStatus is the process exit status for a run's error, as the C
// programs compute it (ft_exit_code): 0 for nil, 1 for a refused command
// line, else the errno in err's chain when it fits in 1..255 (61 ENODATA
// for no provider or a completion timeout, 5 EIO for a -v data error, 107
// ENOTCONN when the peer closed the out-of-band socket, 110 ETIMEDOUT when
// it went silent past the timeout...), and 1 for libfabric's own codes
// from 256 up (FI_EOTHER for a tag mismatch, FI_ETRUNC...).
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return 1
	}
	code := int(fi.Code(err))
	if code <= 0 || code > 255 {
		return 1
	}
	return code
}

// callErr names the libfabric call (or fabtests step) that failed, as C's
// FT_PRINTERR does: "fi_getinfo: ...".
func callErr(call string, err error) error {
	if err == nil {
		return nil
	}
	return errors.Wrap(err, call)
}

// printErr prints a run's error on stderr, "ft PROGRAM: error", and its
// hints, one "hint: ..." line each.
func printErr(w io.Writer, name string, err error) {
	fmt.Fprintf(w, "%s: %v\n", name, err)
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
