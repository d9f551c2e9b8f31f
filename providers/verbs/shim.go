//go:build verbs && cgo

package verbs

// The C side: thin shims over libibverbs for what cgo cannot call
// directly (macros and inline functions). No Go pointer is kept by C.

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <infiniband/verbs.h>
#include <stdlib.h>

// ibv_query_port is a macro in verbs.h.
static int gf_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a) {
	return ibv_query_port(c, port, a);
}
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// portInfo is what GetInfo needs of one port of a device.
type portInfo struct {
	num       int
	active    bool
	linkLayer string // "InfiniBand", "Ethernet"
	mtu       int    // active MTU in bytes
}

// deviceInfo is one RDMA device with its ports.
type deviceInfo struct {
	name     string
	maxQPWR  int
	maxSGE   int
	maxCQE   int
	maxMRSiz uint64
	ports    []portInfo
}

// listDevices opens every RDMA device, queries it and its ports, and
// closes it again (ibv_get_device_list, ibv_query_device, ibv_query_port).
// It returns fi.ENODEV-coded errors when the host has no RDMA stack.
func listDevices() ([]deviceInfo, error) {
	var n C.int
	list, errno := C.ibv_get_device_list(&n)
	if list == nil {
		code := fi.ENODEV
		if e, ok := errno.(syscall.Errno); ok && e != 0 && e != syscall.ENOSYS {
			code = fi.Code(e)
		}
		return nil, errors.Wrapf(code, "verbs: ibv_get_device_list: %v (no RDMA stack in this kernel?)", errno)
	}
	defer C.ibv_free_device_list(list)
	var out []deviceInfo
	for _, d := range unsafe.Slice(list, int(n)) {
		name := C.GoString(C.ibv_get_device_name(d))
		ctx, errno := C.ibv_open_device(d)
		if ctx == nil {
			return nil, errors.Wrapf(fi.ENODEV, "verbs: ibv_open_device(%s): %v", name, errno)
		}
		var attr C.struct_ibv_device_attr
		if rc := C.ibv_query_device(ctx, &attr); rc != 0 {
			C.ibv_close_device(ctx)
			return nil, errors.Wrapf(fi.EIO, "verbs: ibv_query_device(%s): %d", name, int(rc))
		}
		dev := deviceInfo{name: name, maxQPWR: int(attr.max_qp_wr), maxSGE: int(attr.max_sge),
			maxCQE: int(attr.max_cqe), maxMRSiz: uint64(attr.max_mr_size)}
		for p := 1; p <= int(attr.phys_port_cnt); p++ {
			var pa C.struct_ibv_port_attr
			if rc := C.gf_query_port(ctx, C.uint8_t(p), &pa); rc != 0 {
				continue
			}
			pi := portInfo{num: p, active: pa.state == C.IBV_PORT_ACTIVE, linkLayer: "InfiniBand",
				mtu: 128 << int(pa.active_mtu)}
			if pa.link_layer == C.IBV_LINK_LAYER_ETHERNET {
				pi.linkLayer = "Ethernet"
			}
			dev.ports = append(dev.ports, pi)
		}
		C.ibv_close_device(ctx)
		out = append(out, dev)
	}
	return out, nil
}
