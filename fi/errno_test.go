package fi_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/gofabric/gofabric/internal/reftest"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	crdb "github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// cStrerrorSamples are codes outside 0..271 checked against fi_strerror:
// past libfabric's last code, the largest C int, negative codes (fi_strerror
// uses the absolute value) and INT_MIN, whose absolute value overflows.
var cStrerrorSamples = []int{272, 300, 1000, 4095, 1 << 20, math.MaxInt32,
	-1, -11, -256, -269, -300, math.MinInt32}

func TestStrerrorMatchesC(t *testing.T) {
	bin := reftest.Tool(t, "fi_strerror", "libfabric-bin")

	codes := make([]int, 0, 272+len(cStrerrorSamples))
	for n := range 272 {
		codes = append(codes, n)
	}
	codes = append(codes, cStrerrorSamples...)

	// fi_strerror takes one code per run and each run idles about 0.2s in a
	// library constructor, so run several at once.
	want := make([]string, len(codes))
	errs := make([]error, len(codes))
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i, n := range codes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			want[i], errs[i] = runStrerror(bin, n)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	for i, n := range codes {
		assert.Equalf(t, want[i], fi.Errno(n).Error(), "Errno(%d).Error()", n)
	}
}

// runStrerror returns what `fi_strerror n` prints, in the C locale.
func runStrerror(bin string, n int) (string, error) {
	cmd := exec.Command(bin, strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %d: %w", bin, n, err)
	}
	text, ok := strings.CutSuffix(string(out), "\n")
	if !ok {
		return "", fmt.Errorf("%s %d: output %q lacks a final newline", bin, n, out)
	}
	return text, nil
}

func TestErrnoErrorBeyondC(t *testing.T) {
	// Codes a C int cannot hold, so fi_strerror cannot be asked.
	tests := []struct {
		code fi.Errno
		want string
	}{
		{fi.Errno(1 << 40), "Unspecified error"},
		{fi.Errno(-1 << 40), "Unspecified error"},
		{fi.Errno(math.MinInt), "Unknown error " + strconv.Itoa(math.MinInt)},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(int(tt.code)), func(t *testing.T) {
			require.Equal(t, tt.want, tt.code.Error())
		})
	}
}

