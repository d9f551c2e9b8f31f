/*
 * cpeer_rdm: a C libfabric 1.17 RDM peer over "-p tcp" (tcp;ofi_rxm) for
 * gofabric's RDM interop tests (providers/tcp/interop_rdm_test.go).
 * Written for gofabric; it only uses the public libfabric API.
 *
 *   cpeer_rdm server <name-file> <scenario>
 *       open an RDM endpoint on 127.0.0.1 and write its name (a 16-byte
 *       sockaddr_in, in hex) and a newline to name-file
 *   cpeer_rdm client <server-name-hex> <scenario> [id]
 *
 * Scenarios: source cqdata rndv-cqdata tagged peers delivery transmit.
 * Results go to stdout as
 * "key=value" lines (numbers in hex with 0x, byte strings in hex); any
 * failure prints a message on stderr and exits with status 1. Every wait is
 * bounded by TIMEOUT_MS.
 *
 * Every scenario runs the same frame around its body:
 *   1. The client inserts the server's name into its AV (FI_AV_TABLE), posts
 *      an untagged control receive, then the scenario's receives, and sends
 *      "hello": its own name (16 bytes) followed by its id (1 byte).
 *   2. The server receives the hello (PEERS of them in scenario peers),
 *      inserts each client's name, posts the scenario's receives, and sends
 *      "ready" to each client. The client waits for "ready".
 *   3. The body: the client sends its messages, the server receives them,
 *      then the server sends its own and the client receives them.
 *   4. "bye" each way (the server sends one to, and waits for one from,
 *      each client).
 *
 * Payloads: byte i of a payload with seed s is (uint8_t)(s + i * 13). Seeds
 * are CLIENT_SEED + k (client) or SERVER_SEED + k (server) for the k-th
 * message of the body, CQ data words CLIENT_DATA | k or SERVER_DATA | k.
 *
 * Bodies (each side, as sender; the receiver checks every field and prints
 * m<k>_flags, m<k>_len, m<k>_data, m<k>_tag, m<k>_ok):
 *   source:      fi_send of 64 bytes (k 0), fi_tsend of 64 bytes with tag
 *                TAG_SOURCE (k 1). The endpoints have FI_SOURCE; the
 *                receiver reads with fi_cq_readfrom and prints
 *                hello_src_notavail (server: the hello, from a client not in
 *                its AV yet), ready_src_match (client), m<k>_src_match.
 *   cqdata:      fi_senddata of 64 and 1000 bytes (k 0, 1), fi_tsenddata of
 *                64 and 1000 bytes with tag TAG_CQDATA + k (k 2, 3).
 *   rndv-cqdata: fi_senddata of RNDV_LEN bytes (k 0), fi_tsenddata of
 *                RNDV_LEN bytes with tag TAG_RNDV (k 1): above the eager
 *                limit, so rendezvous, into RNDV_BUF-byte receives.
 *   tagged:      fi_tsend of the tagged_msgs table in order. The receiver
 *                posts the table's receives (tag, ignore mask) in its own
 *                order, plus one that nothing matches; with FI_DIRECTED_RECV
 *                it first posts a receive for the last message's tag from a
 *                second address (127.0.0.1:9, never a sender), then one from
 *                the peer. It prints directed, and canceled (how many of its
 *                unmatched receives fi_cancel completed with FI_ECANCELED).
 *   peers:       (FI_SOURCE) each of PEERS clients sends PEER_MSGS tagged
 *                messages of 32 bytes, tag TAG_PEERS | id << 8 | n, seed
 *                id * 16 + n. The server prints peer<id>_count and
 *                peer<id>_src_match (every source was that client's AV entry,
 *                in order).
 *   delivery,    the endpoints have FI_DELIVERY_COMPLETE (delivery) or
 *   transmit:    FI_TRANSMIT_COMPLETE (transmit) in tx_attr.op_flags, so
 *                every send uses it: fi_send of 64 bytes (k 0),
 *                fi_tsenddata of 1000 bytes with tag TAG_DC (k 1),
 *                fi_senddata of RNDV_LEN bytes (k 2), fi_tsend of RNDV_LEN
 *                bytes with tag TAG_DC + 1 (k 3): eager, raw tagged and
 *                rendezvous. The test driving the peer synchronizes the
 *                two sides through stdin so that a side's sends are
 *                checked while the other makes no progress:
 *                as receiver, the peer prints dc_gate=1 before its
 *                receives and then makes no progress until stdin gives it
 *                a line "post";
 *                as sender, it waits (making progress) for a line "send",
 *                posts all four sends at once, counts the completions
 *                that come within DC_WINDOW_MS (dc_early=<n>), prints
 *                dc_pending=1, then waits for the rest.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
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
#include <rdma/fi_tagged.h>

#define TIMEOUT_MS 10000
#define NAME_LEN 16 /* struct sockaddr_in */
#define CTL_LEN 256
#define SMALL_BUF 4096
#define RNDV_LEN 100000
#define RNDV_BUF 131072
#define PEERS 3
#define PEER_MSGS 20
#define MAX_RX (PEERS * PEER_MSGS + 8)

