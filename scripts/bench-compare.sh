#!/usr/bin/env bash
# Compares gofabric's fi_pingpong with C libfabric's over loopback (not part of
# the tests). For each message size it runs a C pair (server + client of
# /usr/bin/fi_pingpong) and a Go pair (./cmd/fi_pingpong), alternating C and
# Go for several rounds, each run behind a quiet gate, and prints the medians
# of the client's usec/xfer and MB/sec and the Go/C ratios.
#
#   scripts/bench-compare.sh [-p PROV] [-e EP] [-s SIZES] [-I ITERS] [-r ROUNDS]
#                            [-t SECS] [-q SECS] [-C CBIN] [-G GOBIN]
#
#   -p PROV    provider (default tcp)            -e EP     endpoint type (default msg)
#   -s SIZES   comma list of sizes in bytes (default 64,1048576)
#   -I ITERS   -I per size: one value, or a comma list matching -s
#              (default: 20000 up to 4 KiB, 10000 up to 64 KiB, 2000 above;
#              for shm 1000000, 100000 and 5000, runs of similar length)
#   -r ROUNDS  interleaved rounds per implementation (default 5)
#   -t SECS    timeout of each process (default 120)
#   -q SECS    quiet gate: before each run wait, at most SECS (default 180; 0 = off),
#              until the machine is below 6 % busy for two 0.3 s samples
#   -C CBIN    C fi_pingpong (default /usr/bin/fi_pingpong)
#   -G GOBIN   prebuilt Go fi_pingpong (default: go build ./cmd/fi_pingpong)
#
#   scripts/bench-compare.sh bw [OPTIONS]
#
# runs the streaming comparison instead, scripts/bench-bw.sh: fabtests'
# bandwidth benchmarks (rdm_tagged_bw, msg_bw, rma_bw -o write), Go against
# Go and C against C, over tcp and shm; its options are bench-bw.sh's.
#
# Each run uses a fresh control port (-B/-P) and FI_TCP_IFACE=lo. A failed run
# stops the script with its output and a non-zero status. Within a round the
# order alternates (C then Go, then Go then C) so drift hits both alike.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == bw ]]; then
	shift
	exec ./scripts/bench-bw.sh "$@"
fi

prov=tcp ep=msg sizes=64,1048576 iters="" rounds=5 limit=120 quiet_max=180
cbin=/usr/bin/fi_pingpong gobin=""

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench-compare.sh: $*" >&2; exit 2; }

while getopts 'p:e:s:I:r:t:q:C:G:h' opt; do
	case $opt in
	p) prov=$OPTARG ;;
	e) ep=$OPTARG ;;
	s) sizes=$OPTARG ;;
	I) iters=$OPTARG ;;
	r) rounds=$OPTARG ;;
	t) limit=$OPTARG ;;
	q) quiet_max=$OPTARG ;;
	C) cbin=$OPTARG ;;
	G) gobin=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || usage

IFS=, read -r -a size_list <<<"$sizes"
IFS=, read -r -a iter_list <<<"$iters"
for n in "${size_list[@]}" "${iter_list[@]}" "$rounds" "$limit" "$quiet_max"; do
	[[ $n =~ ^[0-9]+$ ]] || die "not a number: '$n'"
