//go:build !linux

package tcp

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/linuxonly"
)

// The tcp provider runs on Linux only: it drives its sockets through epoll and Linux's socket options. Elsewhere the package registers
// a stand-in of the same name that offers nothing (internal/linuxonly), so
// that the API compiles on every OS and GetInfo's ENODATA names "tcp" and
// says why.
func init() { linuxonly.Register("tcp", fi.MakeVersion(117, 0)) }
