/*
 * datapath: two goshm RDM endpoints in one process exchange tagged and
 * untagged messages (fi_tsend/fi_trecv, fi_sendmsg/fi_recvmsg, fi_inject,
 * fi_senddata, with MR descriptors) and read their completion queues,
 * then report how many Go heap objects the library allocated per
 * iteration (gofabricAllocs) and the time per iteration, and the Go
 * runtime's goroutines before the first object opened and after the last
 * closed (gofabricGoroutines).
 *
 * usage: datapath PROVIDER LIBRARY ITERATIONS
 * output: "iterations N allocs A ns_per_iter T" and "goroutines B A",
 * and exit 0, or a message
 * and exit 1.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define die(...)                                                              \
	do {                                                                  \
		fprintf(stderr, __VA_ARGS__);                                 \
		fprintf(stderr, "\n");                                        \
		exit(1);                                                      \
	} while (0)
#define try(call)                                                             \
	do {                                                                  \
		int _r = (call);                                              \
		if (_r)                                                       \
			die("%s: %d (%s)", #call, _r, fi_strerror(-_r));      \
	} while (0)

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	char name[256];
	size_t namelen;
};

static struct fid_domain *domain;
static struct fi_info *info;

static void open_side(struct side *s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .size = 128 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	try(fi_endpoint(domain, info, &s->ep, NULL));
	try(fi_cq_open(domain, &cq_attr, &s->cq, NULL));
	try(fi_av_open(domain, &av_attr, &s->av, NULL));
	try(fi_ep_bind(s->ep, &s->cq->fid, FI_SEND | FI_RECV));
	try(fi_ep_bind(s->ep, &s->av->fid, 0));
	try(fi_enable(s->ep));
	s->namelen = sizeof(s->name);
	try(fi_getname(&s->ep->fid, s->name, &s->namelen));
}

/* wait reads cq until the completion of ctx arrives. */
static void wait(struct side *s, struct side *other, void *ctx)
{
	struct fi_cq_tagged_entry e;
	ssize_t n;

	for (;;) {
		n = fi_cq_read(s->cq, &e, 1);
		if (n == 1) {
			if (e.op_context != ctx)
				die("completion of context %p, want %p",
				    e.op_context, ctx);
			return;
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
		fi_cq_read(other->cq, NULL, 0); /* the peer's progress */
	}
}

#define retry(call)                                                           \
	do {                                                                  \
		ssize_t _r;                                                   \
		while ((_r = (call)) == -FI_EAGAIN) {                         \
			fi_cq_read(a.cq, NULL, 0);                            \
			fi_cq_read(b.cq, NULL, 0);                            \
		}                                                             \
		if (_r)                                                       \
			die("%s: %zd (%s)", #call, _r, fi_strerror((int)-_r)); \
	} while (0)

int main(int argc, char **argv)
{
	struct fi_info *hints = fi_allocinfo();
	struct fid_fabric *fabric;
	struct fid_mr *smr, *rmr;
	struct side a, b;
	char sbuf[64], rbuf[64];
	int sctx, rctx, iters, warm = 1000, i, k;
	unsigned long long (*allocs)(void);
	int (*goroutines)(void), g0;
	unsigned long long before = 0;
	struct timespec t0, t1;
	void *lib, *sdesc, *rdesc;

	if (argc != 4)
		die("usage: datapath PROVIDER LIBRARY ITERATIONS");
	iters = atoi(argv[3]);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(argv[1]);
	try(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	lib = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD);
	if (!lib || !(allocs = dlsym(lib, "gofabricAllocs")) ||
	    !(goroutines = dlsym(lib, "gofabricGoroutines")))
		die("diagnostics not found in %s: %s", argv[2], dlerror());
	g0 = goroutines();

	try(fi_fabric(info->fabric_attr, &fabric, NULL));
	try(fi_domain(fabric, info, &domain, NULL));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	open_side(&a);
	open_side(&b);
	if (fi_av_insert(a.av, b.name, 1, &a.peer, 0, NULL) != 1 ||
	    fi_av_insert(b.av, a.name, 1, &b.peer, 0, NULL) != 1)
		die("fi_av_insert failed");
	try(fi_mr_reg(domain, sbuf, sizeof(sbuf), FI_SEND, 0, 1, 0, &smr, NULL));
	try(fi_mr_reg(domain, rbuf, sizeof(rbuf), FI_RECV, 0, 2, 0, &rmr, NULL));
	sdesc = fi_mr_desc(smr);
	rdesc = fi_mr_desc(rmr);

	for (i = 0; i < warm + iters; i++) {
		struct iovec siov = { sbuf, sizeof(sbuf) };
		struct iovec riov = { rbuf, sizeof(rbuf) };
		struct fi_msg smsg = { &siov, &sdesc, 1, b.peer, &sctx, 0 };
		struct fi_msg rmsg = { &riov, &rdesc, 1, a.peer, &rctx, 0 };

		if (i == warm) {
			before = allocs();
			clock_gettime(CLOCK_MONOTONIC, &t0);
		}
		memset(sbuf, i, sizeof(sbuf));
		switch (i % 4) {
		case 0:
			retry(fi_trecv(b.ep, rbuf, sizeof(rbuf), rdesc, a.peer,
				       i, 0, &rctx));
			retry(fi_tsend(a.ep, sbuf, sizeof(sbuf), sdesc, b.peer,
				       i, &sctx));
			break;
		case 1:
			retry(fi_recvmsg(b.ep, &rmsg, 0));
			retry(fi_sendmsg(a.ep, &smsg, FI_COMPLETION));
			break;
		case 2:
			retry(fi_recv(b.ep, rbuf, sizeof(rbuf), rdesc, a.peer,
				      &rctx));
			retry(fi_senddata(a.ep, sbuf, sizeof(sbuf), sdesc, 7,
					  b.peer, &sctx));
			break;
		case 3:
			retry(fi_recv(b.ep, rbuf, sizeof(rbuf), rdesc, a.peer,
				      &rctx));
			retry(fi_inject(a.ep, sbuf, 8, b.peer));
			break;
		}
		if (i % 4 != 3)
			wait(&a, &b, &sctx);
		wait(&b, &a, &rctx);
		for (k = 0; k < (i % 4 == 3 ? 8 : (int)sizeof(rbuf)); k++)
			if (rbuf[k] != (char)i)
				die("iteration %d: byte %d is %d", i, k, rbuf[k]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("iterations %d allocs %llu ns_per_iter %.0f\n", iters,
	       allocs() - before,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
		       iters);

	/* The cost of one call into the library: fi_cq_read of an empty
	 * queue (one C-to-Go call, the handle lookup, the Go queue's read). */
	before = allocs();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 10 * iters; i++) {
		struct fi_cq_tagged_entry e;

		if (fi_cq_read(a.cq, &e, 1) != -FI_EAGAIN)
			die("fi_cq_read of an empty queue did not give -FI_EAGAIN");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("empty_reads %d allocs %llu ns_per_read %.0f\n", 10 * iters,
	       allocs() - before,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
		       (10 * iters));

	try(fi_close(&a.ep->fid));
	try(fi_close(&b.ep->fid));
	try(fi_close(&smr->fid));
	try(fi_close(&rmr->fid));
	try(fi_close(&a.av->fid));
	try(fi_close(&b.av->fid));
	try(fi_close(&a.cq->fid));
	try(fi_close(&b.cq->fid));
	try(fi_close(&domain->fid));
	try(fi_close(&fabric->fid));
	printf("goroutines %d %d\n", g0, goroutines());
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
