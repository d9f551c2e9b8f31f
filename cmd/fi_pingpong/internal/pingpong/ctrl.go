package pingpong

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// Control-channel message sizes and contents (wire-tcp-1.17 §1.3).
const (
	// MaxNameLen is the longest address a name message may announce.
	MaxNameLen = 1024
	// CountLen is the length of the ack-count message.
	CountLen = 10
)

// errProto is the code of a malformed control message (EPROTO).
const errProto = fi.Errno(unix.EPROTO)

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
	conn   net.Conn
	client bool
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

// write sends one message with a single Write.
func (c *Ctrl) write(what string, b []byte) error {
	if _, err := c.conn.Write(b); err != nil {
		return sockErr(err, "pingpong: ctrl: send %s", what)
	}
	return nil
}

// read fills b exactly. A peer that closed the connection gives
// ECONNABORTED, as in the C tool.
func (c *Ctrl) read(what string, b []byte) error {
	if _, err := io.ReadFull(c.conn, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.Wrapf(fi.ECONNABORTED, "pingpong: ctrl: read %s: no data or remote connection closed", what)
		}
		return sockErr(err, "pingpong: ctrl: read %s", what)
	}
	return nil
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
		return 0, nil, errors.Wrapf(fi.EINVAL, "pingpong: ctrl: name length %d exceeds %d", n, MaxNameLen)
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
