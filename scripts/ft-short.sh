#!/usr/bin/env bash
# Runs libfabric fabtests' "short" list (runfabtests.sh -t short) over tcp
# twice per line: C server with C client, then C server with the Go client
# (cmd/ft), and prints pass/notrun/fail for each and the counts side by side
# (not part of the tests).
#
#   scripts/ft-short.sh [-p PROV] [-t SECS] [-B FABTESTS_BIN] [-G GOBIN] [-g] [-l LOGDIR]
#
#   -p PROV   provider (default tcp)
#   -t SECS   timeout of each process (default 120, as runfabtests.sh)
#   -B DIR    the C fabtests' bin/ (default: $FABTESTS_BIN, else what
#             ../shared/tools/fabtests/build.sh prints)
#   -G GOBIN  a prebuilt ft (default: go build ./cmd/ft)
#   -g        Go clients only (skip the C-against-C runs)
#   -l DIR    keep every run's output in DIR (default: a temporary directory,
#             kept only when a line fails)
#
# The list is read from the runfabtests.sh in the fabtests bin/, and each
# line is paired as runfabtests.sh pairs it: the server runs
# "fi_X ARGS -p PROV -s 127.0.0.1", then (once it listens, at most 10 s) the
# client "fi_X ARGS -p PROV -s 127.0.0.1 127.0.0.1"; a client that fails
# gets its server killed 2 s later. A line passes when both exit 0, is
# "notrun" when both exit 61 (FI_ENODATA) or both 38 (FI_ENOSYS), and
# fails otherwise. A program cmd/ft does not have yet is reported as
# "not yet in cmd/ft" (none at present).
#
# Each pair runs in a network namespace of its own when the script can make
# one (root, or unprivileged user namespaces; unshare and ip), so the
# default ports (9228, and 3000 for the out-of-band socket) clash with
# nothing else on the host; elsewhere it runs on the host's loopback with a
# free data port (-B/-P). The C programs run through "c-fi_*" symbolic
# links: runfabtests.sh runs elsewhere on the host kill -9 every process
# whose name starts with fi_, and this script kills only what it started.
#
# Exit status: 0 when every line that passes C against C passes with the Go
# client (lines not yet in cmd/ft aside; with -g, when no Go line fails), 1
# otherwise, 2 for a bad command line or missing pieces.
set -euo pipefail
cd "$(dirname "$0")/.."

prov=tcp limit=120 bin=${FABTESTS_BIN:-} gobin="" go_only=0 logdir=""

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "ft-short.sh: $*" >&2; exit 2; }

while getopts 'p:t:B:G:gl:h' opt; do
	case $opt in
	p) prov=$OPTARG ;;
	t) limit=$OPTARG ;;
	B) bin=$OPTARG ;;
	G) gobin=$OPTARG ;;
	g) go_only=1 ;;
	l) logdir=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || usage
[[ $limit =~ ^[1-9][0-9]*$ ]] || die "-t: not a positive number: '$limit'"

if [[ -z $bin ]]; then
	build=../shared/tools/fabtests/build.sh
	[[ -x $build ]] || die "no C fabtests: set FABTESTS_BIN or -B (or keep ../shared/tools/fabtests beside the clone)"
	bin=$("$build" | tail -n 1) || die "$build failed"
fi
[[ -x $bin/runfabtests.sh && -x $bin/fi_rdm_pingpong ]] || die "'$bin' holds no C fabtests (runfabtests.sh, fi_rdm_pingpong)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ft-short.XXXXXX")
keep_logs=0
if [[ -n $logdir ]]; then
	mkdir -p "$logdir"
	keep_logs=1
else
	logdir=$tmp/logs
	mkdir -p "$logdir"
fi
pids=()
# pids holds the running pair's runner, the leader of a process group of
# its own (setsid): cleanup ends that group and nothing else.
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z $gobin ]]; then
	gobin=$tmp/ft
	go build -o "$gobin" ./cmd/ft || die "go build ./cmd/ft failed"
fi
[[ -x $gobin ]] || die "Go ft '$gobin' is not executable"
gobin=$(cd "$(dirname "$gobin")" && pwd)/$(basename "$gobin")