#define CLIENT_SEED 0x10
#define SERVER_SEED 0x80
#define CLIENT_DATA 0xc1d0000000000000ULL
#define SERVER_DATA 0x5ed0000000000000ULL
#define TAG_SOURCE 0x55ULL
#define TAG_CQDATA 0x7000ULL
#define TAG_RNDV 0x7021ULL
#define TAG_PEERS 0x6000ULL
#define TAG_NOMATCH 0x999ULL
#define TAG_DC 0x7d00ULL
#define DC_WINDOW_MS 200

/* The tagged scenario's messages, in the sender's order. */
static const struct {
	uint64_t tag;
	size_t len;
} tagged_msgs[] = {
	{0x100, 10}, {0x12345678, 64}, {0x2a5, 1000}, {0x300, 33}};

/* The receiver's tagged receives, in posting order: (tag, ignore) and the
 * index of the message each must match. */
static const struct {
	uint64_t tag, ignore;
	int msg;
} tagged_recvs[] = {
	{0x200, 0xff, 2}, {0x100, 0, 0}, {0x12340000, 0xffff, 1}};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static int server, source, directed;
static uint64_t tx_op_flags; /* hints' tx_attr.op_flags */
static const char *scenario;
static int my_id;
static fi_addr_t peer_addr[PEERS]; /* server: by id; client: [0] = server */
static int npeers;

/* An rx is a posted receive; its address is the operation's context. */
struct rx {
	uint8_t *buf;
	size_t size;
	int msg;      /* body message index, or -1 for control / no match */
	uint64_t tag; /* expected tag (tagged receives) */
	int tagged, done;
};

static struct rx rxs[MAX_RX];
static int nrx;
static int txctx;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cpeer_rdm %s %s: ", server ? "server" : "client",
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

static void progress_tx(void);

/*
 * SEND issues a data-transfer call, retrying while it returns -FI_EAGAIN
 * (rxm's answer while it connects to a peer) and driving progress between
 * tries, for at most TIMEOUT_MS; any other error fails the program.
 */
#define SEND(call)                                                           \
	do {                                                                 \
		long long end_ = now_ms() + TIMEOUT_MS;                      \
		long ret_;                                                   \
		while ((ret_ = (long)(call)) == -FI_EAGAIN) {                \
			if (now_ms() > end_)                                 \
				die("%s: -FI_EAGAIN for %d ms", #call,       \
				    TIMEOUT_MS);                             \
			progress_tx();                                       \
		}                                                            \
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

/*
 * progress_tx drives the endpoint's progress (manual progress) without
 * consuming a completion: a read of zero entries from the transmit CQ.
 */
static void progress_tx(void)
{
	ssize_t ret = fi_cq_read(txcq, NULL, 0);

	if (ret < 0 && ret != -FI_EAGAIN)
		die("progress: fi_cq_read: %s (%zd)", fi_strerror((int)-ret),
		    ret);
	pause_briefly();
}

static void print_hex(const char *key, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	printf("%s=", key);
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
	printf("\n");
}

static void printk(int k, const char *what, uint64_t v)
{
	printf("m%d_%s=0x%" PRIx64 "\n", k, what, v);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 13);
}

static int filled(const uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed + i * 13))
			return 0;
	return 1;
}

