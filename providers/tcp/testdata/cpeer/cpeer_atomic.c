/*
 * cpeer_atomic: a C libfabric 1.17 RDM peer over "-p tcp" (tcp;ofi_rxm)
 * that checks every atomic result, for gofabric's atomic interop test
 * (providers/tcp/interop_atomic_test.go). Written for gofabric; it only
 * uses the public libfabric API. Its expectations come from plain C
 * arithmetic on the tables below, never from libfabric.
 *
 *   cpeer_atomic target <name-file>
 *       open an RDM endpoint with FI_ATOMIC on 127.0.0.1, register the
 *       target region, write the endpoint's name (a 16-byte sockaddr_in,
 *       in hex) and a newline to name-file, then make progress until stdin
 *       gives a line "check"; then check the region
 *   cpeer_atomic initiator <target-name-hex> <key-hex>
 *       perform every valid operation against the target's region, whose
 *       registration has key key-hex, and check what comes back
 *
 * Results go to stdout as "key=value" lines; a broken frame (a libfabric
 * call failing, a wait timing out) prints a message on stderr and exits
 * with status 1, whereas a wrong result is reported in its line and
 * counted in fails=<n>, and the program goes on. Every wait is bounded by
 * TIMEOUT_MS.
 *
 * Both roles first print the valid matrix of C's rxm: for every kind
 * (a: fi_atomicvalid, f: fi_fetch_atomicvalid, c: fi_compare_atomicvalid),
 * every enum fi_datatype d (0..FI_UINT128) and every enum fi_op o
 * (0..FI_MSWAP), a line q_<kind>_<d>_<o>=<count> when the call succeeds,
 * or =<negative errno> when it fails; then valid=<number of successes>.
 *
 * The target region (MR_SIZE bytes, FI_REMOTE_READ | FI_REMOTE_WRITE,
 * requested key ATOMIC_KEY; addresses are offsets, mr_mode 0):
 *   - one SLOT_SIZE slot per (kind, datatype, op), at slot_off(): its
 *     first NELEM elements hold the datatype's "old" table, the rest of
 *     the region the byte pattern fill_byte();
 *   - INJ_OFF: two int32, 1000 and -5, for fi_inject_atomic;
 *   - GUARD_OFF: the last 16 bytes, pattern only, for the bad requests.
 *
 * The initiator, for each valid (kind, datatype, op), in that order:
 *   1. the plain call (fi_atomic, fi_fetch_atomic, fi_compare_atomic) on
 *      the slot's NELEM elements, with the datatype's operand (and
 *      compare) table;
 *   2. the msg call (fi_atomicmsg, fi_fetch_atomicmsg,
 *      fi_compare_atomicmsg) with the same operands over two remote
 *      segments in reverse order: elements 3..5 first, then 0..2 (the
 *      local operand, compare and result iovs follow the same order).
 * It waits for each completion and checks its context and flags
 * (FI_ATOMIC | FI_WRITE for a, FI_ATOMIC | FI_READ for f and c) and, for
 * f and c, the old values: the table for call 1, the result of applying
 * the op once for call 2. It prints r_<kind>_<d>_<o>=ok or =fail:<why>.
 * The target's slot must end as the op applied twice.
 *
 * Then the initiator does fi_inject_atomic (FI_INT32, FI_SUM, operands 7
 * and -9 on INJ_OFF) and a fetch FI_ATOMIC_READ of the same two elements,
 * whose completion must be the only one (the inject has none) and whose
 * result must show the sum: inject=ok. And two bad requests, which must
 * fail with an error entry of err FI_EACCES and leave the target's memory
 * and the result buffer untouched: a fetch FI_SUM with a wrong key
 * (bad_key_err=<err>, bad_key_res=ok) and an FI_ATOMIC_WRITE of two
 * uint64 at MR_SIZE - 8, whose second element is past the region
 * (bad_range_err=<err>). For each it also prints <what>_prov_errno and
 * <what>_stray=<tx>,<rx>: the context-less error entries C's rxm adds on
 * its transmit and receive CQs after a failed atomic (see stray()).
 *
 * The target, on "check", prints m_<kind>_<d>_<o>=ok or =fail:<why> for
 * each triple of its own matrix, mem_inject, mem_guard and mem_all (every
 * byte of the region as expected).
 */
#define _POSIX_C_SOURCE 200809L

