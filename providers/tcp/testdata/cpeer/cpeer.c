/*
 * cpeer: a C libfabric 1.17 tcp (FI_EP_MSG) peer for gofabric's interop
 * tests (providers/tcp/interop_test.go). Written for gofabric; it only uses
 * the public libfabric API.
 *
 *   cpeer server <port-file> <scenario>   listen on 127.0.0.1, ephemeral port,
 *                                          write "ip port\n" to port-file
 *   cpeer client <ip> <port> <scenario>
 *
 * Scenarios: pdata reject cqdata delivery rma shutdown-client shutdown-server.
 * Results go to stdout as "key=value" lines (byte strings in hex); any
 * failure prints a message on stderr and exits with status 1. Every wait is
 * bounded by TIMEOUT_MS.
 *
 * Private data: the client connects with "HELLO-C", the server accepts with
 * "ACCEPT-C" or rejects with "NOPE!". Every connected scenario ends with
 * "bye": each side sends "bye" and waits for the peer's.
 *
 * delivery: the client sends "dc-C" with fi_sendmsg(FI_DELIVERY_COMPLETE) to a
 * server that has no receive posted; it checks that no send completion
 * arrives for DC_WINDOW_MS, prints dc_pending=1 and waits for the completion.
 * The server posts its receive only once a line arrives on its stdin. Then the
 * roles swap (the server sends "dc-C", the client waits for stdin).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define TIMEOUT_MS 10000
#define DC_WINDOW_MS 200
#define SHUTDOWN_LINGER_MS 300
#define MR_SIZE 4096
#define MR_KEY 0x1234
#define NRX 4
#define RXLEN 256

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_eq *eq;
static struct fid_domain *domain;
static struct fid_pep *pep;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_mr *mr;
static int server;
static const char *scenario;

static uint8_t rxbuf[NRX][RXLEN];
static int rxnext; /* next rxbuf slot to post */
static uint8_t mrbuf[MR_SIZE];
static int ctxs[7]; /* operation contexts: only their addresses matter */

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cpeer %s %s: ", server ? "server" : "client",
		scenario ? scenario : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* CHECK fails the program when a libfabric call returns a negative value. */
#define CHECK(call)                                                          \
	do {                                                                 \
		long ret_ = (long)(call);                                    \
		if (ret_ < 0)                                                \
			die("%s:%d: %s: %s (%ld)", __FILE__, __LINE__,       \
			    #call, fi_strerror((int)-ret_), ret_);           \
	} while (0)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_briefly(void)
{
	struct timespec ts = {0, 50000};

	nanosleep(&ts, NULL);
}

static void print_hex(const char *key, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	printf("%s=", key);
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
	printf("\n");
}

static void print_u64(const char *key, uint64_t v)
{
	printf("%s=0x%" PRIx64 "\n", key, v);
}

/* mr_pattern is the target buffer's initial content. */
static uint8_t mr_pattern(size_t i)
{
	return (uint8_t)(i * 13 + 7);
}

/*
 * cq_poll reads one entry from cq. It returns 1 with *e filled, 0 when there
 * is none, or -1 with *err filled for an error entry.
 */
static int cq_poll(struct fid_cq *cq, struct fi_cq_data_entry *e,
		   struct fi_cq_err_entry *err)
{
	ssize_t ret = fi_cq_read(cq, e, 1);

	if (ret == 1)
		return 1;
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		CHECK(fi_cq_readerr(cq, err, 0));
		return -1;
	}
	die("fi_cq_read: %s (%zd)", fi_strerror((int)-ret), ret);
	return -1;
}

/* wait_cq waits for one successful completion on cq. */
static void wait_cq(struct fid_cq *cq, struct fi_cq_data_entry *e,
		    const char *what)
{
	struct fi_cq_err_entry err;
	long long end = now_ms() + TIMEOUT_MS;

	for (;;) {
		int r = cq_poll(cq, e, &err);

		if (r == 1)
			return;
		if (r < 0)
			die("%s: error completion: %s (err %d, prov_errno %d)",
			    what, fi_strerror(err.err), err.err,
			    err.prov_errno);
		if (now_ms() > end)
			die("%s: no completion in %d ms", what, TIMEOUT_MS);
		pause_briefly();
	}
}

