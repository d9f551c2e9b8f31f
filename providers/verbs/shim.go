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
// (copied by librdmacm before the call returns). The read depths ask for
// the most the device allows (librdmacm clamps RDMA_MAX_RESP_RES and
// RDMA_MAX_INIT_DEPTH to it; the acceptor's side also to what the
// connector asked), as C's verbs provider does: a rendezvous issues
// several RDMA reads at once, and a depth of 1 runs them one by one.
// flow_control and rnr_retry_count are C's too (vrb_ep_prepare_rdma_cm_param);
// retry is the transport retry count (the kernel sends at most 7).
static void gf_conn_param(struct rdma_conn_param *p, const void *data, uint8_t len, int retry) {
	memset(p, 0, sizeof *p);
	p->private_data = data;
	p->private_data_len = len;
	p->responder_resources = RDMA_MAX_RESP_RES;
	p->initiator_depth = RDMA_MAX_INIT_DEPTH;
	p->flow_control = 1;
	p->retry_count = (uint8_t)retry;
	p->rnr_retry_count = 7;
}

static int gf_errno(int rc) { return rc ? errno : 0; }

// gf_qp_read_depth reports a queue pair's RDMA read depths as initiator
// and as responder (ibv_query_qp): 0 or errno.
static int gf_qp_read_depth(struct ibv_qp *qp, int *init, int *resp) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(qp, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &ia))
		return errno ? errno : EIO;
	*init = a.max_rd_atomic;
	*resp = a.max_dest_rd_atomic;
	return 0;
}

// --- data path ---

// gf_wc is a work completion reduced to what Go reads, with the immediate
// data in host order (ibv_wc keeps it big-endian in an anonymous union).
struct gf_wc {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm;
	int status;
	int opcode;
	int has_imm;
};

// gf_poll_cq polls up to n completions (ibv_poll_cq, inline in verbs.h)
// into scratch and copies them into out, both C arrays of n entries: the
// count, or -1.
static int gf_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *scratch, struct gf_wc *out) {
	int got = ibv_poll_cq(cq, n, scratch);
	for (int i = 0; i < got; i++) {
		out[i].wr_id = scratch[i].wr_id;
		out[i].status = scratch[i].status;
		out[i].opcode = scratch[i].opcode;
		out[i].byte_len = scratch[i].byte_len;
		out[i].has_imm = (scratch[i].wc_flags & IBV_WC_WITH_IMM) != 0;
		out[i].imm = out[i].has_imm ? be32toh(scratch[i].imm_data) : 0;
	}
	return got;
}

// gf_req_notify_cq arms cq for its next completion (ibv_req_notify_cq).
static int gf_req_notify_cq(struct ibv_cq *cq) { return ibv_req_notify_cq(cq, 0); }

// gf_get_cq_event takes one event of a non-blocking completion channel
// and acknowledges it (ibv_get_cq_event, ibv_ack_cq_events): 0, or -errno
// (-EAGAIN when there is none).
static int gf_get_cq_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx))
		return errno ? -errno : -EIO;
	ibv_ack_cq_events(cq, 1);
	return 0;
}

// gf_post_recv posts one receive of one SGE (ibv_post_recv): 0 or errno.
static int gf_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(qp, &wr, &bad);
}

// gf_post_send posts one signaled work request of one SGE (ibv_post_send):
// 0 or errno. imm is in host order; raddr/rkey are for RDMA operations.
static int gf_post_send(struct ibv_qp *qp, int opcode, int flags, uint64_t wr_id,
		uint64_t addr, uint32_t len, uint32_t lkey, uint32_t imm, uint64_t raddr, uint32_t rkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = opcode, .send_flags = flags | IBV_SEND_SIGNALED }, *bad;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}
// gf_post_atomic posts one signaled atomic work request
// (IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP) whose one SGE
// receives the remote word's previous value (ibv_post_send): 0 or errno.
// compare_add and swap are values in host order, not addresses.
static int gf_post_atomic(struct ibv_qp *qp, int opcode, int flags, uint64_t wr_id, struct ibv_sge *sge,
		uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap) {
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
		.opcode = opcode, .send_flags = flags | IBV_SEND_SIGNALED }, *bad;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qp, &wr, &bad);
}