done
((${#size_list[@]} > 0 && rounds > 0 && limit > 0)) || die "need sizes, rounds > 0 and -t > 0"
if ((${#iter_list[@]} == 1)); then
	for ((i = 1; i < ${#size_list[@]}; i++)); do iter_list+=("${iter_list[0]}"); done
elif ((${#iter_list[@]} == 0)); then
	for s in "${size_list[@]}"; do
		if [[ $prov == shm ]]; then
			# shared memory is ~100x faster: runs of the same length
			if ((s <= 4096)); then iter_list+=(1000000); elif ((s <= 65536)); then iter_list+=(100000); else iter_list+=(5000); fi
		elif ((s <= 4096)); then iter_list+=(20000); elif ((s <= 65536)); then iter_list+=(10000); else iter_list+=(2000); fi
	done
fi
((${#iter_list[@]} == ${#size_list[@]})) || die "-I lists ${#iter_list[@]} values for ${#size_list[@]} sizes"
[[ -x $cbin ]] || die "C fi_pingpong '$cbin' is not executable (apt-get install libfabric-bin)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")
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
	gobin=$tmp/fi_pingpong
	go build -o "$gobin" ./cmd/fi_pingpong
fi
[[ -x $gobin ]] || die "Go fi_pingpong '$gobin' is not executable"

# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh # the scripts run from the repository root (cd above)

# run IMPL BIN SIZE ITERS: one server+client pair; appends
# "IMPL SIZE usec mbps" to $tmp/results, or prints the output and exits 1.
run() {
	local impl=$1 bin=$2 size=$3 it=$4 port i srv cli srv_rc=0 cli_rc=0 row why=""
	local -a args=(-p "$prov" -e "$ep" -S "$size" -I "$it")
	port=$(free_port)
	quiet_gate || echo "bench-compare.sh: machine not quiet after ${quiet_max} s; running anyway" >&2
	srv=$tmp/$impl-server cli=$tmp/$impl-client
	FI_TCP_IFACE=lo timeout "$limit" "$bin" "${args[@]}" -B "$port" >"$srv.out" 2>"$srv.err" &
	pids=($!)
	if wait_listen "$port" "${pids[0]}"; then
		FI_TCP_IFACE=lo timeout "$limit" "$bin" "${args[@]}" -P "$port" 127.0.0.1 >"$cli.out" 2>"$cli.err" &
		pids+=($!)
		wait "${pids[1]}" || cli_rc=$?
		# The server ends right after the client; allow it 10 s.
		for ((i = 0; i < 200; i++)); do
			kill -0 "${pids[0]}" 2>/dev/null || break
			sleep 0.05
		done
		kill "${pids[0]}" 2>/dev/null || true
	else
		why="server not listening on port $port; "
		kill "${pids[0]}" 2>/dev/null || true
		: >"$cli.out"
		: >"$cli.err"
	fi
	wait "${pids[0]}" || srv_rc=$?
	pids=()
	# The one result row, with every message acknowledged ("=N" in #ack).
	row=$(awk '$1 != "bytes" && NF >= 8 && $3 ~ /^=/ { print $7, $6; n++ } END { exit n != 1 }' "$cli.out") ||
		why+="no complete result row from the client; "
	if [[ -n $why ]] || ((cli_rc != 0 || srv_rc != 0)); then
		{
			echo "bench-compare.sh: $impl run failed (size $size, -I $it, port $port): ${why}client status $cli_rc, server status $srv_rc"
			echo "client: $bin ${args[*]} -P $port 127.0.0.1"
			cat "$cli.out" "$cli.err"
			echo "server: $bin ${args[*]} -B $port"
			cat "$srv.out" "$srv.err"
		} >&2
		exit 1
	fi
	echo "$impl $size $row" >>"$tmp/results"
}

: >"$tmp/results"
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < ${#size_list[@]}; k++)); do
		s=${size_list[k]} it=${iter_list[k]}
		if ((r % 2)); then
			run C "$cbin" "$s" "$it"
			run Go "$gobin" "$s" "$it"
		else
			run Go "$gobin" "$s" "$it"
			run C "$cbin" "$s" "$it"
		fi
	done
	echo "round $r/$rounds done" >&2
done

# summary IMPL SIZE FIELD: "median min max" of field 3 (usec) or 4 (MB/s).
summary() {
	awk -v i="$1" -v s="$2" -v f="$3" '$1 == i && $2 == s { print $f }' "$tmp/results" | sort -g |
		awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}

echo "fi_pingpong -p $prov -e $ep over loopback (FI_TCP_IFACE=lo): client's row, median of $rounds interleaved runs each"
echo "C:  $cbin ($(fi_info --version 2>/dev/null | awk '/libfabric:/ { print "libfabric", $2 }'))"
echo "Go: $(go version 2>/dev/null || echo "go not found"), $gobin"
echo "machine: nproc $(nproc), Linux $(uname -r), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
# Loopback transfers of a MiB and more depend on it (README, Performance).
echo "tcp congestion control: $(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo unknown)${FI_TCP_CONGESTION:+; FI_TCP_CONGESTION=$FI_TCP_CONGESTION for the Go side}"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); quiet gate $( ((quiet_max > 0)) && echo "on, $gate_timeouts timeouts" || echo off)"
echo
printf '%-9s %7s %13s %13s %9s %10s %10s %9s\n' size iters "C usec/xfer" "Go usec/xfer" "lat Go/C" "C MB/s" "Go MB/s" "bw Go/C"
spread=()
for ((k = 0; k < ${#size_list[@]}; k++)); do
	s=${size_list[k]}
	read -r cu cu_lo cu_hi < <(summary C "$s" 3)
	read -r gu gu_lo gu_hi < <(summary Go "$s" 3)
	read -r cb cb_lo cb_hi < <(summary C "$s" 4)
	read -r gb gb_lo gb_hi < <(summary Go "$s" 4)
	awk -v s="$s" -v it="${iter_list[k]}" -v cu="$cu" -v gu="$gu" -v cb="$cb" -v gb="$gb" 'BEGIN {
		lat = "-"; bw = "-"
		if (cu > 0) lat = sprintf("%.2f", gu / cu)
		if (cb > 0) bw = sprintf("%.2f", gb / cb)
		printf "%-9s %7s %13.2f %13.2f %9s %10.2f %10.2f %9s\n", s, it, cu, gu, lat, cb, gb, bw }'
	spread+=("$(printf '%-9s %23s %23s %23s %23s' "$s" "$cu_lo-$cu_hi" "$gu_lo-$gu_hi" "$cb_lo-$cb_hi" "$gb_lo-$gb_hi")")
done
echo
echo "spread (min-max over the $rounds runs):"
printf '%-9s %23s %23s %23s %23s\n' size "C usec/xfer" "Go usec/xfer" "C MB/s" "Go MB/s"
printf '%s\n' "${spread[@]}"
