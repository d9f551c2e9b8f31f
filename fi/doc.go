// Package fi is the root of gofabric: the Go form of libfabric's fabric.h,
// fi_errno.h and fi_domain.h (fi_getinfo(3), fi_fabric(3), fi_domain(3),
// fi_av(3), fi_mr(3), fi_errno(3)).
//
// It holds the Info description and its attributes, the enums and bit sets
// with libfabric's numeric values, the Errno codes, the provider registry,
// GetInfo, and the Fabric, Domain, AV and MR interfaces.
package fi