static unsigned peer_seed(int k)
{
	return (server ? CLIENT_SEED : SERVER_SEED) + k;
}

static unsigned my_seed(int k)
{
	return (server ? SERVER_SEED : CLIENT_SEED) + k;
}

static uint64_t peer_data(int k)
{
	return (server ? CLIENT_DATA : SERVER_DATA) | (uint64_t)k;
}

static uint64_t my_data(int k)
{
	return (server ? SERVER_DATA : CLIENT_DATA) | (uint64_t)k;
}

/*
 * cq_poll reads one entry from cq (with its source when the endpoint has
 * FI_SOURCE). It returns 1 with *e and *src filled, 0 when there is none,
 * or -1 with *err filled for an error entry.
 */
static int cq_poll(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   fi_addr_t *src, struct fi_cq_err_entry *err)
{
	ssize_t ret;

	*src = FI_ADDR_NOTAVAIL;
	if (source)
		ret = fi_cq_readfrom(cq, e, 1, src);
	else
		ret = fi_cq_read(cq, e, 1);
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
static void wait_cq(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		    fi_addr_t *src, const char *what)
{
	struct fi_cq_err_entry err;
	long long end = now_ms() + TIMEOUT_MS;

	for (;;) {
		int r = cq_poll(cq, e, src, &err);

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

static struct rx *new_rx(size_t size, int msg)
{
	struct rx *r;

	if (nrx == MAX_RX)
		die("out of receive slots");
	r = &rxs[nrx++];
	r->buf = malloc(size);
	if (!r->buf)
		die("out of memory");
	r->size = size;
	r->msg = msg;
	return r;
}

static struct rx *post_recv(size_t size, int msg)
{
	struct rx *r = new_rx(size, msg);

	CHECK(fi_recv(ep, r->buf, size, NULL, FI_ADDR_UNSPEC, r));
	return r;
}

static struct rx *post_trecv(size_t size, int msg, fi_addr_t src,
			     uint64_t tag, uint64_t ignore)
{
	struct rx *r = new_rx(size, msg);

	r->tagged = 1;
	CHECK(fi_trecv(ep, r->buf, size, NULL, src, tag, ignore, r));
	return r;
}

/* wait_rx waits for the next receive completion and returns its rx. */
static struct rx *wait_rx(struct fi_cq_tagged_entry *e, fi_addr_t *src,
			  const char *what)
{
	struct rx *r;

	wait_cq(rxcq, e, src, what);
	r = e->op_context;
	if (r < rxs || r >= rxs + nrx || r->done)
		die("%s: completion with unknown context %p", what,
		    e->op_context);
	r->done = 1;
	return r;
}

/* recv_ctl waits for a control message, which must be want. */
static struct rx *recv_ctl(const char *want, size_t len,
			   struct fi_cq_tagged_entry *e, fi_addr_t *src)
{
	struct rx *r = wait_rx(e, src, want ? want : "hello");

	if (r->tagged || r->msg != -1)
		die("waiting for %s: got body receive %d", want, r->msg);
	if (e->flags != (FI_MSG | FI_RECV))
		die("%s: flags 0x%" PRIx64, want, (uint64_t)e->flags);
	if (e->len != len || (want && memcmp(r->buf, want, len) != 0))
		die("%s: got %zu bytes", want ? want : "hello", e->len);
	return r;
}

static void send_wait(const void *buf, size_t len, fi_addr_t to,
		      const char *what)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	SEND(fi_send(ep, buf, len, NULL, to, &txctx));
	wait_cq(txcq, &e, &src, what);
	if (e.flags != (FI_MSG | FI_SEND))
		die("%s: send flags 0x%" PRIx64, what, (uint64_t)e.flags);
}

/* The body's messages of the scenario (not peers), per sender, in order. */
struct msgspec {
	size_t len;
	uint64_t tag; /* 0: untagged */
	int data;     /* with CQ data */
};

static const struct msgspec *body;
static int nbody;

static const struct msgspec source_body[] = {{64, 0, 0}, {64, TAG_SOURCE, 0}};
static const struct msgspec cqdata_body[] = {{64, 0, 1},
					     {1000, 0, 1},
					     {64, TAG_CQDATA + 2, 1},
					     {1000, TAG_CQDATA + 3, 1}};
static const struct msgspec rndv_body[] = {{RNDV_LEN, 0, 1},
					   {RNDV_LEN, TAG_RNDV, 1}};
static const struct msgspec dc_body[] = {{64, 0, 0},
					 {1000, TAG_DC, 1},
					 {RNDV_LEN, 0, 1},
					 {RNDV_LEN, TAG_DC + 1, 0}};
static struct msgspec tagged_body[sizeof(tagged_msgs) / sizeof(tagged_msgs[0])];

/*
 * body_post posts the send of body message k to to and returns its buffer,
 * which stays in use until the send completes.
 */
static uint8_t *body_post(int k, fi_addr_t to)
{
	const struct msgspec *m = &body[k];
	uint8_t *buf = malloc(m->len);

	if (!buf)
		die("out of memory");
	fill(buf, m->len, my_seed(k));
	if (m->tag && m->data)
		SEND(fi_tsenddata(ep, buf, m->len, NULL, my_data(k), to,
				   m->tag, &txctx));
	else if (m->tag)
		SEND(fi_tsend(ep, buf, m->len, NULL, to, m->tag, &txctx));
	else if (m->data)
		SEND(fi_senddata(ep, buf, m->len, NULL, my_data(k), to,
				  &txctx));
	else
		SEND(fi_send(ep, buf, m->len, NULL, to, &txctx));
	return buf;
}

/* body_sent checks the completion e of a body send. */
static void body_sent(const struct fi_cq_tagged_entry *e)
{
	if (e->flags != (FI_TAGGED | FI_SEND) && e->flags != (FI_MSG | FI_SEND))
		die("body send: flags 0x%" PRIx64, (uint64_t)e->flags);
}

/* body_send sends body message k to to and waits for its completion. */
static void body_send(int k, fi_addr_t to)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	uint64_t want = (body[k].tag ? FI_TAGGED : FI_MSG) | FI_SEND;
	uint8_t *buf = body_post(k, to);

	wait_cq(txcq, &e, &src, "body send");
	if (e.flags != want)
		die("send %d: flags 0x%" PRIx64 ", want 0x%" PRIx64, k,
		    (uint64_t)e.flags, want);
	free(buf);
}

/* dc_scenario reports whether the scenario is delivery or transmit. */
static int dc_scenario(void)
{
	return tx_op_flags != 0;
}

/* read_line reads a line from stdin, which must be want; with progress it
 * drives the endpoint's progress while it waits, else it makes none. */
static void read_line(const char *want, int progress)
{
	char line[64];
	size_t n = 0;
	long long end = now_ms() + 4 * TIMEOUT_MS;

	for (;;) {
		struct pollfd pfd = {.fd = 0, .events = POLLIN};
		int r = poll(&pfd, 1, progress ? 0 : 100);

		if (r < 0)
			die("poll stdin failed");
		if (r > 0) {
			char c;
			ssize_t got = read(0, &c, 1);

			if (got != 1)
				die("stdin closed before \"%s\"", want);
			if (c == '\n')
				break;
			if (n + 1 < sizeof(line))
				line[n++] = c;
			continue;
		}
		if (now_ms() > end)
			die("no \"%s\" on stdin in %d ms", want, 4 * TIMEOUT_MS);
		if (progress)
			progress_tx();
	}
	line[n] = 0;
	if (strcmp(line, want) != 0)
		die("stdin: \"%s\", want \"%s\"", line, want);
}

/*
 * dc_send_all sends the body of delivery and transmit at once, once the
 * test says "send", and counts the completions that come while the peer
 * makes no progress (dc_early), then waits for the others.
 */
static void dc_send_all(void)
{
	uint8_t *bufs[sizeof(dc_body) / sizeof(dc_body[0])];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	long long end;
	int done = 0;

	read_line("send", 1);
	for (int k = 0; k < nbody; k++)
		bufs[k] = body_post(k, peer_addr[0]);
	for (end = now_ms() + DC_WINDOW_MS; now_ms() < end;) {
		int r = cq_poll(txcq, &e, &src, &err);

		if (r < 0)
			die("body send: error completion %d", err.err);
		if (r > 0) {
			body_sent(&e);
			done++;
		}
		pause_briefly();
	}
	printf("dc_early=%d\n", done);
	printf("dc_pending=1\n");
	for (; done < nbody; done++) {
		wait_cq(txcq, &e, &src, "body send");
		body_sent(&e);
	}
	for (int k = 0; k < nbody; k++)
		free(bufs[k]);
}

/*
 * body_recv waits for one body message, prints what it carried, and checks
 * it against body message k, where k is the message its receive was posted
 * for. It returns k.
 */
static int body_recv(fi_addr_t *src)
{
	struct fi_cq_tagged_entry e;
	struct rx *r = wait_rx(&e, src, "body receive");
	const struct msgspec *m;
	uint64_t flags;
	int k = r->msg, ok;

	if (k < 0 || k >= nbody)
		die("body receive: got a control or unmatched receive");
	m = &body[k];
	flags = (m->tag ? FI_TAGGED : FI_MSG) | FI_RECV |
		(m->data ? FI_REMOTE_CQ_DATA : 0);
	printk(k, "flags", e.flags);
	printk(k, "len", e.len);
	printk(k, "data", m->data ? e.data : 0);
	printk(k, "tag", m->tag ? e.tag : 0);
	ok = e.flags == flags && e.len == m->len &&
	     (!m->data || e.data == peer_data(k)) &&
	     (!m->tag || e.tag == m->tag) && filled(r->buf, m->len, peer_seed(k));
	printf("m%d_ok=%d\n", k, ok);
	if (!ok)
		die("message %d: flags 0x%" PRIx64 " len %zu data 0x%" PRIx64
		    " tag 0x%" PRIx64 " or contents wrong",
		    k, (uint64_t)e.flags, e.len, e.data, e.tag);
	return k;
}

static struct fi_info *make_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo failed");
	h->caps = FI_MSG | FI_TAGGED;
	if (source)
		h->caps |= FI_SOURCE;
	if (strcmp(scenario, "tagged") == 0)
		h->caps |= FI_DIRECTED_RECV;
	h->ep_attr->type = FI_EP_RDM;
	h->tx_attr->op_flags = tx_op_flags;
	h->domain_attr->mr_mode = 0;
	h->fabric_attr->prov_name = strdup("tcp");
	if (!h->fabric_attr->prov_name)
		die("out of memory");
	return h;
}

