//go:build linux

package udp_test

import (
	"testing"
	"unsafe"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkEmptyRead is a receive CQ read that finds nothing while a
// receive is posted: the busy-polling loop of an application waiting for
// a datagram (one recvmsg that gives EAGAIN).
func BenchmarkEmptyRead(b *testing.B) {
	cleanEnv(b)
	n := newNode(b, loInfo(b, 0), false)
	buf := make([]byte, 64)
	require.NoError(b, n.msg.Recv(buf, nil, fi.AddrUnspec, nil))
	var c [1]eq.Completion
	b.ReportAllocs()
	for b.Loop() {
		if _, err := n.rxcq.Read(c[:]); err != fi.EAGAIN {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawEmptyRecvmsg is the system call BenchmarkEmptyRead makes,
// alone: the floor of its cost.
func BenchmarkRawEmptyRecvmsg(b *testing.B) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
	require.NoError(b, err)
	defer unix.Close(fd)
	require.NoError(b, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	buf := make([]byte, 64)
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	var name [28]byte
	h := unix.Msghdr{Iov: &iov}
	h.SetIovlen(1)
	for b.Loop() {
		h.Name, h.Namelen = &name[0], uint32(len(name))
		if _, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&h)), 0); e != unix.EAGAIN {
			b.Fatal(e)
		}
	}
}

// BenchmarkInProcPingPong sends 64 bytes from one endpoint to another and
// back in one goroutine (inject, then read the receive CQ and post the
// receive again, on each side): the provider's own cost per message,
// without a scheduler in between.
func BenchmarkInProcPingPong(b *testing.B) {
	cleanEnv(b)
	info := loInfo(b, 0)
	x, y := newNode(b, info, false), newNode(b, info, false)
	xy, yx := x.insert(b, y.name), y.insert(b, x.name)
	bx, by := make([]byte, 64), make([]byte, 64)
	require.NoError(b, x.msg.Recv(bx, nil, fi.AddrUnspec, nil))
	require.NoError(b, y.msg.Recv(by, nil, fi.AddrUnspec, nil))
	var c [1]eq.Completion
	hop := func(from, to *node, dest fi.Addr, buf []byte) {
		if err := from.msg.Inject(buf, dest); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := to.rxcq.Read(c[:])
			if n == 1 {
				break
			}
			if err != fi.EAGAIN {
				b.Fatal(err)
			}
		}
		if err := to.msg.Recv(buf, nil, fi.AddrUnspec, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		hop(x, y, xy, bx)
		hop(y, x, yx, by)
	}
}

// BenchmarkRawInProcPingPong is BenchmarkInProcPingPong's system calls
// alone (sendto, then recvmsg until the datagram is there, each way).
func BenchmarkRawInProcPingPong(b *testing.B) {
	b.Run("plain", func(b *testing.B) { rawInProc(b, false) })
	b.Run("epoll", func(b *testing.B) { rawInProc(b, true) })
}

func rawInProc(b *testing.B, inEpoll bool) {
	var fds [2]int
	var names [2][]byte
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
		require.NoError(b, err)
		defer unix.Close(fd)
		require.NoError(b, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
		sa, err := unix.Getsockname(fd)
		require.NoError(b, err)
		port := sa.(*unix.SockaddrInet4).Port
		names[i] = []byte{unix.AF_INET, 0, byte(port >> 8), byte(port), 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
		fds[i] = fd
		if inEpoll {
			ep, err := unix.EpollCreate1(0)
			require.NoError(b, err)
			defer unix.Close(ep)
			require.NoError(b, unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(fd)}))
		}
	}
	buf := make([]byte, 64)
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	var name [28]byte
	h := unix.Msghdr{Iov: &iov}
	h.SetIovlen(1)
	hop := func(from, to int) {
		unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fds[from]), uintptr(unsafe.Pointer(&buf[0])), 64, 0, uintptr(unsafe.Pointer(&names[to][0])), 16)
		for {
			h.Name, h.Namelen = &name[0], uint32(len(name))
			if _, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fds[to]), uintptr(unsafe.Pointer(&h)), 0); e == 0 {
				return
			}
		}
	}
	for b.Loop() {
		hop(0, 1)
		hop(1, 0)
	}
}
