//go:build linux

package eq

import (
	"os"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// poller is a wait set's epoll(7) descriptor: the members' wait
// descriptors are in it, level-triggered, and the runtime's netpoller
// watches it (an epoll descriptor is readable while one of its
// descriptors is), so that the watcher parks a goroutine, not a thread,
// while it waits.
type poller struct {
	fd int      // the epoll descriptor; f owns it
	f  *os.File // fd, registered with the netpoller
	rc syscall.RawConn
	// ev is ready's buffer, used by the watcher only.
	ev [4]unix.EpollEvent
	// ready is the RawConn.Read callback, made once so that a wait
	// allocates nothing.
	ready func(uintptr) bool
}

func newPoller() (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, errors.Wrapf(fi.Code(err), "eq: wait set: epoll_create1: %v", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrapf(fi.Code(err), "eq: wait set: set non-blocking: %v", err)
	}
	p := &poller{fd: fd, f: os.NewFile(uintptr(fd), "fabric-wait-set")}
	// A descriptor the netpoller could not take refuses deadlines.
	if err := p.f.SetReadDeadline(time.Time{}); err != nil {
		_ = p.f.Close()
		return nil, errors.Wrapf(fi.ENOSYS, "eq: wait set: the runtime cannot poll an epoll descriptor: %v", err)
	}
	p.rc, err = p.f.SyscallConn()
	if err != nil {
		_ = p.f.Close()
		return nil, errors.Wrapf(fi.Code(err), "eq: wait set: %v", err)
	}
	p.ready = func(fd uintptr) bool {
		n, err := unix.EpollWait(int(fd), p.ev[:], 0)
		return n > 0 || err != nil // an error: let Wait look
	}
	return p, nil
}

// add puts a member's wait descriptor into the set.
func (p *poller) add(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		if err == unix.EEXIST {
			return fi.EALREADY
		}
		return errors.Wrapf(fi.Code(err), "epoll_ctl: %v", err)
	}
	return nil
}

// del takes a member's wait descriptor out of the set.
func (p *poller) del(fd int) { _ = unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil) }

// wait parks the caller until a member's descriptor is readable; it
// returns an error once close ran.
func (p *poller) wait() error { return p.rc.Read(p.ready) }

// close wakes a wait and closes the descriptor.
func (p *poller) close() error { return p.f.Close() }
