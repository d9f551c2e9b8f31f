/*
 * cmpeer: a C libfabric 1.17 verbs (FI_EP_MSG) peer for gofabric's
 * connection-management interop test (providers/verbs/interop_test.go).
 * Written for gofabric; it only uses the public libfabric API.
 *
 *   cmpeer server <ip> <port-file> <accept|reject>
 *       listen on ip (ephemeral port), write "port\n" to port-file, take one
 *       connection request, accept it with "ACCEPT-C" or reject it with
 *       "NOPE-C"; after an accept, wait for the peer's shutdown.
 *   cmpeer client <ip> <port> <accept|reject>
 *       connect with "HELLO-C"; after an accept, shut the connection down.
 *
 * Results go to stdout as "key=value" lines (private data in hex); any
 * failure prints a message on stderr and exits with status 1. Every wait is
 * bounded by TIMEOUT_MS.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define TIMEOUT_MS 10000

static const char *hello = "HELLO-C", *acc = "ACCEPT-C", *nope = "NOPE-C";

static void die(const char *what, int ret)
{
	fprintf(stderr, "cmpeer: %s: %d (%s)\n", what, ret, fi_strerror(-ret));
	exit(1);
}

static void check(const char *what, int ret)
{
	if (ret)
		die(what, ret);
}

static void print_hex(const char *key, const void *p, size_t n)
{
	const unsigned char *b = p;
	printf("%s=", key);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
	fflush(stdout);
}

/* A CM event entry with room for the largest private data. */
struct cm_event {
	struct fi_eq_cm_entry e;
	unsigned char data[256];
};

/*
 * next_event waits for the next event. On an error entry it prints err and
 * err_data and returns -FI_EAVAIL; otherwise it returns the private data's
 * length and sets *event.
 */
static int next_event(struct fid_eq *eq, uint32_t *event, struct cm_event *ev)
{
	ssize_t ret = fi_eq_sread(eq, event, ev, sizeof(*ev), TIMEOUT_MS, 0);
	if (ret == -FI_EAVAIL) {
		struct fi_eq_err_entry err = {0};
		ret = fi_eq_readerr(eq, &err, 0);
		if (ret < 0)
			die("fi_eq_readerr", (int)ret);
		printf("err=%d\n", err.err);
		print_hex("err_data", err.err_data, err.err_data_size);
		return -FI_EAVAIL;
	}
	if (ret < 0)
		die("fi_eq_sread", (int)ret);
	if ((size_t)ret < sizeof(ev->e))
		return 0;
	return (int)(ret - sizeof(ev->e));
}

static struct fi_info *hints_for(void)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		die("fi_allocinfo", -FI_ENOMEM);
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("verbs");
	return h;
}

struct side {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static void open_ep(struct side *s, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};

	if (!s->fabric) {
		check("fi_fabric", fi_fabric(info->fabric_attr, &s->fabric, NULL));
		check("fi_eq_open", fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL));
	}
	check("fi_domain", fi_domain(s->fabric, info, &s->domain, NULL));
	check("fi_cq_open", fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	check("fi_endpoint", fi_endpoint(s->domain, info, &s->ep, NULL));
	check("fi_ep_bind eq", fi_ep_bind(s->ep, &s->eq->fid, 0));
	check("fi_ep_bind cq", fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	check("fi_enable", fi_enable(s->ep));
}

static void expect(uint32_t got, uint32_t want, const char *what)
{
	if (got != want) {
		fprintf(stderr, "cmpeer: %s: event %u, want %u\n", what, got, want);
		exit(1);
	}
}

static int server(const char *ip, const char *port_file, int accept)
{
	struct fi_info *hints = hints_for(), *info;
	struct side s = {0};
	struct fid_pep *pep;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct cm_event ev;
	uint32_t event;
	char name[128];
	size_t namelen = sizeof(name);
	int n;

	check("fi_getinfo", fi_getinfo(FI_VERSION(1, 17), ip, "0", FI_SOURCE, hints, &info));
	check("fi_fabric", fi_fabric(info->fabric_attr, &s.fabric, NULL));
	check("fi_eq_open", fi_eq_open(s.fabric, &eq_attr, &s.eq, NULL));
	check("fi_passive_ep", fi_passive_ep(s.fabric, info, &pep, NULL));
	check("fi_pep_bind", fi_pep_bind(pep, &s.eq->fid, 0));
	check("fi_listen", fi_listen(pep));
	check("fi_getname", fi_getname(&pep->fid, name, &namelen));
	if (((struct sockaddr *)name)->sa_family != AF_INET)
		die("fi_getname: not AF_INET", -FI_EINVAL);
	FILE *f = fopen(port_file, "w");
	if (!f)
		die("fopen port file", -FI_EIO);
	fprintf(f, "%u\n", ntohs(((struct sockaddr_in *)name)->sin_port));
	fclose(f);

	n = next_event(s.eq, &event, &ev);
	if (n < 0)
		exit(1);
	expect(event, FI_CONNREQ, "connection request");
	print_hex("req_data", ev.data, (size_t)n);
	if (!accept) {
		check("fi_reject", fi_reject(pep, ev.e.info->handle, nope, strlen(nope)));
		printf("rejected=1\n");
		fi_freeinfo(ev.e.info);
		fi_close(&pep->fid);
		fi_close(&s.eq->fid);
		fi_close(&s.fabric->fid);
		fi_freeinfo(info);
		fi_freeinfo(hints);
		return 0;
	}
	open_ep(&s, ev.e.info);
	check("fi_accept", fi_accept(s.ep, acc, strlen(acc)));
	n = next_event(s.eq, &event, &ev);
	if (n < 0)
		exit(1);
	expect(event, FI_CONNECTED, "connected");
	printf("connected=1\n");
	fflush(stdout);
	n = next_event(s.eq, &event, &ev);
	if (n < 0)
		exit(1);
	expect(event, FI_SHUTDOWN, "shutdown");
	printf("shutdown=1\n");
	fi_close(&s.ep->fid);
	fi_close(&s.cq->fid);
	fi_close(&s.domain->fid);
	fi_close(&pep->fid);
	fi_close(&s.eq->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(ev.e.info);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}

static int client(const char *ip, const char *port, int accept)
{
	struct fi_info *hints = hints_for(), *info;
	struct side s = {0};
	struct cm_event ev;
	uint32_t event;
	int n;

	check("fi_getinfo", fi_getinfo(FI_VERSION(1, 17), ip, port, 0, hints, &info));
	open_ep(&s, info);
	check("fi_connect", fi_connect(s.ep, info->dest_addr, hello, strlen(hello)));
	n = next_event(s.eq, &event, &ev);
	if (!accept) {
		if (n != -FI_EAVAIL) {
			fprintf(stderr, "cmpeer: event %u where a reject was due\n", event);
			exit(1);
		}
	} else {
		if (n < 0)
			exit(1);
		expect(event, FI_CONNECTED, "connected");
		print_hex("conn_data", ev.data, (size_t)n);
		check("fi_shutdown", fi_shutdown(s.ep, 0));
		printf("shut=1\n");
	}
	fi_close(&s.ep->fid);
	fi_close(&s.cq->fid);
	fi_close(&s.domain->fid);
	fi_close(&s.eq->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], !strcmp(argv[4], "accept"));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], !strcmp(argv[4], "accept"));
	fprintf(stderr, "usage: cmpeer server <ip> <port-file> <accept|reject>\n"
			"       cmpeer client <ip> <port> <accept|reject>\n");
	return 2;
}