// namedErrnos lists every named code with its value in C libfabric on
// (x86-64) Linux, the same on every OS, and its fi_errno.h name.
var namedErrnos = []struct {
	code fi.Errno
	want int
	name string
}{
	{fi.SUCCESS, 0, "FI_SUCCESS"},
	{fi.EPERM, 1, "FI_EPERM"},
	{fi.ENOENT, 2, "FI_ENOENT"},
	{fi.EINTR, 4, "FI_EINTR"},
	{fi.EIO, 5, "FI_EIO"},
	{fi.E2BIG, 7, "FI_E2BIG"},
	{fi.EBADF, 9, "FI_EBADF"},
	{fi.EAGAIN, 11, "FI_EAGAIN"},
	{fi.ENOMEM, 12, "FI_ENOMEM"},
	{fi.EACCES, 13, "FI_EACCES"},
	{fi.EFAULT, 14, "FI_EFAULT"},
	{fi.EBUSY, 16, "FI_EBUSY"},
	{fi.ENODEV, 19, "FI_ENODEV"},
	{fi.EINVAL, 22, "FI_EINVAL"},
	{fi.EMFILE, 24, "FI_EMFILE"},
	{fi.ENOSPC, 28, "FI_ENOSPC"},
	{fi.ENOSYS, 38, "FI_ENOSYS"},
	{fi.EWOULDBLOCK, 11, "FI_EAGAIN"}, // the same value, as on Linux
	{fi.ENOMSG, 42, "FI_ENOMSG"},
	{fi.ENODATA, 61, "FI_ENODATA"},
	{fi.EOVERFLOW, 75, "FI_EOVERFLOW"},
	{fi.EMSGSIZE, 90, "FI_EMSGSIZE"},
	{fi.ENOPROTOOPT, 92, "FI_ENOPROTOOPT"},
	{fi.EOPNOTSUPP, 95, "FI_EOPNOTSUPP"},
	{fi.EADDRINUSE, 98, "FI_EADDRINUSE"},
	{fi.EADDRNOTAVAIL, 99, "FI_EADDRNOTAVAIL"},
	{fi.ENETDOWN, 100, "FI_ENETDOWN"},
	{fi.ENETUNREACH, 101, "FI_ENETUNREACH"},
	{fi.ECONNABORTED, 103, "FI_ECONNABORTED"},
	{fi.ECONNRESET, 104, "FI_ECONNRESET"},
	{fi.ENOBUFS, 105, "FI_ENOBUFS"},
	{fi.EISCONN, 106, "FI_EISCONN"},
	{fi.ENOTCONN, 107, "FI_ENOTCONN"},
	{fi.ESHUTDOWN, 108, "FI_ESHUTDOWN"},
	{fi.ETIMEDOUT, 110, "FI_ETIMEDOUT"},
	{fi.ECONNREFUSED, 111, "FI_ECONNREFUSED"},
	{fi.EHOSTDOWN, 112, "FI_EHOSTDOWN"},
	{fi.EHOSTUNREACH, 113, "FI_EHOSTUNREACH"},
	{fi.EALREADY, 114, "FI_EALREADY"},
	{fi.EINPROGRESS, 115, "FI_EINPROGRESS"},
	{fi.EREMOTEIO, 121, "FI_EREMOTEIO"},
	{fi.ECANCELED, 125, "FI_ECANCELED"},
	{fi.EKEYREJECTED, 129, "FI_EKEYREJECTED"},
	{fi.EOTHER, 256, "FI_EOTHER"},
	{fi.ETOOSMALL, 257, "FI_ETOOSMALL"},
	{fi.EOPBADSTATE, 258, "FI_EOPBADSTATE"},
	{fi.EAVAIL, 259, "FI_EAVAIL"},
	{fi.EBADFLAGS, 260, "FI_EBADFLAGS"},
	{fi.ENOEQ, 261, "FI_ENOEQ"},
	{fi.EDOMAIN, 262, "FI_EDOMAIN"},
	{fi.ENOCQ, 263, "FI_ENOCQ"},
	{fi.ECRC, 264, "FI_ECRC"},
	{fi.ETRUNC, 265, "FI_ETRUNC"},
	{fi.ENOKEY, 266, "FI_ENOKEY"},
	{fi.ENOAV, 267, "FI_ENOAV"},
	{fi.EOVERRUN, 268, "FI_EOVERRUN"},
	{fi.ENORX, 269, "FI_ENORX"},
	{fi.ENOMR, 270, "FI_ENOMR"},
	{fi.EFIREWALLADDR, 271, "FI_EFIREWALLADDR"},
}

func TestErrnoValuesAndNames(t *testing.T) {
	for _, tt := range namedErrnos {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, int(tt.code))
			require.Equal(t, tt.name, tt.code.Name())
		})
	}
}

func TestErrnoNameUnnamed(t *testing.T) {
	tests := []struct {
		code fi.Errno
		want string
	}{
		{fi.Errno(3), "FI_ERRNO(3)"}, // ESRCH, an errno fi_errno.h leaves out
		{fi.Errno(255), "FI_ERRNO(255)"},
		{fi.Errno(272), "FI_ERRNO(272)"},
		{fi.Errno(300), "FI_ERRNO(300)"},
		{fi.Errno(-11), "FI_ERRNO(-11)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.code.Name())
		})
	}
}

var (
	sinkString string
	sinkErr    error
	sinkCode   fi.Errno
)

//go:noinline
func hotPathEAVAIL() error { return fi.EAVAIL }

func TestErrnoDoesNotAllocate(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"Error on 0..271", func() {
			for n := range fi.Errno(272) {
				sinkString = n.Error()
			}
		}},
		{"Error past the table", func() {
			sinkString = fi.Errno(4095).Error()
			sinkString = fi.Errno(-11).Error()
		}},
		{"Name of named codes", func() {
			for _, c := range namedErrnos {
				sinkString = c.code.Name()
			}
		}},
		{"Code of a bare Errno", func() {
			sinkCode = fi.Code(fi.EAGAIN)
		}},
		{"constant code returned as error", func() {
			sinkErr = hotPathEAVAIL()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, tt.f))
		})
	}
}

// entryError stands for *eq.EQError and *eq.CQError: an error type that
// unwraps to its Errno.
type entryError struct{ err fi.Errno }

func (e *entryError) Error() string { return "entry: " + e.err.Error() }
func (e *entryError) Unwrap() error { return e.err }

