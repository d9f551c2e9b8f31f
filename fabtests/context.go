package fabtests

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fabnet"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// testContext is the "context" group: the calls of package fabnet that
// take a context, on the provider under test. Over FI_EP_MSG, where the
// provider offers it: Dial, Listen and Accept with private data both
// ways; a Dial that nobody answers ends at its deadline, and one whose
// context is cancelled ends at once; rejects with and without data
// reach Dial as *fabnet.RejectedError; an error from OnRequest rejects;
// an Accept ends at its deadline and when the listener closes. On every
// endpoint type the provider offers (FI_EP_MSG, FI_EP_RDM,
// FI_EP_DGRAM): the blocking Send and Recv with a deadline that passes
// (the receive gives its buffer back, or where the provider cannot
// cancel it, keeps it posted for the next message; a send with an ended
// context posts nothing) and one that does not, and a Close that wakes a Recv.
func testContext(t *testing.T, s *suite) {
	s.run(t, "dial", func(t *testing.T) { ctxDial(t, s) })
	s.run(t, "dial-deadline", func(t *testing.T) { ctxDialDeadline(t, s) })
	s.run(t, "dial-cancel", func(t *testing.T) { ctxDialCancel(t, s) })
	s.run(t, "reject", func(t *testing.T) { ctxReject(t, s) })
	s.run(t, "on-request", func(t *testing.T) { ctxOnRequest(t, s) })
	s.run(t, "accept-deadline", func(t *testing.T) { ctxAcceptDeadline(t, s) })
	for _, typ := range []fi.EPType{fi.EPTypeMsg, fi.EPTypeRDM, fi.EPTypeDgram} {
		s.run(t, "send-recv/"+typName(typ), func(t *testing.T) { ctxSendRecv(t, s, typ) })
		s.run(t, "close-while-recv/"+typName(typ), func(t *testing.T) { ctxCloseWhileRecv(t, s, typ) })
	}
}

// typName names an endpoint type in a test path: "msg", "rdm", "dgram".
func typName(typ fi.EPType) string {
	switch typ {
	case fi.EPTypeMsg:
		return "msg"
	case fi.EPTypeRDM:
		return "rdm"
	}
	return "dgram"
}

// ctxListen listens on the suite's node with lc, skipping when the
// provider has no FI_EP_MSG endpoints; the listener closes at cleanup.
func (s *suite) ctxListen(t testing.TB, lc *fabnet.ListenConfig) *fabnet.Listener {
	t.Helper()
	if lc == nil {
		lc = &fabnet.ListenConfig{}
	}
	lc.Hints = s.msgHints()
	ln, err := lc.Listen(s.ctx(t), s.cfg.Provider, net.JoinHostPort(s.cfg.Node, "0"))
	skipIfAbsent(t, err, "connected (FI_EP_MSG) endpoints")
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// msgHints are the suite's FI_EP_MSG hints with FI_MSG.
func (s *suite) msgHints() *fi.Info {
	h := s.hints(fi.EPTypeMsg)
	h.Caps |= fi.CapMsg
	return h
}

// ctxDial dials ln with data.
func (s *suite) ctxDial(ctx context.Context, ln *fabnet.Listener, data string) (*fabnet.Conn, error) {
	d := fabnet.Dialer{Hints: s.msgHints(), Data: []byte(data)}
	return d.Dial(ctx, s.cfg.Provider, ln.Addr().String())
}

// requireCtxDeadline requires err to be a passed deadline in Go's and
// libfabric's terms (fi.ContextError).
func requireCtxDeadline(t testing.TB, err error) {
	t.Helper()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
}

// ctxDial: Dial, Next and Request.Accept with private data both ways,
// the request's address is the client's, a message each way.
func ctxDial(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	ln := s.ctxListen(t, nil)
	type result struct {
		c    *fabnet.Conn
		addr net.Addr
		err  error
	}
	accepted := make(chan result, 1)
	go func() {
		r, err := ln.Next(ctx)
		if err != nil {
			accepted <- result{err: err}
			return
		}
		c, err := r.Accept(ctx, append([]byte("welcome, "), r.Data...))
		accepted <- result{c, r.RemoteAddr(), err}
	}()
	c, err := s.ctxDial(ctx, ln, "client")
	require.NoError(t, err, "dial")
	defer c.Close()
	res := <-accepted
	require.NoError(t, res.err, "accept")
	defer res.c.Close()
	require.Equal(t, "welcome, client", string(c.PeerData()), "the accept's data at the client")
	require.Equal(t, "client", string(res.c.PeerData()), "the request's data at the server")
	if res.addr != nil && c.LocalAddr() != nil {
		require.Equal(t, c.LocalAddr().String(), res.addr.String(), "the request's address")
	}
	require.NoError(t, c.Send(ctx, []byte("ping")))
	buf := make([]byte, 16)
	n, err := res.c.Recv(ctx, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf[:n]))
	require.NoError(t, res.c.Send(ctx, []byte("pong")))
	n, err = c.Recv(ctx, buf)
	require.NoError(t, err)
	require.Equal(t, "pong", string(buf[:n]))
}