static void open_ep(void)
{
	struct fi_info *hints = make_hints();
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE,
			 hints, &info);
	if (ret == -FI_ENODATA && (hints->caps & FI_DIRECTED_RECV)) {
		hints->caps &= ~FI_DIRECTED_RECV;
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL,
				 FI_SOURCE, hints, &info);
	}
	CHECK(ret);
	fi_freeinfo(hints);
	directed = (info->caps & FI_DIRECTED_RECV) != 0;
	printf("prov_name=%s\n", info->fabric_attr->prov_name);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &txcq, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &rxcq, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	CHECK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	CHECK(fi_enable(ep));
}

static void get_name(uint8_t name[NAME_LEN])
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);

	CHECK(fi_getname(&ep->fid, &sin, &len));
	if (len != NAME_LEN || sin.sin_family != AF_INET)
		die("endpoint name: family %d, %zu bytes", sin.sin_family, len);
	memcpy(name, &sin, NAME_LEN);
}

static fi_addr_t insert(const uint8_t name[NAME_LEN])
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int ret = fi_av_insert(av, name, 1, &a, 0, NULL);

	if (ret != 1)
		die("fi_av_insert: %d", ret);
	return a;
}

static void write_name_file(const char *path)
{
	uint8_t name[NAME_LEN];
	char tmp[4096];
	FILE *f;

	get_name(name);
	print_hex("name", name, NAME_LEN);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("open %s failed", tmp);
	for (int i = 0; i < NAME_LEN; i++)
		fprintf(f, "%02x", name[i]);
	fprintf(f, "\n");
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die("writing %s failed", path);
}

