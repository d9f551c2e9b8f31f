#!/usr/bin/env bash
# The project's test command (the README's second command): formatting,
# vet, staticcheck, the race-enabled test suite, the verbs build and its
# VM run, the fuzz smoke and the pure-Go build.
#
# Needs only Go and a Debian machine. What else it uses it gets itself:
#   - staticcheck, through the Go module proxy when it is not on PATH;
#   - Debian packages (gcc for -race and the C peers, libfabric-bin and
#     libfabric-dev for the C references, iproute2 and nftables for the
#     network-namespace tests, rdma-core's headers for the verbs build):
#     installed with apt-get when run as root, otherwise named, and the
#     tests that need them skip with the reason.
#
# One switch decides whether a missing external piece fails or skips:
# GOFABRIC_STRICT=1 (.ci/run sets it) makes every test that needs a
# missing tool, root, a network namespace, the C fabtests (FABTESTS_BIN)
# or the Soft-RoCE VM (VERBS_VM) fail instead of skip.
#
# Environment: GOFABRIC_STRICT, FABTESTS_BIN, VERBS_VM (the VM script of
# the verbs tests; unset skips the VM run), GOFABRIC_NO_APT=1 (never call
# apt-get), FUZZTIME (default 100000x).
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
step() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%T)"; }
strict() { case "${GOFABRIC_STRICT:-}" in 1 | t | T | true | TRUE | True) return 0 ;; esac; return 1; }
# missing WHAT: skips the piece with a message, or fails under GOFABRIC_STRICT.
missing() {
	if strict; then
		echo "GOFABRIC_STRICT is set and a needed piece is missing: $*" >&2
		exit 1
	fi
	echo "skipped: $*"
}

step "Debian packages"
# The package each piece comes from, keyed by a file it installs.
declare -A pkgfile=(
	[gcc]=/usr/bin/gcc
	[libc6-dev]=/usr/include/stdio.h
	[libfabric-bin]=/usr/bin/fi_info
	[libfabric-dev]=/usr/include/rdma/fabric.h
	[iproute2]=/usr/sbin/ip
	[nftables]=/usr/sbin/nft
	[libibverbs-dev]=/usr/include/infiniband/verbs.h
	[librdmacm-dev]=/usr/include/rdma/rdma_cma.h
)
need=()
for p in gcc libc6-dev libfabric-bin libfabric-dev iproute2 nftables libibverbs-dev librdmacm-dev; do
	[ -e "${pkgfile[$p]}" ] || need+=("$p")
