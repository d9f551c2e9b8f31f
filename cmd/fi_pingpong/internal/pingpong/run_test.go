package pingpong

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// fakeTransport is an in-process Transport: messages are copies passed
// over channels. The name exchange over the control channel is the
// RDM/DGRAM one, so RunCtrl's Config reaches it as the real one.
type fakeTransport struct {
	in     <-chan []byte
	out    chan<- []byte
	maxMsg int
	// corrupt, when set, may change each message this side sends.
	corrupt func(k int, b []byte)
	sent    int
	tx, rx  []byte
	closed  bool
	log     []string // what happened, for the tests
}

// fakePair returns the server's and the client's fake transports.
func fakePair() (server, client *fakeTransport) {
	s2c, c2s := make(chan []byte, 2), make(chan []byte, 2)
	return &fakeTransport{in: c2s, out: s2c}, &fakeTransport{in: s2c, out: c2s}
}

func (f *fakeTransport) Setup(_ context.Context, c *Config) error {
	own := []byte("name-of-" + map[bool]string{false: "server", true: "client"}[c.Options.IsClient()])
	if !c.Options.IsClient() {
		if err := c.Ctrl.SendName(fi.FormatStr, own); err != nil {
			return err
		}
	}
	format, peer, err := c.Ctrl.RecvName()
	if err != nil {
		return err
	}
	f.log = append(f.log, "peer "+string(peer)+" "+format.String())
	if c.Options.IsClient() {
		if err := c.Ctrl.SendName(fi.FormatStr, own); err != nil {
			return err
		}
	}
	n := RxSize(c.Options, f.maxMsg)
	f.tx, f.rx = make([]byte, n), make([]byte, n)
	return nil
}

func (f *fakeTransport) MaxMsgSize() int          { return f.maxMsg }
func (f *fakeTransport) Buffers() (tx, rx []byte) { return f.tx, f.rx }

func (f *fakeTransport) Send(n int) error {
	b := bytes.Clone(f.tx[:n])
	if f.corrupt != nil {
		f.corrupt(f.sent, b)
	}
	f.sent++
	f.out <- b
	return nil
}

func (f *fakeTransport) Recv(check func(n int) error) (int, error) {
	select {
	case b := <-f.in:
		if len(b) > len(f.rx) {
			return 0, fi.ETRUNC
		}
		n := copy(f.rx, b)
		if check != nil {
			return n, check(n)
		}
		return n, nil
	case <-time.After(10 * time.Second):
		return 0, fi.ETIMEDOUT
	}
}

func (f *fakeTransport) Finalize() error {
	f.out <- bytes.Clone(finMsg)
	n, err := f.Recv(nil)
	if err != nil {
		return err
	}
	if !bytes.Equal(f.rx[:n], finMsg) {
		return errors.Wrapf(errProto, "fake: got %q, want fin", f.rx[:n])
	}
	f.log = append(f.log, "fin")
	return nil
}

func (f *fakeTransport) Close() error {
	f.closed = true
	return nil
}

type runResult struct {
	stdout, stderr string
	err            error
}

// runPair runs a server and a client with the same options over a
// loopback control channel and the given transports.
func runPair(t testing.TB, args []string, srvT, cliT Transport) (srv, cli runResult) {
	t.Helper()
	o, err := ParseOptions(args, &bytes.Buffer{})
	require.NoError(t, err)
	oc := *o
	oc.Server, oc.SrcPort = "127.0.0.1", 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	done := make(chan runResult, 1)
	go func() {
		var out, errb bytes.Buffer
		c, err := ListenCtrl(ctx, 0, false, func(a net.Addr) { addrc <- a })
		if err == nil {
			err = RunCtrl(ctx, o, c, srvT, &out, &errb)
		}
		done <- runResult{out.String(), errb.String(), err}
	}()
	oc.DstPort = uint16((<-addrc).(*net.TCPAddr).Port)
	var out, errb bytes.Buffer
	err = Run(ctx, &oc, cliT, &out, &errb)
	cancel() // a server whose client never came waits in accept
	return <-done, runResult{out.String(), errb.String(), err}
}

