//go:build !linux

package udp

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/linuxonly"
)

// The udp provider runs on Linux only: it drives its sockets through epoll and Linux's socket options. Elsewhere the package registers
// a stand-in of the same name that offers nothing (internal/linuxonly), so
// that the API compiles on every OS and GetInfo's ENODATA names "udp" and
// says why.
func init() { linuxonly.Register("udp", fi.MakeVersion(117, 0)) }