// ctxDialDeadline: a listener that never takes its requests leaves a
// Dial unanswered; it ends at its deadline with the context's error,
// and the group's leak check finds nothing of it.
func ctxDialDeadline(t *testing.T, s *suite) {
	ln := s.ctxListen(t, nil)
	ctx, cancel := context.WithTimeout(s.ctx(t), 100*time.Millisecond)
	defer cancel()
	c, err := s.ctxDial(ctx, ln, "")
	require.Nil(t, c)
	requireCtxDeadline(t, err)
}

// ctxDialCancel: cancelling a waiting Dial's context ends it with
// context.Canceled and fi.ECANCELED.
func ctxDialCancel(t *testing.T, s *suite) {
	ln := s.ctxListen(t, nil)
	ctx, cancel := context.WithCancel(s.ctx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := s.ctxDial(ctx, ln, "")
		errc <- err
	}()
	r, err := ln.Next(s.ctx(t)) // the request arrived: Dial waits
	require.NoError(t, err)
	cancel()
	err = <-errc
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, fi.ECANCELED, fi.Code(err))
	_ = r.Reject(nil) // the requester is gone; the provider may say so
}

// ctxReject: rejects with and without data reach Dial as
// *fabnet.RejectedError with that data, matching fi.ECONNREFUSED.
func ctxReject(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	ln := s.ctxListen(t, nil)
	for _, data := range []string{"not today", ""} {
		errc := make(chan error, 1)
		go func() {
			r, err := ln.Next(ctx)
			if err == nil {
				err = r.Reject([]byte(data))
			}
			errc <- err
		}()
		c, err := s.ctxDial(ctx, ln, "may I?")
		require.Nil(t, c)
		var rej *fabnet.RejectedError
		require.ErrorAs(t, err, &rej, "reject with %q", data)
		require.Equal(t, data, string(rej.Data))
		require.ErrorIs(t, err, fi.ECONNREFUSED)
		require.NoError(t, <-errc, "reject")
	}
}

// ctxOnRequest: an error from OnRequest rejects the request (with the
// data of a *fabnet.RejectedError), and Accept goes on to accept the
// next one.
func ctxOnRequest(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	ln := s.ctxListen(t, &fabnet.ListenConfig{OnRequest: func(_ context.Context, r *fabnet.Request) error {
		switch string(r.Data) {
		case "refuse":
			return &fabnet.RejectedError{Data: []byte("refused")}
		case "fail":
			return errors.New("no reason given")
		}
		return nil
	}})
	accepted := make(chan *fabnet.Conn, 1)
	go func() {
		c, _ := ln.Accept(ctx)
		accepted <- c
	}()
	for _, who := range []string{"refuse", "fail"} {
		_, err := s.ctxDial(ctx, ln, who)
		var rej *fabnet.RejectedError
		require.ErrorAs(t, err, &rej, who)
		if who == "refuse" {
			require.Equal(t, "refused", string(rej.Data))
		}
	}
	c, err := s.ctxDial(ctx, ln, "welcome")
	require.NoError(t, err)
	defer c.Close()
	sc := <-accepted
	require.NotNil(t, sc, "Accept after two refusals")
	require.Equal(t, "welcome", string(sc.PeerData()))
	require.NoError(t, sc.Close())
}

// ctxAcceptDeadline: Accept ends at its deadline and leaves the listener
// working; Close wakes an Accept that waits, which returns an error
// matching net.ErrClosed.
func ctxAcceptDeadline(t *testing.T, s *suite) {
	ln := s.ctxListen(t, nil)
	short, cancel := context.WithTimeout(s.ctx(t), 20*time.Millisecond)
	_, err := ln.Accept(short)
	cancel()
	requireCtxDeadline(t, err)

	errc := make(chan error, 1)
	go func() {
		_, err := ln.Accept(s.ctx(t))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it block, mostly
	require.NoError(t, ln.Close())
	err = <-errc
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, err, fi.EBADF)
}