// rows returns the table's lines split into fields, checking the header.
func rows(t testing.TB, out string) [][]string {
	t.Helper()
	if out == "" {
		return nil
	}
	require.True(t, strings.HasPrefix(out, Header), out)
	var r [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out[len(Header):], "\n"), "\n") {
		r = append(r, strings.Fields(l))
	}
	return r
}

func TestRunFlow(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		max   int
		sizes []string
	}{
		{"default sizes", []string{"-I", "3", "-c"}, 0, []string{"64", "256", "1k", "4k", "64k", "1m"}},
		{"udp-like max", []string{"-I", "2", "-c", "-S", "all"}, 1472, []string{"0", "1", "2", "3", "4", "6", "8", "12",
			"16", "24", "32", "48", "64", "96", "128", "192", "256", "384", "512", "768", "1k"}},
		{"one size", []string{"-I", "5", "-S", "100"}, 0, []string{"100"}},
		{"size over max", []string{"-S", "2000"}, 1472, nil},
		{"no iterations", []string{"-I", "0", "-c"}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ct := fakePair()
			st.maxMsg, ct.maxMsg = tt.max, tt.max
			srv, cli := runPair(t, append(tt.args, "-v"), st, ct)
			require.NoError(t, srv.err)
			require.NoError(t, cli.err)
			for _, r := range []runResult{srv, cli} {
				rs := rows(t, r.stdout)
				require.Len(t, rs, len(tt.sizes))
				for i, row := range rs {
					it := tt.args[1]
					require.Equal(t, tt.sizes[i], row[0])
					require.Equal(t, it, row[1])
					require.Equal(t, "="+it, row[2])
					require.Len(t, row, 8)
				}
				require.Contains(t, r.stderr, "[debug] ")
			}
			require.Equal(t, []string{"peer name-of-client FI_ADDR_STR", "fin"}, st.log)
			require.Equal(t, []string{"peer name-of-server FI_ADDR_STR", "fin"}, ct.log)
			require.True(t, st.closed)
			require.True(t, ct.closed)
		})
	}
}

// TestRunCheckFailure corrupts the second pong: the client reports the C
// tool's line on stdout and exits 255; the server sees the control channel
// close.
func TestRunCheckFailure(t *testing.T) {
	st, ct := fakePair()
	st.corrupt = func(k int, b []byte) {
		if k == 1 {
			b[17] = '!'
		}
	}
	srv, cli := runPair(t, []string{"-I", "2", "-c", "-S", "64"}, st, ct)
	require.ErrorIs(t, srv.err, fi.ECONNABORTED)
	require.Equal(t, 255, ExitStatus(cli.err))
	var out, errb bytes.Buffer
	report(cli.err, &out, &errb)
	require.Equal(t, "Error at iteration=2 size=64 byte=17\n", out.String())
	require.Empty(t, errb.String())
	require.True(t, ct.closed)
	require.True(t, st.closed)
}

// TestMainExit checks Main's exit statuses and messages where the C tool's
// are known: no provider matched (61) on the server, whose closing
// control channel then aborts the client (103), and a refused connection
// (111).
func TestMainExit(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 1, Main([]string{"-h"}, &out, &errb))
	require.Empty(t, out.String())
	require.Contains(t, errb.String(), "Usage:")

	port := strconv.Itoa(int(freePort(t)))
	require.Equal(t, 111, Main([]string{"-P", port, "127.0.0.1"}, &out, &errb))
	require.Contains(t, errb.String(), "[error] pingpong: ctrl: failed to connect to 127.0.0.1:"+port+": Connection refused\n")

	srvDone := make(chan int, 1)
	var srvOut, srvErr bytes.Buffer
	go func() { srvDone <- Main([]string{"-p", "nosuch", "-e", "msg", "-B", port}, &srvOut, &srvErr) }()
	var cliOut, cliErr bytes.Buffer
	status := 0
	for range 500 {
		cliErr.Reset()
		if status = Main([]string{"-p", "nosuch", "-e", "msg", "-P", port, "127.0.0.1"}, &cliOut, &cliErr); status != 111 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 103, status, cliErr.String())
	require.Contains(t, cliErr.String(), "no data or remote connection closed")
	require.Equal(t, 61, <-srvDone)
	require.Contains(t, srvErr.String(), "fi_getinfo")
	require.Empty(t, srvOut.String())
	require.Empty(t, cliOut.String())
}
