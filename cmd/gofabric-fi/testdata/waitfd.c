/*
 * waitfd: FI_WAIT_FD wait objects through the library, the way fi_poll(3)
 * tells a C application to use them. Two endpoints of one process, a
 * sending to b, have completion queues (and b a receive counter, where
 * the provider has counters) opened with FI_WAIT_FD. The program gets
 * their descriptors with fi_control(FI_GETWAIT), and for every message
 * calls fi_trywait on both queues and blocks in poll(2) on both
 * descriptors whenever it returns FI_SUCCESS, then reads the queues: no
 * other call drives the provider's progress while it sleeps, so under
 * manual progress the library must move the message on its own. A poll
 * that times out (10 s) means a lost wake-up. poll is retried on EINTR,
 * which the Go runtime's signals may cause.
 *
 * It also checks FI_GETWAITOBJ, the -FI_ENODATA of a queue opened with
 * FI_WAIT_NONE, that fi_trywait says -FI_EAGAIN while a completion waits and
 * allocates nothing (gofabricAllocs), that a counter's descriptor wakes a
 * poll when the count changes, and that closing everything ends the
 * goroutines the waits started (gofabricGoroutines).
 *
 * usage: waitfd PROVIDER rdm|dgram LIBRARY ITERATIONS
 * output: "iterations N blocked B eintr E ns_per_iter T",
 * "trywait_eagain N allocs A", "trywait_armed N allocs A",
 * "goroutines BEFORE AFTER" and exit 0, or a message and exit 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
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
	int fd;
	fi_addr_t peer;
	char name[256];
	size_t namelen;
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fi_info *info;
static int blocked, eintr;

static void open_side(struct side *s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
				      .wait_obj = FI_WAIT_FD };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	enum fi_wait_obj obj = FI_WAIT_NONE;

	try(fi_endpoint(domain, info, &s->ep, NULL));
	try(fi_cq_open(domain, &cq_attr, &s->cq, NULL));
	try(fi_av_open(domain, &av_attr, &s->av, NULL));
	try(fi_ep_bind(s->ep, &s->cq->fid, FI_SEND | FI_RECV));
	try(fi_ep_bind(s->ep, &s->av->fid, 0));
	try(fi_control(&s->cq->fid, FI_GETWAIT, &s->fd));
	try(fi_control(&s->cq->fid, FI_GETWAITOBJ, &obj));
	if (obj != FI_WAIT_FD)
		die("FI_GETWAITOBJ gave %d, want FI_WAIT_FD", obj);
	if (s->fd < 0)
		die("FI_GETWAIT gave descriptor %d", s->fd);
}

/* block polls fds until one is readable, retrying on EINTR. */
static void block(struct pollfd *fds, int n)
{
	int r;

	for (;;) {
		r = poll(fds, n, 10000);
		if (r > 0)
			break;
		if (r == 0)
			die("poll timed out after fi_trywait: a lost wake-up");
		if (errno != EINTR)
			die("poll: %s", strerror(errno));
		eintr++;
	}
	blocked++;
}

/* drain reads s's queue: the only completion expected is that of *ctx,
 * which it clears. */
static void drain(struct side *s, void **ctx)
{
	struct fi_cq_entry e;
	ssize_t n;

	while ((n = fi_cq_read(s->cq, &e, 1)) == 1) {
		if (!*ctx || e.op_context != *ctx)
			die("completion of %p, want %p", e.op_context, *ctx);
		*ctx = NULL;
	}
	if (n != -FI_EAGAIN)
		die("fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
}

/* wait_both reads a's and b's queues until the completions of actx and
 * bctx (those set) have come, blocking on both descriptors whenever
 * fi_trywait allows. */
static void wait_both(struct side *a, struct side *b, void *actx, void *bctx)
{
	struct fid *fids[2] = { &a->cq->fid, &b->cq->fid };
	struct pollfd fds[2] = { { a->fd, POLLIN, 0 }, { b->fd, POLLIN, 0 } };
	int ret;

	while (actx || bctx) {
		ret = fi_trywait(fabric, fids, 2);
		if (ret == FI_SUCCESS)
			block(fds, 2);
		else if (ret != -FI_EAGAIN)
			die("fi_trywait: %d (%s)", ret, fi_strerror(-ret));
		drain(a, &actx);
		drain(b, &bctx);
	}
}

static int readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}

