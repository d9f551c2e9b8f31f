//go:build verbs && cgo

package verbs

// The C side of the datagram endpoints (ud.go, udav.go, mcast.go): UD
// queue pairs, address handles and rdma_cm multicast ids. As in shim.go,
// C keeps no Go pointer.

/*
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

// gf_ud_caps are a UD queue pair's capacities, asked for and granted.
struct gf_ud_caps {
	uint32_t send_wr, recv_wr, send_sge, recv_sge, inline_data;
};

static int gf_errno_or(int fallback) { return errno ? errno : fallback; }

// gf_ud_create_qp creates a UD queue pair on pd whose sends and receives
// complete into cq, and takes it through INIT (P_Key index 0, port 1,
// qkey), RTR and RTS (ibv_create_qp, ibv_modify_qp), as C's
// vrb_create_dgram_ep does: the queue pair, or NULL with *err set.
static struct ibv_qp *gf_ud_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct gf_ud_caps *caps,
		uint32_t qkey, int *err) {
	struct ibv_qp_init_attr a;
	struct ibv_qp_attr m;
	struct ibv_qp *qp;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_UD;
	a.cap.max_send_wr = caps->send_wr;
	a.cap.max_recv_wr = caps->recv_wr;
	a.cap.max_send_sge = caps->send_sge;
	a.cap.max_recv_sge = caps->recv_sge;
	a.cap.max_inline_data = caps->inline_data;
	qp = ibv_create_qp(pd, &a);
	if (!qp) {
		*err = gf_errno_or(EIO);
		return NULL;
	}
	caps->send_wr = a.cap.max_send_wr;
	caps->recv_wr = a.cap.max_recv_wr;
	caps->send_sge = a.cap.max_send_sge;
	caps->recv_sge = a.cap.max_recv_sge;
	caps->inline_data = a.cap.max_inline_data;
	memset(&m, 0, sizeof m);
	m.qp_state = IBV_QPS_INIT;
	m.pkey_index = 0;
	m.port_num = 1;
	m.qkey = qkey;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		goto fail;
	memset(&m, 0, sizeof m);
	m.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE))
		goto fail;
	memset(&m, 0, sizeof m);
	m.qp_state = IBV_QPS_RTS;
	m.sq_psn = 0;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto fail;
	return qp;
fail:
	*err = gf_errno_or(EIO);
	ibv_destroy_qp(qp);
	return NULL;
}

// gf_ud_port reads what an endpoint's name holds of port 1: GID gid_idx,
// the raw P_Key at index 0 (as ibv_query_pkey gives it, network order),
// the LID and the SM's service level (ibv_query_gid, ibv_query_pkey,
// ibv_query_port): 0 or errno.
static int gf_ud_port(struct ibv_context *c, int gid_idx, uint8_t *gid, uint8_t *pkey, uint16_t *lid, uint8_t *sl) {
	struct ibv_port_attr pa;
	union ibv_gid g;
	__be16 pk;
	if (ibv_query_port(c, 1, &pa))
		return gf_errno_or(EIO);
	if (ibv_query_gid(c, 1, gid_idx, &g))
		return gf_errno_or(EINVAL);
	if (ibv_query_pkey(c, 1, 0, &pk))
		return gf_errno_or(EIO);
	memcpy(gid, g.raw, 16);
	memcpy(pkey, &pk, 2);
	*lid = pa.lid;
	*sl = pa.sm_sl;
	return 0;
}

// gf_ud_create_ah creates an address handle on pd for a peer's GID, LID
// and SL (ibv_create_ah), as C's vrb_dgram_av_insert_addr builds it:
// global (hop limit 64, source GID gid_idx) when the GID's interface id is
// not 0, else by LID alone, which must not be 0 (EADDRNOTAVAIL).
static struct ibv_ah *gf_ud_create_ah(struct ibv_pd *pd, const uint8_t *gid, uint16_t lid, uint8_t sl, int gid_idx, int *err) {
	struct ibv_ah_attr a;
	uint64_t iid;
	struct ibv_ah *ah;
	memset(&a, 0, sizeof a);
	a.dlid = lid;
	a.sl = sl;
	a.port_num = 1;
	memcpy(&iid, gid + 8, 8);
	if (iid) {
		a.is_global = 1;
		a.grh.hop_limit = 64;
		memcpy(a.grh.dgid.raw, gid, 16);
		a.grh.sgid_index = gid_idx;
	} else if (!lid) {
		*err = EADDRNOTAVAIL;
		return NULL;
	}
	ah = ibv_create_ah(pd, &a);
	if (!ah)
		*err = gf_errno_or(EIO);
	return ah;
}

// gf_ud_create_ah_attr creates an address handle from attributes rdma_cm
// gave (a multicast join's ah_attr): the handle, or NULL with *err set.
static struct ibv_ah *gf_ud_create_ah_attr(struct ibv_pd *pd, struct ibv_ah_attr *a, int *err) {
	struct ibv_ah *ah = ibv_create_ah(pd, a);
	if (!ah)
		*err = gf_errno_or(EIO);
	return ah;
}

// gf_ud_post_send posts one signaled send of n SGEs to a UD peer
// (ibv_post_send with wr.ud): 0 or errno. imm is in host order.
static int gf_ud_post_send(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sgl, int n, int flags,
		int with_imm, uint32_t imm, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey) {
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = sgl;
	wr.num_sge = n;
	wr.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.send_flags = flags | IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(qp, &wr, &bad);
}

// gf_ud_max_inline finds the most inline data a UD queue pair of device c
// takes (ibv_create_qp with growing, then bisected, max_inline_data), as
// C's vrb_find_max_inline probes it: 0 when none.
static int gf_ud_max_inline(struct ibv_context *c) {
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq;
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;
	int ok = 0, bad = 0, n;
	if (!pd)
		return 0;
	cq = ibv_create_cq(c, 1, NULL, NULL, 0);
	if (!cq) {
		ibv_dealloc_pd(pd);
		return 0;
	}
	for (n = 2; n <= (1 << 16); n *= 2) {
		memset(&a, 0, sizeof a);
		a.send_cq = cq;
		a.recv_cq = cq;
		a.qp_type = IBV_QPT_UD;
		a.cap.max_send_wr = 1;
		a.cap.max_recv_wr = 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = n;
		qp = ibv_create_qp(pd, &a);
		if (!qp) {
			bad = n;
			break;
		}
		ibv_destroy_qp(qp);
		ok = n;
	}
	while (bad && bad - ok > 1) {
		n = ok + (bad - ok) / 2;
		memset(&a, 0, sizeof a);
		a.send_cq = cq;
		a.recv_cq = cq;
		a.qp_type = IBV_QPT_UD;
		a.cap.max_send_wr = 1;
		a.cap.max_recv_wr = 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = n;
		qp = ibv_create_qp(pd, &a);
		if (qp) {
			ibv_destroy_qp(qp);
			ok = n;
		} else {
			bad = n;
		}
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	return ok;
}

// gf_mc_event is a multicast id's rdma_cm event, copied out so that it
// is acknowledged at once: for MULTICAST_JOIN the group's address handle
// attributes, QP number and qkey (rdma_ud_param).
struct gf_mc_event {
	struct rdma_cm_id *id;
	int type;
	int status;
	struct ibv_ah_attr ah_attr;
	uint32_t qp_num;
	uint32_t qkey;
};

// gf_get_mc_event takes the next event of a non-blocking channel
// (rdma_get_cm_event, rdma_ack_cm_event): 0, or -errno (-EAGAIN when
// there is none).
static int gf_get_mc_event(struct rdma_event_channel *ch, struct gf_mc_event *out) {
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		return -gf_errno_or(EIO);
	memset(out, 0, sizeof *out);
	out->id = ev->id;
	out->type = ev->event;
	out->status = ev->status;
	if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN) {
		out->ah_attr = ev->param.ud.ah_attr;
		out->qp_num = ev->param.ud.qp_num;
		out->qkey = ev->param.ud.qkey;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

// gf_mc_create_id creates an id of the UDP port space on ch
// (rdma_create_id, RDMA_PS_UDP): 0 or errno.
static int gf_mc_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id) {
	if (rdma_create_id(ch, id, NULL, RDMA_PS_UDP))
		return gf_errno_or(EIO);
	return 0;
}

// gf_mc_join joins the group at addr (rdma_join_multicast): 0 or errno.
static int gf_mc_join(struct rdma_cm_id *id, struct sockaddr *addr) {
	if (rdma_join_multicast(id, addr, NULL))
		return gf_errno_or(EIO);
	return 0;
}

// gf_mc_leave leaves the group at addr (rdma_leave_multicast): 0 or errno.
static int gf_mc_leave(struct rdma_cm_id *id, struct sockaddr *addr) {
	if (rdma_leave_multicast(id, addr))
		return gf_errno_or(EIO);
	return 0;
}

// gf_mc_attach attaches qp to the group of a join's ah_attr, or detaches
// it (ibv_attach_mcast, ibv_detach_mcast): 0 or errno.
static int gf_mc_attach(struct ibv_qp *qp, struct ibv_ah_attr *a, int detach) {
	int rc = detach ? ibv_detach_mcast(qp, &a->grh.dgid, a->dlid) : ibv_attach_mcast(qp, &a->grh.dgid, a->dlid);
	return rc ? (rc > 0 ? rc : gf_errno_or(EIO)) : 0;
}
*/
import "C"