static void parse_name(const char *hex, uint8_t name[NAME_LEN])
{
	if (strlen(hex) != 2 * NAME_LEN)
		die("server name %s: want %d hex digits", hex, 2 * NAME_LEN);
	for (int i = 0; i < NAME_LEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			die("server name %s: bad hex", hex);
		name[i] = (uint8_t)v;
	}
}

/* post_body_recvs posts the scenario's receives for the peer's messages. */
static void post_body_recvs(fi_addr_t from)
{
	if (strcmp(scenario, "source") == 0) {
		post_recv(SMALL_BUF, 0);
		post_trecv(SMALL_BUF, 1, FI_ADDR_UNSPEC, TAG_SOURCE, 0);
	} else if (strcmp(scenario, "cqdata") == 0) {
		post_recv(SMALL_BUF, 0);
		post_recv(SMALL_BUF, 1);
		post_trecv(SMALL_BUF, 2, FI_ADDR_UNSPEC, TAG_CQDATA + 2, 0);
		post_trecv(SMALL_BUF, 3, FI_ADDR_UNSPEC, TAG_CQDATA + 3, 0);
	} else if (strcmp(scenario, "rndv-cqdata") == 0) {
		post_recv(RNDV_BUF, 0);
		post_trecv(RNDV_BUF, 1, FI_ADDR_UNSPEC, TAG_RNDV, 0);
	} else if (strcmp(scenario, "tagged") == 0) {
		int last = (int)(sizeof(tagged_msgs) / sizeof(tagged_msgs[0])) - 1;

		for (size_t i = 0; i < sizeof(tagged_recvs) / sizeof(tagged_recvs[0]); i++)
			post_trecv(SMALL_BUF, tagged_recvs[i].msg,
				   FI_ADDR_UNSPEC, tagged_recvs[i].tag,
				   tagged_recvs[i].ignore);
		post_trecv(SMALL_BUF, -1, FI_ADDR_UNSPEC, TAG_NOMATCH, 0);
		if (directed) {
			/* 127.0.0.1:9: an address that never sends. */
			struct sockaddr_in other = {.sin_family = AF_INET,
						    .sin_port = htons(9)};
			fi_addr_t o;

			other.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			o = insert((const uint8_t *)&other);
			post_trecv(SMALL_BUF, -1, o, tagged_msgs[last].tag, 0);
			post_trecv(SMALL_BUF, last, from,
				   tagged_msgs[last].tag, 0);
		} else {
			post_trecv(SMALL_BUF, last, FI_ADDR_UNSPEC,
				   tagged_msgs[last].tag, 0);
		}
	} else if (strcmp(scenario, "peers") == 0 && server) {
		for (int i = 0; i < PEERS * PEER_MSGS; i++)
			post_trecv(SMALL_BUF, i, FI_ADDR_UNSPEC, TAG_PEERS,
				   0xfff);
	} else if (dc_scenario()) {
		post_recv(SMALL_BUF, 0);
		post_trecv(SMALL_BUF, 1, FI_ADDR_UNSPEC, TAG_DC, 0);
		post_recv(RNDV_BUF, 2);
		post_trecv(RNDV_BUF, 3, FI_ADDR_UNSPEC, TAG_DC + 1, 0);
	}
}

