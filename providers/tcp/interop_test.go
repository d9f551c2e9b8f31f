//go:build linux

package tcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The interop tests run each scenario of testdata/cpeer/cpeer.c, a C
// libfabric 1.17 tcp peer compiled at test time, against a Go peer on the
// public API, with Go as server (passive side) and C as client, then the
// other way round. Both sides assert what they observed; cpeer prints its
// observations as key=value lines. The values below are cpeer's.
const (
	cHello   = "HELLO-C"  // cpeer's fi_connect data
	cAccept  = "ACCEPT-C" // cpeer's fi_accept data
	goHello  = "HELLO-GO"
	goAccept = "ACCEPT-GO"
	nope     = "NOPE!" // both sides' fi_reject data

	mrKey  = 0x1234 // the RMA target's requested key
	mrSize = 4096

	ioTimeout      = 10 * time.Second       // bounds every wait
	dcWindow       = 200 * time.Millisecond // cpeer's DC_WINDOW_MS
	shutdownLinger = 300 * time.Millisecond
)

// mrPattern is the RMA target buffer's initial content (cpeer's mr_pattern).
func mrPattern(i int) byte { return byte(i*13 + 7) }

// cqdata's payloads and data words, per sender.
var (
	cPayload  = seq(0, 16) // fi_senddata, data 0x1122334455667788
	cInject   = []byte("injected")
	goPayload = seq(0xa0, 16)
	goInject  = []byte("inj-go!!")
)

const (
	cSendData, cInjectData   = 0x1122334455667788, 0xaabbccdd
	goSendData, goInjectData = 0x0102030405060708, 0x0a0b0c0d
	writeData                = 0xaabbccdd // both initiators' fi_writedata word
)

// seq returns n bytes counting up from first.
func seq(first byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = first + byte(i)
	}
	return b
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// buildC compiles testdata/cpeer/<name>.c against C libfabric into a
// directory of tb and returns the program's path, or calls
// reftest.Missing when gcc or the libfabric headers are not installed.
func buildC(tb testing.TB, name string) string {
	tb.Helper()
	if _, err := os.Stat("/usr/include/rdma/fabric.h"); err != nil {
		reftest.Missing(tb, "libfabric headers (package libfabric-dev) not installed: %v", err)
	}
	gcc := reftest.Tool(tb, "gcc", "gcc")
	bin := filepath.Join(tb.TempDir(), name)
	src := filepath.Join("testdata", "cpeer", name+".c")
	out, err := exec.Command(gcc, "-std=c11", "-O1", "-o", bin, src, "-lfabric").CombinedOutput()
	require.NoError(tb, err, "gcc %s: %s", src, out)
	return bin
}

// cPeer is a running cpeer process. Cleanup kills it if it still runs and
// logs its output when the test failed.
type cPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer  // written by exec until done is closed
	done   chan struct{} // closed when the process has exited
	err    error         // Wait's result, set before done is closed

	mu    sync.Mutex
	lines []string // guarded by mu: stdout so far
}

func startCPeer(tb testing.TB, bin string, args ...string) *cPeer {
	tb.Helper()
	p := &cPeer{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "FI_TCP_IFACE=lo")
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(tb, err)
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(tb, err)
	require.NoError(tb, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if tb.Failed() {
			tb.Logf("cpeer %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "),
				strings.Join(p.stdout(), "\n"), p.stderr.String())
		}
	})
	return p
}

func (p *cPeer) stdout() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// exited reports whether the process has exited.
func (p *cPeer) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitLine waits until cpeer has printed key=value and returns value.
func (p *cPeer) waitLine(tb testing.TB, key string) string {
	tb.Helper()
	deadline := time.Now().Add(ioTimeout)
	for {
		for _, l := range p.stdout() {
			if v, ok := strings.CutPrefix(l, key+"="); ok {
				return v
			}
		}
		if p.exited() {
			tb.Fatalf("cpeer exited (%v) without printing %s; stderr: %s", p.err, key, p.stderr.String())
		}
		require.True(tb, time.Now().Before(deadline), "cpeer printed no %s in %v", key, ioTimeout)
		time.Sleep(5 * time.Millisecond)
	}
}