import (
	"net/netip"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

type (
	ahC     = *C.struct_ibv_ah // address handle
	ahAttrC = C.struct_ibv_ah_attr
)

// udCaps are a UD queue pair's capacities.
type udCaps struct {
	sendWR, recvWR, sendSGE, recvSGE, inline int
}

// createUDQP creates a UD queue pair on pd completing into c, in RTS with
// qkey (ibv_create_qp, ibv_modify_qp); it returns the capacities granted.
func createUDQP(pd pdC, c cqC, want udCaps, qkey uint32) (qpC, udCaps, error) {
	caps := C.struct_gf_ud_caps{send_wr: C.uint32_t(want.sendWR), recv_wr: C.uint32_t(want.recvWR),
		send_sge: C.uint32_t(want.sendSGE), recv_sge: C.uint32_t(want.recvSGE), inline_data: C.uint32_t(want.inline)}
	var e C.int
	qp := C.gf_ud_create_qp(pd, c, &caps, C.uint32_t(qkey), &e)
	if qp == nil {
		return nil, udCaps{}, errnoErr("ibv_create_qp (UD)", syscall.Errno(e))
	}
	return qp, udCaps{sendWR: int(caps.send_wr), recvWR: int(caps.recv_wr), sendSGE: int(caps.send_sge),
		recvSGE: int(caps.recv_sge), inline: int(caps.inline_data)}, nil
}

// destroyUDQP frees qp (ibv_destroy_qp).
func destroyUDQP(qp qpC) error {
	if rc := C.ibv_destroy_qp(qp); rc != 0 {
		return errnoErr("ibv_destroy_qp", syscall.Errno(rc))
	}
	return nil
}

// qpNum is qp's number.
func qpNum(qp qpC) uint32 { return uint32(qp.qp_num) }

// udPortName fills a name's GID, P_Key, LID and SL from port 1 of c.
func udPortName(c ctxC, gidIdx int, n *udName) error {
	var gid [16]C.uint8_t
	var pkey [2]C.uint8_t
	var lid C.uint16_t
	var sl C.uint8_t
	if rc := C.gf_ud_port(c, C.int(gidIdx), &gid[0], &pkey[0], &lid, &sl); rc != 0 {
		return errnoErr("ibv_query_port/gid/pkey", syscall.Errno(rc))
	}
	for i := range gid {
		n.gid[i] = byte(gid[i])
	}
	n.pkey = [2]byte{byte(pkey[0]), byte(pkey[1])}
	n.lid, n.sl = uint16(lid), uint8(sl)
	return nil
}

// createAH creates an address handle on pd for the peer n
// (ibv_create_ah).
func createAH(pd pdC, n *udName, gidIdx int) (ahC, error) {
	var gid [16]C.uint8_t
	for i, b := range n.gid {
		gid[i] = C.uint8_t(b)
	}
	var e C.int
	ah := C.gf_ud_create_ah(pd, &gid[0], C.uint16_t(n.lid), C.uint8_t(n.sl), C.int(gidIdx), &e)
	if ah == nil {
		return nil, errnoErr("ibv_create_ah", syscall.Errno(e))
	}
	return ah, nil
}

// createAHFrom creates an address handle on pd from rdma_cm's attributes.
func createAHFrom(pd pdC, a *ahAttrC) (ahC, error) {
	var e C.int
	ah := C.gf_ud_create_ah_attr(pd, a, &e)
	if ah == nil {
		return nil, errnoErr("ibv_create_ah", syscall.Errno(e))
	}
	return ah, nil
}

// destroyAH frees ah (ibv_destroy_ah).
func destroyAH(ah ahC) { C.ibv_destroy_ah(ah) }

// postUDSend posts a signaled send of the SGEs sgl to the peer (ah, qpn,
// qkey), with immediate data when withImm (ibv_post_send): 0 or the errno.
func postUDSend(qp qpC, wrID uint64, sgl []sgeC, flags int, withImm bool, imm uint32, ah ahC, qpn, qkey uint32) syscall.Errno {
	var p *sgeC
	if len(sgl) > 0 {
		p = &sgl[0]
	}
	wi := C.int(0)
	if withImm {
		wi = 1
	}
	return syscall.Errno(C.gf_ud_post_send(qp, C.uint64_t(wrID), p, C.int(len(sgl)), C.int(flags), wi, C.uint32_t(imm),
		ah, C.uint32_t(qpn), C.uint32_t(qkey)))
}

// udMaxInline is the most inline data a UD queue pair of c takes.
func udMaxInline(c ctxC) int { return int(C.gf_ud_max_inline(c)) }

// openUDContext opens device name for a probe (ibv_open_device); close
// it with closeUDContext.
func openUDContext(name string) (ctxC, error) {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, errors.Wrap(fi.ENODEV, "verbs: ibv_get_device_list")
	}
	defer C.ibv_free_device_list(list)
	for _, d := range unsafe.Slice(list, int(n)) {
		if C.GoString(C.ibv_get_device_name(d)) == name {
			if c := C.ibv_open_device(d); c != nil {
				return c, nil
			}
		}
	}
	return nil, errors.Wrapf(fi.ENODEV, "verbs: no device %q", name)
}