#include <complex.h>
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
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define TIMEOUT_MS 10000
#define NAME_LEN 16 /* struct sockaddr_in */
#define ATOMIC_KEY 0xa70cULL

#define NKIND 3
#define NDT (FI_UINT128 + 1)
#define NOP FI_ATOMIC_OP_LAST
#define NELEM 6
#define SEG 3 /* elements in each remote segment of the msg calls */
#define SLOT_SIZE 64
#define NSLOTS (NKIND * NDT * NOP)
#define INJ_OFF (NSLOTS * SLOT_SIZE)
#define GUARD_OFF (INJ_OFF + SLOT_SIZE)
#define MR_SIZE (GUARD_OFF + 16)
#define MAX_ELEM 32 /* the largest datatype */

static const char kind_name[NKIND] = {'a', 'f', 'c'};

/* The integer tables, truncated to each integer type. */
static const uint64_t int_old[NELEM] = {0, 0, 9, (uint64_t)-3, 100,
					0x7a5c3e1f6b2d4935ULL};
static const uint64_t int_opd[NELEM] = {0, 7, 0, 5, 120,
					0xfe2d3c4bda69f8a4ULL};
static const uint64_t int_cmp[NELEM] = {1, 0, 12, (uint64_t)-3, 20,
					(uint64_t)-1};

/* The floating-point tables (exact in float), for FI_FLOAT and FI_DOUBLE. */
static const double flt_old[NELEM] = {0, 0, -1.25, 3.5, 1000, -7.5};
static const double flt_opd[NELEM] = {0, 2.5, 0, -0.75, 0.5, -8};
static const double flt_cmp[NELEM] = {1.5, 0, -3, 3.5, 2000, -8};

/* The FI_FLOAT_COMPLEX tables: real and imaginary parts. */
static const float cpx_old[NELEM][2] = {{0, 0},  {0, 0}, {0, 2},
					{-1, 0.5}, {3, -1}, {2, 2}};
static const float cpx_opd[NELEM][2] = {{0, 0},  {1.5, -2}, {0, 0},
					{2, 3}, {-0.5, 0.25}, {4, -4}};
static const float cpx_cmp[NELEM][2] = {{1, 0}, {0, 0},  {0, 2.5},
					{-1, 0.5}, {3, 1}, {2, 2}};

/* The inject's operands and the target's two int32 there. */
static const int32_t inj_old[2] = {1000, -5};
static const int32_t inj_opd[2] = {7, -9};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_mr *mr;
static int target;
static uint8_t *region; /* the target's registered region */
static int fails;

/* valid[k][d][o]: the count C's rxm reports, or its negative error. */
static long valid[NKIND][NDT][NOP];

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cpeer_atomic %s: ", target ? "target" : "initiator");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

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

/* progress drives the endpoint's (manual) progress: a read of no entries. */
static void progress(void)
{
	ssize_t ret = fi_cq_read(txcq, NULL, 0);

	if (ret < 0 && ret != -FI_EAGAIN)
		die("progress: fi_cq_read: %s (%zd)", fi_strerror((int)-ret),
		    ret);
	pause_briefly();
}

/*
 * POST issues a data-transfer call, retrying while it returns -FI_EAGAIN
 * (rxm's answer while it connects) and driving progress between tries.
 */
#define POST(call)                                                           \
	do {                                                                 \
		long long end_ = now_ms() + TIMEOUT_MS;                      \
		long ret_;                                                   \
		while ((ret_ = (long)(call)) == -FI_EAGAIN) {                \
			if (now_ms() > end_)                                 \
				die("%s: -FI_EAGAIN for %d ms", #call,       \
				    TIMEOUT_MS);                             \
			progress();                                          \
		}                                                            \
		if (ret_ < 0)                                                \
			die("%s:%d: %s: %s (%ld)", __FILE__, __LINE__,       \
			    #call, fi_strerror((int)-ret_), ret_);           \
	} while (0)

/*
 * wait_tx waits for the next transmit completion: 1 with *e filled, or 0
 * with *err filled for an error entry.
 */
static int wait_tx(struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err,
		   const char *what)
{
	long long end = now_ms() + TIMEOUT_MS;

	for (;;) {
		ssize_t ret = fi_cq_read(txcq, e, 1);

		if (ret == 1)
			return 1;
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			CHECK(fi_cq_readerr(txcq, err, 0));
			return 0;
		}
		if (ret != -FI_EAGAIN)
			die("%s: fi_cq_read: %s (%zd)", what,
			    fi_strerror((int)-ret), ret);
		if (now_ms() > end)
			die("%s: no completion in %d ms", what, TIMEOUT_MS);
		pause_briefly();
	}
}