// gf_atomic_cap is the device's atomic_cap (ibv_query_device), or -errno.
static int gf_atomic_cap(struct ibv_context *c) {
	struct ibv_device_attr a;
	int rc = ibv_query_device(c, &a);
	if (rc)
		return rc > 0 ? -rc : -EIO;
	return a.atomic_cap;
}

// --- endpoints (fabric.go, domain.go, ep.go, data.go) ---

// gf_find_context returns librdmacm's open context of the device named
// name (rdma_get_devices), the one its ids use, or NULL.
static struct ibv_context *gf_find_context(const char *name) {
	int n = 0;
	struct ibv_context **list = rdma_get_devices(&n);
	struct ibv_context *found = NULL;
	if (!list)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]->device), name) == 0) {
			found = list[i];
			break;
		}
	}
	rdma_free_devices(list);
	return found;
}

// gf_qp_caps is what rdma_create_qp granted.
struct gf_qp_caps {
	uint32_t send_wr, recv_wr, send_sge, recv_sge, inline_data;
};

// gf_create_qp gives id an RC queue pair on pd completing into cq
// (rdma_create_qp): 0 or errno; caps in and out.
static int gf_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq, struct gf_qp_caps *caps) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = caps->send_wr;
	a.cap.max_recv_wr = caps->recv_wr;
	a.cap.max_send_sge = caps->send_sge;
	a.cap.max_recv_sge = caps->recv_sge;
	a.cap.max_inline_data = caps->inline_data;
	if (rdma_create_qp(id, pd, &a))
		return errno;
	caps->send_wr = a.cap.max_send_wr;
	caps->recv_wr = a.cap.max_recv_wr;
	caps->send_sge = a.cap.max_send_sge;
	caps->recv_sge = a.cap.max_recv_sge;
	caps->inline_data = a.cap.max_inline_data;
	return 0;
}

// gf_post_recv_sgl posts one receive of n SGEs (ibv_post_recv): 0 or errno.
static int gf_post_recv_sgl(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sgl, int n) {
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sgl, .num_sge = n }, *bad;
	return ibv_post_recv(qp, &wr, &bad);
}

// gf_post_send_sgl posts one signaled work request of n SGEs
// (ibv_post_send): 0 or errno. imm is in host order.
static int gf_post_send_sgl(struct ibv_qp *qp, int opcode, int flags, uint64_t wr_id, struct ibv_sge *sgl, int n,
		uint32_t imm, uint64_t raddr, uint32_t rkey) {
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = sgl, .num_sge = n,
		.opcode = opcode, .send_flags = flags | IBV_SEND_SIGNALED }, *bad;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

// gf_addr copies id's local address (peer: the remote one) into out, 128
// bytes (rdma_get_local_addr, rdma_get_peer_addr): its length, 0 for none.
static int gf_addr(struct rdma_cm_id *id, int peer, void *out) {
	struct sockaddr *sa = peer ? rdma_get_peer_addr(id) : rdma_get_local_addr(id);
	int len = 0;
	if (sa->sa_family == AF_INET)
		len = sizeof(struct sockaddr_in);
	else if (sa->sa_family == AF_INET6)
		len = sizeof(struct sockaddr_in6);
	memcpy(out, sa, len);
	return len;
}

// gf_has_verbs says whether id is bound to a device (id->verbs).
static int gf_has_verbs(struct rdma_cm_id *id) { return id->verbs != NULL; }
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

// qpDepth is how many sends and how many receives a queue pair takes
// (max_send_wr, max_recv_wr); wantInline is the max_inline_data asked for
// (rxe grants up to 512 and fails rdma_create_qp with EINVAL above).
const (
	qpDepth    = 64
	wantInline = 256
)

// qpRes are the verbs resources behind one connection's queue pair.
type qpRes struct {
	pd        pdC
	qp        qpC
	ownCQ     cqC // the CQ createQP made when given none
	maxInline int // max_inline_data the QP got (ibv_qp_init_attr.cap)
	maxSendWR int // max_send_wr the QP got: at least qpDepth
	maxRecvWR int // max_recv_wr the QP got: at least qpDepth
}