/* Room for an event's struct fi_eq_cm_entry and its private data. */
static _Alignas(max_align_t) uint8_t evbuf[sizeof(struct fi_eq_cm_entry) + 512];

/*
 * read_event reads one event without blocking: it returns its length (event
 * in *event, entry in evbuf), 0 when there is none, or -1 with *err filled
 * for an error entry.
 */
static ssize_t read_event(uint32_t *event, struct fi_eq_err_entry *err)
{
	ssize_t ret = fi_eq_read(eq, event, evbuf, sizeof(evbuf), 0);

	if (ret > 0)
		return ret;
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		CHECK(fi_eq_readerr(eq, err, 0));
		return -1;
	}
	die("fi_eq_read: %s (%zd)", fi_strerror((int)-ret), ret);
	return -1;
}

/*
 * wait_event waits for the next event, which must be want, and returns the
 * length of its private data. An error event fails the program unless err is
 * not NULL, when it is returned there with -1.
 */
static ssize_t wait_event(uint32_t want, struct fi_eq_err_entry *err)
{
	struct fi_eq_err_entry e;
	uint32_t event;
	long long end = now_ms() + TIMEOUT_MS;

	for (;;) {
		ssize_t ret = read_event(&event, &e);

		if (ret < 0) {
			if (err) {
				*err = e;
				return -1;
			}
			die("waiting for event %u: error event: %s (err %d)",
			    want, fi_strerror(e.err), e.err);
		}
		if (ret > 0) {
			if (event != want)
				die("got event %u, want %u", event, want);
			return ret - (ssize_t)sizeof(struct fi_eq_cm_entry);
		}
		if (now_ms() > end)
			die("no event %u in %d ms", want, TIMEOUT_MS);
		pause_briefly();
	}
}

static void open_domain(void)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA,
				     .wait_obj = FI_WAIT_NONE};

	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &txcq, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &rxcq, NULL));
	if (server && strcmp(scenario, "rma") == 0) {
		for (size_t i = 0; i < MR_SIZE; i++)
			mrbuf[i] = mr_pattern(i);
		CHECK(fi_mr_reg(domain, mrbuf, MR_SIZE,
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, MR_KEY, 0,
				&mr, NULL));
	}
}

static void post_recv(void)
{
	if (rxnext == NRX)
		die("out of receive buffers");
	/* The context is the buffer: a completion's buf is only set for
	 * FI_MULTI_RECV. */
	CHECK(fi_recv(ep, rxbuf[rxnext], RXLEN, NULL, 0, rxbuf[rxnext]));
	rxnext++;
}

/* open_ep opens, binds and enables the endpoint and posts its receives. */
static void open_ep(void)
{
	int prepost = 1; /* "bye" */

	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &eq->fid, 0));
	CHECK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	CHECK(fi_enable(ep));
	if (strcmp(scenario, "cqdata") == 0)
		prepost = 3;
	else if (strcmp(scenario, "delivery") == 0)
		prepost = 0;
	else if (strncmp(scenario, "shutdown-", 9) == 0)
		prepost = 2; /* "hi", then one the shutdown cancels */
	while (prepost-- > 0)
		post_recv();
}

static struct fi_info *make_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo failed");
	h->caps = FI_MSG | FI_RMA;
	h->ep_attr->type = FI_EP_MSG;
	h->domain_attr->mr_mode = 0;
	h->fabric_attr->prov_name = strdup("tcp");
	if (!h->fabric_attr->prov_name)
		die("out of memory");
	return h;
}

static void open_fabric(void)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};

	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
}

