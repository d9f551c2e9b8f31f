package fabnet_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fabnet"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/exampletest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestExamplesLeakNothing runs the echo examples again and requires that
// they close everything they open.
func TestExamplesLeakNothing(t *testing.T) {
	exampletest.NoLeaks(t, Example_tcpEcho, Example_tcpRDMEcho, Example_shmEcho)
}

// TestEchoSidesShort holds the echo examples to issue 20's promise: each
// side, the server and the client function literal of an Example whose
// name contains Echo, under 30 lines that are neither blank nor
// comments.
func TestEchoSidesShort(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", nil, parser.ParseComments)
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	lines := strings.Split(string(src), "\n")
	comment := map[int]bool{}
	for _, g := range f.Comments {
		for l := fset.Position(g.Pos()).Line; l <= fset.Position(g.End()).Line; l++ {
			comment[l] = true
		}
	}
	examples := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") || !strings.Contains(fn.Name.Name, "Echo") {
			continue
		}
		examples++
		sides := 0
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			id, ok := as.Lhs[0].(*ast.Ident)
			lit, isLit := as.Rhs[0].(*ast.FuncLit)
			if !ok || !isLit || (id.Name != "server" && id.Name != "client") {
				return true
			}
			sides++
			count := 0
			for l := fset.Position(lit.Body.Lbrace).Line + 1; l < fset.Position(lit.Body.Rbrace).Line; l++ {
				text := strings.TrimSpace(lines[l-1])
				if text != "" && !comment[l] && !strings.HasPrefix(text, "//") {
					count++
				}
			}
			t.Logf("%s: %s: %d lines", fn.Name.Name, id.Name, count)
			require.Less(t, count, 30, "%s: the %s side", fn.Name.Name, id.Name)
			return false
		})
		require.Equal(t, 2, sides, "%s: a server and a client side", fn.Name.Name)
	}
	require.Equal(t, 3, examples, "echo examples over tcp MSG, tcp RDM and shm")
}

// noLeaks checks, after every other cleanup of t, that t left no
// goroutine behind.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// TestReadmeEcho keeps the README's section "Go-native API" showing
// Example_tcpEcho, doc comment included, word for word.
func TestReadmeEcho(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	require.NoError(t, err)
	var want string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Example_tcpEcho" {
			want = string(src[fset.Position(fn.Doc.Pos()).Offset:fset.Position(fn.End()).Offset]) + "\n"
		}
	}
	require.NotEmpty(t, want, "Example_tcpEcho")
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Go-native API\n")
	require.True(t, ok, "README.md has no section Go-native API")
	_, code, ok := strings.Cut(section, "\n```go\n")
	require.True(t, ok, "the section has no Go code block")
	code, _, ok = strings.Cut(code, "\n```\n")
	require.True(t, ok, "the code block does not end")
	require.Equal(t, want, code+"\n", "README.md's echo differs from Example_tcpEcho")
}

