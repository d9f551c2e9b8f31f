//go:build !verbs || !cgo

package verbs

// offerReason says why a build without the verbs tag offers nothing.
func offerReason() string {
	return "built without RDMA support: rebuild with cgo and the build tag 'verbs' " +
		"(go build -tags verbs; needs libibverbs-dev and librdmacm-dev)"
}
