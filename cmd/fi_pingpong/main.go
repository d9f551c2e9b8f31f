// Command fi_pingpong is gofabric's fi_pingpong(1): the ping-pong latency
// and bandwidth test of libfabric 1.17's util/pingpong.c, with its options,
// control-channel protocol, sizes, -c data pattern and output, so that it
// can run against the C tool as either peer. The logic lives in
// internal/pingpong.
//
// Run it as server with no address, and as client with the server's host:
//
//	fi_pingpong -p tcp -e msg
//	fi_pingpong -p tcp -e msg 127.0.0.1
//
// Options are read as C's getopt reads them (internal/getopt): clusters
// (-cv), attached values (-I10), the address anywhere, "--". One option is
// gofabric's own: -T <seconds> bounds every wait on the control channel
// (default 30, 0 for none), so that a client aimed at a port that is no
// fi_pingpong server gives up with a message instead of waiting forever.
//
// The exit status is 0 on success, 1 for a bad command line, 22 (EINVAL)
// or 34 (ERANGE) for a bad number (where C goes on with a meaningless
// one), 255 for a -c data mismatch, else the errno of the failure (61 when
// no provider matched, 110 when the peer stayed silent past -T). Errors
// are followed by their hints, one "hint: ..." line each.
package main

import (
	"os"

	"github.com/gofabric/gofabric/cmd/fi_pingpong/internal/pingpong"
	// all registers every gofabric provider, as a C build links them all.
	_ "github.com/gofabric/gofabric/providers/all"
)

func main() {
	os.Exit(pingpong.Main(os.Args[1:], os.Stdout, os.Stderr))
}
