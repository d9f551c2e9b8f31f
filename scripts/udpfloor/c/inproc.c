/*
 * inproc.c: the C counterpart of providers/udp's
 * BenchmarkInProcPingPong/posted=2, through C libfabric's udp provider:
 * two FI_EP_DGRAM endpoints in one thread, each with two receives posted;
 * a round trip is fi_inject one way, fi_cq_read on the receiver until the
 * completion is there, fi_recv to post the receive again, and the same
 * back. With no scheduler and no second CPU in the way, it compares the
 * two providers' own work around the same system calls. Not part of the
 * tests:
 *
 *   gcc -O2 -o inproc scripts/udpfloor/c/inproc.c -lfabric && ./inproc 100000
 *   go test -run '^$' -bench 'InProcPingPong' -benchtime 100000x ./providers/udp/
 *
 * It prints its result as a Go benchmark line.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                   \
	do {                                                                          \
		int rc_ = (call);                                                     \
		if (rc_) {                                                            \
			fprintf(stderr, "inproc: %s: %s\n", #call, fi_strerror(-rc_)); \
			exit(1);                                                      \
		}                                                                     \
	} while (0)

struct node {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	char name[64];
	size_t namelen;
	fi_addr_t peer;
	char buf[64];
};

static struct fi_info *info;
static struct fid_domain *domain;

static void open_node(struct node *n)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };

	CHECK(fi_endpoint(domain, info, &n->ep, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &n->cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &n->av, NULL));
	CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_SEND | FI_RECV));
	CHECK(fi_ep_bind(n->ep, &n->av->fid, 0));
	CHECK(fi_enable(n->ep));
	n->namelen = sizeof(n->name);
	CHECK(fi_getname(&n->ep->fid, n->name, &n->namelen));
}

static void hop(struct node *from, struct node *to)
{
	struct fi_cq_entry c;
	ssize_t n;

	while (fi_inject(from->ep, from->buf, sizeof(from->buf), from->peer) == -FI_EAGAIN)
		;
	while ((n = fi_cq_read(to->cq, &c, 1)) != 1) {
		if (n != -FI_EAGAIN) {
			fprintf(stderr, "inproc: fi_cq_read: %zd\n", n);
			exit(1);
		}
	}
	while (fi_recv(to->ep, to->buf, sizeof(to->buf), NULL, FI_ADDR_UNSPEC, NULL) == -FI_EAGAIN)
		;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 100000;
	struct fi_info *hints = fi_allocinfo();
	struct fid_fabric *fabric;
	struct node x = { 0 }, y = { 0 };
	struct timespec t0, t1;
	double ns;

	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("udp");
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	open_node(&x);
	open_node(&y);
	CHECK(fi_av_insert(x.av, y.name, 1, &x.peer, 0, NULL) != 1);
	CHECK(fi_av_insert(y.av, x.name, 1, &y.peer, 0, NULL) != 1);
	for (int i = 0; i < 2; i++) {
		CHECK(fi_recv(x.ep, x.buf, sizeof(x.buf), NULL, FI_ADDR_UNSPEC, NULL));
		CHECK(fi_recv(y.ep, y.buf, sizeof(y.buf), NULL, FI_ADDR_UNSPEC, NULL));
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < iters; i++) {
		hop(&x, &y);
		hop(&y, &x);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("BenchmarkCInProcPingPong/posted=2 \t%8ld\t%12.0f ns/op\n", iters, ns / iters);
	return 0;
}