/* dt_size is the size of an element of datatype d (x86-64). */
static size_t dt_size(int d)
{
	switch (d) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
	case FI_FLOAT_COMPLEX:
		return 8;
	case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE:
	case FI_INT128:
	case FI_UINT128:
		return 16;
	case FI_LONG_DOUBLE_COMPLEX:
		return 32;
	}
	die("datatype %d: no size", d);
	return 0;
}

static size_t slot_off(int k, int d, int o)
{
	return ((size_t)(k * NDT + d) * NOP + (size_t)o) * SLOT_SIZE;
}

static uint8_t fill_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

/*
 * Tables: table(d, which, buf) writes NELEM elements of datatype d to buf,
 * from the old (0), operand (1) or compare (2) table.
 */
#define INT_TABLE(T)                                                         \
	do {                                                                 \
		T *p = buf;                                                  \
		for (int i = 0; i < NELEM; i++)                              \
			p[i] = (T)t[i];                                      \
	} while (0)
#define FLT_TABLE(T)                                                         \
	do {                                                                 \
		T *p = buf;                                                  \
		for (int i = 0; i < NELEM; i++)                              \
			p[i] = (T)f[i];                                      \
	} while (0)

static int table(int d, int which, void *buf)
{
	const uint64_t *t = which == 0 ? int_old : which == 1 ? int_opd : int_cmp;
	const double *f = which == 0 ? flt_old : which == 1 ? flt_opd : flt_cmp;
	const float(*c)[2] = which == 0 ? cpx_old : which == 1 ? cpx_opd : cpx_cmp;

	switch (d) {
	case FI_INT8: INT_TABLE(int8_t); break;
	case FI_UINT8: INT_TABLE(uint8_t); break;
	case FI_INT16: INT_TABLE(int16_t); break;
	case FI_UINT16: INT_TABLE(uint16_t); break;
	case FI_INT32: INT_TABLE(int32_t); break;
	case FI_UINT32: INT_TABLE(uint32_t); break;
	case FI_INT64: INT_TABLE(int64_t); break;
	case FI_UINT64: INT_TABLE(uint64_t); break;
	case FI_FLOAT: FLT_TABLE(float); break;
	case FI_DOUBLE: FLT_TABLE(double); break;
	case FI_FLOAT_COMPLEX: {
		float complex *p = buf;

		for (int i = 0; i < NELEM; i++)
			p[i] = c[i][0] + c[i][1] * I;
		break;
	}
	default:
		return 0; /* no table: C's rxm offers no operation on it */
	}
	return 1;
}

/*
 * The expectations: what op o makes of an element a with operand v and
 * compare value c, in plain C arithmetic (libfabric's fi_atomic(3)
 * semantics: the compare ops test "c <op> a").
 */
#define INT_APPLY(NAME, T)                                                   \
	static T NAME(int o, T a, T v, T c)                                  \
	{                                                                    \
		switch (o) {                                                 \
		case FI_MIN: return v < a ? v : a;                           \
		case FI_MAX: return v > a ? v : a;                           \
		case FI_SUM: return (T)((uint64_t)a + (uint64_t)v);          \
		case FI_PROD: return (T)((uint64_t)a * (uint64_t)v);         \
		case FI_LOR: return (T)(a != 0 || v != 0);                   \
		case FI_LAND: return (T)(a != 0 && v != 0);                  \
		case FI_BOR: return (T)(a | v);                              \
		case FI_BAND: return (T)(a & v);                             \
		case FI_LXOR: return (T)((a != 0) != (v != 0));              \
		case FI_BXOR: return (T)(a ^ v);                             \
		case FI_ATOMIC_READ: return a;                               \
		case FI_ATOMIC_WRITE: return v;                              \
		case FI_CSWAP: return c == a ? v : a;                        \
		case FI_CSWAP_NE: return c != a ? v : a;                     \
		case FI_CSWAP_LE: return c <= a ? v : a;                     \
		case FI_CSWAP_LT: return c < a ? v : a;                      \
		case FI_CSWAP_GE: return c >= a ? v : a;                     \
		case FI_CSWAP_GT: return c > a ? v : a;                      \
		case FI_MSWAP: return (T)((v & c) | (a & ~c));               \
		}                                                            \
		die("no expectation for op %d", o);                          \
		return 0;                                                    \
	}
