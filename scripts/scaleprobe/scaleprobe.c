// scaleprobe: the C counterpart of gofabric's tcp scale benchmarks
// (providers/tcp/scale_test.go, issue 22), against C libfabric. It opens
// N connected tcp FI_EP_MSG endpoint pairs in one process, shaped as the
// Go benchmarks shape them: one fabric and one EQ for everything, a
// client domain and a server domain with one CQ each, every client
// endpoint bound to the client CQ and every server endpoint to the server
// CQ, one passive endpoint; every client connects first, then the
// requests are accepted as they come. It prints, in `go test -bench`'s
// line format so that one parser reads both:
//
//   BenchmarkConnectPairs/N     1 <ns> ns/op <ms> ms/setup
//   BenchmarkCQReadIdleConns/N  <reads> <ns> ns/op <ns> ns/conn
//   BenchmarkPerEndpoint/N      1 <fds> fds/ep <bytes> bytes/ep <bytes> bytes/ep-traffic
//
// ConnectPairs times opening, enabling and connecting the N pairs;
// CQReadIdleConns empty fi_cq_read calls on the client CQ, repeated (in
// doubling batches) for at least -t seconds; PerEndpoint the growth of
// the open fds (/proc/self/fd) and of the resident set (/proc/self/statm)
// per endpoint (2N of them) once connected, and again after one 64-byte
// message each way on every pair.
//
// Build: gcc -O2 -Wall -o scaleprobe scaleprobe.c -lfabric
// Run:   FI_TCP_IFACE=lo ./scaleprobe -n 1024 [-t 0.5]
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define CHECK(call)                                                        \
	do {                                                               \
		int rc_ = (int)(call);                                     \
		if (rc_ < 0) {                                             \
			fprintf(stderr, "scaleprobe: %s: %s (%d)\n", #call,   \
				fi_strerror(-rc_), rc_);                   \
			exit(1);                                           \
		}                                                          \
	} while (0)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;
	if (!d) {
		perror("scaleprobe: /proc/self/fd");
		exit(1);
	}
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* less opendir's own */
}

static long rss_bytes(void)
{
	long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) {
		perror("scaleprobe: /proc/self/statm");
		exit(1);
	}
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

static struct fid_eq *eq;

static struct fid_ep *open_ep(struct fid_domain *d, struct fid_cq *cq, struct fi_info *info)
{
	struct fid_ep *ep;
	CHECK(fi_endpoint(d, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &eq->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV));
	CHECK(fi_enable(ep));
	return ep;
}

static void fail_eq(const char *what)
{
	struct fi_eq_err_entry err = {0};
	if (fi_eq_readerr(eq, &err, 0) > 0)
		fprintf(stderr, "scaleprobe: %s: error event: %s (%d, prov_errno %d)\n", what,
			fi_strerror(err.err), err.err, err.prov_errno);
	else
		fprintf(stderr, "scaleprobe: %s: error event unreadable\n", what);
	exit(1);
}

