//go:build linux

package tcp

import (
	"context"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// Connect starts connecting to addr, a sockaddr, with private data
// (fi_connect). It returns at once; the outcome arrives on the bound event
// queue: eq.Connected with the peer's accept data, or an *eq.EQError whose
// Reason says why the attempt failed:
//
//   - eq.ReasonRejected: the peer's application rejected it
//     (fi.ECONNREFUSED, ProvErrno 0, the reject's data, if any, in
//     ErrData). Every reject from a C peer arrives so;
//   - eq.ReasonBacklogFull: a gofabric peer's backlog of unanswered
//     requests was full (fi.ECONNREFUSED, ProvErrno 0);
//   - eq.ReasonNoListener: nothing listens at the address, the kernel
//     refused the TCP connect (fi.ECONNREFUSED, ProvErrno 111), or a
//     gofabric listener was closing (ProvErrno 0);
//   - eq.ReasonTimedOut: no answer within the endpoint's
//     ep.OptConnTimeout (default FI_TCP_CONN_TIMEOUT; ProvErrno 0), or
//     the kernel gave up its SYN retransmissions first (ep.OptConnRetries;
//     ProvErrno 110): fi.ETIMEDOUT;
//   - eq.ReasonUnreachable: no route to the address (fi.EHOSTUNREACH or
//     fi.ENETUNREACH, the errno in ProvErrno);
//   - eq.ReasonTransport: the connection was reset, or the answer was
//     malformed (fi.ECONNRESET, fi.EIO, or the socket's error).
//
// The endpoint must be enabled. Private data over CMDataSize is refused
// with fi.EINVAL and nothing is sent.
func (e *endpoint) Connect(addr []byte, data []byte) error {
	dest, err := peerAddr(addr)
	if err != nil {
		return err
	}
	if err := ep.CheckCMData(data, cmMaxDataSize); err != nil {
		return errors.Wrap(err, "tcp: connect")
	}
	if !e.enabledAt.Load() {
		if s := e.cs.State(); s == ep.CMClosed {
			return stateErr("connect", s)
		}
		return errors.Wrap(fi.EOPBADSTATE, "tcp: connect: endpoint not enabled (bind an event queue and CQs, then Enable)")
	}
	local, err := e.localBind()
	if err != nil {
		return err
	}
	if err := e.cs.Connect(); err != nil {
		return errors.Wrap(err, "tcp: connect")
	}
	msg, err := appendCM(nil, &cmHeader{typ: cmConnReq, data: data})
	if err != nil {
		return err
	}
	// The options are read after the state left CMIdle: SetOpt, which
	// checks the state under cmMu, either came before or is refused.
	e.cmMu.Lock()
	timeout, retries := e.connTimeoutLocked(), e.connRetries
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	e.cancelDial = cancel
	_, e.peerName, _ = fi.SockaddrFromAddrPort(dest)
	e.cmMu.Unlock()
	e.cmWG.Add(1)
	go func() {
		defer e.cmWG.Done()
		defer cancel()
		e.dial(ctx, local, dest.String(), msg, retries)
	}()
	return nil
}

// dial runs a connection attempt: TCP connect (with retries SYN
// retransmissions, TCP_SYNCNT, unless 0), the CM request, the peer's
// answer (docs/wire-tcp.md, §2.3), and its event.
func (e *endpoint) dial(ctx context.Context, local *net.TCPAddr, dest string, msg []byte, retries int) {
	d := net.Dialer{}
	// Let connect pick the port (IP_BIND_ADDRESS_NO_PORT): a bind to port
	// 0 searches for a port no other socket holds, which slows down as
	// connections add up (rxm binds every connection of an RDM endpoint
	// to the IP of its name).
	noPort := local != nil && local.Port == 0
	if local != nil {
		d.LocalAddr = local
	}
	if noPort || retries > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				if noPort {
					_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
				}
				if retries > 0 {
					serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_SYNCNT, retries)
				}
			})
			if err == nil && serr != nil {
				err = errors.Wrapf(serr, "tcp: connect: TCP_SYNCNT %d", retries)
			}
			return err
		}
	}
	c, err := d.DialContext(ctx, "tcp", dest)
	if err != nil {
		e.connectFailed(ctx, err, true)
		return
	}
	conn := c.(*net.TCPConn)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	h, err := exchangeCM(conn, msg)
	if !stop() {
		err = ctx.Err()
	}
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil {
		conn.Close()
		e.connectFailed(ctx, err, false)
		return
	}
	data := append([]byte(nil), h.data...)
	switch h.typ {
	case cmConnResp:
		up := &eq.Connected{Fid: e, Info: e.info, Data: data}
		if !e.attach(conn, dataCodec{bigEndian: h.bigEndian}, ep.CMConnecting, up) {
			conn.Close()
		}
	case cmReject:
		conn.Close()
		if e.cs.Rejected() == nil {
			e.postError(fi.ECONNREFUSED, 0, data, h.reject.reason())
		}
	default:
		conn.Close()
		if e.cs.Failed() == nil {
			e.postError(fi.EIO, 0, nil, eq.ReasonTransport)
		}
	}
}