static void write_port_file(const char *path)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	char ip[INET_ADDRSTRLEN], tmp[4096];
	FILE *f;

	CHECK(fi_getname(&pep->fid, &sin, &len));
	if (len != sizeof(sin) || sin.sin_family != AF_INET)
		die("passive endpoint name: family %d, %zu bytes",
		    sin.sin_family, len);
	if (!inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip)))
		die("inet_ntop failed");
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("open %s failed", tmp);
	fprintf(f, "%s %u\n", ip, ntohs(sin.sin_port));
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die("writing %s failed", path);
}

/*
 * serve listens, waits for the connection request and accepts it. It
 * returns 0 after a reject (scenario reject), 1 when connected.
 */
static int serve(const char *port_file)
{
	struct fi_info *hints = make_hints();
	struct fi_eq_cm_entry *cm = (struct fi_eq_cm_entry *)evbuf;
	ssize_t n;

	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE,
			 hints, &info));
	fi_freeinfo(hints);
	open_fabric();
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	write_port_file(port_file);

	n = wait_event(FI_CONNREQ, NULL);
	print_hex("connreq_data", cm->data, (size_t)n);
	fi_freeinfo(info);
	info = cm->info;
	if (strcmp(scenario, "reject") == 0) {
		CHECK(fi_reject(pep, info->handle, "NOPE!", 5));
		printf("rejected=1\n");
		return 0;
	}
	open_domain();
	open_ep();
	CHECK(fi_accept(ep, "ACCEPT-C", 8));
	n = wait_event(FI_CONNECTED, NULL);
	print_hex("connected_data", cm->data, (size_t)n);
	return 1;
}

/*
 * connect_to connects to ip:port. It returns 0 after a rejection (scenario
 * reject), 1 when connected.
 */
static int connect_to(const char *ip, const char *port)
{
	struct fi_info *hints = make_hints();
	struct fi_eq_cm_entry *cm = (struct fi_eq_cm_entry *)evbuf;
	struct fi_eq_err_entry err;
	ssize_t n;

	CHECK(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, hints, &info));
	fi_freeinfo(hints);
	open_fabric();
	open_domain();
	open_ep();
	CHECK(fi_connect(ep, info->dest_addr, "HELLO-C", 7));
	n = wait_event(FI_CONNECTED, &err);
	if (n < 0) {
		if (strcmp(scenario, "reject") != 0)
			die("connect failed: %s (err %d)", fi_strerror(err.err),
			    err.err);
		printf("connect_err=%d\n", err.err);
		print_hex("err_data", err.err_data, err.err_data_size);
		return 0;
	}
	if (strcmp(scenario, "reject") == 0)
		die("connected although the server rejects");
	print_hex("connected_data", cm->data, (size_t)n);
	return 1;
}

static void send_wait(const void *buf, size_t len, const char *what)
{
	struct fi_cq_data_entry e;

	CHECK(fi_send(ep, buf, len, NULL, 0, &ctxs[0]));
	wait_cq(txcq, &e, what);
}

/* recv_expect waits for the next receive, which must carry want. */
static void recv_expect(const char *want, const char *what)
{
	struct fi_cq_data_entry e;

	wait_cq(rxcq, &e, what);
	if (e.len != strlen(want) || memcmp(e.op_context, want, e.len) != 0)
		die("%s: got %zu bytes, want \"%s\"", what, e.len, want);
}

static void bye(void)
{
	send_wait("bye", 3, "send bye");
	recv_expect("bye", "receive bye");
	printf("bye=1\n");
}

static void print_recv(const char *prefix, const struct fi_cq_data_entry *e)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_flags", prefix);
	print_u64(key, e->flags);
	snprintf(key, sizeof(key), "%s_len", prefix);
	printf("%s=%zu\n", key, e->len);
	snprintf(key, sizeof(key), "%s_data", prefix);
	print_u64(key, e->data);
	snprintf(key, sizeof(key), "%s_bytes", prefix);
	print_hex(key, e->op_context, e->len);
}

