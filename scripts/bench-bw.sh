#!/usr/bin/env bash
# Compares gofabric's streaming numbers with C libfabric's (not part of the
# tests): fabtests' bandwidth benchmarks, a window of 64 operations in
# flight, Go against Go (cmd/ft on both sides) and C against C (the C
# fabtests on both sides), over loopback. For each provider, program and
# size it runs the C pair and the Go pair, alternating which goes first, for
# several rounds, each run behind a quiet gate, and prints the medians of
# the client's MB/sec and the Go/C ratios (above 1: Go moves more).
# "scripts/bench-compare.sh bw [OPTIONS]" runs it too.
#
#   scripts/bench-bw.sh [-p PROVS] [-P PROGS] [-s SIZES] [-I ITERS] [-W WINDOW]
#                       [-r ROUNDS] [-t SECS] [-q SECS] [-B FABTESTS_BIN] [-G GOBIN]
#
#   -p PROVS   comma list of providers (default tcp,shm)
#   -P PROGS   comma list of programs (default rdm_tagged_bw,msg_bw,rma_bw);
#              rma_bw runs -o write; msg_bw needs FI_EP_MSG, so not over shm
#   -s SIZES   comma list of sizes in bytes (default 64,4096,1048576)
#   -I ITERS   -I per size: one value, or a comma list matching -s (default:
#              50000 up to 4 KiB, 10000 up to 64 KiB, 1000 above; over shm
#              twice as many below 64 KiB)
#   -W WINDOW  operations in flight (-W, default C's 64)
#   -r ROUNDS  interleaved rounds per implementation (default 3)
#   -t SECS    timeout of each process (default 120)
#   -q SECS    quiet gate: before each run wait, at most SECS (default 30; 0 = off),
#              until the machine is below 6 % busy for two 0.3 s samples
#   -B DIR     the C fabtests' bin/ (default: $FABTESTS_BIN, else what
#              ../shared/tools/fabtests/build.sh prints)
#   -G GOBIN   a prebuilt ft (default: go build ./cmd/ft)
#
# Each run uses a fresh data port (-B/-P), FI_TCP_IFACE=lo, and the server
# passes -s 127.0.0.1. The C programs run through "c-fi_*" symbolic links
# (runfabtests.sh runs elsewhere kill -9 processes named fi_*). A failed run
# prints its output on stderr and counts as "fail" in the table; the script
# then exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

provs=tcp,shm progs=rdm_tagged_bw,msg_bw,rma_bw sizes=64,4096,1048576 iters="" window=64
rounds=3 limit=120 quiet_max=30 bin=${FABTESTS_BIN:-} gobin=""

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench-bw.sh: $*" >&2; exit 2; }

while getopts 'p:P:s:I:W:r:t:q:B:G:h' opt; do
	case $opt in
	p) provs=$OPTARG ;;
	P) progs=$OPTARG ;;
	s) sizes=$OPTARG ;;
	I) iters=$OPTARG ;;
	W) window=$OPTARG ;;
	r) rounds=$OPTARG ;;
	t) limit=$OPTARG ;;
	q) quiet_max=$OPTARG ;;
	B) bin=$OPTARG ;;
	G) gobin=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || usage

IFS=, read -r -a prov_list <<<"$provs"
IFS=, read -r -a prog_list <<<"$progs"
IFS=, read -r -a size_list <<<"$sizes"
IFS=, read -r -a iter_list <<<"$iters"
for n in "${size_list[@]}" "${iter_list[@]}" "$window" "$rounds" "$limit" "$quiet_max"; do
	[[ $n =~ ^[0-9]+$ ]] || die "not a number: '$n'"