// ctxPeers returns two endpoints of type typ that can send to each other,
// with the address each sends to (fi.AddrUnspec on a connection); they
// close at cleanup. It skips when the provider has no such endpoints.
func ctxPeers(t *testing.T, s *suite, typ fi.EPType) (a, b *fabnet.Endpoint, ab, ba fi.Addr) {
	t.Helper()
	ctx := s.ctx(t)
	if typ == fi.EPTypeMsg {
		ln := s.ctxListen(t, nil)
		accepted := make(chan *fabnet.Conn, 1)
		go func() {
			c, _ := ln.Accept(ctx)
			accepted <- c
		}()
		c, err := s.ctxDial(ctx, ln, "")
		require.NoError(t, err, "dial")
		t.Cleanup(func() { _ = c.Close() })
		sc := <-accepted
		require.NotNil(t, sc, "accept")
		t.Cleanup(func() { _ = sc.Close() })
		return c.Endpoint, sc.Endpoint, fi.AddrUnspec, fi.AddrUnspec
	}
	h := s.hints(typ)
	h.Caps |= fi.CapMsg
	node, flags := "", fi.Flags(0)
	if typ == fi.EPTypeDgram {
		node, flags = s.cfg.Node, fi.FlagSource
	}
	open := func() *fabnet.Endpoint {
		e, err := fabnet.NewEndpoint(ctx, s.cfg.Provider, node, "", &fabnet.EndpointConfig{Hints: h, Flags: flags})
		skipIfAbsent(t, err, typ.String()+" endpoints")
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	a, b = open(), open()
	insert := func(x, y *fabnet.Endpoint) fi.Addr {
		name, err := y.Name()
		skipIfAbsent(t, err, "endpoint names (fi_getname)")
		addr, err := x.Insert(name)
		skipIfAbsent(t, err, "address vector inserts")
		return addr
	}
	return a, b, insert(a, b), insert(b, a)
}

// ctxSendRecv: a Recv whose deadline passes returns the context's error
// and gives its buffer back; a Send and a Recv whose context already
// ended return its error at once, posting nothing; then a Send and a
// Recv whose deadlines do not pass carry a message, which lands in the
// new buffer only.
func ctxSendRecv(t *testing.T, s *suite, typ fi.EPType) {
	a, b, ab, _ := ctxPeers(t, s, typ)
	ctx := s.ctx(t)
	abandoned := make([]byte, 16)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err := b.Recv(short, abandoned)
	cancel()
	requireCtxDeadline(t, err)

	ended, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	requireCtxDeadline(t, a.SendTo(ended, []byte("never"), ab))
	_, err = b.Recv(ended, make([]byte, 16))
	requireCtxDeadline(t, err)

	buf := make([]byte, 16)
	if typ == fi.EPTypeDgram {
		ctxDgramInTime(t, ctx, a, b, ab, buf, abandoned)
		return
	}
	require.NoError(t, a.SendTo(ctx, []byte("in time"), ab))
	require.NoError(t, a.SendTo(ctx, []byte("second"), ab))
	n, err := b.Recv(ctx, buf)
	require.NoError(t, err)
	if string(buf[:n]) == "second" {
		// The provider could not cancel the abandoned receive (verbs: a
		// posted receive stays with the queue pair until a message
		// takes it, and fi_cancel finds nothing to cancel): the first
		// message went to its buffer, as fabnet's documentation says.
		require.Equal(t, "in time", string(abandoned[:7]), "the abandoned receive, still posted, took the first message")
		return
	}
	require.Equal(t, "in time", string(buf[:n]), "the send whose context had ended sent nothing")
	require.Equal(t, make([]byte, 16), abandoned, "the abandoned receive's buffer")
	n, err = b.Recv(ctx, buf)
	require.NoError(t, err)
	require.Equal(t, "second", string(buf[:n]))
}

// ctxDgramInTime is the end of ctxSendRecv on FI_EP_DGRAM, where a
// datagram that finds no receive posted may be dropped (verbs' UD queue
// pairs drop it): the receive waits first, and the sender repeats "in
// time" until it arrives. The abandoned receive either was cancelled
// and kept its buffer, or (a provider that cannot cancel it) took the
// first datagram; neither ever sees the send whose context had ended.
func ctxDgramInTime(t *testing.T, ctx context.Context, a, b *fabnet.Endpoint, ab fi.Addr, buf, abandoned []byte) {
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		n, err := b.Recv(ctx, buf)
		got <- result{n, err}
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		require.NoError(t, a.SendTo(ctx, []byte("in time"), ab))
		select {
		case r := <-got:
			require.NoError(t, r.err)
			require.Equal(t, "in time", string(buf[:r.n]), "the send whose context had ended sent nothing")
			if !bytes.Equal(abandoned, make([]byte, 16)) {
				require.Equal(t, "in time", string(abandoned[:7]), "the abandoned receive, still posted, took the first datagram")
			}
			return
		case <-tick.C:
		}
	}
}

// ctxCloseWhileRecv: closing an endpoint wakes the Recv that waits on
// it, which returns an error matching net.ErrClosed.
func ctxCloseWhileRecv(t *testing.T, s *suite, typ fi.EPType) {
	_, b, _, _ := ctxPeers(t, s, typ)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Recv(context.Background(), make([]byte, 16))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it block, mostly
	require.NoError(t, b.Close())
	err := <-errc
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, err, fi.EBADF)
}
