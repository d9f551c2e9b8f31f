package shm

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// A doorbell lets a blocked receiver sleep without spinning: an abstract
// unix datagram socket named after the endpoint (no file to leave
// behind), waited on through the runtime's netpoller. The receiver sets
// its region's sleeping word before it sleeps and looks at its rings once
// more; a sender that publishes a slot while the word is set sends one
// byte to the doorbell.
type doorbell struct {
	conn *net.UnixConn
}

// bellAddr is the doorbell's abstract socket address of endpoint name.
func bellAddr(name string) string {
	return "@gofabric-shm." + strconv.Itoa(os.Getuid()) + "." + strings.TrimPrefix(name, addrPrefix)
}

func newDoorbell(name string) (*doorbell, error) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: bellAddr(name), Net: "unixgram"})
	if err != nil {
		return nil, errors.Wrapf(fi.Code(err), "shm: doorbell of %s: %v", name, err)
	}
	return &doorbell{conn: c}, nil
}

// wait blocks until the bell rings or ctx ends; it drains what rang.
func (b *doorbell) wait(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { _ = b.conn.SetReadDeadline(time.Unix(1, 0)) })
	var buf [16]byte
	_, _ = b.conn.Read(buf[:])
	if !stop() {
		_ = b.conn.SetReadDeadline(time.Time{})
	}
	for { // drain
		_ = b.conn.SetReadDeadline(time.Unix(1, 0))
		if _, err := b.conn.Read(buf[:]); err != nil {
			break
		}
	}
	_ = b.conn.SetReadDeadline(time.Time{})
}

func (b *doorbell) close() { _ = b.conn.Close() }

// ringer sends doorbell rings from a non-blocking unbound socket.
type ringer struct {
	fd int
}

func newRinger() (*ringer, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, errors.Wrapf(fi.Code(err), "shm: doorbell socket: %v", err)
	}
	return &ringer{fd: fd}, nil
}

// ring rings the doorbell at addr; a full or missing bell is ignored
// (the receiver wakes anyway, or is gone).
func (g *ringer) ring(addr *unix.SockaddrUnix) { _ = unix.Sendto(g.fd, []byte{1}, 0, addr) }

func (g *ringer) close() { _ = unix.Close(g.fd) }