done
((${#size_list[@]} > 0 && ${#prov_list[@]} > 0 && ${#prog_list[@]} > 0)) || die "need providers, programs and sizes"
((rounds > 0 && limit > 0 && window > 0)) || die "need -r, -t and -W > 0"
for p in "${prog_list[@]}"; do
	case $p in rdm_tagged_bw | msg_bw | rma_bw) ;; *) die "-P: $p is not one of rdm_tagged_bw, msg_bw, rma_bw" ;; esac
done
((${#iter_list[@]} <= 1 || ${#iter_list[@]} == ${#size_list[@]})) || die "-I lists ${#iter_list[@]} values for ${#size_list[@]} sizes"

# iters_for PROV K: the -I of size K.
iters_for() {
	local s=${size_list[$2]} n
	if ((${#iter_list[@]} == 1)); then
		echo "${iter_list[0]}"
		return
	elif ((${#iter_list[@]} > 1)); then
		echo "${iter_list[$2]}"
		return
	fi
	if ((s <= 4096)); then n=50000; elif ((s <= 65536)); then n=10000; else n=1000; fi
	# shared memory moves small messages several times faster
	[[ $1 == shm ]] && ((s < 65536)) && n=$((n * 2))
	echo "$n"
}

if [[ -z $bin ]]; then
	build=../shared/tools/fabtests/build.sh
	[[ -x $build ]] || die "no C fabtests: set FABTESTS_BIN or -B (or keep ../shared/tools/fabtests beside the clone)"
	bin=$("$build" | tail -n 1) || die "$build failed"
fi
[[ -x $bin/fi_rdm_tagged_bw ]] || die "'$bin' holds no C fabtests (fi_rdm_tagged_bw)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-bw.XXXXXX")
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z $gobin ]]; then
	gobin=$tmp/ft
	go build -o "$gobin" ./cmd/ft
fi
[[ -x $gobin ]] || die "Go ft '$gobin' is not executable"
mkdir -p "$tmp/c"
for p in "${prog_list[@]}"; do
	ln -s "$bin/fi_$p" "$tmp/c/c-fi_$p"
done

# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh # the scripts run from the repository root (cd above)

# run IMPL PROV PROG SIZE ITERS: one server+client pair of the same
# implementation; appends "IMPL PROV PROG SIZE mbps usec" to
# $tmp/results, or "IMPL PROV PROG SIZE fail" after printing the output.
run() {
	local impl=$1 prov=$2 prog=$3 size=$4 it=$5 port i srv cli srv_rc=0 cli_rc=0 row why=""
	local -a cmd args=(-p "$prov" -S "$size" -I "$it" -W "$window")
	[[ $prog == rma_bw ]] && args+=(-o write)
	if [[ $impl == Go ]]; then cmd=("$gobin" "$prog"); else cmd=("$tmp/c/c-fi_$prog"); fi
	port=$(free_port)
	quiet_gate || true
	srv=$tmp/$impl-server cli=$tmp/$impl-client
	FI_TCP_IFACE=lo timeout "$limit" "${cmd[@]}" "${args[@]}" -s 127.0.0.1 -B "$port" >"$srv.out" 2>"$srv.err" &
	pids=($!)
	if [[ $prov == shm ]]; then
		# no socket to watch: give the server a moment to open its endpoint
		sleep 0.5
	else
		wait_listen "$port" "${pids[0]}" || why="server not listening on port $port; "
	fi
	if [[ -z $why ]]; then
		FI_TCP_IFACE=lo timeout "$limit" "${cmd[@]}" "${args[@]}" -P "$port" 127.0.0.1 >"$cli.out" 2>"$cli.err" &
		pids+=($!)
		wait "${pids[1]}" || cli_rc=$?
		for ((i = 0; i < 200; i++)); do
			kill -0 "${pids[0]}" 2>/dev/null || break
			sleep 0.05
		done
		kill "${pids[0]}" 2>/dev/null || true
	else
		kill "${pids[0]}" 2>/dev/null || true
		: >"$cli.out"
		: >"$cli.err"
	fi
	wait "${pids[0]}" || srv_rc=$?
	pids=()
	# The one result row: bytes iters total time MB/sec usec/xfer Mxfers/sec.
	row=$(awk '$1 != "bytes" && NF == 7 && $4 ~ /s$/ { print $5, $6; n++ } END { exit n != 1 }' "$cli.out") ||
		why+="no result row from the client; "
	if [[ -n $why ]] || ((cli_rc != 0 || srv_rc != 0)); then
		{
			echo "bench-bw.sh: $impl $prog run failed ($prov, size $size, -I $it, port $port): ${why}client status $cli_rc, server status $srv_rc"
			echo "client: ${cmd[*]} ${args[*]} -P $port 127.0.0.1"
			cat "$cli.out" "$cli.err"
			echo "server: ${cmd[*]} ${args[*]} -s 127.0.0.1 -B $port"
			cat "$srv.out" "$srv.err"
		} >&2
		echo "$impl $prov $prog $size fail" >>"$tmp/results"
		failures=$((failures + 1))
		return 0
	fi
	echo "$impl $prov $prog $size $row" >>"$tmp/results"
}

# The cases: provider, program, size.
cases=()
for prov in "${prov_list[@]}"; do
	for prog in "${prog_list[@]}"; do
		[[ $prov == shm && $prog == msg_bw ]] && continue
		for ((k = 0; k < ${#size_list[@]}; k++)); do
			cases+=("$prov $prog $k")
		done
	done
done
((${#cases[@]} > 0)) || die "nothing to run (msg_bw does not run over shm)"

: >"$tmp/results"
failures=0
start=$SECONDS
for ((r = 1; r <= rounds; r++)); do
	for c in "${cases[@]}"; do
		read -r prov prog k <<<"$c"
		s=${size_list[k]} it=$(iters_for "$prov" "$k")
		if ((r % 2)); then
			run C "$prov" "$prog" "$s" "$it"
			run Go "$prov" "$prog" "$s" "$it"
		else
			run Go "$prov" "$prog" "$s" "$it"
			run C "$prov" "$prog" "$s" "$it"
		fi
	done
	echo "round $r/$rounds done ($((SECONDS - start)) s)" >&2
done

# summary IMPL PROV PROG SIZE FIELD: "median min max" of field 5 (MB/s) or
# 6 (usec) over the runs that did not fail, "fail fail fail" when all
# failed, and the number of failed runs.
summary() {
	awk -v i="$1" -v p="$2" -v g="$3" -v s="$4" -v f="$5" '$1 == i && $2 == p && $3 == g && $4 == s { print ($5 == "fail" ? "fail" : $f) }' "$tmp/results" |
		sort -g | awk '$1 == "fail" { bad++; next } { v[++n] = $1 }
		END { if (!n) { print "fail", "fail", "fail", bad + 0; exit } m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; print m, v[1], v[n], bad + 0 }'
}

echo "fabtests bandwidth benchmarks, Go against Go (cmd/ft) and C against C (fabtests 1.17), -W $window, over loopback: client's MB/sec, median of $rounds interleaved runs each"
echo "C:  $bin ($(fi_info --version 2>/dev/null | awk '/libfabric:/ { print "libfabric", $2 }'))"
echo "Go: $(go version 2>/dev/null || echo "go not found"), $gobin"
echo "machine: nproc $(nproc), Linux $(uname -r), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "tcp congestion control: $(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo unknown)${FI_TCP_CONGESTION:+; FI_TCP_CONGESTION=$FI_TCP_CONGESTION for the Go side}"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); quiet gate $( ((quiet_max > 0)) && echo "on (at most $quiet_max s), $gate_timeouts of $gate_runs runs started on a busy machine" || echo off); $((SECONDS - start)) s"
echo "rma_bw runs -o write (both sides write: its MB/sec is one side's); msg_bw runs over FI_EP_MSG, the others over FI_EP_RDM"
echo
printf '%-5s %-14s %-8s %8s %11s %11s %8s %13s %13s\n' prov program size iters "C MB/s" "Go MB/s" "Go/C" "C usec/xfer" "Go usec/xfer"
spread=()
for c in "${cases[@]}"; do
	read -r prov prog k <<<"$c"
	s=${size_list[k]}
	read -r cb cb_lo cb_hi cf < <(summary C "$prov" "$prog" "$s" 5)
	read -r gb gb_lo gb_hi gf < <(summary Go "$prov" "$prog" "$s" 5)
	read -r cu _ _ _ < <(summary C "$prov" "$prog" "$s" 6)
	read -r gu _ _ _ < <(summary Go "$prov" "$prog" "$s" 6)
	awk -v p="$prov" -v g="$prog" -v s="$s" -v it="$(iters_for "$prov" "$k")" -v cb="$cb" -v gb="$gb" -v cu="$cu" -v gu="$gu" 'BEGIN {
		bw = "-"
		if (cb != "fail" && gb != "fail" && cb > 0) bw = sprintf("%.2f", gb / cb)
		printf "%-5s %-14s %-8s %8s %11s %11s %8s %13s %13s\n", p, g, s, it, num(cb), num(gb), bw, num(cu), num(gu) }
		function num(v) { return v == "fail" ? v : sprintf("%.2f", v) }'
	spread+=("$(printf '%-5s %-14s %-8s %23s %23s %s' "$prov" "$prog" "$s" "$cb_lo-$cb_hi" "$gb_lo-$gb_hi" \
		"$( ((cf + gf > 0)) && echo "(failed runs: C $cf, Go $gf)")")")
done
echo
echo "spread of MB/sec (min-max over the $rounds runs):"
printf '%-5s %-14s %-8s %23s %23s\n' prov program size "C" "Go"
printf '%s\n' "${spread[@]}"
((failures == 0)) || { echo "bench-bw.sh: $failures runs failed (their output is above)" >&2; exit 1; }
