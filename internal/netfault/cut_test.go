package netfault

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The cut tests: traffic runs, then every packet is dropped. The kernel
// would retransmit for about 15 minutes; the tcp provider's liveness
// bound (userTimeoutEnv, set short here) must end every pending operation
// with an error entry well before. (providers/tcp's TestLivenessCutLink
// checks the same through the API, Go against Go, for MSG and RDM; here
// the Go fi_pingpong faces C's.)

// userTimeoutEnv is the tcp provider's liveness bound on established
// connections, in milliseconds.
const userTimeoutEnv = "FI_TCP_USER_TIMEOUT"

// cutTimeout is the bound the tests set, and cutGrace how much longer
// they wait for the error before calling it a hang.
const (
	cutTimeout = 2 * time.Second
	cutGrace   = 20 * time.Second
)

// TestCutPingpong runs Go's fi_pingpong against C's over FI_EP_MSG and
// FI_EP_RDM, cuts the link mid-run, and requires the Go side, server or client, to exit
// with an error within the liveness bound. The C side runs under a
// timeout and is only observed.
func TestCutPingpong(t *testing.T) {
	w := newWorld(t)
	goTool, cTool := tools(t)
	for _, c := range []struct{ ept, goSide string }{{"msg", "server"}, {"msg", "client"}, {"rdm", "server"}, {"rdm", "client"}} {
		ept, goSide := c.ept, c.goSide
		t.Run(ept+"/go-"+goSide, func(t *testing.T) {
			w.nft(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute+cutGrace)
			defer cancel()
			const port = 47594
			args := []string{"-p", "tcp", "-e", ept, "-S", "65536", "-I", "1000000"}
			env := []string{userTimeoutEnv + "=" + strconv.Itoa(int(cutTimeout/time.Millisecond))}
			server, client := cTool, goTool
			if goSide == "server" {
				server, client = goTool, cTool
			}
			srv := w.start(t, ctx, 0, server.name+" server", server.path, env, append(args, "-B", strconv.Itoa(port))...)
			w.listening(t, ctx, 0, port)
			cli := w.start(t, ctx, 1, client.name+" client", client.path, env, append(args, "-P", strconv.Itoa(port), w.addr[0])...)
			time.Sleep(time.Second) // let the data path start
			w.cut(t)
			cut := time.Now()
			goProc, cProc := cli, srv
			if goSide == "server" {
				goProc, cProc = srv, cli
			}
			select {
			case <-goProc.done:
			case <-time.After(cutTimeout + cutGrace):
				t.Fatalf("the Go %s did not end within %v of the cut:\n%s", goSide, cutTimeout+cutGrace, goProc.out.String())
			}
			t.Logf("Go %s ended %v after the cut (%v):\n%s", goSide, time.Since(cut).Round(10*time.Millisecond), goProc.err, lastLines(goProc.out.String(), 3))
			require.Error(t, goProc.err, "the Go %s exits with an error after the cut", goSide)
			var ee *exec.ExitError
			require.ErrorAs(t, goProc.err, &ee, "the Go %s exits (is not killed)", goSide)
			select {
			case <-cProc.done:
				t.Logf("C %s ended %v after the cut (%v)", map[string]string{"server": "client", "client": "server"}[goSide], time.Since(cut).Round(10*time.Millisecond), cProc.err)
			default:
				t.Logf("C side still running %v after the cut (killed at cleanup)", time.Since(cut).Round(10*time.Millisecond))
			}
		})
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