// writeLine writes a line to cpeer's stdin.
func (p *cPeer) writeLine(tb testing.TB, s string) {
	tb.Helper()
	_, err := io.WriteString(p.stdin, s+"\n")
	require.NoError(tb, err)
}

// result waits for cpeer to exit successfully and returns its key=value
// lines.
func (p *cPeer) result(tb testing.TB) map[string]string {
	tb.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * ioTimeout):
		tb.Fatalf("cpeer did not exit")
	}
	require.NoError(tb, p.err, "cpeer failed; stderr: %s", p.stderr.String())
	kv := map[string]string{}
	for _, l := range p.stdout() {
		k, v, ok := strings.Cut(l, "=")
		require.True(tb, ok, "cpeer line %q", l)
		require.NotContains(tb, kv, k, "cpeer printed %s twice", k)
		kv[k] = v
	}
	return kv
}

// portFile waits for the C server's "ip port" file.
func (p *cPeer) portFile(tb testing.TB, path string) (ip, port string) {
	tb.Helper()
	deadline := time.Now().Add(ioTimeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			f := strings.Fields(string(b))
			require.Len(tb, f, 2, "port file %q", b)
			return f[0], f[1]
		}
		require.ErrorIs(tb, err, os.ErrNotExist)
		if p.exited() {
			tb.Fatalf("cpeer server exited (%v) before listening; stderr: %s", p.err, p.stderr.String())
		}
		require.True(tb, time.Now().Before(deadline), "cpeer server did not listen in %v", ioTimeout)
		time.Sleep(5 * time.Millisecond)
	}
}

// goPeer is the Go side: the objects cpeer opens, through the public API.
type goPeer struct {
	tb         testing.TB
	fabric     fi.Fabric
	eq         eq.EventQueue
	pep        ep.PassiveEndpoint
	domain     fi.Domain
	txcq, rxcq eq.CompletionQueue
	mr         fi.MR
	mrBuf      []byte
	ep         ep.Endpoint
	msg        ep.Msg
	rma        ep.RMA
	cm         ep.CM

	rx     [4][256]byte // receive buffers; each receive's context is its buffer
	posted int
	txCtx  int // the context of sends and RMA operations
}

func newGoPeer(tb testing.TB) *goPeer {
	p := &goPeer{tb: tb}
	tb.Cleanup(func() {
		for _, f := range []fi.Fid{p.ep, p.mr, p.rxcq, p.txcq, p.domain, p.pep, p.eq, p.fabric} {
			if f != nil {
				assert.NoError(tb, f.Close(), "close %T", f)
			}
		}
	})
	return p
}

func interopHints() *fi.Info {
	h := (*fi.Info)(nil).Clone()
	h.Caps = fi.CapMsg | fi.CapRMA
	h.EPAttr.Type = fi.EPTypeMsg
	h.FabricAttr.ProvName = "tcp"
	return h
}

func (p *goPeer) getInfo(node, service string, flags fi.Flags) *fi.Info {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	infos, err := fi.GetInfo(ctx, node, service, flags, interopHints())
	require.NoError(p.tb, err)
	return infos[0]
}

func (p *goPeer) openFabric(info *fi.Info) {
	var err error
	p.fabric, err = fi.OpenFabric(info)
	require.NoError(p.tb, err)
	p.eq, err = eq.OpenEQ(p.fabric, nil)
	require.NoError(p.tb, err)
}

// openDomain opens the domain and CQs; an RMA target also registers its
// buffer.
func (p *goPeer) openDomain(info *fi.Info, rmaTarget bool) {
	var err error
	p.domain, err = p.fabric.OpenDomain(info)
	require.NoError(p.tb, err)
	attr := &eq.CQAttr{Format: eq.FormatData}
	p.txcq, err = eq.OpenCQ(p.domain, attr)
	require.NoError(p.tb, err)
	p.rxcq, err = eq.OpenCQ(p.domain, attr)
	require.NoError(p.tb, err)
	if rmaTarget {
		p.mrBuf = make([]byte, mrSize)
		for i := range p.mrBuf {
			p.mrBuf[i] = mrPattern(i)
		}
		p.mr, err = fi.RegisterMR(p.domain, &fi.MRAttr{Buf: p.mrBuf,
			Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: mrKey}, 0)
		require.NoError(p.tb, err)
		require.Equal(p.tb, uint64(mrKey), p.mr.Key())
	}
}