INT_APPLY(apply_i8, int8_t)
INT_APPLY(apply_u8, uint8_t)
INT_APPLY(apply_i16, int16_t)
INT_APPLY(apply_u16, uint16_t)
INT_APPLY(apply_i32, int32_t)
INT_APPLY(apply_u32, uint32_t)
INT_APPLY(apply_i64, int64_t)
INT_APPLY(apply_u64, uint64_t)

#define FLT_APPLY(NAME, T)                                                   \
	static T NAME(int o, T a, T v, T c)                                  \
	{                                                                    \
		switch (o) {                                                 \
		case FI_MIN: return v < a ? v : a;                           \
		case FI_MAX: return v > a ? v : a;                           \
		case FI_SUM: return a + v;                                   \
		case FI_PROD: return a * v;                                  \
		case FI_LOR: return (T)(a != 0 || v != 0);                   \
		case FI_LAND: return (T)(a != 0 && v != 0);                  \
		case FI_LXOR: return (T)((a != 0) != (v != 0));              \
		case FI_ATOMIC_READ: return a;                               \
		case FI_ATOMIC_WRITE: return v;                              \
		case FI_CSWAP: return c == a ? v : a;                         \
		case FI_CSWAP_NE: return c != a ? v : a;                     \
		case FI_CSWAP_LE: return c <= a ? v : a;                     \
		case FI_CSWAP_LT: return c < a ? v : a;                      \
		case FI_CSWAP_GE: return c >= a ? v : a;                     \
		case FI_CSWAP_GT: return c > a ? v : a;                      \
		}                                                            \
		die("no expectation for op %d", o);                          \
		return 0;                                                    \
	}
FLT_APPLY(apply_flt, float)
FLT_APPLY(apply_dbl, double)

static float complex apply_cpx(int o, float complex a, float complex v,
			       float complex c)
{
	switch (o) {
	case FI_SUM: return a + v;
	case FI_PROD: return a * v;
	case FI_LOR: return (float)(a != 0 || v != 0);
	case FI_LAND: return (float)(a != 0 && v != 0);
	case FI_LXOR: return (float)((a != 0) != (v != 0));
	case FI_ATOMIC_READ: return a;
	case FI_ATOMIC_WRITE: return v;
	case FI_CSWAP: return c == a ? v : a;
	case FI_CSWAP_NE: return c != a ? v : a;
	}
	die("no complex expectation for op %d", o);
	return 0;
}

#define APPLY_ALL(T, FN)                                                     \
	do {                                                                 \
		T *a = mem;                                                  \
		const T *v = opd, *c = cmp;                                  \
		for (int i = 0; i < NELEM; i++)                              \
			a[i] = FN(o, a[i], v[i], c[i]);                      \
	} while (0)

/* apply applies op o of datatype d to the NELEM elements at mem. */
static void apply(int d, int o, void *mem, const void *opd, const void *cmp)
{
	switch (d) {
	case FI_INT8: APPLY_ALL(int8_t, apply_i8); break;
	case FI_UINT8: APPLY_ALL(uint8_t, apply_u8); break;
	case FI_INT16: APPLY_ALL(int16_t, apply_i16); break;
	case FI_UINT16: APPLY_ALL(uint16_t, apply_u16); break;
	case FI_INT32: APPLY_ALL(int32_t, apply_i32); break;
	case FI_UINT32: APPLY_ALL(uint32_t, apply_u32); break;
	case FI_INT64: APPLY_ALL(int64_t, apply_i64); break;
	case FI_UINT64: APPLY_ALL(uint64_t, apply_u64); break;
	case FI_FLOAT: APPLY_ALL(float, apply_flt); break;
	case FI_DOUBLE: APPLY_ALL(double, apply_dbl); break;
	case FI_FLOAT_COMPLEX: APPLY_ALL(float complex, apply_cpx); break;
	default: die("no expectation for datatype %d", d);
	}
}

