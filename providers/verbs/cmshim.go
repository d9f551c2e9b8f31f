//go:build verbs && cgo

package verbs

// The C side of connection management beyond shim.go's: the events
// cm.go handles besides shim.go's, and what tests read of a connected
// queue pair.

/*
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <errno.h>

// gf_qp_retry reports a queue pair's transport and RNR retry counts
// (ibv_query_qp's retry_cnt and rnr_retry): 0 or errno.
static int gf_qp_retry(struct ibv_qp *qp, int *retry, int *rnr) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(qp, &a, IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY, &ia))
		return errno ? errno : EIO;
	*retry = a.retry_cnt;
	*rnr = a.rnr_retry;
	return 0;
}
*/
import "C"

import "syscall"

// evAddrChange is RDMA_CM_EVENT_ADDR_CHANGE: the local address of a
// connected id moved (a bonding failover).
const evAddrChange = int(C.RDMA_CM_EVENT_ADDR_CHANGE)

// qpRetry is qp's transport and RNR retry counts (ibv_query_qp's
// retry_cnt and rnr_retry), as the CM set them from the connection's
// REQ and REP.
func qpRetry(qp qpC) (retry, rnr int, err error) {
	var r, n C.int
	if rc := C.gf_qp_retry(qp, &r, &n); rc != 0 {
		return 0, 0, errnoErr("ibv_query_qp", syscall.Errno(rc))
	}
	return int(r), int(n), nil
}