int main(int argc, char **argv)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr plain = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_FD };
	struct fid_cq *nofd;
	struct fid_cntr *cntr = NULL;
	struct fid *fid, *both[2];
	struct pollfd fds[2];
	void *actx;
	struct side a, b;
	char sbuf[64], rbuf[64];
	int sctx, rctx, iters, i, k, ret, fd, cfd = -1;
	unsigned long long (*allocs)(void);
	int (*goroutines)(void), g0;
	unsigned long long before;
	struct timespec t0, t1;
	void *lib;

	if (argc != 5)
		die("usage: waitfd PROVIDER rdm|dgram LIBRARY ITERATIONS");
	iters = atoi(argv[4]);
	hints->ep_attr->type = strcmp(argv[2], "dgram") ? FI_EP_RDM : FI_EP_DGRAM;
	hints->caps = FI_MSG;
	hints->mode = ~0ULL;
	hints->fabric_attr->prov_name = strdup(argv[1]);
	if (hints->ep_attr->type == FI_EP_DGRAM)
		try(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE,
			       hints, &info));
	else
		try(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	lib = dlopen(argv[3], RTLD_NOW | RTLD_NOLOAD);
	if (!lib || !(allocs = dlsym(lib, "gofabricAllocs")) ||
	    !(goroutines = dlsym(lib, "gofabricGoroutines")))
		die("diagnostics not found in %s: %s", argv[3], dlerror());
	g0 = goroutines();

	try(fi_fabric(info->fabric_attr, &fabric, NULL));
	try(fi_domain(fabric, info, &domain, NULL));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	open_side(&a);
	open_side(&b);
	ret = fi_cntr_open(domain, &cntr_attr, &cntr, NULL);
	if (ret == -FI_ENOSYS)
		cntr = NULL; /* udp has no counters */
	else if (ret)
		die("fi_cntr_open: %d (%s)", ret, fi_strerror(-ret));
	if (cntr) {
		try(fi_ep_bind(b.ep, &cntr->fid, FI_RECV));
		try(fi_control(&cntr->fid, FI_GETWAIT, &cfd));
	}
	try(fi_enable(a.ep));
	try(fi_enable(b.ep));
	a.namelen = sizeof(a.name);
	try(fi_getname(&a.ep->fid, a.name, &a.namelen));
	b.namelen = sizeof(b.name);
	try(fi_getname(&b.ep->fid, b.name, &b.namelen));
	if ((ret = fi_av_insert(a.av, b.name, 1, &a.peer, 0, NULL)) != 1 ||
	    (ret = fi_av_insert(b.av, a.name, 1, &b.peer, 0, NULL)) != 1)
		die("fi_av_insert: %d (%s)", ret, fi_strerror(-ret));

	/* A queue opened with FI_WAIT_NONE has no descriptor. */
	try(fi_cq_open(domain, &plain, &nofd, NULL));
	ret = fi_control(&nofd->fid, FI_GETWAIT, &fd);
	if (ret != -FI_ENODATA)
		die("FI_GETWAIT with FI_WAIT_NONE: %d, want -FI_ENODATA", ret);
	fid = &nofd->fid;
	ret = fi_trywait(fabric, &fid, 1);
	if (ret != -FI_EINVAL)
		die("fi_trywait with FI_WAIT_NONE: %d, want -FI_EINVAL", ret);
	try(fi_close(&nofd->fid));

	/* Quiet after fi_trywait with nothing queued. */
	fid = &b.cq->fid;
	try(fi_trywait(fabric, &fid, 1));
	if (readable(b.fd))
		die("descriptor readable with nothing queued");

	both[0] = &a.cq->fid;
	both[1] = &b.cq->fid;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < iters; i++) {
		memset(sbuf, i, sizeof(sbuf));
		while ((ret = fi_recv(b.ep, rbuf, sizeof(rbuf), NULL,
				      FI_ADDR_UNSPEC, &rctx)) == -FI_EAGAIN)
			fi_cq_read(b.cq, NULL, 0);
		if (ret)
			die("fi_recv: %d (%s)", ret, fi_strerror(-ret));
		/* Both queues are empty: the descriptors are armed before
		 * the send, and the program sleeps in poll on b's until the
		 * receive completes: nothing it calls drives b's progress. */
		ret = fi_trywait(fabric, both, 2);
		if (ret != FI_SUCCESS)
			die("fi_trywait with both queues empty: %d (%s)", ret,
			    fi_strerror(-ret));
		while ((ret = fi_send(a.ep, sbuf, sizeof(sbuf), NULL, a.peer,
				      &sctx)) == -FI_EAGAIN)
			fi_cq_read(a.cq, NULL, 0);
		if (ret)
			die("fi_send: %d (%s)", ret, fi_strerror(-ret));
		fds[0] = (struct pollfd){ b.fd, POLLIN, 0 };
		block(fds, 1);
		wait_both(&a, &b, &sctx, &rctx);
		for (k = 0; k < (int)sizeof(rbuf); k++)
			if (rbuf[k] != (char)i)
				die("iteration %d: byte %d is %d", i, k, rbuf[k]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("iterations %d blocked %d eintr %d ns_per_iter %.0f\n", iters,
	       blocked, eintr,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
		       iters);

	/* fi_trywait says -FI_EAGAIN while a completion waits, and
	 * allocates nothing. */
	try(fi_recv(b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx));
	try(fi_send(a.ep, sbuf, sizeof(sbuf), NULL, a.peer, &sctx));
	actx = &sctx;
	fid = &b.cq->fid;
	fds[0] = (struct pollfd){ a.fd, POLLIN, 0 };
	fds[1] = (struct pollfd){ b.fd, POLLIN, 0 };
	while ((ret = fi_trywait(fabric, &fid, 1)) == FI_SUCCESS) {
		if (fi_trywait(fabric, both, 2) == FI_SUCCESS)
			block(fds, 2);
		drain(&a, &actx);
	}
	if (ret != -FI_EAGAIN)
		die("fi_trywait with a completion queued: %d", ret);
	/* a's send completes before the count starts: the fi_trywait on
	 * both queues above may have left a's descriptor armed, and its
	 * watcher's rounds while it waits for the send's completion (which
	 * allocate, as a blocking read does) would fall in the window. */
	fid = &a.cq->fid;
	while (actx) {
		if (fi_trywait(fabric, &fid, 1) == FI_SUCCESS)
			block(fds, 1);
		drain(&a, &actx);
	}
	fid = &b.cq->fid;
	before = allocs();
	for (k = 0; k < 10 * iters; k++)
		if (fi_trywait(fabric, &fid, 1) != -FI_EAGAIN)
			die("fi_trywait with a completion queued returned otherwise");
	printf("trywait_eagain %d allocs %llu\n", 10 * iters, allocs() - before);
	wait_both(&a, &b, NULL, &rctx);

	/* Armed again and again with nothing queued. */
	try(fi_trywait(fabric, &fid, 1));
	before = allocs();
	for (k = 0; k < 10 * iters; k++)
		if (fi_trywait(fabric, &fid, 1) != FI_SUCCESS)
			die("fi_trywait on an empty queue returned otherwise");
	printf("trywait_armed %d allocs %llu\n", 10 * iters, allocs() - before);
	if (readable(b.fd))
		die("descriptor readable with nothing queued");

	/* A counter's descriptor wakes a poll when the count changes. */
	if (cntr) {
		fid = &cntr->fid;
		while (fi_trywait(fabric, &fid, 1) == -FI_EAGAIN)
			; /* reports the receives counted above, once */
		if (readable(cfd))
			die("counter descriptor readable with no change");
		try(fi_cntr_add(cntr, 1));
		if (!readable(cfd))
			die("counter descriptor not readable after fi_cntr_add");
		ret = fi_trywait(fabric, &fid, 1);
		if (ret != -FI_EAGAIN)
			die("fi_trywait after a count change: %d", ret);
	}

	try(fi_close(&a.ep->fid));
	try(fi_close(&b.ep->fid));
	if (cntr)
		try(fi_close(&cntr->fid));
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