func TestErrnoIs(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"equal syscall.Errno", fi.EAGAIN, syscall.EAGAIN, true},
		{"other syscall.Errno", fi.EAGAIN, syscall.EINTR, false},
		{"no syscall.Errno from 256", fi.EOTHER, syscall.Errno(256), false},
		{"syscall.Errno through Wrapf", crdb.Wrapf(fi.ECONNREFUSED, "tcp: connect: %s", "x"), syscall.ECONNREFUSED, true},
		{"syscall.Errno through %w", fmt.Errorf("op: %w", fi.ENOENT), syscall.ENOENT, true},
		{"Errno through Wrapf", crdb.Wrapf(fi.EINVAL, "tcp: tx size %d", 9), fi.EINVAL, true},
		{"other Errno through Wrapf", crdb.Wrapf(fi.EINVAL, "tcp: tx size %d", 9), fi.EAGAIN, false},
		{"Errno through entry type", crdb.Wrap(&entryError{fi.ETRUNC}, "cq: read"), fi.ETRUNC, true},
		{"ECANCELED is context.Canceled", fi.ECANCELED, context.Canceled, true},
		{"ECANCELED through Wrapf", crdb.Wrapf(fi.ECANCELED, "eq: sread"), context.Canceled, true},
		{"ECANCELED is not DeadlineExceeded", fi.ECANCELED, context.DeadlineExceeded, false},
		{"ETIMEDOUT is context.DeadlineExceeded", fmt.Errorf("w: %w", fi.ETIMEDOUT), context.DeadlineExceeded, true},
		{"ETIMEDOUT is not Canceled", fi.ETIMEDOUT, context.Canceled, false},
		{"EBADF is net.ErrClosed", crdb.Wrapf(fi.EBADF, "ep: send"), net.ErrClosed, true},
		{"EAGAIN is not net.ErrClosed", fi.EAGAIN, net.ErrClosed, false},
		{"EAGAIN is not context.Canceled", fi.EAGAIN, context.Canceled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, errors.Is(tt.err, tt.target), "errors.Is")
			require.Equal(t, tt.want, crdb.Is(tt.err, tt.target), "cockroachdb errors.Is")
		})
	}
}

func TestCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want fi.Errno
	}{
		{"nil", nil, fi.SUCCESS},
		{"plain error", errors.New("x"), fi.EOTHER},
		{"bare Errno", fi.EAGAIN, fi.EAGAIN},
		{"bare unnamed Errno", fi.Errno(300), fi.Errno(300)},
		{"Wrapf", crdb.Wrapf(fi.EINVAL, "tcp: tx size %d exceeds max %d", 9, 8), fi.EINVAL},
		{"Wrapf twice with hint", crdb.WithHint(crdb.Wrapf(crdb.Wrapf(fi.ENODATA, "tcp: no match"), "getinfo"), "set FI_PROVIDER"), fi.ENODATA},
		{"fmt %w", fmt.Errorf("open: %w", fi.ENOENT), fi.ENOENT},
		{"entry type", &entryError{fi.ECONNREFUSED}, fi.ECONNREFUSED},
		{"entry type through Wrapf", crdb.Wrapf(&entryError{fi.ETRUNC}, "cq: readerr %d", 1), fi.ETRUNC},
		{"Errno before syscall.Errno", fmt.Errorf("%w: %w", syscall.ECONNRESET, fi.ETRUNC), fi.ETRUNC},
		{"joined", errors.Join(errors.New("x"), crdb.Wrapf(fi.EAVAIL, "eq")), fi.EAVAIL},
		{"syscall.Errno", syscall.EHOSTUNREACH, fi.EHOSTUNREACH},
		{"os.SyscallError", os.NewSyscallError("connect", syscall.ECONNREFUSED), fi.ECONNREFUSED},
		{"context.Canceled", context.Canceled, fi.ECANCELED},
		{"context.DeadlineExceeded wrapped", crdb.Wrap(context.DeadlineExceeded, "wait"), fi.ETIMEDOUT},
		{"os.ErrDeadlineExceeded", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, fi.ETIMEDOUT},
		{"net.ErrClosed", &net.OpError{Op: "write", Err: net.ErrClosed}, fi.EBADF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, fi.Code(tt.err))
		})
	}
}