// closeUDContext closes what openUDContext opened.
func closeUDContext(c ctxC) { C.ibv_close_device(c) }

// mcEventC is a multicast id's event.
type mcEventC struct {
	id     cmIDC
	typ    int
	status int
	ah     ahAttrC
	qpNum  uint32
	qkey   uint32
}

// getMCEvent takes the next event of ch: syscall.EAGAIN when there is
// none.
func getMCEvent(ch cmChannelC) (mcEventC, error) {
	var ev C.struct_gf_mc_event
	if rc := C.gf_get_mc_event(ch, &ev); rc != 0 {
		return mcEventC{}, syscall.Errno(-rc)
	}
	return mcEventC{id: ev.id, typ: int(ev._type), status: int(ev.status), ah: ev.ah_attr,
		qpNum: uint32(ev.qp_num), qkey: uint32(ev.qkey)}, nil
}

// createMCID creates an id of the UDP port space on ch (rdma_create_id,
// RDMA_PS_UDP).
func createMCID(ch cmChannelC) (cmIDC, error) {
	var id cmIDC
	if rc := C.gf_mc_create_id(ch, &id); rc != 0 {
		return nil, errnoErr("rdma_create_id (RDMA_PS_UDP)", syscall.Errno(rc))
	}
	return id, nil
}

