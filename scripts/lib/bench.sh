# shellcheck shell=bash
# shellcheck disable=SC2154 # quiet_max is the sourcing script's
# Shared by the benchmark scripts (bench-compare.sh, bench-bw.sh): ports
# for the pairs they start, and the quiet-machine gate. Source it after
# defining die and quiet_max (seconds the gate waits at most; 0 = off).

# port_in PORT STATE: true when a TCP socket has local PORT (and, when
# STATE is non-empty, that /proc state: 0A = LISTEN). Read from /proc
# rather than probed: a pingpong server takes the first connection as its
# client.
port_in() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" -v st="$2" 'FNR > 1 && substr($2, length($2) - 4) == p && (st == "" || $4 == st) { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port prints a port in 20000-31999 (below the ephemeral range, which
# outgoing connections take their source ports from) that no TCP socket
# holds now, stepping on from a random start.
next_port=$((20000 + RANDOM % 10000))
free_port() {
	local tries
	for ((tries = 0; tries < 100; tries++)); do
		next_port=$((next_port >= 31999 ? 20000 : next_port + 1))
		port_in "$next_port" "" || { echo "$next_port"; return 0; }
	done
	die "no free TCP port found in 20000-31999"
}

# wait_listen PORT PID: waits up to 30 s until a socket listens on PORT,
# giving up early when PID has exited; true when one listens.
wait_listen() {
	local i
	for ((i = 0; i < 600; i++)); do
		port_in "$1" 0A && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	port_in "$1" 0A
}

# busy_pct: percent of all CPU time spent in user+nice+system over 0.3 s.
cpu_sample() { awk '$1 == "cpu" { print $2 + $3 + $4, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat; }
busy_pct() {
	local b0 t0 b1 t1
	read -r b0 t0 < <(cpu_sample)
	sleep 0.3
	read -r b1 t1 < <(cpu_sample)
	echo $(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))
}

# quiet_gate waits, at most quiet_max seconds, until the machine is below
# 6 % busy for two samples in a row. It counts its calls in gate_runs and
# those that gave up waiting in gate_timeouts, and returns 1 when it gave up.
gate_timeouts=0 gate_runs=0
quiet_gate() {
	((quiet_max > 0)) || return 0
	local start=$SECONDS calm=0
	gate_runs=$((gate_runs + 1))
	while ((calm < 2)); do
		if (($(busy_pct) < 6)); then calm=$((calm + 1)); else calm=0; fi
		if ((SECONDS - start >= quiet_max)); then
			gate_timeouts=$((gate_timeouts + 1))
			return 1
		fi
	done
}
