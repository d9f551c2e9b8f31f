package pingpong

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// Control-channel message sizes and contents (docs/wire-tcp.md, §1.3).
const (
	// MaxNameLen is the longest address a name message may announce.
	MaxNameLen = 1024
	// CountLen is the length of the ack-count message.
	CountLen = 10
)

// errProto is the code of a malformed control message (EPROTO).
const errProto fi.Errno = 71 // Linux's EPROTO: fi.Errno keeps Linux's numbers on every OS

var (
	syncReq = []byte("q\x00")
	syncRep = []byte("a\x00")
	countOK = []byte("cnt ok\x00")
)

// Ctrl is fi_pingpong's control channel: one plain TCP connection between
// client and server that carries the endpoint-name exchange and the
// per-size synchronisation. Every message is written with one Write call
// and read with exact-length reads, so a C fi_pingpong 1.17 can be either
// peer. Not safe for concurrent use.
type Ctrl struct {
	conn    net.Conn
	client  bool
	timeout time.Duration // how long one read or write may wait; 0: no limit
}

// ListenCtrl is the server side: it listens on the wildcard address at
// port (IPv4, or IPv6 with ipv6), with SO_REUSEADDR as Go's listeners
// always have, accepts exactly one connection and closes the listener.
// ready, when not nil, is called with the listener's address once it
// listens. A done ctx stops the wait.
func ListenCtrl(ctx context.Context, port uint16, ipv6 bool, ready func(net.Addr)) (*Ctrl, error) {
	network, host := "tcp4", "0.0.0.0"
	if ipv6 {
		network, host = "tcp6", "::"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, network, net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		return nil, sockErr(err, "pingpong: ctrl: listen on port %d", port)
	}
	defer ln.Close()
	if ready != nil {
		ready(ln.Addr())
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	conn, err := ln.Accept()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, errors.Wrapf(fi.Code(cerr), "pingpong: ctrl: accept: %v", cerr)
		}
		return nil, sockErr(err, "pingpong: ctrl: accept")
	}
	return &Ctrl{conn: conn}, nil
}

// DialCtrl is the client side: it connects to host:port over IPv4 (IPv6
// with ipv6), trying each address the name resolves to in order, from
// source port srcPort when it is not 0.
func DialCtrl(ctx context.Context, host string, port, srcPort uint16, ipv6 bool) (*Ctrl, error) {
	network := "tcp4"
	if ipv6 {
		network = "tcp6"
	}
	var d net.Dialer
	if srcPort != 0 {
		d.LocalAddr = &net.TCPAddr{Port: int(srcPort)}
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, sockErr(err, "pingpong: ctrl: failed to connect to %s", addr)
	}
	return &Ctrl{conn: conn, client: true}, nil
}

// NewCtrl wraps an established connection; client says which side of the
// protocol this process plays.
func NewCtrl(conn net.Conn, client bool) *Ctrl { return &Ctrl{conn: conn, client: client} }

// sockErr wraps the errno of a socket error with a message. Name
// resolution failures have none: they give fi.EOTHER with the resolver's
// text, for which ExitStatus gives 1, the C tool's status when
// getaddrinfo fails.
func sockErr(err error, format string, args ...any) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return errors.Wrapf(fi.EOTHER, format+": %v", append(args, dnsErr)...)
	}
	return errors.Wrapf(fi.Code(err), format, args...)
}

// Close closes the connection.
func (c *Ctrl) Close() error { return c.conn.Close() }

// SetTimeout bounds every later read and write: one that waits longer for
// the peer fails with ETIMEDOUT. 0 (NewCtrl's, ListenCtrl's and DialCtrl's
// default) waits forever, as the C tool does.
func (c *Ctrl) SetTimeout(d time.Duration) { c.timeout = d }

// deadline is the deadline of an operation that starts now.
func (c *Ctrl) deadline() time.Time {
	if c.timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(c.timeout)
}

// write sends one message with a single Write.
func (c *Ctrl) write(what string, b []byte) error {
	if err := c.conn.SetWriteDeadline(c.deadline()); err != nil {
		return sockErr(err, "pingpong: ctrl: send %s", what)
	}
	if _, err := c.conn.Write(b); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return c.silent("could not send %s to %s within %v", what, c.conn.RemoteAddr(), c.timeout)
		}
		return sockErr(err, "pingpong: ctrl: send %s", what)
	}
	return nil
}

// read fills b exactly. A peer that closed the connection gives
// ECONNABORTED, as in the C tool, and one that sends nothing within the
// timeout ETIMEDOUT.
func (c *Ctrl) read(what string, b []byte) error {
	if err := c.conn.SetReadDeadline(c.deadline()); err != nil {
		return sockErr(err, "pingpong: ctrl: read %s", what)
	}
	if _, err := io.ReadFull(c.conn, b); err != nil {
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			err = errors.Wrapf(fi.ECONNABORTED, "pingpong: ctrl: read %s: no data or remote connection closed", what)
			if c.client {
				err = errors.WithHintf(err, "%s closed the control connection: is it a fi_pingpong server, and did it fail (see its output)?", c.conn.RemoteAddr())
			}
			return err
		case errors.Is(err, os.ErrDeadlineExceeded):
			return c.silent("no %s from %s within %v", what, c.conn.RemoteAddr(), c.timeout)
		}
		return sockErr(err, "pingpong: ctrl: read %s", what)
	}
	return nil
}