static void check_src(const char *key, fi_addr_t src, fi_addr_t want)
{
	printf("%s=%d\n", key, src == want);
	if (src != want)
		die("%s: source 0x%" PRIx64 ", want 0x%" PRIx64, key,
		    (uint64_t)src, (uint64_t)want);
}

/* body_send_all sends this side's body messages to peer_addr[0]. */
static void body_send_all(void)
{
	fi_addr_t to = peer_addr[0];

	if (dc_scenario()) {
		dc_send_all();
		return;
	}
	for (int k = 0; k < nbody; k++)
		body_send(k, to);
	if (strcmp(scenario, "peers") != 0)
		return;
	for (int n = 0; n < PEER_MSGS; n++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		uint8_t buf[32];

		fill(buf, sizeof(buf), (unsigned)(my_id * 16 + n));
		SEND(fi_tsend(ep, buf, sizeof(buf), NULL, to,
			       TAG_PEERS | (uint64_t)my_id << 8 | (uint64_t)n,
			       &txctx));
		wait_cq(txcq, &e, &src, "peers send");
		if (e.flags != (FI_TAGGED | FI_SEND))
			die("peers send: flags 0x%" PRIx64, (uint64_t)e.flags);
	}
}

/* cancel_unmatched cancels the tagged scenario's unmatched receives. */
static void cancel_unmatched(void)
{
	int canceled = 0, want = 0;

	for (int i = 0; i < nrx; i++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		fi_addr_t src;
		long long end = now_ms() + TIMEOUT_MS;
		int r;

		if (rxs[i].done || !rxs[i].tagged)
			continue;
		if (rxs[i].msg != -1)
			die("receive %d never completed", rxs[i].msg);
		want++;
		CHECK(fi_cancel(&ep->fid, &rxs[i]));
		while ((r = cq_poll(rxcq, &e, &src, &err)) == 0) {
			if (now_ms() > end)
				die("cancel: no completion in %d ms", TIMEOUT_MS);
			pause_briefly();
		}
		if (r > 0)
			die("canceled receive completed with %zu bytes", e.len);
		if (err.err != FI_ECANCELED || err.op_context != &rxs[i])
			die("cancel: error %d (%s)", err.err,
			    fi_strerror(err.err));
		rxs[i].done = 1;
		canceled++;
	}
	printf("canceled=%d\n", canceled);
	if (canceled != want)
		die("canceled %d of %d", canceled, want);
}

