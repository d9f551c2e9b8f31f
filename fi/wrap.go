package fi

import "github.com/cockroachdb/errors"

// wrapf wraps a code with a control-path message.
func wrapf(code Errno, format string, args ...any) error {
	return errors.Wrapf(code, format, args...)
}