/* cqdata: send 16 bytes with fi_senddata and 8 with fi_injectdata. */
static void run_cqdata(void)
{
	uint8_t payload[16];
	struct fi_cq_data_entry e;

	for (int i = 0; i < 16; i++)
		payload[i] = (uint8_t)i;
	CHECK(fi_senddata(ep, payload, sizeof(payload), NULL,
			  0x1122334455667788ULL, 0, &ctxs[1]));
	wait_cq(txcq, &e, "senddata");
	CHECK(fi_injectdata(ep, "injected", 8, 0xaabbccddULL, 0));
	wait_cq(rxcq, &e, "first receive");
	print_recv("recv0", &e);
	wait_cq(rxcq, &e, "second receive");
	print_recv("recv1", &e);
}

static void wait_stdin_line(void)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};
	char line[64];

	if (poll(&p, 1, TIMEOUT_MS) != 1 || !fgets(line, sizeof(line), stdin))
		die("no line on stdin in %d ms", TIMEOUT_MS);
}

static void dc_send(void)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct iovec iov = {.iov_base = "dc-C", .iov_len = 4};
	struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1,
			     .context = &ctxs[2]};
	long long end;

	CHECK(fi_sendmsg(ep, &msg, FI_DELIVERY_COMPLETE));
	for (end = now_ms() + DC_WINDOW_MS; now_ms() < end; pause_briefly()) {
		int r = cq_poll(txcq, &e, &err);

		if (r > 0)
			die("delivery-complete send completed before the peer posted a receive");
		if (r < 0)
			die("delivery-complete send failed: %s", fi_strerror(err.err));
	}
	printf("dc_pending=1\n");
	wait_cq(txcq, &e, "delivery-complete send");
	print_u64("dc_send_flags", e.flags);
}

static void dc_recv(void)
{
	struct fi_cq_data_entry e;

	wait_stdin_line();
	post_recv();
	wait_cq(rxcq, &e, "delivery-complete receive");
	print_recv("dc_recv", &e);
}

static void run_delivery(void)
{
	if (server) {
		dc_recv();
		dc_send();
	} else {
		dc_send();
		dc_recv();
	}
	post_recv(); /* bye */
}

/* rma: the client writes to, and reads from, the server's registered buffer. */
static void run_rma_initiator(void)
{
	uint8_t w[40], r[40];
	struct fi_cq_data_entry e;

	for (int i = 0; i < 40; i++)
		w[i] = (uint8_t)(0x10 + i);
	CHECK(fi_write(ep, w, 32, NULL, 0, 512, MR_KEY, &ctxs[3]));
	wait_cq(txcq, &e, "write");
	print_u64("write_flags", e.flags);
	CHECK(fi_writedata(ep, w + 32, 8, NULL, 0xaabbccddULL, 0, 544, MR_KEY,
			   &ctxs[4]));
	wait_cq(txcq, &e, "writedata");
	print_u64("writedata_flags", e.flags);
	CHECK(fi_read(ep, r, 40, NULL, 0, 512, MR_KEY, &ctxs[5]));
	wait_cq(txcq, &e, "read");
	print_u64("read_flags", e.flags);
	print_hex("read_512", r, 40);
	CHECK(fi_read(ep, r, 16, NULL, 0, 1024, MR_KEY, &ctxs[6]));
	wait_cq(txcq, &e, "read");
	print_hex("read_1024", r, 16);
}

static void run_rma_target(void)
{
	struct fi_cq_data_entry e;

	wait_cq(rxcq, &e, "write data completion");
	print_u64("wdata_flags", e.flags);
	printf("wdata_len=%zu\n", e.len);
	print_u64("wdata_data", e.data);
}

static void finish_rma_target(void)
{
	size_t i;

	print_hex("target_512", mrbuf + 512, 40);
	for (i = 0; i < MR_SIZE; i++)
		if ((i < 512 || i >= 552) && mrbuf[i] != mr_pattern(i))
			break;
	printf("target_rest_intact=%d\n", i == MR_SIZE);
}