/* expected writes to mem the slot's NELEM elements after n applications. */
static void expected(int d, int o, int n, void *mem)
{
	uint8_t opd[NELEM * MAX_ELEM], cmp[NELEM * MAX_ELEM];

	table(d, 0, mem);
	table(d, 1, opd);
	table(d, 2, cmp);
	for (int i = 0; i < n; i++)
		apply(d, o, mem, opd, cmp);
}

static void print_hex(const char *key, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	printf("%s=", key);
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
	printf("\n");
}

/* query prints and records C's valid matrix. */
static void query(void)
{
	uint8_t scratch[NELEM * MAX_ELEM];
	int n = 0;

	for (int k = 0; k < NKIND; k++)
		for (int d = 0; d < NDT; d++)
			for (int o = 0; o < NOP; o++) {
				size_t count = 0;
				int ret;

				if (k == 0)
					ret = fi_atomicvalid(ep, d, o, &count);
				else if (k == 1)
					ret = fi_fetch_atomicvalid(ep, d, o, &count);
				else
					ret = fi_compare_atomicvalid(ep, d, o, &count);
				valid[k][d][o] = ret == 0 ? (long)count : ret;
				if (ret == 0) {
					n++;
					if (!table(d, 0, scratch))
						die("C's rxm offers %c %d %d and this peer has no table for it",
						    kind_name[k], d, o);
				}
				printf("q_%c_%d_%d=%ld\n", kind_name[k], d, o,
				       valid[k][d][o]);
			}
	printf("valid=%d\n", n);
}

static void open_ep(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

	if (!hints)
		die("fi_allocinfo failed");
	/* C's rxm offers FI_ATOMIC only when the hints ask for it. */
	hints->caps = FI_MSG | FI_ATOMIC;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = 0;
	hints->fabric_attr->prov_name = strdup("tcp");
	if (!hints->fabric_attr->prov_name)
		die("out of memory");
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE,
			 hints, &info));
	fi_freeinfo(hints);
	printf("prov_name=%s\n", info->fabric_attr->prov_name);
	printf("caps_atomic=%d\n", (info->caps & FI_ATOMIC) != 0);
	printf("mr_mode=0x%x\n", (unsigned)info->domain_attr->mr_mode);
	if (info->domain_attr->mr_mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC))
		die("mr_mode 0x%x: want offsets",
		    (unsigned)info->domain_attr->mr_mode);
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

/* init_region writes the region's initial contents to buf. */
static void init_region(uint8_t *buf)
{
	for (size_t i = 0; i < MR_SIZE; i++)
		buf[i] = fill_byte(i);
	for (int k = 0; k < NKIND; k++)
		for (int d = 0; d < NDT; d++)
			for (int o = 0; o < NOP; o++)
				table(d, 0, buf + slot_off(k, d, o));
	memcpy(buf + INJ_OFF, inj_old, sizeof(inj_old));
}

/* ---- target ---- */

/* read_line waits, making progress, for the line want on stdin. */
static void read_line(const char *want)
{
	char line[64];
	size_t n = 0;
	long long end = now_ms() + 12 * TIMEOUT_MS;

	for (;;) {
		struct pollfd pfd = {.fd = 0, .events = POLLIN};
		int r = poll(&pfd, 1, 0);

		if (r < 0)
			die("poll stdin failed");
		if (r > 0) {
			char c;

			if (read(0, &c, 1) != 1)
				die("stdin closed before \"%s\"", want);
			if (c == '\n')
				break;
			if (n + 1 < sizeof(line))
				line[n++] = c;
			continue;
		}
		if (now_ms() > end)
			die("no \"%s\" on stdin in %d ms", want, 12 * TIMEOUT_MS);
		progress();
	}
	line[n] = 0;
	if (strcmp(line, want) != 0)
		die("stdin: \"%s\", want \"%s\"", line, want);
}

static void write_name_file(const char *path)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	char tmp[4096];
	FILE *f;

	CHECK(fi_getname(&ep->fid, &sin, &len));
	if (len != NAME_LEN || sin.sin_family != AF_INET)
		die("endpoint name: family %d, %zu bytes", sin.sin_family, len);
	print_hex("name", &sin, NAME_LEN);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("open %s failed", tmp);
	for (int i = 0; i < NAME_LEN; i++)
		fprintf(f, "%02x", ((uint8_t *)&sin)[i]);
	fprintf(f, "\n");
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die("writing %s failed", path);
}

