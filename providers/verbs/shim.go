//go:build verbs && cgo

package verbs

// The C side: thin shims over libibverbs for what cgo cannot call
// directly (macros and inline functions). No Go pointer is kept by C.

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

// ibv_query_port is a macro in verbs.h.
static int gf_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a) {
	return ibv_query_port(c, port, a);
}

// gf_event is an rdma_cm event copied out of librdmacm's struct, so that
// the event can be acknowledged at once and Go keeps no C pointer into
// it.
struct gf_event {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	int type;
	int status;
	uint8_t data_len;
	uint8_t data[256];
};

// gf_get_event takes the next event of a non-blocking channel: 0, or
// -errno (-EAGAIN when there is none).
static int gf_get_event(struct rdma_event_channel *ch, struct gf_event *out) {
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		return -errno;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	out->type = ev->event;
	out->status = ev->status;
	out->data_len = 0;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		out->data_len = ev->param.conn.private_data_len;
		memcpy(out->data, ev->param.conn.private_data, out->data_len);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

// gf_set_nonblock makes fd non-blocking: 0 or -errno.
static int gf_set_nonblock(int fd) {
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

// gf_conn_param fills a connection parameter block with private data
// (copied by librdmacm before the call returns).
static void gf_conn_param(struct rdma_conn_param *p, const void *data, uint8_t len) {
	memset(p, 0, sizeof *p);
	p->private_data = data;
	p->private_data_len = len;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

static int gf_errno(int rc) { return rc ? errno : 0; }
*/
import "C"

import (
	"net/netip"
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

// --- rdma_cm (librdmacm): thin wrappers; the logic is in cm.go. ---

// cmChannelC is an rdma_cm event channel.
type cmChannelC = *C.struct_rdma_event_channel

// cmIDC is an rdma_cm identifier. Go holds these as values for the calls
// below; C holds no Go pointer (ids are created with a nil context).
type cmIDC = *C.struct_rdma_cm_id

// cmEventC is an event copied out of librdmacm.
type cmEventC struct {
	id, listen cmIDC
	typ        int
	status     int
	data       []byte
}

// errnoErr maps an errno to an fi.Errno-coded error naming op.
func errnoErr(op string, e syscall.Errno) error {
	return errors.Wrapf(fi.Code(e), "verbs: %s: %v", op, e)
}

func createChannel() (cmChannelC, int, error) {
	ch, errno := C.rdma_create_event_channel()
	if ch == nil {
		return nil, -1, errnoErr("rdma_create_event_channel", errno.(syscall.Errno))
	}
	if rc := C.gf_set_nonblock(ch.fd); rc != 0 {
		C.rdma_destroy_event_channel(ch)
		return nil, -1, errnoErr("fcntl O_NONBLOCK", syscall.Errno(-rc))
	}
	return ch, int(ch.fd), nil
}

func destroyChannel(ch cmChannelC) { C.rdma_destroy_event_channel(ch) }

// getEvent takes the next event: syscall.EAGAIN when there is none.
func getEvent(ch cmChannelC) (cmEventC, error) {
	var ev C.struct_gf_event
	if rc := C.gf_get_event(ch, &ev); rc != 0 {
		return cmEventC{}, syscall.Errno(-rc)
	}
	out := cmEventC{id: ev.id, listen: ev.listen_id, typ: int(ev._type), status: int(ev.status)}
	if ev.data_len > 0 {
		out.data = C.GoBytes(unsafe.Pointer(&ev.data[0]), C.int(ev.data_len))
	}
	return out, nil
}

func createID(ch cmChannelC) (cmIDC, error) {
	var id cmIDC
	if rc, errno := C.rdma_create_id(ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		return nil, errnoErr("rdma_create_id", errno.(syscall.Errno))
	}
	return id, nil
}

func destroyID(id cmIDC) { C.rdma_destroy_id(id) }

// sockaddr builds a C sockaddr for ap in C memory; free it with C.free.
func sockaddr(ap netip.AddrPort) (*C.struct_sockaddr, error) {
	_, b, err := fi.SockaddrFromAddrPort(ap)
	if err != nil {
		return nil, err
	}
	p := C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_sockaddr_storage{})))
	C.memcpy(p, unsafe.Pointer(&b[0]), C.size_t(len(b)))
	return (*C.struct_sockaddr)(p), nil
}

func bindAddr(id cmIDC, ap netip.AddrPort) error {
	sa, err := sockaddr(ap)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(sa))
	if rc, errno := C.rdma_bind_addr(id, sa); rc != 0 {
		return errnoErr("rdma_bind_addr", errno.(syscall.Errno))
	}
	return nil
}

func listen(id cmIDC, backlog int) error {
	if rc, errno := C.rdma_listen(id, C.int(backlog)); rc != 0 {
		return errnoErr("rdma_listen", errno.(syscall.Errno))
	}
	return nil
}

func resolveAddr(id cmIDC, dst netip.AddrPort, timeoutMS int) error {
	sa, err := sockaddr(dst)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(sa))
	if rc, errno := C.rdma_resolve_addr(id, nil, sa, C.int(timeoutMS)); rc != 0 {
		return errnoErr("rdma_resolve_addr", errno.(syscall.Errno))
	}
	return nil
}