// createQP gives id an RC queue pair (rdma_create_qp) with its own PD
// (ibv_alloc_pd), completing into c, or into a CQ of its own (no
// completion channel) when c is nil.
func createQP(id cmIDC, c *cq) (*qpRes, error) {
	r := &qpRes{}
	var errno error
	if r.pd, errno = C.ibv_alloc_pd(id.verbs); r.pd == nil {
		return nil, errnoErr("ibv_alloc_pd", errno.(syscall.Errno))
	}
	var cq cqC
	if c != nil {
		cq = c.cq
	} else if cq, errno = C.ibv_create_cq(id.verbs, 2*qpDepth, nil, nil, 0); cq == nil {
		C.ibv_dealloc_pd(r.pd)
		return nil, errnoErr("ibv_create_cq", errno.(syscall.Errno))
	} else {
		r.ownCQ = cq
	}
	var a C.struct_ibv_qp_init_attr
	a.send_cq, a.recv_cq, a.qp_type = cq, cq, C.IBV_QPT_RC
	a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge = qpDepth, qpDepth, 1, 1
	a.cap.max_inline_data = wantInline
	if rc, errno := C.rdma_create_qp(id, r.pd, &a); rc != 0 {
		if r.ownCQ != nil {
			C.ibv_destroy_cq(r.ownCQ)
		}
		C.ibv_dealloc_pd(r.pd)
		return nil, errnoErr("rdma_create_qp", errno.(syscall.Errno))
	}
	r.qp, r.maxInline = id.qp, int(a.cap.max_inline_data)
	r.maxSendWR, r.maxRecvWR = int(a.cap.max_send_wr), int(a.cap.max_recv_wr)
	return r, nil
}

// destroyQP frees id's queue pair and r (rdma_destroy_qp, ibv_dealloc_pd);
// a second call does nothing. r's MRs must be deregistered first.
func destroyQP(id cmIDC, r *qpRes) {
	if r.qp == nil {
		return
	}
	C.rdma_destroy_qp(id)
	if r.ownCQ != nil {
		C.ibv_destroy_cq(r.ownCQ)
	}
	C.ibv_dealloc_pd(r.pd)
	r.qp, r.ownCQ, r.pd = nil, nil, nil
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

// connect sends the connection request (rdma_connect) with data and the
// transport retry count retry (ep.go's cmRetryDefault, or the endpoint's
// ep.OptConnRetries).
func connect(id cmIDC, data []byte, retry int) error {
	return withData(data, func(p unsafe.Pointer, n C.uint8_t) error {
		var cp C.struct_rdma_conn_param
		C.gf_conn_param(&cp, p, n, C.int(retry))
		if rc, errno := C.rdma_connect(id, &cp); rc != 0 {
			return errnoErr("rdma_connect", errno.(syscall.Errno))
		}
		return nil
	})
}

func accept(id cmIDC, data []byte) error {
	return withData(data, func(p unsafe.Pointer, n C.uint8_t) error {
		var cp C.struct_rdma_conn_param
		C.gf_conn_param(&cp, p, n, cmRetryDefault)
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

// qpReadDepth is qp's RDMA read depth as initiator and as responder
// (ibv_query_qp's max_rd_atomic and max_dest_rd_atomic).
func qpReadDepth(qp qpC) (initiator, responder int, err error) {
	var i, r C.int
	if rc := C.gf_qp_read_depth(qp, &i, &r); rc != 0 {
		return 0, 0, errnoErr("ibv_query_qp", syscall.Errno(rc))
	}
	return int(i), int(r), nil
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

// --- data path (libibverbs): thin wrappers; the logic is in mr.go, cq.go
// and post.go. ---

type (
	pdC          = *C.struct_ibv_pd           // protection domain
	mrC          = *C.struct_ibv_mr           // memory region
	cqC          = *C.struct_ibv_cq           // completion queue
	qpC          = *C.struct_ibv_qp           // queue pair
	compChannelC = *C.struct_ibv_comp_channel // completion channel
)

// Memory access flags (enum ibv_access_flags).
const (
	accessLocalWrite  = int(C.IBV_ACCESS_LOCAL_WRITE)
	accessRemoteWrite = int(C.IBV_ACCESS_REMOTE_WRITE)
	accessRemoteRead  = int(C.IBV_ACCESS_REMOTE_READ)
	// accessRemoteAtomic lets the peer's device atomics at the region.
	accessRemoteAtomic = int(C.IBV_ACCESS_REMOTE_ATOMIC)
)

// regMR registers n bytes at p, memory outside the Go heap, with pd
// (ibv_reg_mr).
func regMR(pd pdC, p unsafe.Pointer, n, access int) (mrC, error) {
	m, errno := C.ibv_reg_mr(pd, p, C.size_t(n), C.int(access))
	if m == nil {
		return nil, errnoErr("ibv_reg_mr", errno.(syscall.Errno))
	}
	return m, nil
}

// mrKeys are m's local and remote keys (ibv_mr lkey, rkey).
func mrKeys(m mrC) (lkey, rkey uint32) { return uint32(m.lkey), uint32(m.rkey) }

// deregMR deregisters m (ibv_dereg_mr).
func deregMR(m mrC) error {
	if rc := C.ibv_dereg_mr(m); rc != 0 {
		return errnoErr("ibv_dereg_mr", syscall.Errno(rc))
	}
	return nil
}

// destroyCompChannel frees ch (ibv_destroy_comp_channel); its CQs must
// be destroyed first.
func destroyCompChannel(ch compChannelC) { C.ibv_destroy_comp_channel(ch) }

// destroyCQ frees c (ibv_destroy_cq); its events must all be acknowledged.
func destroyCQ(c cqC) error {
	if rc := C.ibv_destroy_cq(c); rc != 0 {
		return errnoErr("ibv_destroy_cq", syscall.Errno(rc))
	}
	return nil
}

// reqNotifyCQ arms c for an event at its next completion
// (ibv_req_notify_cq, any completion).
func reqNotifyCQ(c cqC) error {
	if rc := C.gf_req_notify_cq(c); rc != 0 {
		return errnoErr("ibv_req_notify_cq", syscall.Errno(rc))
	}
	return nil
}

// getCQEvent takes and acknowledges ch's next event (ibv_get_cq_event,
// ibv_ack_cq_events): 0, or syscall.EAGAIN when there is none.
func getCQEvent(ch compChannelC) syscall.Errno { return syscall.Errno(-C.gf_get_cq_event(ch)) }

// wcBuf is the C memory ibv_poll_cq fills: n ibv_wc and n gf_wc.
type wcBuf struct {
	scratch *C.struct_ibv_wc
	out     []C.struct_gf_wc // over C memory
}

// newWCBuf allocates a wcBuf of n entries in C memory.
func newWCBuf(n int) wcBuf {
	s := (*C.struct_ibv_wc)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))
	o := (*C.struct_gf_wc)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_gf_wc{}))))
	return wcBuf{scratch: s, out: unsafe.Slice(o, n)}
}

