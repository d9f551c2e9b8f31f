//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package fi_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// linuxErrnos pairs every named code below 256 with Linux's errno of the
// same name.
var linuxErrnos = []struct {
	code fi.Errno
	host syscall.Errno
}{
	{fi.EPERM, syscall.EPERM},
	{fi.ENOENT, syscall.ENOENT},
	{fi.EINTR, syscall.EINTR},
	{fi.EIO, syscall.EIO},
	{fi.E2BIG, syscall.E2BIG},
	{fi.EBADF, syscall.EBADF},
	{fi.EAGAIN, syscall.EAGAIN},
	{fi.ENOMEM, syscall.ENOMEM},
	{fi.EACCES, syscall.EACCES},
	{fi.EFAULT, syscall.EFAULT},
	{fi.EBUSY, syscall.EBUSY},
	{fi.ENODEV, syscall.ENODEV},
	{fi.EINVAL, syscall.EINVAL},
	{fi.EMFILE, syscall.EMFILE},
	{fi.ENOSPC, syscall.ENOSPC},
	{fi.ENOSYS, syscall.ENOSYS},
	{fi.EWOULDBLOCK, syscall.EWOULDBLOCK},
	{fi.ENOMSG, syscall.ENOMSG},
	{fi.ENODATA, syscall.ENODATA},
	{fi.EOVERFLOW, syscall.EOVERFLOW},
	{fi.EMSGSIZE, syscall.EMSGSIZE},
	{fi.ENOPROTOOPT, syscall.ENOPROTOOPT},
	{fi.EOPNOTSUPP, syscall.EOPNOTSUPP},
	{fi.EADDRINUSE, syscall.EADDRINUSE},
	{fi.EADDRNOTAVAIL, syscall.EADDRNOTAVAIL},
	{fi.ENETDOWN, syscall.ENETDOWN},
	{fi.ENETUNREACH, syscall.ENETUNREACH},
	{fi.ECONNABORTED, syscall.ECONNABORTED},
	{fi.ECONNRESET, syscall.ECONNRESET},
	{fi.ENOBUFS, syscall.ENOBUFS},
	{fi.EISCONN, syscall.EISCONN},
	{fi.ENOTCONN, syscall.ENOTCONN},
	{fi.ESHUTDOWN, syscall.ESHUTDOWN},
	{fi.ETIMEDOUT, syscall.ETIMEDOUT},
	{fi.ECONNREFUSED, syscall.ECONNREFUSED},
	{fi.EHOSTDOWN, syscall.EHOSTDOWN},
	{fi.EHOSTUNREACH, syscall.EHOSTUNREACH},
	{fi.EALREADY, syscall.EALREADY},
	{fi.EINPROGRESS, syscall.EINPROGRESS},
	{fi.EREMOTEIO, syscall.EREMOTEIO},
	{fi.ECANCELED, syscall.ECANCELED},
	{fi.EKEYREJECTED, syscall.EKEYREJECTED},
}

// On Linux fi_errno.h's codes are the kernel's errno numbers: the
// constants must be them, and the bridge to syscall.Errno is the identity.
func TestErrnoIsLinuxErrno(t *testing.T) {
	for _, tt := range linuxErrnos {
		t.Run(tt.code.Name(), func(t *testing.T) {
			require.Equal(t, int(tt.host), int(tt.code), "value")
			require.ErrorIs(t, tt.code, tt.host)
			require.Equal(t, tt.code, fi.Code(tt.host), "Code")
		})
	}
}

func TestErrnoUnnamedLinuxErrno(t *testing.T) {
	// Errnos package fi does not name keep their number both ways.
	require.True(t, errors.Is(fi.Errno(3), syscall.ESRCH))
	require.Equal(t, fi.Errno(3), fi.Code(syscall.ESRCH))
	require.Equal(t, fi.Errno(200), fi.Code(syscall.Errno(200)))
	require.False(t, errors.Is(fi.Errno(-3), syscall.ESRCH), "negative code")
}