func resolveRoute(id cmIDC, timeoutMS int) error {
	if rc, errno := C.rdma_resolve_route(id, C.int(timeoutMS)); rc != 0 {
		return errnoErr("rdma_resolve_route", errno.(syscall.Errno))
	}
	return nil
}

// qpRes are the verbs resources behind one connection's queue pair.
type qpRes struct {
	pd *C.struct_ibv_pd
	cq *C.struct_ibv_cq
}

// createQP gives id an RC queue pair (rdma_create_qp) with its own PD and
// CQ.
func createQP(id cmIDC) (*qpRes, error) {
	r := &qpRes{}
	var errno error
	if r.pd, errno = C.ibv_alloc_pd(id.verbs); r.pd == nil {
		return nil, errnoErr("ibv_alloc_pd", errno.(syscall.Errno))
	}
	if r.cq, errno = C.ibv_create_cq(id.verbs, 16, nil, nil, 0); r.cq == nil {
		C.ibv_dealloc_pd(r.pd)
		return nil, errnoErr("ibv_create_cq", errno.(syscall.Errno))
	}
	var a C.struct_ibv_qp_init_attr
	a.send_cq, a.recv_cq, a.qp_type = r.cq, r.cq, C.IBV_QPT_RC
	a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge = 16, 16, 1, 1
	if rc, errno := C.rdma_create_qp(id, r.pd, &a); rc != 0 {
		C.ibv_destroy_cq(r.cq)
		C.ibv_dealloc_pd(r.pd)
		return nil, errnoErr("rdma_create_qp", errno.(syscall.Errno))
	}
	return r, nil
}

// destroyQP frees id's queue pair and r.
func destroyQP(id cmIDC, r *qpRes) {
	C.rdma_destroy_qp(id)
	C.ibv_destroy_cq(r.cq)
	C.ibv_dealloc_pd(r.pd)
}

// withData runs f with data copied to C memory (NULL for none).
func withData(data []byte, f func(p unsafe.Pointer, n C.uint8_t) error) error {
	if len(data) == 0 {
		return f(nil, 0)
	}
	p := C.CBytes(data)
	defer C.free(p)
	return f(p, C.uint8_t(len(data)))
}

func connect(id cmIDC, data []byte) error {
	return withData(data, func(p unsafe.Pointer, n C.uint8_t) error {
		var cp C.struct_rdma_conn_param
		C.gf_conn_param(&cp, p, n)
		if rc, errno := C.rdma_connect(id, &cp); rc != 0 {
			return errnoErr("rdma_connect", errno.(syscall.Errno))
		}
		return nil
	})
}

func accept(id cmIDC, data []byte) error {
	return withData(data, func(p unsafe.Pointer, n C.uint8_t) error {
		var cp C.struct_rdma_conn_param
		C.gf_conn_param(&cp, p, n)
		if rc, errno := C.rdma_accept(id, &cp); rc != 0 {
			return errnoErr("rdma_accept", errno.(syscall.Errno))
		}
		return nil
	})
}

func reject(id cmIDC, data []byte) error {
	return withData(data, func(p unsafe.Pointer, n C.uint8_t) error {
		if rc, errno := C.rdma_reject(id, p, n); rc != 0 {
			return errnoErr("rdma_reject", errno.(syscall.Errno))
		}
		return nil
	})
}

// srcPort is the port id is bound to (rdma_get_src_port), host order.
func srcPort(id cmIDC) uint16 {
	p := uint16(C.rdma_get_src_port(id))
	return p>>8 | p<<8
}

func disconnect(id cmIDC) error {
	if rc, errno := C.rdma_disconnect(id); rc != 0 {
		return errnoErr("rdma_disconnect", errno.(syscall.Errno))
	}
	return nil
}

// rdma_cm event types, librdmacm's values.
const (
	evAddrResolved    = int(C.RDMA_CM_EVENT_ADDR_RESOLVED)
	evAddrError       = int(C.RDMA_CM_EVENT_ADDR_ERROR)
	evRouteResolved   = int(C.RDMA_CM_EVENT_ROUTE_RESOLVED)
	evRouteError      = int(C.RDMA_CM_EVENT_ROUTE_ERROR)
	evConnectRequest  = int(C.RDMA_CM_EVENT_CONNECT_REQUEST)
	evConnectResponse = int(C.RDMA_CM_EVENT_CONNECT_RESPONSE)
	evConnectError    = int(C.RDMA_CM_EVENT_CONNECT_ERROR)
	evUnreachable     = int(C.RDMA_CM_EVENT_UNREACHABLE)
	evRejected        = int(C.RDMA_CM_EVENT_REJECTED)
	evEstablished     = int(C.RDMA_CM_EVENT_ESTABLISHED)
	evDisconnected    = int(C.RDMA_CM_EVENT_DISCONNECTED)
	evDeviceRemoval   = int(C.RDMA_CM_EVENT_DEVICE_REMOVAL)
	evTimewaitExit    = int(C.RDMA_CM_EVENT_TIMEWAIT_EXIT)
)

// eventName is librdmacm's rdma_event_str.
func eventName(t int) string { return C.GoString(C.rdma_event_str(C.enum_rdma_cm_event_type(t))) }