// free releases b's C memory.
func (b *wcBuf) free() {
	C.free(unsafe.Pointer(b.scratch))
	C.free(unsafe.Pointer(&b.out[0]))
	*b = wcBuf{}
}

// pollCQ takes up to min(len(out), len(b.out)) completions of c
// (ibv_poll_cq) without allocating: their count, or a negative value when
// the poll failed.
func pollCQ(c cqC, b *wcBuf, out []completion) int {
	n := min(len(out), len(b.out))
	got := int(C.gf_poll_cq(c, C.int(n), b.scratch, &b.out[0]))
	for i := 0; i < got; i++ {
		w := &b.out[i]
		out[i] = completion{wrID: uint64(w.wr_id), status: wcStatus(w.status), opcode: wcOpcode(w.opcode),
			byteLen: uint32(w.byte_len), immData: uint32(w.imm), hasImm: w.has_imm != 0}
	}
	return got
}

// Work completion statuses (enum ibv_wc_status) this package names.
const (
	wcSuccess      = wcStatus(C.IBV_WC_SUCCESS)
	wcWRFlushErr   = wcStatus(C.IBV_WC_WR_FLUSH_ERR)
	wcRemAccessErr = wcStatus(C.IBV_WC_REM_ACCESS_ERR)
)

// String is ibv_wc_status_str.
func (s wcStatus) String() string {
	return C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(s)))
}

// Work completion opcodes (enum ibv_wc_opcode).
const (
	wcOpSend        = wcOpcode(C.IBV_WC_SEND)
	wcOpRDMAWrite   = wcOpcode(C.IBV_WC_RDMA_WRITE)
	wcOpRDMARead    = wcOpcode(C.IBV_WC_RDMA_READ)
	wcOpRecv        = wcOpcode(C.IBV_WC_RECV)
	wcOpRecvRDMAImm = wcOpcode(C.IBV_WC_RECV_RDMA_WITH_IMM)
)

