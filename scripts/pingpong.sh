#!/usr/bin/env bash
# The README's main job: a two-process fi_pingpong over loopback.
#
#   scripts/pingpong.sh [fi_pingpong options...]     e.g.  scripts/pingpong.sh -S all -c
#
# Builds ./cmd/fi_pingpong into a temporary directory, starts it as server
# (-p tcp -e msg unless -p/-e are given; every other option is passed to both
# sides), waits until the server's control port is listening, runs the client
# against 127.0.0.1, and exits with the client's status. stdout carries only the
# client's result table; the server's table and both sides' diagnostics go to
# stderr. The control port is a free one picked here unless -B or -P names it.
# FI_TCP_IFACE=lo is set for both processes. Needs only bash, coreutils, Linux
# /proc and Go.
#
# Environment: FI_PINGPONG=path runs that binary instead of building (e.g.
# /usr/bin/fi_pingpong, the C tool); PINGPONG_TIMEOUT bounds each process in
# seconds (default 300).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "pingpong.sh: $*" >&2; exit 2; }

# listening PORT: true when some socket listens on TCP PORT (IPv4 or IPv6).
# The port is read from /proc rather than probed with a connection, because
# fi_pingpong's server takes the first connection on it as its client.
listening() {
	local hex
	hex=$(printf '%04X' "$1")
	# Fields: sl local_address rem_address st ...; st 0A is LISTEN.
	awk -v p=":$hex" 'FNR > 1 && substr($2, length($2) - 4) == p && $4 == "0A" { found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# in_use PORT: true when any TCP socket (any state) has PORT as local port.
in_use() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'FNR > 1 && substr($2, length($2) - 4) == p { found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port: a port below the kernel's ephemeral range that no socket uses.
free_port() {
	local port tries
	for ((tries = 0; tries < 100; tries++)); do
		port=$((20000 + RANDOM % 12000))
		if ! in_use "$port"; then
			echo "$port"
			return 0
		fi
	done
	die "no free TCP port found in 20000-31999"
}

# Split the command line (fi_pingpong's getopt string "hvd:p:e:I:S:B:P:cm:6")
# into pass-through options, the control port (-B/-P) and -p/-e presence.
port="" have_p=0 have_e=0
args=()
while (($#)); do
	a=$1
	shift
	case $a in
	--) (($# == 0)) || die "no address argument: the script runs the client against 127.0.0.1"; break ;;
	-?*) ;;
	*) die "unexpected argument '$a': the script supplies the server address itself" ;;
	esac
	# Walk a cluster such as -cv or -S64 the way getopt does.
	rest=${a#-} keep=-
	while [[ -n $rest ]]; do
		c=${rest:0:1} rest=${rest:1}
		case $c in
		h | v | c | 6) keep+=$c ;;
		d | p | e | I | S | m | B | P)
			if [[ -n $rest ]]; then
				val=$rest rest=
			else
				(($#)) || die "option -$c needs an argument"
				val=$1
				shift
			fi
			case $c in
			B | P) port=$val ;;
			*)
				[[ $c == p ]] && have_p=1
				[[ $c == e ]] && have_e=1
				[[ $keep == - ]] || args+=("$keep")
				keep=-
				args+=("-$c" "$val")
				;;
			esac
			;;
		*) die "unknown fi_pingpong option -$c" ;;
		esac
	done
	[[ $keep == - ]] || args+=("$keep")
done
((have_p)) || args=(-p tcp "${args[@]}")
((have_e)) || args=(-e msg "${args[@]}")
if [[ -n $port ]]; then
	if ! [[ $port =~ ^[0-9]+$ ]] || ((10#$port == 0 || 10#$port > 65535)); then
		die "bad control port '$port'"
	fi
else
	port=$(free_port)
fi

limit=${PINGPONG_TIMEOUT:-300}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pingpong.XXXXXX")
server_pid="" client_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local pid
	for pid in $client_pid $server_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -n ${FI_PINGPONG:-} ]]; then
	bin=$FI_PINGPONG
else
	bin=$tmp/fi_pingpong
	go build -o "$bin" ./cmd/fi_pingpong
fi

export FI_TCP_IFACE=lo
timeout "$limit" "$bin" "${args[@]}" -B "$port" >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!

# Wait for the control port; give up when the server dies or after 30 s.
for ((i = 0; i < 600; i++)); do
	listening "$port" && break
	if ! kill -0 "$server_pid" 2>/dev/null; then
		wait "$server_pid" && rc=0 || rc=$?
		server_pid=""
		echo "pingpong.sh: server exited (status $rc) before listening on port $port:" >&2
		cat "$tmp/server.out" "$tmp/server.err" >&2
		exit "$((rc == 0 ? 1 : rc))"
	fi
	sleep 0.05
done
listening "$port" || die "server is not listening on port $port after 30 s"

# In the background, so that a signal to this script runs its trap at once.
timeout "$limit" "$bin" "${args[@]}" -P "$port" 127.0.0.1 &
client_pid=$!
client_rc=0
wait "$client_pid" || client_rc=$?
client_pid=""

# The server finishes right after the client; give it a few seconds.
server_rc=0
for ((i = 0; i < 100; i++)); do
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.05
done
if kill -0 "$server_pid" 2>/dev/null; then
	kill "$server_pid" 2>/dev/null || true
	echo "pingpong.sh: server still running 5 s after the client ended; killed" >&2
fi
wait "$server_pid" || server_rc=$?
server_pid=""

{
	echo "--- server (${args[*]} -B $port), status $server_rc:"
	cat "$tmp/server.out" "$tmp/server.err"
} >&2
exit "$client_rc"