/* same reports whether n bytes at off match want, and why not in why. */
static int same(const uint8_t *want, size_t off, size_t n, char *why,
		size_t whylen)
{
	for (size_t i = 0; i < n; i++)
		if (region[off + i] != want[off + i]) {
			snprintf(why, whylen,
				 "fail:byte_%zu_is_0x%02x_want_0x%02x", i,
				 region[off + i], want[off + i]);
			return 0;
		}
	snprintf(why, whylen, "ok");
	return 1;
}

static void run_target(const char *name_file)
{
	uint8_t *want = malloc(MR_SIZE);
	char why[96];

	region = malloc(MR_SIZE);
	if (!region || !want)
		die("out of memory");
	init_region(region);
	CHECK(fi_mr_reg(domain, region, MR_SIZE,
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, ATOMIC_KEY, 0,
			&mr, NULL));
	printf("mr_key=0x%" PRIx64 "\n", fi_mr_key(mr));
	write_name_file(name_file);
	read_line("check");

	init_region(want);
	for (int k = 0; k < NKIND; k++)
		for (int d = 0; d < NDT; d++)
			for (int o = 0; o < NOP; o++) {
				size_t off = slot_off(k, d, o);

				if (valid[k][d][o] <= 0)
					continue;
				expected(d, o, 2, want + off);
				if (!same(want, off, NELEM * dt_size(d), why,
					  sizeof(why)))
					fails++;
				printf("m_%c_%d_%d=%s\n", kind_name[k], d, o, why);
			}
	for (int i = 0; i < 2; i++)
		((int32_t *)(want + INJ_OFF))[i] = inj_old[i] + inj_opd[i];
	if (!same(want, INJ_OFF, sizeof(inj_old), why, sizeof(why)))
		fails++;
	printf("mem_inject=%s\n", why);
	if (!same(want, GUARD_OFF, MR_SIZE - GUARD_OFF, why, sizeof(why)))
		fails++;
	printf("mem_guard=%s\n", why);
	if (!same(want, 0, MR_SIZE, why, sizeof(why)))
		fails++;
	printf("mem_all=%s\n", why);
	free(want);
}

/* ---- initiator ---- */

static fi_addr_t peer;
static uint64_t key;
static int ctx; /* the context of every operation */

/* report prints r_<kind>_<d>_<o> and counts a failure. */
static void report(int k, int d, int o, const char *why)
{
	printf("r_%c_%d_%d=%s\n", kind_name[k], d, o, why);
	if (strcmp(why, "ok") != 0)
		fails++;
}

/*
 * completed waits for the operation's completion and checks it: 1 when
 * good, else 0 with the reason in why.
 */
static int completed(int k, char *why, size_t whylen)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t flags = FI_ATOMIC | (k == 0 ? FI_WRITE : FI_READ);

	if (!wait_tx(&e, &err, "atomic")) {
		snprintf(why, whylen, "fail:error_entry_err_%d_prov_errno_%d",
			 err.err, err.prov_errno);
		return 0;
	}
	if (e.op_context != &ctx) {
		snprintf(why, whylen, "fail:context_%p", e.op_context);
		return 0;
	}
	if (e.flags != flags) {
		snprintf(why, whylen, "fail:flags_0x%" PRIx64 "_want_0x%" PRIx64,
			 (uint64_t)e.flags, flags);
		return 0;
	}
	return 1;
}

/* result_ok compares the fetched old values with want. */
static int result_ok(int d, const uint8_t *got, const uint8_t *want,
		     int call, char *why, size_t whylen)
{
	size_t n = NELEM * dt_size(d);

	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			snprintf(why, whylen,
				 "fail:call_%d_result_byte_%zu_is_0x%02x_want_0x%02x",
				 call, i, got[i], want[i]);
			return 0;
		}
	return 1;
}