// Send opcodes (enum ibv_wr_opcode).
const (
	opSend         = sendOp(C.IBV_WR_SEND)
	opSendWithImm  = sendOp(C.IBV_WR_SEND_WITH_IMM)
	opWrite        = sendOp(C.IBV_WR_RDMA_WRITE)
	opWriteWithImm = sendOp(C.IBV_WR_RDMA_WRITE_WITH_IMM)
	opRead         = sendOp(C.IBV_WR_RDMA_READ)
)

// sendInline is IBV_SEND_INLINE.
const sendInline = int(C.IBV_SEND_INLINE)

// postRecvC posts one receive of one SGE (ibv_post_recv): 0 or the errno.
func postRecvC(qp qpC, wrID, addr uint64, n, lkey uint32) syscall.Errno {
	return syscall.Errno(C.gf_post_recv(qp, C.uint64_t(wrID), C.uint64_t(addr), C.uint32_t(n), C.uint32_t(lkey)))
}

// postSendC posts one signaled work request of one SGE (ibv_post_send):
// 0 or the errno.
func postSendC(qp qpC, op sendOp, flags int, wrID, addr uint64, n, lkey, imm uint32, raddr uint64, rkey uint32) syscall.Errno {
	return syscall.Errno(C.gf_post_send(qp, C.int(op), C.int(flags), C.uint64_t(wrID), C.uint64_t(addr),
		C.uint32_t(n), C.uint32_t(lkey), C.uint32_t(imm), C.uint64_t(raddr), C.uint32_t(rkey)))
}

// --- device and port attributes for the fi_info entries (info.go) ---

// devAttrs is what msgEntries needs of one device: ibv_query_device's
// attributes, those of the first active port (ibv_query_port), GID 0 of
// port 1 (ibv_query_gid) and the inline size a probe queue pair gets.
type devAttrs struct {
	name                          string
	iwarp                         bool // transport_type IBV_TRANSPORT_IWARP
	fwVer                         string
	vendorID, vendorPartID, hwVer uint32
	maxQP, maxQPWR, maxSGE        int
	maxCQ, maxMR                  int
	maxSRQ, maxSRQWR, maxSRQSGE   int
	maxReadInit, maxReadResp      int // max_qp_init_rd_atom, max_qp_rd_atom
	activePort                    int // first active port; 0 when none is
	portActive                    bool
	activeMTU                     int // bytes; 0 when unrecognized
	activeSpeed, activeWidth      uint8
	ethernet, infiniband          bool // link_layer (unspecified counts as InfiniBand)
	maxMsgSz                      uint32
	subnetPrefix                  uint64 // GID 0 of port 1, host order
	maxInline                     int    // -1 when the probe failed
}

