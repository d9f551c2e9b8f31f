//go:build !linux

package shm

import (
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/linuxonly"
)

// The shm provider runs on Linux only: its peers attach to each other's memory with process_vm_readv and process_vm_writev and share regions in /dev/shm. Elsewhere the package registers
// a stand-in of the same name that offers nothing (internal/linuxonly), so
// that the API compiles on every OS and GetInfo's ENODATA names "shm" and
// says why.
func init() { linuxonly.Register("shm", fi.MakeVersion(117, 0)) }
