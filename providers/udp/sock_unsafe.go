//go:build linux

package udp

import (
	"unsafe"

	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// The data path's system calls: raw, non-blocking (every socket has
// O_NONBLOCK), on descriptors the runtime's netpoller does not know, with
// arguments the caller owns, so they neither block nor allocate. A
// datagram of at most maxMsgSize bytes is copied by the kernel within
// microseconds, so the scheduler need not hear of the calls.

// msgScratch is a struct msghdr with its iovec array and address buffer,
// owned by one endpoint side and used under that side's lock.
type msgScratch struct {
	h    unix.Msghdr
	iov  [iovLimit]unix.Iovec
	name [unix.SizeofSockaddrInet6]byte
}

// setIOV points the header at bufs, skipping empty ones.
func (m *msgScratch) setIOV(bufs [][]byte) {
	n := 0
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		m.iov[n].Base = &b[0]
		m.iov[n].SetLen(len(b))
		n++
	}
	m.h.Iov = nil
	if n > 0 {
		m.h.Iov = &m.iov[0]
	}
	m.h.SetIovlen(n)
}

// clear drops the references to the caller's buffers and address, so the
// scratch keeps no user memory alive.
func (m *msgScratch) clear() {
	for i := range m.iov {
		m.iov[i].Base = nil
	}
	m.h.Iov, m.h.Name = nil, nil
}

// sendTo sends buf to the sockaddr sa as one datagram (sendto(2)); with
// no sa, to the peer of the connected socket fd. It returns a bare errno:
// unix.EAGAIN when the socket buffer is full.
func sendTo(fd int, buf, sa []byte) error {
	var p, sp unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	if len(sa) > 0 {
		sp = unsafe.Pointer(&sa[0])
	}
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(len(buf)),
			0, uintptr(sp), uintptr(len(sa)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// sendMsg sends bufs to sa as one datagram (sendmsg(2)), with sendTo's
// results.
func (m *msgScratch) sendMsg(fd int, bufs [][]byte, sa []byte) error {
	m.setIOV(bufs)
	m.h.Name, m.h.Namelen = nil, 0
	if len(sa) > 0 {
		m.h.Name = &sa[0]
		m.h.Namelen = uint32(len(sa))
	}
	defer m.clear()
	for {
		_, _, e := unix.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.h)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// recv receives one datagram into bufs (MSG_TRUNC). It returns the
// datagram's full length, which exceeds the buffers' when it was
// truncated, and, when name is set, the sender's address, a view of
// m.name valid until the next call; unix.EAGAIN when nothing is queued.
//
// One buffer (the common receive, and every poll of an idle socket) goes
// through recvfrom(2), which hands the kernel the buffer and address
// directly: recvmsg(2) first copies in a struct msghdr and its iovec
// array, about 45 ns more a call here (an empty socket: 163 against 207
// ns), and a busy-polling reader makes that call between every two
// messages. Without name the kernel does not copy the address out either.
func (m *msgScratch) recv(fd int, bufs [][]byte, name bool) (int, []byte, error) {
	if len(bufs) == 1 {
		return m.recvFrom(fd, bufs[0], name)
	}
	m.setIOV(bufs)
	m.h.Name, m.h.Namelen = nil, 0
	if name {
		m.h.Name = &m.name[0]
		m.h.Namelen = uint32(len(m.name))
	}
	m.h.Flags = 0
	for {
		n, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.h)), unix.MSG_TRUNC)
		if e == unix.EINTR {
			continue
		}
		m.clear()
		if e != 0 {
			return 0, nil, e
		}
		if !name {
			return int(n), nil, nil
		}
		return int(n), m.name[:min(int(m.h.Namelen), len(m.name))], nil
	}
}

// recvFrom is recv of one buffer (recvfrom(2)).
func (m *msgScratch) recvFrom(fd int, buf []byte, name bool) (int, []byte, error) {
	var p, np, lp unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	var nlen uint32
	if name {
		np, lp = unsafe.Pointer(&m.name[0]), unsafe.Pointer(&nlen)
	}
	for {
		nlen = uint32(len(m.name))
		n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(p), uintptr(len(buf)), unix.MSG_TRUNC,
			uintptr(np), uintptr(lp))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, nil, e
		}
		if !name {
			return int(n), nil, nil
		}
		return int(n), m.name[:min(int(nlen), len(m.name))], nil
	}
}

// errnoOf maps a socket error to the fi.Errno it reports: the errno for
// the codes fi knows, fi.EIO otherwise. Bare, for the data path.
func errnoOf(err error) fi.Errno {
	if e, ok := err.(unix.Errno); ok {
		if e == unix.EAGAIN || e == unix.ENOBUFS {
			return fi.EAGAIN
		}
		if c := fi.Code(e); c != fi.EOTHER {
			return c
		}
		return fi.EIO
	}
	return fi.Code(err)
}