/* run_one performs and checks both calls of (k, d, o). */
static void run_one(int k, int d, int o)
{
	uint8_t opd[NELEM * MAX_ELEM], cmp[NELEM * MAX_ELEM];
	uint8_t res[NELEM * MAX_ELEM], want[NELEM * MAX_ELEM];
	size_t sz = dt_size(d), off = slot_off(k, d, o);
	struct fi_ioc iov[2], cmpv[2], resv[2];
	struct fi_rma_ioc rma[2];
	struct fi_msg_atomic msg;
	char why[96];

	table(d, 1, opd);
	table(d, 2, cmp);
	memset(res, 0xee, sizeof(res));

	/* Call 1: the plain form, all NELEM elements. */
	if (k == 0)
		POST(fi_atomic(ep, opd, NELEM, NULL, peer, off, key, d, o,
			       &ctx));
	else if (k == 1)
		POST(fi_fetch_atomic(ep, opd, NELEM, NULL, res, NULL, peer,
				     off, key, d, o, &ctx));
	else
		POST(fi_compare_atomic(ep, opd, NELEM, NULL, cmp, NULL, res,
				       NULL, peer, off, key, d, o, &ctx));
	if (!completed(k, why, sizeof(why))) {
		report(k, d, o, why);
		return;
	}
	expected(d, o, 0, want);
	if (k != 0 && !result_ok(d, res, want, 1, why, sizeof(why))) {
		report(k, d, o, why);
		return;
	}

	/* Call 2: the msg form, two remote segments in reverse order. */
	memset(res, 0xee, sizeof(res));
	for (int s = 0; s < 2; s++) {
		size_t first = s == 0 ? SEG : 0; /* the segment's first element */

		iov[s] = (struct fi_ioc){.addr = opd + first * sz, .count = SEG};
		cmpv[s] = (struct fi_ioc){.addr = cmp + first * sz, .count = SEG};
		resv[s] = (struct fi_ioc){.addr = res + first * sz, .count = SEG};
		rma[s] = (struct fi_rma_ioc){.addr = off + first * sz,
					     .count = SEG, .key = key};
	}
	msg = (struct fi_msg_atomic){.msg_iov = iov, .iov_count = 2,
				     .addr = peer, .rma_iov = rma,
				     .rma_iov_count = 2, .datatype = d,
				     .op = o, .context = &ctx};
	if (k == 0)
		POST(fi_atomicmsg(ep, &msg, 0));
	else if (k == 1)
		POST(fi_fetch_atomicmsg(ep, &msg, resv, NULL, 2, 0));
	else
		POST(fi_compare_atomicmsg(ep, &msg, cmpv, NULL, 2, resv, NULL,
					  2, 0));
	if (!completed(k, why, sizeof(why))) {
		report(k, d, o, why);
		return;
	}
	expected(d, o, 1, want);
	if (k != 0 && !result_ok(d, res, want, 2, why, sizeof(why))) {
		report(k, d, o, why);
		return;
	}
	report(k, d, o, "ok");
}

/* no_more checks that the transmit CQ holds nothing more. */
static int no_more(void)
{
	struct fi_cq_tagged_entry e;

	for (int i = 0; i < 20; i++) {
		ssize_t ret = fi_cq_read(txcq, &e, 1);

		if (ret != -FI_EAGAIN)
			return 0;
		pause_briefly();
	}
	return 1;
}

static void run_inject(void)
{
	int32_t res[2] = {0x5a5a5a5a, 0x5a5a5a5a};
	char why[96] = "ok";

	POST(fi_inject_atomic(ep, inj_opd, 2, peer, INJ_OFF, key, FI_INT32,
			      FI_SUM));
	POST(fi_fetch_atomic(ep, NULL, 2, NULL, res, NULL, peer, INJ_OFF, key,
			     FI_INT32, FI_ATOMIC_READ, &ctx));
	if (!completed(1, why, sizeof(why)))
		;
	else if (res[0] != inj_old[0] + inj_opd[0] ||
		 res[1] != inj_old[1] + inj_opd[1])
		snprintf(why, sizeof(why), "fail:read_%d_%d", res[0], res[1]);
	else if (!no_more())
		snprintf(why, sizeof(why), "fail:more_completions");
	else
		snprintf(why, sizeof(why), "ok");
	printf("inject=%s\n", why);
	if (strcmp(why, "ok") != 0)
		fails++;
}

/*
 * stray counts the error entries without a context that come on cq within
 * a short while: C 1.17's rxm writes one to each of its CQs after the
 * operation's own error entry when an atomic response carries an error
 * (rxm_handle_atomic_resp returns the status, and its progress loop then
 * reports it with rxm_cq_write_error_all).
 */
