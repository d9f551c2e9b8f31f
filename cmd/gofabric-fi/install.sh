#!/bin/sh
# install.sh DIR [go build flags]: builds gofabric's C libfabric provider
# library into DIR/libgofabric-fi.so and links libgoshm-fi.so and
# libgoudp-fi.so to it (and libgoverbs-fi.so with -tags verbs): C libfabric
# calls the library's fi_prov_ini once per name, and each call registers
# one more provider. Then: FI_PROVIDER_PATH=DIR fi_info -l
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [go build flags]" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
shift
cd "$(dirname "$0")"
go build -buildmode=c-shared "$@" -o "$dir/libgofabric-fi.so" .
names="goshm goudp"
case " $* " in *verbs*) names="$names goverbs" ;; esac
for p in $names; do
	ln -sf libgofabric-fi.so "$dir/lib$p-fi.so"
done
echo "installed gotcp $names in $dir: FI_PROVIDER_PATH=$dir fi_info -l"