// joinMC joins the group at ap on id (rdma_join_multicast).
func joinMC(id cmIDC, ap netip.AddrPort) error {
	sa, err := sockaddr(ap)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(sa))
	if rc := C.gf_mc_join(id, sa); rc != 0 {
		return errnoErr("rdma_join_multicast", syscall.Errno(rc))
	}
	return nil
}

// leaveMC leaves the group at ap on id (rdma_leave_multicast).
func leaveMC(id cmIDC, ap netip.AddrPort) error {
	sa, err := sockaddr(ap)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(sa))
	if rc := C.gf_mc_leave(id, sa); rc != 0 {
		return errnoErr("rdma_leave_multicast", syscall.Errno(rc))
	}
	return nil
}

// attachMC attaches qp to the group of a join's attributes, or with
// detach detaches it (ibv_attach_mcast, ibv_detach_mcast).
func attachMC(qp qpC, a *ahAttrC, detach bool) error {
	d := C.int(0)
	op := "ibv_attach_mcast"
	if detach {
		d, op = 1, "ibv_detach_mcast"
	}
	if rc := C.gf_mc_attach(qp, a, d); rc != 0 {
		return errnoErr(op, syscall.Errno(rc))
	}
	return nil
}

// rdma_cm multicast event types.
const (
	evMulticastJoin  = int(C.RDMA_CM_EVENT_MULTICAST_JOIN)
	evMulticastError = int(C.RDMA_CM_EVENT_MULTICAST_ERROR)
)