// queryDevices returns devAttrs for every RDMA device, in
// ibv_get_device_list's order (ibv_query_device, ibv_query_port,
// ibv_query_gid, and vrb_get_qp_cap's probe queue pair). A device that
// cannot be opened or queried is skipped, as C's vrb_alloc_info skips it.
func queryDevices(txSize, rxSize, txIOV, rxIOV, inline int) ([]devAttrs, error) {
	var n C.int
	list, errno := C.ibv_get_device_list(&n)
	if list == nil {
		code := fi.ENODEV
		if e, ok := errno.(syscall.Errno); ok && e != 0 && e != syscall.ENOSYS {
			code = fi.Code(e)
		}
		return nil, errors.Wrapf(code, "verbs: ibv_get_device_list: %v", errno)
	}
	defer C.ibv_free_device_list(list)
	var out []devAttrs
	for _, d := range unsafe.Slice(list, int(n)) {
		ctx := C.ibv_open_device(d)
		if ctx == nil {
			continue
		}
		a, ok := queryDevice(ctx, txSize, rxSize, txIOV, rxIOV, inline)
		C.ibv_close_device(ctx)
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// queryDevice fills devAttrs from an open device.
func queryDevice(ctx *C.struct_ibv_context, txSize, rxSize, txIOV, rxIOV, inline int) (devAttrs, bool) {
	var da C.struct_ibv_device_attr
	if C.ibv_query_device(ctx, &da) != 0 {
		return devAttrs{}, false
	}
	a := devAttrs{
		name:         C.GoString(C.ibv_get_device_name(ctx.device)),
		iwarp:        ctx.device.transport_type == C.IBV_TRANSPORT_IWARP,
		fwVer:        C.GoString(&da.fw_ver[0]),
		vendorID:     uint32(da.vendor_id),
		vendorPartID: uint32(da.vendor_part_id),
		hwVer:        uint32(da.hw_ver),
		maxQP:        int(da.max_qp), maxQPWR: int(da.max_qp_wr), maxSGE: int(da.max_sge),
		maxCQ: int(da.max_cq), maxMR: int(da.max_mr),
		maxSRQ: int(da.max_srq), maxSRQWR: int(da.max_srq_wr), maxSRQSGE: int(da.max_srq_sge),
		maxReadInit: int(da.max_qp_init_rd_atom), maxReadResp: int(da.max_qp_rd_atom),
	}
	for p := 1; p <= int(da.phys_port_cnt); p++ {
		var pa C.struct_ibv_port_attr
		if C.gf_query_port(ctx, C.uint8_t(p), &pa) != 0 {
			return devAttrs{}, false
		}
		if pa.state != C.IBV_PORT_ACTIVE {
			continue
		}
		a.activePort = p
		a.portActive = true
		if m := int(pa.active_mtu); m >= int(C.IBV_MTU_256) && m <= int(C.IBV_MTU_4096) {
			a.activeMTU = 128 << m
		}
		a.activeSpeed, a.activeWidth = uint8(pa.active_speed), uint8(pa.active_width)
		a.ethernet = pa.link_layer == C.IBV_LINK_LAYER_ETHERNET
		a.infiniband = pa.link_layer == C.IBV_LINK_LAYER_INFINIBAND || pa.link_layer == C.IBV_LINK_LAYER_UNSPECIFIED
		a.maxMsgSz = uint32(pa.max_msg_sz)
		break
	}
	var gid C.union_ibv_gid
	if C.ibv_query_gid(ctx, 1, 0, &gid) == 0 {
		raw := (*[16]byte)(unsafe.Pointer(&gid))
		for _, b := range raw[:8] {
			a.subnetPrefix = a.subnetPrefix<<8 | uint64(b)
		}
	}
	a.maxInline = probeInline(ctx, txSize, rxSize, txIOV, rxIOV, inline)
	return a, true
}

// probeInline creates and destroys an RC queue pair of the default sizes
// asking for inline bytes of inline data, and returns what the device
// granted (vrb_get_qp_cap: ibv_alloc_pd, ibv_create_cq, ibv_create_qp);
// -1 when a step fails.
func probeInline(ctx *C.struct_ibv_context, txSize, rxSize, txIOV, rxIOV, inline int) int {
	pd := C.ibv_alloc_pd(ctx)
	if pd == nil {
		return -1
	}
	defer C.ibv_dealloc_pd(pd)
	cq := C.ibv_create_cq(ctx, 1, nil, nil, 0)
	if cq == nil {
		return -1
	}
	defer C.ibv_destroy_cq(cq)
	var ia C.struct_ibv_qp_init_attr
	ia.send_cq, ia.recv_cq = cq, cq
	ia.cap.max_send_wr, ia.cap.max_recv_wr = C.uint32_t(txSize), C.uint32_t(rxSize)
	ia.cap.max_send_sge, ia.cap.max_recv_sge = C.uint32_t(txIOV), C.uint32_t(rxIOV)
	ia.cap.max_inline_data = C.uint32_t(inline)
	ia.qp_type = C.IBV_QPT_RC
	qp := C.ibv_create_qp(pd, &ia)
	if qp == nil {
		return -1
	}
	C.ibv_destroy_qp(qp)
	return int(ia.cap.max_inline_data)
}

// rdmaDeviceOf binds a fresh rdma_cm id to ap and returns the name of the
// RDMA device the address belongs to (vrb_ifa_rdma_info: rdma_create_id,
// rdma_bind_addr, ibv_get_device_name(id->verbs->device)).
func rdmaDeviceOf(ap netip.AddrPort) (string, error) {
	var id *C.struct_rdma_cm_id
	if rc, errno := C.rdma_create_id(nil, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		return "", errnoErr("rdma_create_id", errno.(syscall.Errno))
	}
	defer C.rdma_destroy_id(id)
	if err := bindAddr(id, ap); err != nil {
		return "", err
	}
	if id.verbs == nil {
		return "", errors.Wrapf(fi.ENODEV, "verbs: %v is on no RDMA device", ap.Addr())
	}
	return C.GoString(C.ibv_get_device_name(id.verbs.device)), nil
}

// --- endpoints: thin wrappers; the logic is in fabric.go, domain.go,
// pep.go, ep.go and data.go. ---

// ctxC is an open device (struct ibv_context).
type ctxC = *C.struct_ibv_context

// sgeC is one scatter/gather element (struct ibv_sge).
type sgeC = C.struct_ibv_sge

// findContext returns librdmacm's context of device name
// (rdma_get_devices), the one its ids are bound to.
func findContext(name string) (ctxC, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	c := C.gf_find_context(cs)
	if c == nil {
		return nil, errors.Wrapf(fi.ENODEV, "verbs: rdma_get_devices: no device %q", name)
	}
	return c, nil
}

// allocPD allocates a protection domain on c (ibv_alloc_pd).
func allocPD(c ctxC) (pdC, error) {
	pd, errno := C.ibv_alloc_pd(c)
	if pd == nil {
		return nil, errnoErr("ibv_alloc_pd", errno.(syscall.Errno))
	}
	return pd, nil
}

// deallocPD frees pd (ibv_dealloc_pd).
func deallocPD(pd pdC) { C.ibv_dealloc_pd(pd) }

// idContext is the device id is bound to (id->verbs), nil when none.
func idContext(id cmIDC) ctxC {
	if C.gf_has_verbs(id) == 0 {
		return nil
	}
	return id.verbs
}

// qpCaps are a queue pair's capacities (struct ibv_qp_cap).
type qpCaps struct {
	sendWR, recvWR, sendSGE, recvSGE, inline int
}

// createQPOn gives id an RC queue pair on pd whose sends and receives
// complete into c (rdma_create_qp); it returns the capacities granted.
func createQPOn(id cmIDC, pd pdC, c cqC, want qpCaps) (qpC, qpCaps, error) {
	caps := C.struct_gf_qp_caps{send_wr: C.uint32_t(want.sendWR), recv_wr: C.uint32_t(want.recvWR),
		send_sge: C.uint32_t(want.sendSGE), recv_sge: C.uint32_t(want.recvSGE), inline_data: C.uint32_t(want.inline)}
	if rc := C.gf_create_qp(id, pd, c, &caps); rc != 0 {
		return nil, qpCaps{}, errnoErr("rdma_create_qp", syscall.Errno(rc))
	}
	return id.qp, qpCaps{sendWR: int(caps.send_wr), recvWR: int(caps.recv_wr), sendSGE: int(caps.send_sge),
		recvSGE: int(caps.recv_sge), inline: int(caps.inline_data)}, nil
}

// destroyQPOf frees id's queue pair (rdma_destroy_qp).
func destroyQPOf(id cmIDC) { C.rdma_destroy_qp(id) }

// newSGEs allocates n SGEs in C memory, for the posts of one endpoint.
func newSGEs(n int) []sgeC {
	p := (*sgeC)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(sgeC{}))))
	return unsafe.Slice(p, n)
}