/* body_recv_all receives and checks the peer's body messages. */
static void body_recv_all(void)
{
	fi_addr_t src;

	if (strcmp(scenario, "tagged") == 0)
		printf("directed=%d\n", directed);
	if (dc_scenario()) {
		printf("dc_gate=1\n");
		read_line("post", 0);
	}
	for (int n = 0; n < nbody; n++) {
		int k = body_recv(&src);

		if (source) {
			char key[32];

			snprintf(key, sizeof(key), "m%d_src_match", k);
			check_src(key, src, peer_addr[0]);
		}
	}
	if (strcmp(scenario, "tagged") == 0)
		cancel_unmatched();
}

/* peers_recv receives every client's PEER_MSGS tagged messages. */
static void peers_recv(void)
{
	int count[PEERS] = {0}, src_ok[PEERS];

	for (int i = 0; i < PEERS; i++)
		src_ok[i] = 1;
	for (int i = 0; i < PEERS * PEER_MSGS; i++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		struct rx *r = wait_rx(&e, &src, "peers receive");
		unsigned id = (unsigned)(e.tag >> 8) & 0xf, n = e.tag & 0xff;

		if (!r->tagged || (e.tag & ~0xfffULL) != TAG_PEERS ||
		    id >= PEERS)
			die("peers receive: tag 0x%" PRIx64, e.tag);
		if (e.flags != (FI_TAGGED | FI_RECV) || e.len != 32 ||
		    !filled(r->buf, 32, id * 16 + n))
			die("peers receive from %u: flags 0x%" PRIx64
			    " len %zu or contents wrong",
			    id, (uint64_t)e.flags, e.len);
		if (n != (unsigned)count[id])
			die("peer %u: message %u arrived as number %d", id, n,
			    count[id]);
		count[id]++;
		if (src != peer_addr[id])
			src_ok[id] = 0;
	}
	for (int i = 0; i < PEERS; i++) {
		printf("peer%d_count=%d\n", i, count[i]);
		printf("peer%d_src_match=%d\n", i, src_ok[i]);
		if (!src_ok[i])
			die("peer %d: a source was not its AV entry", i);
	}
}

static void bye(void)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	for (int i = 0; i < npeers; i++)
		send_wait("bye", 3, peer_addr[i], "send bye");
	for (int i = 0; i < npeers; i++) {
		post_recv(CTL_LEN, -1);
		recv_ctl("bye", 3, &e, &src);
	}
	printf("bye=1\n");
}

