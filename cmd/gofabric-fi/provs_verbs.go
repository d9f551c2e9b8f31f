//go:build cgo && linux && verbs

package main

import _ "github.com/gofabric/gofabric/providers/verbs" // registers verbs (RDMA devices)

// With the build tag verbs the library offers goverbs too.
func init() { offered = append(offered, "verbs") }