# The short list, as runfabtests.sh holds it.
mapfile -t tests < <(awk '/^short_tests=\(/ { on = 1; next } on && /^\)/ { exit }
	on { sub(/^[ \t]*"/, ""); sub(/"[ \t]*$/, ""); if (length) print }' "$bin/runfabtests.sh")
((${#tests[@]} > 0)) || die "no short_tests list in $bin/runfabtests.sh"

# The programs ft has ("ft" alone lists them after "Programs:").
mapfile -t ft_progs < <("$gobin" 2>&1 | awk '/^Programs:/ { on = 1; next } on && NF { print $1 }' || true)
((${#ft_progs[@]} > 0)) || die "'$gobin' lists no programs"
has_ft() {
	local p
	for p in "${ft_progs[@]}"; do [[ $p == "$1" ]] && return 0; done
	return 1
}

# The C programs under names that do not start with fi_.
mkdir -p "$tmp/c"
for f in "$bin"/fi_*; do
	ln -s "$f" "$tmp/c/c-$(basename "$f")"
done

# Network namespaces when they can be made here.
netns=0
ns_cmd=()
if command -v unshare >/dev/null && command -v ip >/dev/null; then
	if [[ $(id -u) == 0 ]]; then
		ns_cmd=(unshare --net --pid --fork --kill-child --mount-proc)
	else
		ns_cmd=(unshare --user --map-root-user --net --pid --fork --kill-child --mount-proc)
	fi
	if "${ns_cmd[@]}" ip link set lo up >/dev/null 2>&1; then
		netns=1
	fi
fi

# The pair runner: runner.sh LIMIT NETNS DATAPORT OUT NSRV SRV... CLI...
# runs one server and one client as runfabtests.sh's cs_test does and
# prints "server_status client_status".
cat >"$tmp/runner.sh" <<'EOF'
#!/usr/bin/env bash
set -u
limit=$1 netns=$2 port=$3 out=$4 nsrv=$5
shift 5
srv=("${@:1:nsrv}")
cli=("${@:nsrv+1}")
if ((netns)); then
	ip link set lo up || exit 99
fi
export FI_TCP_IFACE=lo FI_UDP_IFACE=lo
listening() {
	local hex
	for p in "$@"; do
		hex=$(printf '%04X' "$p")
		awk -v p=":$hex" 'FNR > 1 && substr($2, length($2) - 4) == p && $4 == "0A" { f = 1 } END { exit !f }' \
			/proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
	done
	return 1
}
timeout "$limit" "${srv[@]}" >"$out.server" 2>&1 &
spid=$!
sleep 1
# then at most 10 s more for the data port or the out-of-band port (3000)
for ((i = 0; i < 100; i++)); do
	listening "$port" 3000 && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
timeout "$limit" "${cli[@]}" >"$out.client" 2>&1
c_ret=$?
if ((c_ret != 0)) && kill -0 "$spid" 2>/dev/null; then
	sleep 2
	kill -9 "$spid" 2>/dev/null
fi
wait "$spid"
s_ret=$?
echo "$s_ret $c_ret"
EOF
chmod +x "$tmp/runner.sh"

next_port=$((20000 + RANDOM % 10000))
port_used() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'FNR > 1 && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null
}
free_port() {
	local tries
	for ((tries = 0; tries < 100; tries++)); do
		next_port=$((next_port >= 31999 ? 20000 : next_port + 1))
		port_used "$next_port" || { echo "$next_port"; return 0; }
	done
	die "no free port found in 20000-31999"
}

# run_line N CLIENTKIND LINE: runs one line with the C server and a C or Go
# client; sets result to pass, notrun or "fail (server/client statuses)".
# Not in a subshell, so that cleanup sees the running pair in pids.
run_line() {
	local n=$1 kind=$2 line=$3 prog port status s_ret c_ret out
	local -a words srv cli
	read -r -a words <<<"$line"
	prog=${words[0]}
	words=("${words[@]:1}")
	port=9228
	srv=("$tmp/c/c-$prog" "${words[@]}" -p "$prov")
	if [[ $kind == go ]]; then
		cli=("$gobin" "$prog" "${words[@]}" -p "$prov")
	else
		cli=("$tmp/c/c-$prog" "${words[@]}" -p "$prov")
	fi
	if ((!netns)); then
		port=$(free_port)
		srv+=(-B "$port")
		cli+=(-P "$port")
	fi
	srv+=(-s 127.0.0.1)
	cli+=(-s 127.0.0.1 127.0.0.1)
	out=$logdir/$(printf '%02d' "$n")-$kind
	{
		echo "server: ${srv[*]}"
		echo "client: ${cli[*]}"
	} >"$out.cmd"
	if ((netns)); then
		setsid "${ns_cmd[@]}" "$tmp/runner.sh" "$limit" 1 "$port" "$out" "${#srv[@]}" "${srv[@]}" "${cli[@]}" >"$out.status" 2>/dev/null &
	else
		setsid "$tmp/runner.sh" "$limit" 0 "$port" "$out" "${#srv[@]}" "${srv[@]}" "${cli[@]}" >"$out.status" 2>/dev/null &
	fi
	pids=($!)
	wait "${pids[0]}" || true
	pids=()
	status=$(cat "$out.status")
	read -r s_ret c_ret <<<"$status"
	if [[ -z ${s_ret:-} || -z ${c_ret:-} ]]; then
		result="fail (runner)"
	elif ((s_ret == 61 && c_ret == 61)) || ((s_ret == 38 && c_ret == 38)); then
		result=notrun
	elif ((s_ret != 0 || c_ret != 0)); then
		result="fail ($s_ret/$c_ret)"
	else
		result=pass
	fi
}

declare -A count
for k in c_pass c_notrun c_fail g_pass g_notrun g_fail g_notyet regress; do count[$k]=0; done
failed_logs=()
start=$SECONDS
echo "fabtests short list over $prov: C server with C client, and with the Go client (cmd/ft)"
echo "C: $bin; Go: $gobin; $( ((netns)) && echo "each pair in a network namespace of its own" || echo "host loopback, free data ports")"
echo
printf '%-46s %-16s %s\n' "# test" "C-C" "C-Go"
n=0
for line in "${tests[@]}"; do
	n=$((n + 1))
	prog=${line%% *}
	cres="-"
	if ((!go_only)); then
		run_line "$n" c "$line"
		cres=$result
		case $cres in
		pass) count[c_pass]=$((count[c_pass] + 1)) ;;
		notrun) count[c_notrun]=$((count[c_notrun] + 1)) ;;
		*)
			count[c_fail]=$((count[c_fail] + 1))
			failed_logs+=("$(printf '%02d' "$n")-c")
			;;
		esac
	fi
	if has_ft "${prog#fi_}"; then
		run_line "$n" go "$line"
		gres=$result
		case $gres in
		pass) count[g_pass]=$((count[g_pass] + 1)) ;;
		notrun) count[g_notrun]=$((count[g_notrun] + 1)) ;;
		*)
			count[g_fail]=$((count[g_fail] + 1))
			failed_logs+=("$(printf '%02d' "$n")-go")
			;;
		esac
		if [[ ($cres == pass && $gres != pass) || ($go_only == 1 && $gres == fail*) ]]; then
			count[regress]=$((count[regress] + 1))
		fi
	else
		gres="not yet in cmd/ft"
		count[g_notyet]=$((count[g_notyet] + 1))
	fi
	printf '%-46s %-16s %s\n' "$line" "$cres" "$gres"
done
echo
if ((!go_only)); then
	echo "C against C:          ${count[c_pass]} pass, ${count[c_notrun]} notrun, ${count[c_fail]} fail"
fi
echo "C server, Go client:  ${count[g_pass]} pass, ${count[g_notrun]} notrun, ${count[g_fail]} fail, ${count[g_notyet]} not yet in cmd/ft"
echo "lines C passes that the Go client does not: ${count[regress]}; $((SECONDS - start)) s"
if ((${#failed_logs[@]} > 0)); then
	if ((!keep_logs)); then
		keep=$(mktemp -d "${TMPDIR:-/tmp}/ft-short-logs.XXXXXX")
		cp -r "$logdir"/. "$keep"/
		logdir=$keep
	fi
	echo "output of the failed runs: $logdir/{$(
		IFS=,
		echo "${failed_logs[*]}"
	)}.{cmd,server,client}"
elif ((keep_logs)); then
	echo "output of every run: $logdir"
fi
((count[regress] == 0))