/*
 * run_shutdown: after a "hi" each way, the named side calls fi_shutdown.
 * Both sides then wait for FI_SHUTDOWN and keep reading the EQ and CQs for
 * SHUTDOWN_LINGER_MS more, counting shutdown events and canceled receives.
 */
static void run_shutdown(int mine)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry cerr;
	struct fi_eq_err_entry eerr;
	uint32_t event;
	int events = 0, canceled = 0;
	long long end = now_ms() + TIMEOUT_MS;

	send_wait("hi", 2, "send hi");
	recv_expect("hi", "receive hi");
	if (mine)
		CHECK(fi_shutdown(ep, 0));
	while (now_ms() < end) {
		ssize_t r = read_event(&event, &eerr);

		if (r < 0)
			die("error event: %s (err %d)", fi_strerror(eerr.err),
			    eerr.err);
		if (r > 0 && event != FI_SHUTDOWN)
			die("got event %u, want FI_SHUTDOWN", event);
		if (r > 0 && events++ == 0)
			end = now_ms() + SHUTDOWN_LINGER_MS;
		r = cq_poll(rxcq, &e, &cerr);
		if (r > 0)
			die("unexpected receive completion");
		if (r < 0) {
			if (cerr.err != FI_ECANCELED)
				die("receive failed: %s", fi_strerror(cerr.err));
			canceled++;
		}
		if (cq_poll(txcq, &e, &cerr) != 0)
			die("unexpected send completion");
		pause_briefly();
	}
	printf("shutdown_events=%d\n", events);
	printf("rx_canceled=%d\n", canceled);
	if (events != 1)
		die("%d FI_SHUTDOWN events, want 1", events);
}

static void close_fid(struct fid *f, const char *what)
{
	if (f && fi_close(f) != 0)
		die("fi_close(%s) failed", what);
}

static void close_all(void)
{
	close_fid(ep ? &ep->fid : NULL, "ep");
	close_fid(mr ? &mr->fid : NULL, "mr");
	close_fid(rxcq ? &rxcq->fid : NULL, "rx cq");
	close_fid(txcq ? &txcq->fid : NULL, "tx cq");
	close_fid(domain ? &domain->fid : NULL, "domain");
	close_fid(pep ? &pep->fid : NULL, "pep");
	close_fid(eq ? &eq->fid : NULL, "eq");
	close_fid(fabric ? &fabric->fid : NULL, "fabric");
	fi_freeinfo(info);
}

static void usage(void)
{
	fprintf(stderr, "usage: cpeer server <port-file> <scenario>\n"
			"       cpeer client <ip> <port> <scenario>\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const scenarios[] = {
		"pdata", "reject", "cqdata", "delivery", "rma",
		"shutdown-client", "shutdown-server"};
	int connected, known = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "server") == 0)
		server = 1;
	else if (!(argc == 5 && strcmp(argv[1], "client") == 0))
		usage();
	scenario = argv[argc - 1];
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		known |= strcmp(scenario, scenarios[i]) == 0;
	if (!known)
		usage();

	connected = server ? serve(argv[2]) : connect_to(argv[2], argv[3]);
	if (connected) {
		if (strcmp(scenario, "cqdata") == 0)
			run_cqdata();
		else if (strcmp(scenario, "delivery") == 0)
			run_delivery();
		else if (strcmp(scenario, "rma") == 0 && server)
			run_rma_target();
		else if (strcmp(scenario, "rma") == 0)
			run_rma_initiator();
		if (strncmp(scenario, "shutdown-", 9) == 0)
			run_shutdown(strcmp(scenario + 9,
					    server ? "server" : "client") == 0);
		else
			bye();
		if (mr)
			finish_rma_target();
	}
	close_all();
	printf("done=1\n");
	return 0;
}
