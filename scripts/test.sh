#!/usr/bin/env bash
# The project's test command (the README's second command): formatting,
# vet, staticcheck, the race-enabled test suite, and the pure-Go build.
# Needs only Go; staticcheck is fetched through the module proxy when it is
# not on PATH. Tests that compare with C libfabric need the Debian packages
# libfabric-bin and libfabric-dev (.ci/run installs them); without them those
# tests skip, except when CI is set.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
step() { printf '\n=== %s\n' "$*"; }

step "gofmt -l"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet ./..."
go vet ./...

step "staticcheck ./..."
staticcheck() {
	if command -v staticcheck >/dev/null 2>&1; then
		command staticcheck "$@"
	else
		go run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" "$@"
	fi
}
staticcheck ./...

step "CGO_ENABLED=0 go build ./..."
CGO_ENABLED=0 go build ./...

step "go test -race -shuffle=on ./..."
go test -race -shuffle=on -timeout 20m ./...

step "verbs provider: build tag, and its tests in the Soft-RoCE VM"
# The verbs implementation needs cgo and rdma-core's headers (build tag
# verbs); its tests need an RDMA device, which these hosts get only inside
# the qemu guest of ../shared/tools/verbs-vm (Soft-RoCE, rxe0).
vm=../shared/tools/verbs-vm/run-in-vm.sh
if [ ! -f /usr/include/infiniband/verbs.h ] || [ ! -f /usr/include/rdma/rdma_cma.h ]; then
	[ -z "${CI:-}" ] || { echo "CI: libibverbs-dev and librdmacm-dev are missing"; exit 1; }
	echo "skipped: libibverbs-dev/librdmacm-dev not installed"
else
	verbs_pkgs=(./providers/verbs/... ./cmd/fi_pingpong/...)
	go vet -tags verbs "${verbs_pkgs[@]}"
	staticcheck -tags verbs "${verbs_pkgs[@]}"
	if [ -x "$vm" ] && command -v qemu-system-x86_64 >/dev/null 2>&1 && command -v mmdebstrap >/dev/null 2>&1; then
		export VERBS_VM_DIR=${VERBS_VM_DIR:-$PWD/.vm-cache}
		# The guest gets gcc and libfabric-dev so that the interop test can
		# compile its C peer there; CI (when set) reaches the guest, where
		# a missing C reference then fails instead of skipping.
		export VERBS_VM_PACKAGES=${VERBS_VM_PACKAGES:-gcc,libc6-dev,libfabric-dev}
		vmexec="$(cd "$(dirname "$vm")" && pwd)/$(basename "$vm") -e CI"
		# The provider's tests (fabtests cm, msg, rma and the C CM peer
		# included), then Go and C fi_pingpong -p verbs -e msg against each
		# other in the guest.
		go test -race -tags verbs -count=1 -exec "$vmexec" ./providers/verbs/...
		go test -race -tags verbs -count=1 -run Verbs -exec "$vmexec" ./cmd/fi_pingpong/internal/pingpong/
	elif [ -n "${CI:-}" ]; then
		echo "CI: the Soft-RoCE VM is not available ($vm setup installs it)"; exit 1
	else
		echo "skipped the VM run: needs $vm and its setup (qemu-system-x86, mmdebstrap)"
		go test -tags verbs -count=1 ./providers/verbs/...
	fi
fi

step "fuzz smoke (100000 inputs per target)"
# A count, not a duration: with -fuzztime=10s, Go 1.26's fuzz coordinator
# can fail a target with a bare "context deadline exceeded" when a worker is
# mid-input at the deadline (golang/go#75804, fixed in Go 1.27); a count has
# no deadline to race. 100000 inputs take 5-10 s per target on 2 cores.
for target in ./fi:FuzzParseAddr ./providers/tcp:FuzzCMHeader ./providers/tcp:FuzzDataHeader ./providers/tcp:FuzzRxmHeader ./providers/tcp:FuzzRxmCMRecord; do
	pkg=${target%%:*} fn=${target##*:}
	go test -run='^$' -fuzz="^${fn}\$" -fuzztime="${FUZZTIME:-100000x}" "$pkg"
done