done
if [ ${#need[@]} -eq 0 ]; then
	echo "all present"
elif [ "$(id -u)" = 0 ] && [ -z "${GOFABRIC_NO_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
	echo "missing Debian packages: ${need[*]}"
	echo "  (as root: apt-get install ${need[*]}); the tests that need them skip"
fi
export PATH="$PATH:/usr/sbin:/sbin"
# -race needs cgo, and cgo needs a C compiler.
race=-race
if ! command -v gcc >/dev/null 2>&1; then
	missing "gcc (Debian package gcc): the tests run without -race"
	race=
fi

step "gofmt -l"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

step "go vet ./..."
go vet ./...

step "staticcheck ./..."
# The one on PATH when there is one, otherwise the pinned version through
# the module proxy (built once into Go's cache).
if sc=$(type -P staticcheck); then
	staticcheck() { "$sc" "$@"; }
else
	staticcheck() { go run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" "$@"; }
fi
staticcheck ./...

step "CGO_ENABLED=0 go build ./..."
CGO_ENABLED=0 go build ./...

step "go test $race -shuffle=on ./..."
go test $race -shuffle=on -timeout 20m ./...

step "examples/loopback: a provider in its own module, from the public kit only"
# Its own module (a replace of ../..), which the root's ./... does not
# reach; its tests run the conformance suite and prove with go list that
# it links no internal package.
(
	cd examples/loopback
	go vet ./...
	staticcheck ./...
	go test $race -shuffle=on -count=1 ./...
)

step "verbs provider: build tag, and its tests in the Soft-RoCE VM"
# The verbs implementation needs cgo and rdma-core's headers (build tag
# verbs); its tests need an RDMA device, which these hosts get only inside
# a qemu guest with Soft-RoCE (rxe0): VERBS_VM names the script that runs
# a test binary there (.ci/run passes it).
if [ ! -f /usr/include/infiniband/verbs.h ] || [ ! -f /usr/include/rdma/rdma_cma.h ] || [ -z "$race" ]; then
	missing "the verbs build: needs gcc, libibverbs-dev and librdmacm-dev"
else
	verbs_pkgs=(./providers/verbs/... ./providers/rxm/... ./providers/all/... ./cmd/fi_pingpong/... ./cmd/ft/... ./cmd/gofabric-fi/...)
	go vet -tags verbs "${verbs_pkgs[@]}"
	staticcheck -tags verbs "${verbs_pkgs[@]}"
	if [ -n "${VERBS_VM:-}" ] && [ -x "${VERBS_VM}" ]; then
		export VERBS_VM_DIR=${VERBS_VM_DIR:-$PWD/.vm-cache}
		# The guest gets gcc and libfabric-dev so that the interop test can
		# compile its C peer there; GOFABRIC_STRICT reaches the guest, where
		# a missing C reference then fails instead of skipping.
		export VERBS_VM_PACKAGES=${VERBS_VM_PACKAGES:-gcc,libc6-dev,libfabric-dev}
		# Without hardware KVM the guest runs under qemu's TCG, whose
		# default CPU there (-cpu max) offers AVX2: glibc's memset and
		# memcpy and Go's memmove then run emulated 256-bit code. As a
		# plain x86-64 (qemu64) they take the SSE2 paths, and the guest
		# steps below ran about twice as fast (cmd/ft's verbs pairs 194 s
		# instead of 434, an AMD EPYC host, 2026-11-29). The same
		# test as run-in-vm.sh's for hardware KVM, where it picks -cpu host.
		if ! { [ -r /dev/kvm ] && [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && [ ! -d /sys/module/kvm_pvm ]; }; then
			export VERBS_VM_CPU=${VERBS_VM_CPU:-qemu64}
		fi
		vmexec="$(cd "$(dirname "$VERBS_VM")" && pwd)/$(basename "$VERBS_VM") -e GOFABRIC_STRICT"
		# The provider's tests (fabtests cm, msg, rma, dgram and multicast,
		# the last with member processes joining one group in the guest,
		# and the C CM peer included), then Go and C fi_pingpong -p verbs
		# -e msg, -e rdm and -e dgram against each other in the guest.
		# The two multicast tests wait about 50 s each in rxe's
		# ibv_destroy_qp of the queue pair that sent to the group (see
		# providers/verbs' Close): they run in a VM of their own beside
		# the others, which mostly sleeps, and are waited for at the end.
		mc_tests='TestConformanceDgramMulticast|TestUDMulticastLeave'
		mc_log=$(mktemp)
		go test -race -tags verbs -count=1 -run "$mc_tests" -exec "$vmexec" ./providers/verbs/ >"$mc_log" 2>&1 &
		mc_pid=$!
		go test -race -tags verbs -count=1 -skip "$mc_tests" -exec "$vmexec" ./providers/verbs/...
		# DEVICE_REMOVAL under a listening passive endpoint: the test removes
		# rxe0, so it runs alone, in a VM of its own (about 10 s).
		go test -race -tags verbs -count=1 -run TestDeviceRemoval -exec "$vmexec -e GOFABRIC_VERBS_DEVICE_REMOVAL=rxe0" ./providers/verbs/
		# rxm over verbs (FI_EP_RDM): fabtests' rdm, tagged and rma/rdm
		# groups, and Go and C fi_pingpong -e rdm both ways (msg and
		# tagged, -c, every size).
		go test -race -tags verbs -count=1 -run Verbs -exec "$vmexec" ./providers/rxm/
		go test -race -tags verbs -count=1 -run Verbs -exec "$vmexec" ./cmd/fi_pingpong/internal/pingpong/
		# gofabric's library loaded into C libfabric over verbs: C's
		# fi_pingpong on goverbs (msg), goverbs;ofi_gorxm and C's
		# ofi_rxm over goverbs (rdm). The guest has no Go: the library
		# is built here and its directory shared.
		gfi_dir=$(mktemp -d)
		sh cmd/gofabric-fi/install.sh "$gfi_dir" -tags verbs >/dev/null
		go test -race -tags verbs -count=1 -run TestVerbsFromC -exec "$vmexec -e GOFABRIC_FI_VERBS_DIR=$gfi_dir -s $gfi_dir" ./cmd/gofabric-fi/
		rm -rf "$gfi_dir"
		# libfabric's C fabtests against cmd/ft over verbs (MSG): the guest
		# gets FABTESTS_BIN at the same path, and 4 GiB, for the pairs
		# run two at a time and a C pingpong takes 1 GiB (see
		# TestVerbsInterop). Under TCG on a slower host (an AMD EPYC VM,
		# 2026-11-29) they took 650 s one at a time, past go test's
		# default 10-minute limit.
		if [ -n "${FABTESTS_BIN:-}" ] && [ -d "$FABTESTS_BIN" ]; then
			go test -race -tags verbs -count=1 -timeout 25m -run TestVerbsInterop -exec "$vmexec -m 4096 -e FABTESTS_BIN -s $FABTESTS_BIN" ./cmd/ft/internal/ft/
		else
			missing "cmd/ft's verbs pairs with libfabric's C fabtests: FABTESTS_BIN does not name their bin/ (.ci/run builds them)"
		fi
		mc_status=0
		wait "$mc_pid" || mc_status=$?
		echo "--- providers/verbs multicast ($mc_tests), run beside the others:"
		cat "$mc_log"
		rm -f "$mc_log"
		[ "$mc_status" -eq 0 ] || exit "$mc_status"
	else
		missing "the Soft-RoCE VM run of the verbs tests: VERBS_VM does not name its script (.ci/run passes it)"
		go test -tags verbs -count=1 ./providers/verbs/...
	fi
fi

step "fuzz smoke (100000 inputs per target)"
# A count, not a duration: with -fuzztime=10s, Go 1.26's fuzz coordinator
# can fail a target with a bare "context deadline exceeded" when a worker is
# mid-input at the deadline (golang/go#75804, fixed in Go 1.27); a count has
# no deadline to race. 100000 inputs take 5-10 s per target on 2 cores.
for target in ./fi:FuzzParseAddr ./internal/getopt:FuzzParse ./providers/tcp:FuzzCMHeader ./providers/tcp:FuzzDataHeader ./internal/rxmwire:FuzzRxmHeader ./internal/rxmwire:FuzzRxmCMRecord ./internal/rxmwire:FuzzRxmAtomic; do
	pkg=${target%%:*} fn=${target##*:}
	go test -run='^$' -fuzz="^${fn}\$" -fuzztime="${FUZZTIME:-100000x}" "$pkg"
done

step "all passed"
