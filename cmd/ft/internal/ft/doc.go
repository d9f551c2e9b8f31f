// Package ft is the body of cmd/ft: libfabric's fabtests programs written
// with gofabric, each pairing with the C program of the same name as
// either peer.
//
// # Layout
//
// One file per fabtests program (rdm_pingpong.go for fi_rdm_pingpong)
// holds what that program's C main and run() do: its getopt string, usage
// lines, option tweaks, hints and the run itself, registered from init
// with register. Everything the programs share lives in files named after
// what they hold, as common/shared.c and benchmarks/benchmark_shared.c
// hold it in C:
//
//   - session.go: Session, one run's state (shared.c's globals), the
//     timeouts, ft_free_res;
//   - options.go: the option groups and their parsers (ft_parseinfo,
//     ft_parse_addr_opts, ft_parsecsopts, ft_parse_benchmark_opts,
//     ft_parse_api_opts, the long options); sizes.go: the size table,
//     -S, iterations by size;
//   - fabric.go: fi_getinfo with the address options, opening the
//     fabric, domain, CQs, counters, AV and endpoint, binding and
//     enabling, the buffers and their MR, the MSG server and client
//     (ft_init_fabric, ft_start_server, ft_server_connect,
//     ft_client_connect);
//   - oob.go: the out-of-band TCP socket of -E and -b (ft_init_oob,
//     ft_sock_send, ft_sock_recv), driving provider progress while it
//     waits;
//   - addr.go: the address exchange, in band and out of band
//     (ft_init_av_dst_addr, ft_exchange_addresses_oob), with the checks
//     of what the peer sent;
//   - xfer.go: posting sends, injects and receives, waiting for
//     completions by -c spin or sread on CQs or counters, tag and length
//     checks, ft_sync and ft_finalize;
//   - pattern.go: -v's payload pattern; perf.go: ft_start/ft_stop and
//     the result rows (show_perf, show_perf_mr for -m);
//   - benchmark.go: benchmark_shared.c's pingpong();
//   - window.go: benchmark_shared.c's bandwidth() with its window of
//     -W operations in flight (bw_tx_comp, bw_rx_comp);
//   - rma.go: the key exchange (ft_exchange_keys), RMA posts
//     (ft_post_rma, ft_post_rma_inject) and bandwidth_rma();
//   - functional.go: what the functional programs share: the greeting
//     (ft_send_greeting, ft_recv_greeting, check_recv_msg), optstrings
//     that name a letter twice, ft_cq_read_verify, ft_sock_sync, and
//     ft_free_res keeping the out-of-band socket;
//   - errors.go: exit statuses (ft_exit_code) and error printing.
//
// A new program is a new file: build the optstring from the opts*
// groups as the C main does, set the hints in setup, and write run from
// the Session's methods (initFabric or startServer/serverConnect/
// clientConnect, eachSize, sync, tx, rx, finalize...).
//
// # Where ft differs from C
//
// ft keeps C's options, defaults, wire protocol (address blocks, sync
// bytes, tags, finalize), output and exit statuses. It differs where C
// would hang, crash or go on with nonsense:
//
//   - every wait for a peer that has been heard from is bounded: by
//     --timeout (dgram_pingpong: -T, 5 s) when given, else by 60 s, where
//     C waits forever; a server still waits for its first client as long
//     as it takes. A completion wait that expires fails with ENODATA
//     ("timeout expired", as C's), a socket wait with ETIMEDOUT;
//   - what the peer sends is checked: the length of every receive the
//     test can predict (EMSGSIZE), the tag of tagged receives (as C), the
//     address it sends (EINVAL for a wrong length or family), the
//     out-of-band socket closing early (ENOTCONN, as C);
//   - a number option that is not a number, and a word option C does not
//     know (-c, -e, -t, -o, -F), are refused with EINVAL where C goes on
//     with 0 or the default; -c spin selects busy polling (C ignores the
//     word);
//   - what gofabric does not have is refused with ENOSYS and the reason:
//     -K (fork), -D (device memory), -Q (EQ bound to the domain), -a
//     (named AVs), -c yield (FI_WAIT_YIELD), msg_pingpong -o tagged
//     (shared receive contexts);
//   - CQs for untagged tests are opened with FI_CQ_FORMAT_MSG, not
//     CONTEXT, to see each receive's length; the data buffers hold one
//     message each way, not a window of them (the pingpongs use the first
//     only);
//   - a client of a MSG program with -E or -b retries a connect that
//     nothing listened to (eq.ReasonNoListener), with a line on stderr,
//     within its wait limit: C's server accepts the out-of-band
//     connection before it listens, so a quick client can come too
//     early; C's client gives up there;
//   - a counter's error count rising fails the wait (C keeps waiting);
//   - rdm_atomic asks the endpoint's valid queries (fi_atomicvalid and
//     its fetch and compare forms) whether it supports a pair, without
//     C's fi_query_atomic on the domain, which gofabric's domains do not
//     have; its ft_syncs fail the run when they fail (C ignores them);
//   - ft_finalize on a connected endpoint takes its send flushed with
//     FI_ECANCELED as delivered once the peer's own message arrives (the
//     peer's disconnect can overtake the acknowledgement over RDMA).
package ft