/* drain reads both CQs until want completions arrived (10 s at most). */
static void drain(struct fid_cq *a, struct fid_cq *b, long want)
{
	struct fi_cq_data_entry comp[64];
	double deadline = now() + 10 + want / 100.0;
	long got = 0;
	while (got < want) {
		struct fid_cq *qs[2] = {a, b};
		for (int i = 0; i < 2; i++) {
			ssize_t k = fi_cq_read(qs[i], comp, 64);
			if (k > 0)
				got += k;
			else if (k == -FI_EAVAIL) {
				struct fi_cq_err_entry e = {0};
				fi_cq_readerr(qs[i], &e, 0);
				fprintf(stderr, "scaleprobe: traffic: error completion %s\n", fi_strerror(e.err));
				exit(1);
			} else if (k != -FI_EAGAIN)
				CHECK(k);
		}
		if (now() > deadline) {
			fprintf(stderr, "scaleprobe: traffic: %ld of %ld completions\n", got, want);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	long n = 16;
	double min_time = 0.5;
	int opt;
	while ((opt = getopt(argc, argv, "n:t:h")) != -1) {
		switch (opt) {
		case 'n':
			n = strtol(optarg, NULL, 10);
			break;
		case 't':
			min_time = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr, "usage: %s [-n PAIRS] [-t SECONDS]\n", argv[0]);
			return 2;
		}
	}
	if (n <= 0 || min_time <= 0) {
		fprintf(stderr, "scaleprobe: -n and -t must be positive\n");
		return 2;
	}

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)(4 * n + 256)) {
		fprintf(stderr, "scaleprobe: RLIMIT_NOFILE %ld is too low for %ld pairs\n", (long)rl.rlim_cur, n);
		return 1;
	}

	struct fi_info *hints = fi_allocinfo(), *info;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp");
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info));

	struct fid_fabric *fabric;
	struct fid_domain *cdom, *sdom;
	struct fid_cq *ccq, *scq;
	struct fid_pep *pep;
	struct fi_eq_attr eq_attr = {.size = 2 * n + 64, .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	CHECK(fi_domain(fabric, info, &cdom, NULL));
	CHECK(fi_domain(fabric, info, &sdom, NULL));
	CHECK(fi_cq_open(cdom, &cq_attr, &ccq, NULL));
	CHECK(fi_cq_open(sdom, &cq_attr, &scq, NULL));
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	int backlog = (int)n + 64;
	fi_control(&pep->fid, FI_BACKLOG, &backlog); /* best effort */
	CHECK(fi_listen(pep));
	char name[128];
	size_t namelen = sizeof name;
	CHECK(fi_getname(&pep->fid, name, &namelen));

	struct fid_ep **cli = calloc(n, sizeof *cli), **srv = calloc(n, sizeof *srv);
	long fds0 = open_fds(), rss0 = rss_bytes();

	/* Connect: every client first, then accept requests as they come. */
	double t0 = now();
	for (long i = 0; i < n; i++) {
		cli[i] = open_ep(cdom, ccq, info);
		CHECK(fi_connect(cli[i], name, NULL, 0));
	}
	long nsrv = 0, connected = 0;
	union {
		struct fi_eq_cm_entry cm;
		char buf[sizeof(struct fi_eq_cm_entry) + 256];
	} ev;
	while (connected < 2 * n) {
		uint32_t event;
		ssize_t rd = fi_eq_sread(eq, &event, &ev, sizeof ev, 30000 + (int)n * 20, 0);
		if (rd == -FI_EAVAIL)
			fail_eq("connect");
		if (rd < 0) {
			fprintf(stderr, "scaleprobe: connect: %ld of %ld FI_CONNECTED: %s\n", connected, 2 * n,
				fi_strerror((int)-rd));
			return 1;
		}
		if (event == FI_CONNREQ) {
			if (nsrv == n) {
				fprintf(stderr, "scaleprobe: more requests than clients\n");
				return 1;
			}
			srv[nsrv] = open_ep(sdom, scq, ev.cm.info);
			fi_freeinfo(ev.cm.info);
			CHECK(fi_accept(srv[nsrv], NULL, 0));
			nsrv++;
		} else if (event == FI_CONNECTED) {
			connected++;
		} else {
			fprintf(stderr, "scaleprobe: connect: unexpected event %u\n", event);
			return 1;
		}
	}
	double t1 = now();
	printf("BenchmarkConnectPairs/%ld \t1\t%.0f ns/op\t%.1f ms/setup\n", n, (t1 - t0) * 1e9, (t1 - t0) * 1e3);

	long fds1 = open_fds(), rss1 = rss_bytes();

	/* Empty reads of the client CQ, in doubling batches. */
	struct fi_cq_data_entry comp[1];
	long reads = 1;
	double el = 0;
	for (;;) {
		double s = now();
		for (long i = 0; i < reads; i++) {
			ssize_t k = fi_cq_read(ccq, comp, 1);
			if (k != -FI_EAGAIN) {
				fprintf(stderr, "scaleprobe: idle CQ read returned %zd\n", k);
				return 1;
			}
		}
		el = now() - s;
		if (el >= min_time || reads >= (1L << 40))
			break;
		reads *= 2;
	}
	double ns = el * 1e9 / reads;
	printf("BenchmarkCQReadIdleConns/%ld \t%ld\t%.1f ns/op\t%.2f ns/conn\n", n, reads, ns, ns / n);

	/* One 64-byte message each way on every pair. */
	char *rbuf = calloc(2 * n, 64), msg[64] = {0};
	for (long i = 0; i < n; i++) {
		CHECK(fi_recv(cli[i], rbuf + 64 * i, 64, NULL, 0, NULL));
		CHECK(fi_recv(srv[i], rbuf + 64 * (n + i), 64, NULL, 0, NULL));
	}
	for (long i = 0; i < 2 * n; i++) {
		struct fid_ep *e = i < n ? cli[i] : srv[i - n];
		ssize_t rc;
		while ((rc = fi_inject(e, msg, 64, 0)) == -FI_EAGAIN) {
			fi_cq_read(ccq, NULL, 0);
			fi_cq_read(scq, NULL, 0);
		}
		CHECK(rc);
	}
	drain(ccq, scq, 2 * n);
	long rss2 = rss_bytes();
	printf("BenchmarkPerEndpoint/%ld \t1\t%.3f fds/ep\t%.0f bytes/ep\t%.0f bytes/ep-traffic\n", n,
	       (double)(fds1 - fds0) / (2 * n), (double)(rss1 - rss0) / (2 * n), (double)(rss2 - rss0) / (2 * n));
	fflush(stdout);

	for (long i = 0; i < n; i++) {
		CHECK(fi_close(&srv[i]->fid));
		CHECK(fi_close(&cli[i]->fid));
	}
	CHECK(fi_close(&pep->fid));
	CHECK(fi_close(&ccq->fid));
	CHECK(fi_close(&scq->fid));
	CHECK(fi_close(&cdom->fid));
	CHECK(fi_close(&sdom->fid));
	CHECK(fi_close(&eq->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(cli);
	free(srv);
	free(rbuf);
	return 0;
}