// ctxFor returns a context that bounds a failing test.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// listen returns a tcp listener on loopback, closed at cleanup.
func listen(t testing.TB, lc *fabnet.ListenConfig) *fabnet.Listener {
	t.Helper()
	if lc == nil {
		lc = &fabnet.ListenConfig{}
	}
	ln, err := lc.Listen(ctxFor(t), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// requireDeadline requires err to be a context deadline in both Go's and
// libfabric's terms.
func requireDeadline(t testing.TB, err error) {
	t.Helper()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.Equal(t, fi.ETIMEDOUT, fi.Code(err))
}

// fdCount counts the process's open descriptors (-1 without /proc).
func fdCount() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// TestConnect: private data both ways, the request's address, and a
// message each way.
func TestConnect(t *testing.T) {
	noLeaks(t)
	ctx := ctxFor(t)
	ln := listen(t, &fabnet.ListenConfig{Data: []byte("welcome")})
	var reqAddr net.Addr
	accepted := make(chan *fabnet.Conn, 1)
	go func() {
		r, err := ln.Next(ctx)
		if err != nil {
			accepted <- nil
			return
		}
		reqAddr = r.RemoteAddr()
		c, err := r.Accept(ctx, []byte("welcome, "+string(r.Data)))
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	d := fabnet.Dialer{Data: []byte("alice")}
	c, err := d.Dial(ctx, "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s := <-accepted
	require.NotNil(t, s)
	defer s.Close()
	require.Equal(t, "welcome, alice", string(c.PeerData()))
	require.Equal(t, "alice", string(s.PeerData()))
	require.Equal(t, "tcp", ln.Addr().Network())
	require.NotNil(t, reqAddr)
	require.Equal(t, c.LocalAddr().String(), reqAddr.String(), "the request shows the client's address")
	require.Equal(t, ln.Addr().String(), c.RemoteAddr().String())

	require.NoError(t, c.Send(ctx, []byte("ping")))
	buf := make([]byte, 16)
	n, err := s.Recv(ctx, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf[:n]))
	require.NoError(t, s.Send(ctx, []byte("pong")))
	n, err = c.Recv(ctx, buf)
	require.NoError(t, err)
	require.Equal(t, "pong", string(buf[:n]))

	// The server goes: the client's waiting receive ends with the
	// connection.
	require.NoError(t, s.Close())
	_, err = c.Recv(ctx, buf)
	require.ErrorIs(t, err, fi.ESHUTDOWN)
	require.ErrorIs(t, c.Send(ctx, []byte("late")), fi.ESHUTDOWN)
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Close(), net.ErrClosed)
}

// TestReject: a reject with data and one without reach Dial as a
// *RejectedError with that data and eq.ReasonRejected, which matches
// fi.ECONNREFUSED; an address where nothing listens gives one with
// eq.ReasonNoListener.
func TestReject(t *testing.T) {
	noLeaks(t)
	ctx := ctxFor(t)
	ln := listen(t, nil)
	for _, data := range []string{"not today", ""} {
		go func() {
			if r, err := ln.Next(ctx); err == nil {
				_ = r.Reject([]byte(data))
			}
		}()
		c, err := fabnet.Dial(ctx, "tcp", ln.Addr().String())
		require.Nil(t, c)
		var rej *fabnet.RejectedError
		require.ErrorAs(t, err, &rej)
		require.Equal(t, data, string(rej.Data))
		require.Equal(t, eq.ReasonRejected, rej.Reason)
		require.Equal(t, eq.ReasonRejected, eq.ReasonOf(err))
		require.ErrorIs(t, err, fi.ECONNREFUSED)
		require.Equal(t, fi.ECONNREFUSED, fi.Code(err))
		require.Contains(t, err.Error(), ln.Addr().String())
		require.Contains(t, err.Error(), "(rejected by the peer)")
	}

	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = fabnet.Dial(ctx, "tcp", closed)
	var rej *fabnet.RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, eq.ReasonNoListener, rej.Reason)
	require.Equal(t, eq.ReasonNoListener, eq.ReasonOf(err))
	require.Empty(t, rej.Data)
	require.ErrorIs(t, err, fi.ECONNREFUSED)
	require.EqualError(t, err, "fabnet: dial "+closed+": connection refused (nothing listening)")
}

// TestDialProviderTimeout: a listener that never answers the request,
// and no deadline on the context: Dial ends when the provider's connect
// timeout (FI_TCP_CONN_TIMEOUT, 300 ms here) runs out, with an error that
// matches fi.ETIMEDOUT and carries eq.ReasonTimedOut, and is no
// *RejectedError.
func TestDialProviderTimeout(t *testing.T) {
	noLeaks(t)
	t.Setenv("FI_TCP_CONN_TIMEOUT", "300")
	ln := listen(t, nil) // never accepts
	start := time.Now()
	c, err := fabnet.Dial(context.Background(), "tcp", ln.Addr().String())
	took := time.Since(start)
	require.Nil(t, c)
	require.ErrorIs(t, err, fi.ETIMEDOUT)
	require.Equal(t, eq.ReasonTimedOut, eq.ReasonOf(err), "%v", err)
	var rej *fabnet.RejectedError
	require.False(t, errors.As(err, &rej), "a timeout is no reject: %v", err)
	require.GreaterOrEqual(t, took, 300*time.Millisecond)
	require.Less(t, took, 10*time.Second)
}

// TestOnRequest: an error from OnRequest rejects the request (with the
// data of a *RejectedError), and Accept goes on to the next one, which
// OnRequest lets through.
func TestOnRequest(t *testing.T) {
	noLeaks(t)
	ctx := ctxFor(t)
	ln := listen(t, &fabnet.ListenConfig{OnRequest: func(_ context.Context, r *fabnet.Request) error {
		switch string(r.Data) {
		case "mallory":
			return &fabnet.RejectedError{Data: []byte("go away")}
		case "eve":
			return errors.New("no")
		}
		return nil
	}})
	accepted := make(chan *fabnet.Conn, 1)
	go func() {
		c, _ := ln.Accept(ctx)
		accepted <- c
	}()
	for _, who := range []string{"mallory", "eve"} {
		d := fabnet.Dialer{Data: []byte(who)}
		_, err := d.Dial(ctx, "tcp", ln.Addr().String())
		var rej *fabnet.RejectedError
		require.ErrorAs(t, err, &rej, who)
		if who == "mallory" {
			require.Equal(t, "go away", string(rej.Data))
		} else {
			require.Empty(t, rej.Data)
		}
	}
	d := fabnet.Dialer{Data: []byte("bob")}
	c, err := d.Dial(ctx, "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s := <-accepted
	require.NotNil(t, s)
	require.Equal(t, "bob", string(s.PeerData()))
	require.NoError(t, s.Close())
}

// TestDialDeadlineSilentPeer: a connect to a peer that never answers (a
// plain TCP listener that accepts nothing: the kernel completes the
// handshake, and the connection request is never read) ends at the
// context's deadline with the endpoint closed and no goroutine or
// descriptor left behind.
func TestDialDeadlineSilentPeer(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	dialDeadline(t, silent.Addr().String())
}

// dialDeadline dials addr, where nothing answers, with a short deadline.
func dialDeadline(t *testing.T, addr string) {
	t.Helper()
	// Once, so that what a process opens only once (the netpoller) is
	// not counted.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, _ = fabnet.Dial(ctx, "tcp", addr)
	cancel()
	ignore := goleak.IgnoreCurrent()
	fds := fdCount()
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c, err := fabnet.Dial(ctx, "tcp", addr)
	require.Nil(t, c)
	requireDeadline(t, err)
	goleak.VerifyNone(t, ignore)
	require.Equal(t, fds, fdCount(), "descriptors left open")
}

// TestDialCancel: cancelling the context ends a waiting Dial with
// context.Canceled and fi.ECANCELED.
func TestDialCancel(t *testing.T) {
	noLeaks(t)
	ln := listen(t, nil) // never accepts
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := fabnet.Dial(ctx, "tcp", ln.Addr().String())
		errc <- err
	}()
	// The request reaches the listener: the Dial is waiting.
	r, err := ln.Next(ctxFor(t))
	require.NoError(t, err)
	cancel()
	err = <-errc
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, fi.ECANCELED, fi.Code(err))
	require.NoError(t, r.Reject(nil))
}

