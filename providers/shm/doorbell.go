//go:build linux

package shm

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	cerrors "github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// A doorbell lets a blocked receiver sleep without spinning: a unix
// datagram socket beside the endpoint's inbox, in the user's 0700
// directory (no other user can bind its name, nor send to it), waited on
// through the runtime's netpoller. The receiver sets its region's
// sleeping word before it sleeps and looks at its rings once more; a
// sender that publishes a slot while the word is set sends one byte to
// the doorbell. An owner that made room in an entry whose claimer asked
// for it (pWant) rings the claimer's doorbell too.
//
// Several goroutines may wait on one doorbell (readers of several queues
// bound to the endpoint, or several readers of one queue): one of them
// reads the socket, the others wait until it is done, so that one
// waiter's deadlines never cut another's wait short or make it longer.
type doorbell struct {
	conn *net.UnixConn
	path string

	mu      sync.Mutex    // guards reading and done
	reading bool          // a waiter reads the socket
	done    chan struct{} // closed when that waiter stops reading
}

// newDoorbell binds the doorbell of endpoint name. The caller owns the
// name (it created the inbox under the directory lock), so a socket file
// left there is a dead owner's and is removed first.
func newDoorbell(name string) (*doorbell, error) {
	path := bellPath(name)
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, cerrors.Wrapf(fi.EINVAL, "shm: doorbell of %s: path %s is too long for a socket", name, path)
	}
	_ = unix.Unlink(path)
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, cerrors.Wrapf(fi.Code(err), "shm: doorbell of %s: %v", name, err)
	}
	_ = os.Chmod(path, 0o600)
	return &doorbell{conn: c, path: path, done: make(chan struct{})}, nil
}

// wait blocks until the bell rings, ctx ends, the doorbell closes or the
// deadline passes, and reports whether the deadline passed first. The
// waiter that reads the socket drains what rang.
func (b *doorbell) wait(ctx context.Context, deadline time.Time) (timedOut bool) {
	b.mu.Lock()
	if b.reading {
		done := b.done
		b.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-done: // the reader saw a ring, or stopped: look again
		case <-ctx.Done():
		case <-t.C:
			return true
		}
		return false
	}
	b.reading = true
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.reading = false
		close(b.done)
		b.done = make(chan struct{})
		b.mu.Unlock()
	}()
	return b.read(ctx, deadline)
}

// read is wait's reading side.
func (b *doorbell) read(ctx context.Context, deadline time.Time) (timedOut bool) {
	if b.conn.SetReadDeadline(deadline) != nil {
		return false // closed
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = b.conn.SetReadDeadline(time.Unix(1, 0))
		close(fired)
	})
	var buf [16]byte
	_, err := b.conn.Read(buf[:])
	if !stop() {
		<-fired
	}
	if err != nil {
		var ne net.Error
		timedOut = errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil
	}
	for err == nil { // drain
		_ = b.conn.SetReadDeadline(time.Unix(1, 0))
		_, err = b.conn.Read(buf[:])
	}
	_ = b.conn.SetReadDeadline(time.Time{})
	return timedOut
}

// close removes the doorbell's socket file and closes it, which ends
// every wait on it.
func (b *doorbell) close() {
	_ = unix.Unlink(b.path)
	_ = b.conn.Close()
}

// ringer sends doorbell rings from a non-blocking unbound socket.
type ringer struct {
	fd int
}

func newRinger() (*ringer, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, cerrors.Wrapf(fi.Code(err), "shm: doorbell socket: %v", err)
	}
	return &ringer{fd: fd}, nil
}

// ring rings the doorbell at addr; a full or missing bell is ignored
// (the receiver wakes anyway, or is gone).
func (g *ringer) ring(addr *unix.SockaddrUnix) { _ = unix.Sendto(g.fd, ringByte[:], 0, addr) }

var ringByte = [1]byte{1}

func (g *ringer) close() { _ = unix.Close(g.fd) }