// silent is the ETIMEDOUT of a peer that did not answer in time, with a
// hint at the likely cause.
func (c *Ctrl) silent(format string, args ...any) error {
	err := errors.Wrapf(fi.ETIMEDOUT, "pingpong: ctrl: "+format, args...)
	if c.client {
		return errors.WithHintf(err, "%s accepted the control connection but does not answer as a fi_pingpong server would; is it one? (-T sets how long to wait)", c.conn.RemoteAddr())
	}
	return errors.WithHint(err, "the client stopped answering on the control connection (-T sets how long to wait)")
}

// SendName sends an endpoint name: its length (u32 big-endian), its
// address format (u32 in host order) and the name itself, three messages.
func (c *Ctrl) SendName(format fi.AddrFormat, name []byte) error {
	if len(name) > MaxNameLen {
		return errors.Wrapf(fi.EINVAL, "pingpong: ctrl: name of %d bytes exceeds %d", len(name), MaxNameLen)
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(len(name)))
	if err := c.write("name length", b[:]); err != nil {
		return err
	}
	binary.NativeEndian.PutUint32(b[:], uint32(format))
	if err := c.write("address format", b[:]); err != nil {
		return err
	}
	return c.write("name", name)
}

// RecvName receives what SendName sends. A length above MaxNameLen gives
// EINVAL.
func (c *Ctrl) RecvName() (fi.AddrFormat, []byte, error) {
	var b [4]byte
	if err := c.read("name length", b[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(b[:])
	if n > MaxNameLen {
		err := errors.Wrapf(fi.EINVAL, "pingpong: ctrl: name length %d exceeds %d", n, MaxNameLen)
		if c.client {
			err = errors.WithHintf(err, "is %s a fi_pingpong server? Its first bytes are %q", c.conn.RemoteAddr(), b[:])
		}
		return 0, nil, err
	}
	if err := c.read("address format", b[:]); err != nil {
		return 0, nil, err
	}
	format := fi.AddrFormat(binary.NativeEndian.Uint32(b[:]))
	name := make([]byte, n)
	if err := c.read("name", name); err != nil {
		return 0, nil, err
	}
	return format, name, nil
}

// Sync is the barrier before each size: the client sends "q\0" and waits
// for "a\0", the server waits for "q\0" and answers "a\0". Anything else
// gives EPROTO.
func (c *Ctrl) Sync() error {
	var b [2]byte
	if c.client {
		if err := c.write("sync", syncReq); err != nil {
			return err
		}
		if err := c.read("sync reply", b[:]); err != nil {
			return err
		}
		return expect("sync reply", b[:], syncRep)
	}
	if err := c.read("sync", b[:]); err != nil {
		return err
	}
	if err := expect("sync", b[:], syncReq); err != nil {
		return err
	}
	return c.write("sync reply", syncRep)
}

// ExchangeCount agrees on the receive count of the size just tested. The
// client sends count as decimal ASCII NUL-padded to CountLen bytes and
// waits for "cnt ok\0"; the server receives the client's count, answers
// "cnt ok\0" and returns the client's count in place of its own. count
// must not be negative.
func (c *Ctrl) ExchangeCount(count int) (int, error) {
	if c.client {
		var b [CountLen]byte
		copy(b[:], strconv.Itoa(count))
		if err := c.write("count", b[:]); err != nil {
			return 0, err
		}
		var r [len("cnt ok\x00")]byte
		if err := c.read("count ok", r[:]); err != nil {
			return 0, err
		}
		return count, expect("count ok", r[:], countOK)
	}
	var b [CountLen]byte
	if err := c.read("count", b[:]); err != nil {
		return 0, err
	}
	n, err := ParseCount(b[:])
	if err != nil {
		return 0, err
	}
	return n, c.write("count ok", countOK)
}

// ParseCount decodes an ack-count message: decimal digits followed by NUL
// padding. Anything else gives EPROTO.
func ParseCount(b []byte) (int, error) {
	digits := b
	if i := bytes.IndexByte(b, 0); i >= 0 {
		digits = b[:i]
		if bytes.ContainsFunc(b[i:], func(r rune) bool { return r != 0 }) {
			return 0, errors.Wrapf(errProto, "pingpong: ctrl: bad count message %q", b)
		}
	}
	n, err := strconv.ParseUint(string(digits), 10, 31)
	if err != nil {
		return 0, errors.Wrapf(errProto, "pingpong: ctrl: bad count message %q", b)
	}
	return int(n), nil
}

func expect(what string, got, want []byte) error {
	if !bytes.Equal(got, want) {
		return errors.Wrapf(errProto, "pingpong: ctrl: %s: got %q, want %q", what, got, want)
	}
	return nil
}
