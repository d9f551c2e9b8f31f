//go:build cgo && linux && verbs

package main

// providers/all registers verbs (RDMA devices) and, under this build tag,
// rxm over it, "verbs;ofi_rxm", which ofi_gorxm offers C as
// "goverbs;ofi_gorxm".
import _ "github.com/gofabric/gofabric/providers/all"

// With the build tag verbs the library offers goverbs too.
func init() { offered = append(offered, "verbs") }