static int stray(struct fid_cq *cq, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int n = 0;

	for (long long end = now_ms() + 50; now_ms() < end; pause_briefly()) {
		ssize_t ret = fi_cq_read(cq, &e, 1);

		if (ret == -FI_EAGAIN)
			continue;
		if (ret != -FI_EAVAIL)
			die("%s: a completion (%zd) after the error entry", what,
			    ret);
		memset(&err, 0, sizeof(err));
		CHECK(fi_cq_readerr(cq, &err, 0));
		if (err.op_context != NULL || err.err != FI_EACCES)
			die("%s: a second error entry, err %d, context %p",
			    what, err.err, err.op_context);
		n++;
	}
	return n;
}

/*
 * failed waits for the operation's error entry, prints the context-less
 * ones that follow it, and returns its err (0 for a completion).
 */
static int failed(const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int tx, rx;

	if (wait_tx(&e, &err, what)) {
		printf("%s_flags=0x%" PRIx64 "\n", what, (uint64_t)e.flags);
		return 0;
	}
	printf("%s_prov_errno=%d\n", what, err.prov_errno);
	if (err.op_context != &ctx)
		die("%s: error entry err %d (%s) with context %p", what,
		    err.err, fi_strerror(err.err), err.op_context);
	tx = stray(txcq, what);
	rx = stray(rxcq, what);
	printf("%s_stray=%d,%d\n", what, tx, rx);
	return err.err;
}

static void run_bad(void)
{
	uint64_t one = 1, two[2] = {0x1111, 0x2222}, res = 0xabababababababab;
	int e;

	/* A wrong key: no registration of the target has it. */
	POST(fi_fetch_atomic(ep, &one, 1, NULL, &res, NULL, peer, GUARD_OFF,
			     key ^ 0x5a5a0000ULL, FI_UINT64, FI_SUM, &ctx));
	e = failed("bad_key");
	printf("bad_key_err=%d\n", e);
	printf("bad_key_res=%s\n", res == 0xabababababababab ? "ok" : "changed");
	if (e != FI_EACCES || res != 0xabababababababab)
		fails++;

	/* Out of range: the second element lies past the region. */
	POST(fi_atomic(ep, two, 2, NULL, peer, MR_SIZE - 8, key, FI_UINT64,
		       FI_ATOMIC_WRITE, &ctx));
	e = failed("bad_range");
	printf("bad_range_err=%d\n", e);
	if (e != FI_EACCES)
		fails++;
}

static void parse_name(const char *hex, uint8_t name[NAME_LEN])
{
	if (strlen(hex) != 2 * NAME_LEN)
		die("target name %s: want %d hex digits", hex, 2 * NAME_LEN);
	for (int i = 0; i < NAME_LEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			die("target name %s: bad hex", hex);
		name[i] = (uint8_t)v;
	}
}

static void run_initiator(const char *name_hex, const char *key_hex)
{
	uint8_t name[NAME_LEN];
	char *end;

	parse_name(name_hex, name);
	key = strtoull(key_hex, &end, 16);
	if (*end)
		die("key %s: bad hex", key_hex);
	if (fi_av_insert(av, name, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert failed");
	for (int k = 0; k < NKIND; k++)
		for (int d = 0; d < NDT; d++)
			for (int o = 0; o < NOP; o++)
				if (valid[k][d][o] > 0)
					run_one(k, d, o);
	run_inject();
	run_bad();
}

static void close_fid(struct fid *f, const char *what)
{
	if (f && fi_close(f) != 0)
		die("fi_close(%s) failed", what);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "target") == 0)
		target = 1;
	else if (!(argc == 4 && strcmp(argv[1], "initiator") == 0)) {
		fprintf(stderr, "usage: cpeer_atomic target <name-file>\n"
				"       cpeer_atomic initiator <target-name-hex> <key-hex>\n");
		return 2;
	}
	open_ep();
	query();
	if (target)
		run_target(argv[2]);
	else
		run_initiator(argv[2], argv[3]);
	close_fid(ep ? &ep->fid : NULL, "ep");
	close_fid(mr ? &mr->fid : NULL, "mr");
	close_fid(av ? &av->fid : NULL, "av");
	close_fid(rxcq ? &rxcq->fid : NULL, "rx cq");
	close_fid(txcq ? &txcq->fid : NULL, "tx cq");
	close_fid(domain ? &domain->fid : NULL, "domain");
	close_fid(fabric ? &fabric->fid : NULL, "fabric");
	fi_freeinfo(info);
	free(region);
	printf("fails=%d\n", fails);
	printf("done=1\n");
	return 0;
}