// openEP opens, binds and enables the endpoint and posts prepost receives.
func (p *goPeer) openEP(info *fi.Info, prepost int) {
	var err error
	p.ep, err = ep.Open(p.domain, info)
	require.NoError(p.tb, err)
	var ok bool
	p.msg, ok = p.ep.(ep.Msg)
	require.True(p.tb, ok, "%T is no ep.Msg", p.ep)
	p.rma, ok = p.ep.(ep.RMA)
	require.True(p.tb, ok, "%T is no ep.RMA", p.ep)
	p.cm, ok = p.ep.(ep.CM)
	require.True(p.tb, ok, "%T is no ep.CM", p.ep)
	require.NoError(p.tb, p.ep.Bind(p.eq, 0))
	require.NoError(p.tb, p.ep.Bind(p.txcq, fi.FlagSend))
	require.NoError(p.tb, p.ep.Bind(p.rxcq, fi.FlagRecv))
	require.NoError(p.tb, p.ep.Enable())
	for range prepost {
		p.postRecv()
	}
}

func (p *goPeer) postRecv() {
	require.Less(p.tb, p.posted, len(p.rx), "out of receive buffers")
	b := &p.rx[p.posted]
	p.posted++
	require.NoError(p.tb, p.msg.Recv(b[:], nil, fi.AddrUnspec, b))
}

// received returns the bytes of a receive completion.
func (p *goPeer) received(c eq.Completion) []byte {
	b, ok := c.Context.(*[256]byte)
	require.True(p.tb, ok, "receive completion with context %v", c.Context)
	return b[:c.Len]
}

// waitEvent waits for the next event, which must be of type want.
func (p *goPeer) waitEvent(want eq.EventType) eq.Event {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	ev, err := p.eq.SRead(ctx)
	if errors.Is(err, fi.EAVAIL) {
		e, rerr := p.eq.ReadErr()
		require.NoError(p.tb, rerr)
		p.tb.Fatalf("waiting for %v: error event %v, err_data %q", want, e, e.ErrData)
	}
	require.NoError(p.tb, err, "waiting for %v", want)
	require.Equal(p.tb, want, ev.Type())
	return ev
}

// waitComp waits for one successful completion on q.
func (p *goPeer) waitComp(q eq.CompletionQueue, what string) eq.Completion {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	var c [1]eq.Completion
	n, err := q.SRead(ctx, c[:])
	if errors.Is(err, fi.EAVAIL) {
		e, rerr := q.ReadErr()
		require.NoError(p.tb, rerr)
		p.tb.Fatalf("%s: error completion %v", what, e)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Tell a lost wakeup from a missing completion.
		n, rerr := q.Read(c[:])
		p.tb.Fatalf("%s: SRead timed out; a Read then returned %d, %v", what, n, rerr)
	}
	require.NoError(p.tb, err, what)
	require.Equal(p.tb, 1, n, what)
	return c[0]
}

// waitCompErr waits for an error completion on q.
func (p *goPeer) waitCompErr(q eq.CompletionQueue, what string) *eq.CQError {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	var c [1]eq.Completion
	n, err := q.SRead(ctx, c[:])
	require.ErrorIs(p.tb, err, fi.EAVAIL, "%s: got %d completions %+v", what, n, c[0])
	e, err := q.ReadErr()
	require.NoError(p.tb, err)
	return e
}

func (p *goPeer) sendWait(b []byte, what string) {
	p.tb.Helper()
	require.NoError(p.tb, p.msg.Send(b, nil, fi.AddrUnspec, &p.txCtx), what)
	c := p.waitComp(p.txcq, what)
	require.Equal(p.tb, fi.FlagMsg|fi.FlagSend, c.Flags, what)
}

