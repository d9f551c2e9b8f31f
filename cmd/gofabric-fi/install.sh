#!/bin/sh
# install.sh DIR [go build flags]: builds gofabric's C libfabric provider
# library into DIR/libgofabric-fi.so and links libgoshm-fi.so,
# libgoudp-fi.so and libofi_gorxm-fi.so (gofabric's rxm: FI_EP_RDM over
# gotcp and goverbs) to it (and libgoverbs-fi.so with -tags verbs): C libfabric
# calls the library's fi_prov_ini once per name, and each call registers
# one more provider. Then: FI_PROVIDER_PATH=DIR fi_info -l
#
# The library is built with the Go runtime's asynchronous preemption off
# (GODEBUG asyncpreemptoff=1, added to the module's default GODEBUG): its
# preemption signal (SIGURG) would otherwise interrupt, now and then, a
# system call of an application thread that has called into the library,
# and poll(2) on a wait descriptor would fail with EINTR, which C's
# fabtests and libfabric's own wait code (ofi_rxm's) take for an error.
# Go build flags given after DIR come after the -ldflags set here; a
# -ldflags among them replaces it.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [go build flags]" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
shift
cd "$(dirname "$0")"
godebug=$(go list -f '{{.DefaultGODEBUG}}' .)
go build -buildmode=c-shared -ldflags="-X=runtime.godebugDefault=${godebug:+$godebug,}asyncpreemptoff=1" "$@" -o "$dir/libgofabric-fi.so" .
names="goshm goudp ofi_gorxm"
case " $* " in *verbs*) names="$names goverbs" ;; esac
for p in $names; do
	ln -sf libgofabric-fi.so "$dir/lib$p-fi.so"
done
echo "installed gotcp $names in $dir: FI_PROVIDER_PATH=$dir fi_info -l"
