package fi

import (
	"context"
	"errors"
)

// ContextError returns the error a blocking call (GetInfo, CQ.SRead,
// EQ.SRead, Counter.Wait, and every other wait that takes a context)
// returns when ctx has ended, or nil while ctx is live. It is what C's
// blocking calls return as -FI_ETIMEDOUT or -FI_ECANCELED, in a form that
// both Go and libfabric code recognize: after a deadline it satisfies
// errors.Is(err, context.DeadlineExceeded) and errors.Is(err, ETIMEDOUT);
// after a cancel, errors.Is(err, context.Canceled) and errors.Is(err,
// ECANCELED); and [Code] gives ETIMEDOUT or ECANCELED. A cause given with
// context.WithCancelCause or WithDeadlineCause stays in the chain and in the
// message ("context canceled: shutting down").
//
// Providers call it from every wait instead of returning ctx.Err(), which
// matches neither Errno; it allocates, so it belongs only where a wait has
// ended.
func ContextError(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	e := &contextError{err: err, code: ECANCELED}
	if errors.Is(err, context.DeadlineExceeded) {
		e.code = ETIMEDOUT
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		e.cause = cause
	}
	return e
}

// contextError is a context's end as ContextError reports it.
type contextError struct {
	code  Errno // ETIMEDOUT or ECANCELED
	err   error // ctx.Err()
	cause error // context.Cause(ctx) when it differs from err, else nil
}

// Error returns the context's text ("context deadline exceeded"), with the
// cause after it when there is one.
func (e *contextError) Error() string {
	if e.cause != nil {
		return e.err.Error() + ": " + e.cause.Error()
	}
	return e.err.Error()
}

// Unwrap returns the Errno, the context's error and the cause, so that
// errors.Is and errors.As find each of them.
func (e *contextError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.code, e.err, e.cause}
	}
	return []error{e.code, e.err}
}