// freeSGEs frees what newSGEs allocated.
func freeSGEs(s []sgeC) { C.free(unsafe.Pointer(&s[0])) }

// setSGE fills one SGE.
func setSGE(s *sgeC, addr uint64, n, lkey uint32) {
	s.addr, s.length, s.lkey = C.uint64_t(addr), C.uint32_t(n), C.uint32_t(lkey)
}

// postRecvSGL posts a receive of the SGEs sgl (ibv_post_recv): 0 or the
// errno.
func postRecvSGL(qp qpC, wrID uint64, sgl []sgeC) syscall.Errno {
	var p *sgeC // none for a zero-length receive
	if len(sgl) > 0 {
		p = &sgl[0]
	}
	return syscall.Errno(C.gf_post_recv_sgl(qp, C.uint64_t(wrID), p, C.int(len(sgl))))
}

// postSendSGL posts a signaled work request of the SGEs sgl
// (ibv_post_send): 0 or the errno.
func postSendSGL(qp qpC, op sendOp, flags int, wrID uint64, sgl []sgeC, imm uint32, raddr uint64, rkey uint32) syscall.Errno {
	var p *sgeC
	if len(sgl) > 0 {
		p = &sgl[0]
	}
	return syscall.Errno(C.gf_post_send_sgl(qp, C.int(op), C.int(flags), C.uint64_t(wrID), p, C.int(len(sgl)),
		C.uint32_t(imm), C.uint64_t(raddr), C.uint32_t(rkey)))
}