// recvExpect waits for the next receive, which must carry want.
func (p *goPeer) recvExpect(want, what string) {
	p.tb.Helper()
	c := p.waitComp(p.rxcq, what)
	require.Equal(p.tb, fi.FlagMsg|fi.FlagRecv, c.Flags, what)
	require.Equal(p.tb, want, string(p.received(c)), what)
}

// bye is cpeer's closing exchange: "bye" each way.
func (p *goPeer) bye() {
	p.sendWait([]byte("bye"), "send bye")
	p.recvExpect("bye", "receive bye")
}

// scenario is one of cpeer's scenarios, seen from the Go side.
type scenario struct {
	name string
	// prepost is the number of receives posted before connecting.
	prepost int
	// hello and accept are the Go side's private data.
	hello, accept []byte
	// run is the Go side's part once connected (server: Go is the
	// passive side).
	run func(t *testing.T, p *goPeer, c *cPeer, server bool)
	// check asserts cpeer's own observations beyond the connection's.
	check func(t *testing.T, kv map[string]string, cServer bool)
}

// maxData returns CM private data of the largest size, 256 bytes.
func maxData(first byte) []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = first + byte(i*7)
	}
	return b
}

var scenarios = []scenario{
	{
		// Private data of the largest size, then a message each way.
		name: "pdata", prepost: 1, hello: maxData(1), accept: maxData(2),
		run: func(t *testing.T, p *goPeer, _ *cPeer, _ bool) {
			require.Equal(t, 256, p.cm.CMDataSize())
			p.bye()
		},
	},
	{name: "reject", hello: []byte(goHello)},
	{
		name: "cqdata", prepost: 3,
		run: func(t *testing.T, p *goPeer, _ *cPeer, _ bool) {
			require.NoError(t, p.msg.SendData(goPayload, nil, goSendData, fi.AddrUnspec, &p.txCtx))
			c := p.waitComp(p.txcq, "senddata")
			require.Equal(t, fi.FlagMsg|fi.FlagSend, c.Flags)
			require.NoError(t, p.msg.InjectData(goInject, goInjectData, fi.AddrUnspec))
			for i, want := range []struct {
				data  uint64
				bytes []byte
			}{{cSendData, cPayload}, {cInjectData, cInject}} {
				c := p.waitComp(p.rxcq, "receive")
				require.Equal(t, fi.FlagMsg|fi.FlagRecv|fi.FlagRemoteCQData, c.Flags, "receive %d", i)
				require.Equal(t, len(want.bytes), c.Len, "receive %d", i)
				require.Equal(t, want.data, c.Data, "receive %d", i)
				require.Equal(t, want.bytes, p.received(c), "receive %d", i)
			}
			p.bye()
		},
		check: func(t *testing.T, kv map[string]string, _ bool) {
			flags := hexFlags(fi.FlagMsg | fi.FlagRecv | fi.FlagRemoteCQData)
			require.Equal(t, flags, kv["recv0_flags"])
			require.Equal(t, strconv.Itoa(len(goPayload)), kv["recv0_len"])
			require.Equal(t, fmt.Sprintf("%#x", goSendData), kv["recv0_data"])
			require.Equal(t, hexOf(goPayload), kv["recv0_bytes"])
			require.Equal(t, flags, kv["recv1_flags"])
			require.Equal(t, strconv.Itoa(len(goInject)), kv["recv1_len"])
			require.Equal(t, fmt.Sprintf("%#x", goInjectData), kv["recv1_data"])
			require.Equal(t, hexOf(goInject), kv["recv1_bytes"])
		},
	},
	{
		// A delivery-complete send each way, each to a peer that posts
		// its receive only after the sender saw no completion for
		// dcWindow: the completion must wait for the peer's ACK, which
		// it can only send once the receive is posted.
		name: "delivery",
		run: func(t *testing.T, p *goPeer, c *cPeer, server bool) {
			recv := func() {
				c.waitLine(t, "dc_pending")
				p.postRecv()
				p.recvExpect("dc-C", "delivery-complete receive")
			}
			send := func() {
				msg := &ep.Message{IOV: [][]byte{[]byte("dc-G")}, Addr: fi.AddrUnspec, Context: &p.txCtx}
				require.NoError(t, p.msg.SendMsg(msg, fi.FlagDeliveryComplete))
				var comp [1]eq.Completion
				for end := time.Now().Add(dcWindow); time.Now().Before(end); time.Sleep(time.Millisecond) {
					n, err := p.txcq.Read(comp[:])
					require.Zero(t, n, "delivery-complete send completed before the peer posted its receive")
					require.Equal(t, fi.EAGAIN, err)
				}
				c.writeLine(t, "post")
				comp[0] = p.waitComp(p.txcq, "delivery-complete send")
				require.Equal(t, fi.FlagMsg|fi.FlagSend, comp[0].Flags)
			}
			if server {
				recv()
				send()
			} else {
				send()
				recv()
			}
			p.postRecv()
			p.bye()
		},
		check: func(t *testing.T, kv map[string]string, _ bool) {
			require.Equal(t, "1", kv["dc_pending"])
			require.Equal(t, hexFlags(fi.FlagMsg|fi.FlagSend), kv["dc_send_flags"])
			require.Equal(t, hexFlags(fi.FlagMsg|fi.FlagRecv), kv["dc_recv_flags"])
			require.Equal(t, hexOf([]byte("dc-G")), kv["dc_recv_bytes"])
		},
	},
	{
		// The client writes 32 bytes at 512, 8 with data at 544, and
		// reads 40 back from 512 and 16 untouched ones from 1024.
		name: "rma", prepost: 1,
		run: func(t *testing.T, p *goPeer, _ *cPeer, server bool) {
			written := seq(0x10, 40)
			if server {
				c := p.waitComp(p.rxcq, "remote write data")
				want := fi.FlagRemoteWrite | fi.FlagRemoteCQData
				require.Equal(t, want, c.Flags&want, "flags %v", c.Flags)
				require.Equal(t, uint64(writeData), c.Data)
				p.bye()
				require.Equal(t, written, p.mrBuf[512:552])
				for i, b := range p.mrBuf {
					if i < 512 || i >= 552 {
						require.Equal(t, mrPattern(i), b, "target byte %d", i)
					}
				}
				return
			}
			rmaWait := func(what string, flags fi.Flags) {
				c := p.waitComp(p.txcq, what)
				require.Equal(t, flags, c.Flags, what)
			}
			require.NoError(t, p.rma.Write(written[:32], nil, fi.AddrUnspec, 512, mrKey, &p.txCtx))
			rmaWait("write", fi.FlagRMA|fi.FlagWrite)
			require.NoError(t, p.rma.WriteData(written[32:], nil, writeData, fi.AddrUnspec, 544, mrKey, &p.txCtx))
			rmaWait("writedata", fi.FlagRMA|fi.FlagWrite)
			r := make([]byte, 40)
			require.NoError(t, p.rma.Read(r, nil, fi.AddrUnspec, 512, mrKey, &p.txCtx))
			rmaWait("read", fi.FlagRMA|fi.FlagRead)
			require.Equal(t, written, r)
			r = r[:16]
			require.NoError(t, p.rma.Read(r, nil, fi.AddrUnspec, 1024, mrKey, &p.txCtx))
			rmaWait("read", fi.FlagRMA|fi.FlagRead)
			for i, b := range r {
				require.Equal(t, mrPattern(1024+i), b, "read byte %d", i)
			}
			p.bye()
		},
		check: func(t *testing.T, kv map[string]string, cServer bool) {
			written := seq(0x10, 40)
			if cServer {
				require.Equal(t, fmt.Sprintf("%#x", writeData), kv["wdata_data"])
				flags, err := strconv.ParseUint(kv["wdata_flags"], 0, 64)
				require.NoError(t, err)
				want := fi.FlagRemoteWrite | fi.FlagRemoteCQData
				require.Equal(t, want, fi.Flags(flags)&want)
				require.Equal(t, hexOf(written), kv["target_512"])
				require.Equal(t, "1", kv["target_rest_intact"])
				return
			}
			require.Equal(t, hexFlags(fi.FlagRMA|fi.FlagWrite), kv["write_flags"])
			require.Equal(t, hexFlags(fi.FlagRMA|fi.FlagWrite), kv["writedata_flags"])
			require.Equal(t, hexFlags(fi.FlagRMA|fi.FlagRead), kv["read_flags"])
			require.Equal(t, hexOf(written), kv["read_512"])
			pat := make([]byte, 16)
			for i := range pat {
				pat[i] = mrPattern(1024 + i)
			}
			require.Equal(t, hexOf(pat), kv["read_1024"])
		},
	},
	shutdownScenario("shutdown-client"),
	shutdownScenario("shutdown-server"),
}

