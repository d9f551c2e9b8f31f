// Package fi is the root of gofabric: the Go form of libfabric's fabric.h,
// fi_errno.h and fi_domain.h (fi_getinfo(3), fi_fabric(3), fi_domain(3),
// fi_av(3), fi_mr(3), fi_errno(3)).
//
// It holds the Info description and its attributes, the enums and bit sets
// with libfabric's numeric values and fi_tostr names, the Errno codes, the
// provider registry, GetInfo, and the Fabric, Domain, AV and MR interfaces.
//
// # Providers
//
// Providers register themselves from init with [Register], like
// database/sql drivers; import github.com/gofabric/gofabric/providers/all
// (or one provider package) for the side effect. [GetInfo] asks every
// registered provider, [GetInfoFrom] an explicit list.
//
// # Errors
//
// Every error the framework and its providers return carries an [Errno];
// [Code] finds it. Data-path calls return bare Errno values and never
// allocate; control-path calls wrap one with context.
//
// # Environment
//
//   - FI_PROVIDER: comma list of the providers GetInfo may use; a leading
//     "^" excludes the listed ones instead.
//   - FI_LOG_LEVEL: warn, trace, info or debug; unset logs nothing, as
//     libfabric 1.17 does. See [Logger].
//   - FI_LOG_PROV: log only this provider; "^name" excludes it.
//
// [Params] lists these and every provider's variables.
package fi
