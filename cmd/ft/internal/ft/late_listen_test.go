package ft

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientWaitsForLateListen plays fabtests' slow server: with -E or -b
// the server accepts the out-of-band connection before it listens on its
// fabric address (ft_start_server), so a client is refused there until
// the listen. ft's client must keep trying, say so on stderr, and then
// run the program as usual. A relay in the test takes the client's
// out-of-band connection at once and starts the real server (ft's) only
// once the client has been refused, then carries the out-of-band bytes
// between the two.
func TestClientWaitsForLateListen(t *testing.T) {
	for _, flag := range []string{"-E", "-b"} {
		t.Run(flag, func(t *testing.T) { runLateListen(t, "tcp", flag) })
	}
}

// runLateListen runs msg between two ft processes over prov with the
// out-of-band socket (flag -E or -b) relayed by the test, which starts
// the server only once the client has said that it was refused.
func runLateListen(t *testing.T, prov, flag string) {
	host := pairHost(prov)
	dataPort, cliOOB, srvOOB := freePort(t), freePort(t), freePort(t)
	l, err := net.Listen("tcp", net.JoinHostPort(host, cliOOB))
	require.NoError(t, err)
	defer l.Close()

	cli := startPeer(t, "go", "client", "msg", "-p", prov, "-P", dataPort, "-s", host, flag+"="+cliOOB, host)
	require.NoError(t, l.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute)))
	fromCli, err := l.Accept()
	require.NoError(t, err, "the client's out-of-band connection\n%s", cli.report())
	defer fromCli.Close()

	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(cli.errOut.String(), "nothing listening at the server's address yet") {
		if cli.exited() || time.Now().After(deadline) {
			t.Fatalf("the client neither connected nor said it retries a refused connect\n%s", cli.report())
		}
		time.Sleep(10 * time.Millisecond)
	}

	srv := startPeer(t, "go", "server", "msg", "-p", prov, "-s", host, "-B", dataPort, flag+"="+srvOOB)
	waitListening(t, srv, srvOOB)
	toSrv, err := net.Dial("tcp", net.JoinHostPort(host, srvOOB))
	require.NoError(t, err)
	defer toSrv.Close()
	go func() { _, _ = io.Copy(toSrv, fromCli) }()
	go func() { _, _ = io.Copy(fromCli, toSrv) }()

	p := fpair{prov: prov, prog: "msg", variant: flag, server: "go", client: "go"}
	require.Equal(t, 0, cli.status(t, peerLimit, srv), "%s", reports(srv, cli))
	require.Equal(t, 0, srv.status(t, peerLimit, cli), "%s", reports(srv, cli))
	require.Regexp(t, expectedOutput(t, p, "server", 1), srv.out.String(), "%s", srv.report())
	require.Regexp(t, expectedOutput(t, p, "client", 1), cli.out.String(), "%s", cli.report())
}
