package ft

import (
	"context"
	"io"
	"net"
	"os"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// pollInterval is how long a socket wait sleeps between two rounds of
// provider progress (C spins on a non-blocking socket instead).
const pollInterval = time.Millisecond

// oobSock is a TCP socket between the two processes outside the fabric:
// the out-of-band socket of -E and -b (oob_sock), or a test's own socket
// (fi_cm_data's sock). C makes it non-blocking with TCP_NODELAY and, while
// a call would block, keeps reading its CQs so that the provider
// progresses (ft_sock_send, ft_sock_recv); send and recv do the same with
// short socket deadlines.
type oobSock struct {
	conn *net.TCPConn
	// progress runs between two waits; nil for none.
	progress func()
	// limit returns how long one send or recv may wait (0: no bound).
	limit func() time.Duration
}

// listenSock listens on node:service (ft_sock_listen): any address when
// node is empty.
func listenSock(node, service string) (*net.TCPListener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(node, service))
	if err != nil {
		return nil, callErr("ft_sock_listen", err)
	}
	return l.(*net.TCPListener), nil
}

// acceptSock accepts one connection on l (ft_sock_accept). It waits as
// long as it takes, as C does: a server waits for its client.
func acceptSock(ctx context.Context, l *net.TCPListener) (*net.TCPConn, error) {
	stop := context.AfterFunc(ctx, func() { _ = l.SetDeadline(time.Now()) })
	defer stop()
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, callErr("accept", err)
	}
	if err := c.SetNoDelay(true); err != nil {
		c.Close()
		return nil, callErr("setsockopt TCP_NODELAY", err)
	}
	return c, nil
}

// dialSock connects to node:service (ft_sock_connect). Like C it tries
// once: nothing listening there is an error (ECONNREFUSED).
func dialSock(ctx context.Context, node, service string, timeout time.Duration) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(node, service))
	if err != nil {
		return nil, callErr("connect", err)
	}
	tc := c.(*net.TCPConn)
	if err := tc.SetNoDelay(true); err != nil {
		tc.Close()
		return nil, callErr("setsockopt TCP_NODELAY", err)
	}
	return tc, nil
}

// send writes all of b (ft_sock_send).
func (o *oobSock) send(b []byte) error {
	var deadline time.Time
	if l := o.limit(); l > 0 {
		deadline = time.Now().Add(l)
	}
	if err := o.conn.SetWriteDeadline(deadline); err != nil {
		return callErr("ft_sock_send", err)
	}
	if _, err := o.conn.Write(b); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errors.Wrapf(fi.ETIMEDOUT, "ft_sock_send: the peer took none of %d bytes for %v", len(b), o.limit())
		}
		return callErr("ft_sock_send", err)
	}
	return nil
}

// recv reads exactly len(b) bytes (ft_sock_recv). The peer closing the
// socket first is fi.ENOTCONN, as in C; a peer silent for the limit is
// fi.ETIMEDOUT.
func (o *oobSock) recv(b []byte) error {
	var deadline time.Time
	limit := o.limit()
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	got := 0
	for got < len(b) {
		wake := time.Now().Add(pollInterval)
		if o.progress == nil {
			wake = deadline
		} else if !deadline.IsZero() && deadline.Before(wake) {
			wake = deadline
		}
		if err := o.conn.SetReadDeadline(wake); err != nil {
			return callErr("ft_sock_recv", err)
		}
		n, err := o.conn.Read(b[got:])
		got += n
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return errors.Wrapf(fi.ETIMEDOUT, "ft_sock_recv: the peer sent %d of %d bytes, then nothing for %v", got, len(b), limit)
			}
			if n > 0 && limit > 0 {
				deadline = time.Now().Add(limit)
			}
			if o.progress != nil {
				o.progress()
			}
		case errors.Is(err, io.EOF):
			return errors.Wrapf(fi.ENOTCONN, "ft_sock_recv: the peer closed the socket after %d of %d bytes", got, len(b))
		default:
			return callErr("ft_sock_recv", err)
		}
	}
	return nil
}

// close closes the socket (ft_close_oob).
func (o *oobSock) close() error {
	if err := o.conn.Close(); err != nil {
		return callErr("ft_close_oob", err)
	}
	return nil
}

// initOOB opens the out-of-band socket when the options use it
// (ft_init_oob): the server listens on (-s, port) and accepts one
// connection, the client connects to (server, port) and then sleeps a
// second, as C does, so that the server has its endpoint open before the
// client's first message.
func (s *Session) initOOB() error {
	if s.opts.Flags&OptOOBCtrl == 0 || s.oob != nil {
		return nil
	}
	if s.opts.OOBPort == "" {
		s.opts.OOBPort = defaultOOBPort
	}
	var c *net.TCPConn
	if !s.opts.IsClient() {
		l, err := listenSock(s.opts.SrcAddr, s.opts.OOBPort)
		if err != nil {
			return err
		}
		c, err = acceptSock(s.ctx, l)
		l.Close()
		if err != nil {
			return err
		}
		s.contact = true
	} else {
		var err error
		if c, err = dialSock(s.ctx, s.opts.DstAddr, s.opts.OOBPort, defaultLimit); err != nil {
			return err
		}
		time.Sleep(time.Second)
	}
	s.oob = &oobSock{conn: c, progress: s.forceProgress, limit: s.limit}
	return nil
}