// shutdownScenario: after "hi" each way, the named side calls fi_shutdown;
// each side gets exactly one FI_SHUTDOWN, and its posted receive is
// canceled.
func shutdownScenario(name string) scenario {
	return scenario{
		name: name, prepost: 2,
		run: func(t *testing.T, p *goPeer, _ *cPeer, server bool) {
			p.sendWait([]byte("hi"), "send hi")
			p.recvExpect("hi", "receive hi")
			if strings.HasSuffix(name, map[bool]string{true: "server", false: "client"}[server]) {
				require.NoError(t, p.cm.Shutdown(0))
			}
			ev := p.waitEvent(eq.EventShutdown)
			require.Same(t, p.ep, ev.Source())
			ctx, cancel := context.WithTimeout(context.Background(), shutdownLinger)
			defer cancel()
			ev, err := p.eq.SRead(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded, "a second event: %v", ev)
			e := p.waitCompErr(p.rxcq, "posted receive after shutdown")
			require.Equal(t, fi.ECANCELED, e.Err)
		},
		check: func(t *testing.T, kv map[string]string, _ bool) {
			require.Equal(t, "1", kv["shutdown_events"])
			require.Equal(t, "1", kv["rx_canceled"])
		},
	}
}

// hexFlags formats flags as cpeer prints them.
func hexFlags(f fi.Flags) string { return fmt.Sprintf("%#x", uint64(f)) }

