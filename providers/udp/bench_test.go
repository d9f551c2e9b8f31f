//go:build linux

package udp_test

import (
	"fmt"
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
	s := newRawSock(b)
	for b.Loop() {
		if e := s.recv(); e != unix.EAGAIN {
			b.Fatal(e)
		}
	}
}

// rawSock is a non-blocking UDP socket on 127.0.0.1 with a 64-byte
// buffer, for the benchmarks of the system calls alone; it is closed at
// cleanup.
type rawSock struct {
	fd   int
	name [16]byte // its sockaddr_in, for sendto
	buf  [64]byte
	iov  unix.Iovec
	from [28]byte
	h    unix.Msghdr
}

func newRawSock(b *testing.B) *rawSock {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
	require.NoError(b, err)
	b.Cleanup(func() { unix.Close(fd) })
	require.NoError(b, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := unix.Getsockname(fd)
	require.NoError(b, err)
	port := sa.(*unix.SockaddrInet4).Port
	s := &rawSock{fd: fd, name: [16]byte{unix.AF_INET, 0, byte(port >> 8), byte(port), 127, 0, 0, 1}}
	s.iov = unix.Iovec{Base: &s.buf[0]}
	s.iov.SetLen(len(s.buf))
	s.h = unix.Msghdr{Iov: &s.iov}
	s.h.SetIovlen(1)
	return s
}

// recv is one recvmsg into the buffer: its errno, 0 when it took a
// datagram.
func (s *rawSock) recv() unix.Errno {
	s.h.Name, s.h.Namelen = &s.from[0], uint32(len(s.from))
	_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.h)), 0)
	return e
}

// sendTo sends the buffer's 64 bytes to t (sendto).
func (s *rawSock) sendTo(t *rawSock) {
	unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(&s.buf[0])), uintptr(len(s.buf)), 0,
		uintptr(unsafe.Pointer(&t.name[0])), uintptr(len(t.name)))
}

// BenchmarkInProcPingPong sends 64 bytes from one endpoint to another and
// back in one goroutine (inject, then read the receive CQ and post the
// receive again, on each side): the provider's own cost per message,
// without a scheduler in between. With posted=2 each side keeps a second
// receive posted, as fi_pingpong does for FI_EP_DGRAM: a queue read must
// then still cost one receive system call, not two.
func BenchmarkInProcPingPong(b *testing.B) {
	for _, posted := range []int{1, 2} {
		b.Run(fmt.Sprintf("posted=%d", posted), func(b *testing.B) { inProcPingPong(b, posted) })
	}
}

func inProcPingPong(b *testing.B, posted int) {
	cleanEnv(b)
	info := loInfo(b, 0)
	x, y := newNode(b, info, false), newNode(b, info, false)
	xy, yx := x.insert(b, y.name), y.insert(b, x.name)
	bx, by := make([]byte, 64), make([]byte, 64)
	for range posted {
		require.NoError(b, x.msg.Recv(bx, nil, fi.AddrUnspec, nil))
		require.NoError(b, y.msg.Recv(by, nil, fi.AddrUnspec, nil))
	}
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
	x, y := newRawSock(b), newRawSock(b)
	if inEpoll {
		for _, s := range []*rawSock{x, y} {
			ep, err := unix.EpollCreate1(0)
			require.NoError(b, err)
			b.Cleanup(func() { unix.Close(ep) })
			require.NoError(b, unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, s.fd, &unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(s.fd)}))
		}
	}
	hop := func(from, to *rawSock) {
		from.sendTo(to)
		for to.recv() != 0 {
		}
	}
	for b.Loop() {
		hop(x, y)
		hop(y, x)
	}
}