// idAddr returns id's local address, or with peer the remote one, as a
// sockaddr (rdma_get_local_addr, rdma_get_peer_addr); nil when unset.
func idAddr(id cmIDC, peer bool) []byte {
	var buf [128]byte
	p := C.int(0)
	if peer {
		p = 1
	}
	n := int(C.gf_addr(id, p, unsafe.Pointer(&buf[0])))
	if n == 0 {
		return nil
	}
	return append([]byte(nil), buf[:n]...)
}

// createCompChannelOn makes a completion channel on device c
// (ibv_create_comp_channel) with a non-blocking descriptor, returned too.
func createCompChannelOn(c ctxC) (compChannelC, int, error) {
	ch, errno := C.ibv_create_comp_channel(c)
	if ch == nil {
		return nil, -1, errnoErr("ibv_create_comp_channel", errno.(syscall.Errno))
	}
	if rc := C.gf_set_nonblock(ch.fd); rc != 0 {
		C.ibv_destroy_comp_channel(ch)
		return nil, -1, errnoErr("fcntl O_NONBLOCK", syscall.Errno(-rc))
	}
	return ch, int(ch.fd), nil
}

// createCQOn makes a CQ of at least depth entries on device c, whose
// events go to ch (ibv_create_cq); it returns the entries it got (cqe).
func createCQOn(c ctxC, depth int, ch compChannelC) (cqC, int, error) {
	q, errno := C.ibv_create_cq(c, C.int(depth), nil, ch, 0)
	if q == nil {
		return nil, 0, errnoErr("ibv_create_cq", errno.(syscall.Errno))
	}
	return q, int(q.cqe), nil
}

// More work completion statuses (enum ibv_wc_status).
const (
	wcLocLenErr      = wcStatus(C.IBV_WC_LOC_LEN_ERR)
	wcLocProtErr     = wcStatus(C.IBV_WC_LOC_PROT_ERR)
	wcRemInvReqErr   = wcStatus(C.IBV_WC_REM_INV_REQ_ERR)
	wcRemOpErr       = wcStatus(C.IBV_WC_REM_OP_ERR)
	wcRetryExcErr    = wcStatus(C.IBV_WC_RETRY_EXC_ERR)
	wcRNRRetryExcErr = wcStatus(C.IBV_WC_RNR_RETRY_EXC_ERR)
	wcLocAccessErr   = wcStatus(C.IBV_WC_LOC_ACCESS_ERR)
)

// Atomic send opcodes (enum ibv_wr_opcode) and the fence flag
// (IBV_SEND_FENCE: the request starts once the RDMA reads and atomics
// posted before it have completed).
const (
	opAtomicCmpSwp   = sendOp(C.IBV_WR_ATOMIC_CMP_AND_SWP)
	opAtomicFetchAdd = sendOp(C.IBV_WR_ATOMIC_FETCH_AND_ADD)
	sendFence        = int(C.IBV_SEND_FENCE)
)

// Device atomic capabilities (enum ibv_atomic_cap).
const (
	atomicCapNone = int(C.IBV_ATOMIC_NONE) // no atomics
	atomicCapHCA  = int(C.IBV_ATOMIC_HCA)  // atomic among the device's own atomics
	atomicCapGlob = int(C.IBV_ATOMIC_GLOB) // atomic with the CPU's and other devices' too
)

// postAtomicC posts a signaled atomic work request whose SGE sge gets the
// previous value (ibv_post_send): 0 or the errno.
func postAtomicC(qp qpC, op sendOp, flags int, wrID uint64, sge *sgeC, raddr uint64, rkey uint32, compareAdd, swap uint64) syscall.Errno {
	return syscall.Errno(C.gf_post_atomic(qp, C.int(op), C.int(flags), C.uint64_t(wrID), sge,
		C.uint64_t(raddr), C.uint32_t(rkey), C.uint64_t(compareAdd), C.uint64_t(swap)))
}

// deviceAtomicCap is c's atomic_cap (ibv_query_device): one of the
// atomicCap* values.
func deviceAtomicCap(c ctxC) (int, error) {
	rc := int(C.gf_atomic_cap(c))
	if rc < 0 {
		return 0, errnoErr("ibv_query_device", syscall.Errno(-rc))
	}
	return rc, nil
}