// TestInteropC runs every cpeer scenario with a Go server and a C client,
// then with a C server and a Go client.
func TestInteropC(t *testing.T) {
	bin := buildC(t, "cpeer")
	cleanEnv(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	for _, sc := range scenarios {
		if sc.hello == nil {
			sc.hello, sc.accept = []byte(goHello), []byte(goAccept)
		}
		t.Run(sc.name+"/go-server", func(t *testing.T) { interopGoServer(t, bin, sc) })
		t.Run(sc.name+"/go-client", func(t *testing.T) { interopGoClient(t, bin, sc) })
	}
}

func interopGoServer(t *testing.T, bin string, sc scenario) {
	p := newGoPeer(t)
	info := p.getInfo("127.0.0.1", "", fi.FlagSource)
	p.openFabric(info)
	var err error
	p.pep, err = ep.OpenPassive(p.fabric, info)
	require.NoError(t, err)
	require.NoError(t, p.pep.Bind(p.eq, 0))
	require.NoError(t, p.pep.Listen())
	name := make([]byte, 128)
	n, err := p.pep.Name(name)
	require.NoError(t, err)
	ap, _, err := fi.AddrPortFromSockaddr(name[:n])
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("127.0.0.1"), ap.Addr())
	c := startCPeer(t, bin, "client", ap.Addr().String(), strconv.Itoa(int(ap.Port())), sc.name)

	ev := p.waitEvent(eq.EventConnReq)
	req := ev.(*eq.ConnReq)
	require.Same(t, p.pep, req.Source())
	require.Equal(t, cHello, string(req.Data))
	require.NotNil(t, req.Info.Handle)
	if sc.name == "reject" {
		require.NoError(t, p.pep.Reject(req.Info.Handle, []byte(nope)))
		kv := c.result(t)
		require.Equal(t, strconv.Itoa(int(fi.ECONNREFUSED)), kv["connect_err"])
		require.Equal(t, hexOf([]byte(nope)), kv["err_data"])
		return
	}
	p.openDomain(req.Info, sc.name == "rma")
	p.openEP(req.Info, sc.prepost)
	require.NoError(t, p.cm.Accept(sc.accept))
	ev = p.waitEvent(eq.EventConnected)
	require.Same(t, p.ep, ev.Source())
	require.Empty(t, ev.(*eq.Connected).Data)
	sc.run(t, p, c, true)
	kv := c.result(t)
	require.Equal(t, hexOf(sc.accept), kv["connected_data"])
	checkC(t, sc, kv, false)
}