static void run_server(const char *name_file)
{
	int peers = strcmp(scenario, "peers") == 0;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	npeers = peers ? PEERS : 1;
	for (int i = 0; i < npeers; i++)
		post_recv(CTL_LEN, -1);
	write_name_file(name_file);
	for (int i = 0; i < npeers; i++) {
		struct rx *r = recv_ctl(NULL, NAME_LEN + 1, &e, &src);
		int id = r->buf[NAME_LEN];

		if (source && !peers)
			printf("hello_src_notavail=%d\n",
			       src == FI_ADDR_NOTAVAIL);
		if (source && !peers && src != FI_ADDR_NOTAVAIL)
			die("hello from a client not in the AV: source 0x%" PRIx64,
			    (uint64_t)src);
		if (id >= npeers || (peers && peer_addr[id] != FI_ADDR_NOTAVAIL))
			die("hello with id %d", id);
		peer_addr[id] = insert(r->buf);
	}
	post_body_recvs(peer_addr[0]);
	for (int i = 0; i < npeers; i++)
		send_wait("ready", 5, peer_addr[i], "send ready");
	if (peers) {
		peers_recv();
	} else {
		body_recv_all();
		body_send_all();
	}
	bye();
}

static void run_client(const char *server_hex)
{
	uint8_t name[NAME_LEN], hello[NAME_LEN + 1];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;

	npeers = 1;
	parse_name(server_hex, name);
	peer_addr[0] = insert(name);
	post_recv(CTL_LEN, -1);
	post_body_recvs(peer_addr[0]);
	get_name(hello);
	print_hex("name", hello, NAME_LEN);
	hello[NAME_LEN] = (uint8_t)my_id;
	send_wait(hello, sizeof(hello), peer_addr[0], "send hello");
	recv_ctl("ready", 5, &e, &src);
	if (source)
		check_src("ready_src_match", src, peer_addr[0]);
	body_send_all();
	body_recv_all();
	bye();
}

static void close_fid(struct fid *f, const char *what)
{
	if (f && fi_close(f) != 0)
		die("fi_close(%s) failed", what);
}

static void close_all(void)
{
	close_fid(ep ? &ep->fid : NULL, "ep");
	close_fid(av ? &av->fid : NULL, "av");
	close_fid(rxcq ? &rxcq->fid : NULL, "rx cq");
	close_fid(txcq ? &txcq->fid : NULL, "tx cq");
	close_fid(domain ? &domain->fid : NULL, "domain");
	close_fid(fabric ? &fabric->fid : NULL, "fabric");
	fi_freeinfo(info);
	for (int i = 0; i < nrx; i++)
		free(rxs[i].buf);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cpeer_rdm server <name-file> <scenario>\n"
		"       cpeer_rdm client <server-name-hex> <scenario> [id]\n"
		"scenarios: source cqdata rndv-cqdata tagged peers delivery "
		"transmit\n");
	exit(2);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "server") == 0)
		server = 1;
	else if (!((argc == 4 || argc == 5) && strcmp(argv[1], "client") == 0))
		usage();
	scenario = argv[3];
	if (argc == 5) {
		char *end;
		long id = strtol(argv[4], &end, 10);

		if (*end || id < 0 || id >= PEERS)
			usage();
		my_id = (int)id;
	}
	if (strcmp(scenario, "source") == 0) {
		body = source_body;
		nbody = 2;
		source = 1;
	} else if (strcmp(scenario, "cqdata") == 0) {
		body = cqdata_body;
		nbody = 4;
	} else if (strcmp(scenario, "rndv-cqdata") == 0) {
		body = rndv_body;
		nbody = 2;
	} else if (strcmp(scenario, "tagged") == 0) {
		for (int i = 0; i < (int)(sizeof(tagged_body) / sizeof(tagged_body[0])); i++) {
			tagged_body[i].len = tagged_msgs[i].len;
			tagged_body[i].tag = tagged_msgs[i].tag;
		}
		body = tagged_body;
		nbody = sizeof(tagged_body) / sizeof(tagged_body[0]);
	} else if (strcmp(scenario, "peers") == 0) {
		source = 1;
	} else if (strcmp(scenario, "delivery") == 0 ||
		   strcmp(scenario, "transmit") == 0) {
		tx_op_flags = scenario[0] == 'd' ? FI_DELIVERY_COMPLETE :
						   FI_TRANSMIT_COMPLETE;
		body = dc_body;
		nbody = sizeof(dc_body) / sizeof(dc_body[0]);
	} else {
		usage();
	}
	for (int i = 0; i < PEERS; i++)
		peer_addr[i] = FI_ADDR_NOTAVAIL;

	open_ep();
	if (server)
		run_server(argv[2]);
	else
		run_client(argv[2]);
	close_all();
	printf("done=1\n");
	return 0;
}
