// Command ft runs libfabric's fabtests programs over gofabric. Its first
// argument names the program, with or without the "fi_" of the C binary;
// the rest are that C program's options, with C's defaults, and it prints
// the C program's output and exits with its statuses, so that each side of
// a test can be the Go program or the C one:
//
//	ft rdm_tagged_pingpong -p tcp -s 127.0.0.1 -B 47001             # server
//	fi_rdm_tagged_pingpong -p tcp -P 47001 127.0.0.1                # C client
//
// Programs: the latency benchmarks msg_pingpong, rdm_pingpong,
// rdm_tagged_pingpong, rdm_cntr_pingpong and dgram_pingpong; the
// bandwidth benchmarks msg_bw, rdm_tagged_bw, rma_bw and bw (a window of
// -W operations in flight); the functional tests msg, rdm,
// rdm_tagged_peek, cm_data, dgram, unexpected_msg, rdm_multi_client,
// rdm_rma_event, msg_inject, multi_recv and rdm_atomic (every fi_atomic
// operation and datatype, -o and -z). "ft" alone lists them, "ft PROGRAM
// -h" lists a program's options.
//
// The options are C's (read by internal/getopt as glibc's getopt_long
// reads them): -p -e -d -f -s -B -P -E[=port] -b[=port] -C -I -w -S
// (a size, r:start,inc,end or all) -v -U -c -m -M -t -l -Q -F -k -j -W -h,
// --timeout and --pin-core. Defaults are C's: data port 9228, out-of-band
// port 3000, sizes 64 256 1k 4k 64k 1m, 10000/1000/100 iterations by size
// and 10 warm-ups. A server passes -s (its address) on loopback, as the C
// programs need; a client that exchanges addresses out of band (-E, -b)
// passes -s too, or it looks up its own address instead of the server's.
//
// Exit statuses are C's: 0 on success, 1 for a bad command line or -h,
// else the errno of the failure (61 when no provider matches or a
// completion times out, 5 for a -v data error, 107 when the peer closes
// the out-of-band socket early, 110 when it goes silent past the timeout,
// 22 for a bad option value, 38 for what gofabric lacks) and 1 for
// libfabric's own error codes. Where ft parts from C (bounded waits,
// checks of what the peer sends, options gofabric cannot serve) is listed
// in internal/ft's documentation.
package main

import (
	"os"

	"github.com/gofabric/gofabric/cmd/ft/internal/ft"
	// all registers every gofabric provider, as a C build links them all.
	_ "github.com/gofabric/gofabric/providers/all"
)

func main() {
	os.Exit(ft.Main(os.Args, os.Stdout, os.Stderr))
}