func interopGoClient(t *testing.T, bin string, sc scenario) {
	portFile := filepath.Join(t.TempDir(), "port")
	c := startCPeer(t, bin, "server", portFile, sc.name)
	ip, port := c.portFile(t, portFile)
	p := newGoPeer(t)
	info := p.getInfo(ip, port, 0)
	require.NotEmpty(t, info.DestAddr)
	p.openFabric(info)
	p.openDomain(info, false)
	p.openEP(info, sc.prepost)
	require.NoError(t, p.cm.Connect(info.DestAddr, sc.hello))
	if sc.name == "reject" {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		ev, err := p.eq.SRead(ctx)
		require.ErrorIs(t, err, fi.EAVAIL, "event %v", ev)
		e, err := p.eq.ReadErr()
		require.NoError(t, err)
		require.Equal(t, fi.ECONNREFUSED, e.Err)
		require.Equal(t, nope, string(e.ErrData))
		require.Equal(t, eq.ReasonRejected, e.Reason, "a C reject is the application's")
		require.Zero(t, e.ProvErrno)
		require.Same(t, p.ep, e.Fid)
		kv := c.result(t)
		require.Equal(t, hexOf(sc.hello), kv["connreq_data"])
		require.Equal(t, "1", kv["rejected"])
		return
	}
	ev := p.waitEvent(eq.EventConnected)
	require.Same(t, p.ep, ev.Source())
	require.Equal(t, cAccept, string(ev.(*eq.Connected).Data))
	sc.run(t, p, c, false)
	kv := c.result(t)
	require.Equal(t, hexOf(sc.hello), kv["connreq_data"])
	require.Empty(t, kv["connected_data"])
	checkC(t, sc, kv, true)
}

// checkC asserts cpeer's output common to connected scenarios, then the
// scenario's own.
func checkC(t *testing.T, sc scenario, kv map[string]string, cServer bool) {
	require.Equal(t, "1", kv["done"])
	if !strings.HasPrefix(sc.name, "shutdown-") {
		require.Equal(t, "1", kv["bye"])
	}
	if sc.check != nil {
		sc.check(t, kv, cServer)
	}
}

// TestInteropCRejectCodes: the reject codes a gofabric passive endpoint
// puts in a reject's conn_data (docs/wire-tcp.md, §2.9), which C 1.17
// ignores on a reject, leave a C requester unconfused: its backlog full
// and its closing with the request pending reach C's fi_connect as any
// reject does, FI_ECONNREFUSED without data.
func TestInteropCRejectCodes(t *testing.T) {
	bin := buildC(t, "cpeer")
	cleanEnv(t)
	t.Setenv("FI_TCP_IFACE", "lo")
	cClient := func(t *testing.T, s *server) *cPeer {
		ap, _, err := fi.AddrPortFromSockaddr(s.name)
		require.NoError(t, err)
		return startCPeer(t, bin, "client", ap.Addr().String(), strconv.Itoa(int(ap.Port())), "reject")
	}
	refused := func(t *testing.T, c *cPeer) {
		kv := c.result(t)
		require.Equal(t, strconv.Itoa(int(fi.ECONNREFUSED)), kv["connect_err"])
		require.Equal(t, "", kv["err_data"])
		require.Equal(t, "1", kv["done"])
	}
	t.Run("backlog full", func(t *testing.T) {
		s := newServer(t)
		require.NoError(t, s.pep.(ep.BacklogSetter).SetBacklog(1))
		first := newClient(t, loInfo(t))
		require.NoError(t, first.cm().Connect(s.name, nil))
		s.request(t)
		refused(t, cClient(t, s))
	})
	t.Run("listener closed", func(t *testing.T) {
		s := newServer(t)
		c := cClient(t, s)
		require.Equal(t, cHello, string(s.request(t).Data))
		s.closed = true
		require.NoError(t, s.pep.Close())
		refused(t, c)
	})
}