// TestCloseListenerWhileDialWaits: closing the listener rejects the
// requests it holds, so the Dial that waits for one returns at once.
func TestCloseListenerWhileDialWaits(t *testing.T) {
	noLeaks(t)
	ctx := ctxFor(t)
	ln, err := fabnet.Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := fabnet.Dial(ctx, "tcp", ln.Addr().String())
		errc <- err
	}()
	// Peek, not Next: the request stays pending in the backlog.
	for {
		if _, err := ln.EQ.Peek(); err == nil {
			break
		}
		require.NoError(t, ctx.Err(), "no connection request")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, ln.Close())
	err = <-errc
	require.ErrorIs(t, err, fi.ECONNREFUSED)
	require.Equal(t, eq.ReasonNoListener, eq.ReasonOf(err), "the listener went away: %v", err)
}

// TestCloseWhileAccept: Close wakes an Accept that waits, which returns
// an error matching net.ErrClosed; a deadline ends an Accept with the
// context's error and leaves the listener working.
func TestCloseWhileAccept(t *testing.T) {
	noLeaks(t)
	ln, err := fabnet.Listen(ctxFor(t), "tcp", "127.0.0.1:0")
	require.NoError(t, err)

	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err = ln.Accept(short)
	cancel()
	requireDeadline(t, err)

	errc := make(chan error, 1)
	go func() {
		_, err := ln.Accept(context.Background())
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it block, mostly
	require.NoError(t, ln.Close())
	err = <-errc
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, err, fi.EBADF)
	require.ErrorIs(t, ln.Close(), net.ErrClosed)
}
