//go:build linux

package tcp

import (
	"math"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// maxIOV is the most iovecs one readv or writev of the data path passes:
// enough to gather many small queued messages into one system call.
const maxIOV = 64

// iovec is an iovec array owned by one endpoint, reused for every readv
// and writev, so the data path does not allocate.
type iovec struct {
	v [maxIOV]unix.Iovec
	n int
}

// reset empties the array.
func (v *iovec) reset() { v.n = 0 }

// full reports whether no more segments fit.
func (v *iovec) full() bool { return v.n == maxIOV }

// add appends b when it is not empty and there is room; it returns false
// when the array is full.
func (v *iovec) add(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if v.n == maxIOV {
		return false
	}
	v.v[v.n].Base = &b[0]
	v.v[v.n].SetLen(len(b))
	v.n++
	return true
}

// clear drops the references to the buffers, so the array keeps no user
// memory alive.
func (v *iovec) clear() {
	for i := range v.n {
		v.v[i].Base = nil
	}
	v.n = 0
}

// writev writes the segments to fd once, without blocking. It returns the
// bytes written and a bare error: unix.EAGAIN when the socket is full,
// the errno otherwise. The socket is non-blocking, so this and the reads
// below are raw system calls, without the scheduler's bookkeeping for
// calls that may block: a large write keeps the kernel busy a while (about
// 150 µs for 1 MiB on loopback), but telling the scheduler costs more
// (it hands the P off and back), measured on 1 MiB rendezvous transfers
// of RDM endpoints over this provider.
//
// One segment (a small message whose payload sits after its header, the
// common case of a ping-pong) goes through send(2) instead, which hands
// the kernel the buffer directly where writev(2) copies in and checks an
// iovec array first; MSG_NOSIGNAL keeps a write to a connection the peer
// reset from raising SIGPIPE (it returns EPIPE), which matters when the
// library is loaded into a C program.
func (v *iovec) writev(fd int) (int, error) {
	if v.n == 1 {
		return sendOnce(fd, unsafe.Pointer(v.v[0].Base), int(v.v[0].Len))
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&v.v[0])), uintptr(v.n))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// readv reads into the segments once, without blocking; like writev it
// returns unix.EAGAIN when nothing is there. 0 bytes with a nil error is
// the end of the stream. One segment goes through readOnce.
func (v *iovec) readv(fd int) (int, error) {
	if v.n == 1 {
		return readOnce(fd, unsafe.Slice((*byte)(v.v[0].Base), v.v[0].Len))
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READV, uintptr(fd), uintptr(unsafe.Pointer(&v.v[0])), uintptr(v.n))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// sendOnce writes n bytes at p once, without blocking (send(2) with
// MSG_NOSIGNAL), with writev's results.
func sendOnce(fd int, p unsafe.Pointer, n int) (int, error) {
	for {
		w, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(n), unix.MSG_NOSIGNAL, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(w), nil
	}
}

// readOnce reads into b once, without blocking, with readv's results.
// The socket is non-blocking, so the call returns at once: a raw system
// call, without the scheduler's bookkeeping for calls that may block. It
// is recv(2) rather than read(2), which reaches the socket through the
// file layer's checks (an empty socket: 174 against 196 ns here), and a
// busy-polling reader makes it between every two messages.
func readOnce(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, unix.EINVAL
	}
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// ready reports whether fd has any of events (unix.POLLIN, unix.POLLOUT)
// now, or an error or hangup the next read or write will report: a
// zero-timeout poll, which, unlike a read or write, does not take the
// socket's lock.
func ready(fd int, events int16) bool {
	pfd := unix.PollFd{Fd: int32(fd), Events: events}
	var ts unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return e != 0 || n > 0
}

// setLiveness bounds how long the connection behind rc survives a peer
// that stops answering (FI_TCP_USER_TIMEOUT; 0 leaves the kernel's
// limits, with no keepalive): TCP_USER_TIMEOUT fails the connection with ETIMEDOUT once data
// it sent has gone unacknowledged for d, and keepalive probes, the first
// after a third of d of silence and then every third, let an idle
// connection find out within d (rounded up to whole seconds, keepalive's
// unit): the kernel then drops it once d has passed with probes
// unanswered.
func setLiveness(rc syscall.RawConn, d time.Duration) error {
	if d <= 0 {
		// No bound: nor the keepalive Go's net package turns on.
		var serr error
		err := rc.Control(func(s uintptr) { serr = unix.SetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_KEEPALIVE, 0) })
		if err == nil {
			err = serr
		}
		return err
	}
	ms := min(d.Milliseconds(), math.MaxInt32)
	probe := int(max(1, min(ms/3000, 32767))) // TCP_KEEPIDLE, TCP_KEEPINTVL: seconds, 1..32767
	var serr error
	err := rc.Control(func(s uintptr) {
		fd := int(s)
		for _, o := range []struct{ level, name, v int }{
			{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(ms)},
			{unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
			{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, probe},
			{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, probe},
		} {
			if err := unix.SetsockoptInt(fd, o.level, o.name, o.v); err != nil && serr == nil {
				serr = err
			}
		}
	})
	if err == nil {
		err = serr
	}
	return err
}

// peerGone reports whether fd's peer is gone: the socket has an error, or
// the peer's end of stream arrived (TCP FIN or RST), whether or not bytes
// before it are still unread. A zero-timeout poll.
func peerGone(fd int) bool {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLRDHUP}
	var ts unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return e == 0 && n > 0 && pfd.Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
}

// errnoOf maps a socket error to the fi.Errno it reports: the errno for
// the codes fi knows, fi.EIO otherwise. Bare, for the data path.
func errnoOf(err error) fi.Errno {
	if e, ok := err.(unix.Errno); ok {
		if c := fi.Code(e); c != fi.EOTHER {
			return c
		}
		return fi.EIO
	}
	return fi.Code(err)
}

// dupFD returns a duplicate of the socket behind rc (close-on-exec, and
// non-blocking like the original: the flag belongs to the shared open
// file). The data path reads and writes it directly, under the endpoint's
// lock, without allocating.
func dupFD(rc syscall.RawConn) (int, error) {
	fd, serr := -1, error(nil)
	err := rc.Control(func(s uintptr) { fd, serr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	if err == nil {
		err = serr
	}
	if err != nil {
		return -1, errors.Wrapf(fi.Code(err), "tcp: duplicate socket: %v", err)
	}
	return fd, nil
}

// sockaddrOf returns the sockaddr bytes of a TCP address (fi_getname's
// FI_SOCKADDR_IN and FI_SOCKADDR_IN6 forms). IPv4-mapped IPv6 addresses
// are reported as IPv4.
func sockaddrOf(a net.Addr) []byte {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		return nil
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	_, b, err := fi.SockaddrFromAddrPort(ap)
	if err != nil {
		return nil
	}
	return b
}

// copyName copies name into buf with fi_getname's rule: the full length,
// and bare fi.ETOOSMALL with a truncated copy when buf is too small.
func copyName(buf, name []byte) (int, error) {
	n := copy(buf, name)
	if n < len(name) {
		return len(name), fi.ETOOSMALL
	}
	return len(name), nil
}