// reason is what a reject with code c tells the requester.
func (c rejectCode) reason() eq.ConnReason {
	switch c {
	case rejectConsumer:
		return eq.ReasonRejected
	case rejectBacklogFull:
		return eq.ReasonBacklogFull
	case rejectClosing:
		return eq.ReasonNoListener
	}
	return eq.ReasonUnknown // parseCMHeader lets no other code through
}

// exchangeCM writes the request msg in one write and reads the answer.
func exchangeCM(conn *net.TCPConn, msg []byte) (cmHeader, error) {
	if _, err := conn.Write(msg); err != nil {
		return cmHeader{}, errors.Wrap(err, "tcp: connect: send request")
	}
	buf := new([cmMaxMsgSize]byte)
	return readCM(conn, buf)
}

// connectFailed reports a failed attempt, unless the endpoint was shut
// down or closed meanwhile (the attempt's context was cancelled then).
// dialing says the TCP connect failed (err is connect(2)'s), rather than
// the CM exchange after it.
func (e *endpoint) connectFailed(ctx context.Context, err error, dialing bool) {
	code, errno := fi.Code(err), sockErrno(err)
	reason := eq.ReasonTransport
	switch {
	case ctx.Err() == context.DeadlineExceeded,
		// The dialer's own timer, set to the context's deadline, may
		// fire before the context's.
		ctx.Err() == nil && errno == 0 && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)):
		code, reason = fi.ETIMEDOUT, eq.ReasonTimedOut
	case ctx.Err() != nil:
		return
	}
	switch {
	case reason == eq.ReasonTimedOut:
	case errors.Is(err, syscall.EPIPE):
		code = fi.ECONNRESET // the peer reset the connection before our request
	case dialing && errno == int(unix.ECONNREFUSED):
		reason = eq.ReasonNoListener // the kernel's reset to our SYN
	case errno == int(unix.ETIMEDOUT):
		reason = eq.ReasonTimedOut // the kernel's SYN retransmissions ran out
	case errno == int(unix.EHOSTUNREACH), errno == int(unix.ENETUNREACH),
		errno == int(unix.EHOSTDOWN), errno == int(unix.ENETDOWN):
		reason = eq.ReasonUnreachable
	}
	if code == fi.EOTHER || code == fi.ECANCELED {
		code = fi.EIO
	}
	if e.cs.Failed() == nil {
		e.postError(code, errno, nil, reason)
	}
}

// sockErrno is the errno of the system call that failed in err, 0 when
// none did: an EQError's ProvErrno, which tells the kernel's refusal of a
// TCP connect (nothing listens) from a peer's reject (ProvErrno 0).
func sockErrno(err error) int {
	var se syscall.Errno
	if errors.As(err, &se) {
		return int(se)
	}
	return 0
}

// Accept accepts the connection request the endpoint was opened for, with
// private data (fi_accept). The answer is sent at once and the endpoint is
// connected: eq.Connected is queued before Accept returns, as the C
// provider does. A failure to send is reported as an *eq.EQError event.
// The endpoint must be enabled.
func (e *endpoint) Accept(data []byte) error {
	if err := ep.CheckCMData(data, cmMaxDataSize); err != nil {
		return errors.Wrap(err, "tcp: accept")
	}
	if !e.enabledAt.Load() && e.cs.State() == ep.CMReqReceived {
		return errors.Wrap(fi.EOPBADSTATE, "tcp: accept: endpoint not enabled (bind an event queue and CQs, then Enable)")
	}
	if err := e.cs.Accept(); err != nil {
		return errors.Wrap(err, "tcp: accept")
	}
	r := e.req
	msg, err := appendCM(nil, &cmHeader{typ: cmConnResp, data: data})
	if err != nil {
		return err
	}
	_ = r.conn.SetWriteDeadline(time.Now().Add(e.params.connTimeout))
	_, err = r.conn.Write(msg)
	if err == nil {
		err = r.conn.SetWriteDeadline(time.Time{})
	}
	if err == nil {
		if !e.attach(r.conn, dataCodec{bigEndian: r.bigEndian}, ep.CMAccepting, &eq.Connected{Fid: e, Info: e.info}) {
			r.conn.Close()
		}
		return nil
	}
	r.conn.Close()
	code := fi.Code(err)
	if code == fi.EOTHER {
		code = fi.EIO
	}
	if e.cs.Failed() == nil {
		e.postError(code, sockErrno(err), nil, eq.ReasonTransport)
	}
	return nil
}

// connReq is a connection request (the handle in a ConnReq event's
// Info): the accepted socket with the request read from it.
type connReq struct {
	pep       *passiveEP
	conn      *net.TCPConn
	peer      []byte // the requester's sockaddr
	bigEndian bool
	once      sync.Once
}

// Close rejects the request without data, as Reject(handle, nil) does; it
// lets an application drop a request it does not want to open an
// endpoint for.
func (r *connReq) Close() error { return r.pep.CloseRequest(r, rejectReq) }

// reject sends a reject with data and the reject code that says why
// (§2.9), and closes the socket (the C provider shuts the socket down
// after the reject, §2.3).
func (r *connReq) reject(data []byte, code rejectCode) {
	r.once.Do(func() {
		if msg, err := appendCM(nil, &cmHeader{typ: cmReject, reject: code, data: data}); err == nil {
			_ = r.conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = r.conn.Write(msg)
		}
		_ = r.conn.CloseWrite()
		_ = r.conn.Close()
	})
}
