//go:build verbs && cgo

package verbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/reftest"
	"github.com/stretchr/testify/require"
)

// What testdata/cmpeer/cmpeer.c sends.
const (
	cHello  = "HELLO-C"
	cAccept = "ACCEPT-C"
	cNope   = "NOPE-C"
)

// buildCMPeer compiles testdata/cmpeer/cmpeer.c against C libfabric, or
// calls reftest.Missing when gcc or libfabric-dev is not installed (in the
// Soft-RoCE VM: scripts/test.sh gives the guest both).
func buildCMPeer(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/include/rdma/fabric.h"); err != nil {
		reftest.Missing(t, "libfabric-dev not installed: %v", err)
	}
	gcc := reftest.Tool(t, "gcc", "gcc")
	bin := filepath.Join(t.TempDir(), "cmpeer")
	out, err := exec.Command(gcc, "-std=c11", "-O1", "-o", bin, filepath.Join("testdata", "cmpeer", "cmpeer.c"), "-lfabric").CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	return bin
}

// cmPeer is a running cmpeer.
type cmPeer struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

func startCMPeer(t *testing.T, bin string, args ...string) *cmPeer {
	t.Helper()
	p := &cmPeer{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// result waits for cmpeer to exit with status 0 and returns its key=value
// lines.
func (p *cmPeer) result(t *testing.T) map[string]string {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for Cleanup
		require.NoError(t, err, "cmpeer failed; stderr: %s", p.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("cmpeer did not exit; stdout: %s stderr: %s", p.stdout.String(), p.stderr.String())
	}
	kv := map[string]string{}
	for l := range strings.Lines(p.stdout.String()) {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		require.True(t, ok, "cmpeer line %q", l)
		kv[k] = v
	}
	return kv
}

// nextEvent reads q's next event, returning an error entry as *eq.EQError.
func nextEvent(t *testing.T, q eq.EventQueue) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := q.SRead(ctx)
	if fi.Code(err) == fi.EAVAIL {
		e, rerr := q.ReadErr()
		require.NoError(t, rerr)
		return e
	}
	require.NoError(t, err)
	return ev
}

// TestInteropCCM connects gofabric's verbs provider and C libfabric's
// (testdata/cmpeer/cmpeer.c, compiled at test time) in both roles: the
// connect and accept private data arrive intact (C's one-byte length header
// in front of the data, and rdma_cm's zero padding behind it, both
// stripped), a consumer reject arrives as ECONNREFUSED with the rejecter's
// data, and a shutdown from the client reaches the server.
func TestInteropCCM(t *testing.T) {
	ip := rdmaAddr(t)
	bin := buildCMPeer(t)
	hints := msgHints(false)
	ctx := context.Background()
	for _, scenario := range []string{"accept", "reject"} {
		t.Run("go-client/"+scenario, func(t *testing.T) {
			portFile := filepath.Join(t.TempDir(), "port")
			srv := startCMPeer(t, bin, "server", ip.String(), portFile, scenario)
			var port string
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(portFile)
				port = strings.TrimSpace(string(b))
				return err == nil && strings.HasSuffix(string(b), "\n")
			}, 10*time.Second, 20*time.Millisecond, "cmpeer server did not listen; stderr: %s", &srv.stderr)
			infos, err := fi.GetInfo(ctx, ip.String(), port, 0, hints)
			require.NoError(t, err)
			fab, err := fi.OpenFabric(infos[0])
			require.NoError(t, err)
			closeAt(t, fab)
			c := openSide(t, fab, infos[0])
			cm := c.ep.(ep.CM)
			require.NoError(t, cm.Connect(infos[0].DestAddr, []byte("HELLO-GO")))
			ev := nextEvent(t, c.eq)
			if scenario == "accept" {
				con, ok := ev.(*eq.Connected)
				require.True(t, ok, "event %T (%v)", ev, ev)
				require.Equal(t, cAccept, string(con.Data), "accept data from C")
				require.NoError(t, cm.Shutdown(0))
				require.IsType(t, &eq.Shutdown{}, nextEvent(t, c.eq))
			} else {
				e, ok := ev.(*eq.EQError)
				require.True(t, ok, "event %T (%v)", ev, ev)
				require.Equal(t, fi.ECONNREFUSED, e.Err)
				require.Equal(t, cNope, string(e.ErrData), "reject data from C")
			}
			r := srv.result(t)
			require.Equal(t, hex.EncodeToString([]byte("HELLO-GO")), r["req_data"], "connect data at C")
			if scenario == "accept" {
				require.Equal(t, "1", r["shutdown"], "C server saw the shutdown")
			} else {
				require.Equal(t, "1", r["rejected"])
			}
		})

		t.Run("go-server/"+scenario, func(t *testing.T) {
			l := openListener(t, hints)
			port := binary.BigEndian.Uint16(l.name[2:4]) // sockaddr_in's sin_port
			cli := startCMPeer(t, bin, "client", ip.String(), strconv.Itoa(int(port)), scenario)

			req, ok := nextEvent(t, l.eq).(*eq.ConnReq)
			require.True(t, ok, "expected a connection request")
			require.Equal(t, cHello, string(req.Data), "connect data from C")
			if scenario == "accept" {
				s := openSide(t, l.fab, req.Info)
				require.NoError(t, s.ep.(ep.CM).Accept([]byte("ACCEPT-GO")))
				require.IsType(t, &eq.Connected{}, nextEvent(t, s.eq))
				require.IsType(t, &eq.Shutdown{}, nextEvent(t, s.eq), "C client's shutdown")
				r := cli.result(t)
				require.Equal(t, hex.EncodeToString([]byte("ACCEPT-GO")), r["conn_data"], "accept data at C")
				require.Equal(t, "1", r["shut"])
			} else {
				require.NoError(t, l.pep.Reject(req.Info.Handle, []byte("NOPE-GO")))
				r := cli.result(t)
				require.Equal(t, "111", r["err"], "C's error: ECONNREFUSED")
				require.Equal(t, hex.EncodeToString([]byte("NOPE-GO")), r["err_data"], "reject data at C")
			}
		})
	}
}
