/*
 * tostr reads requests from stdin, one a line, and prints what libfabric's
 * fi_tostr prints for each, followed by a line "--end--". fi/tostr_test.go
 * builds and runs it to compare the Go String methods with C.
 *
 *   <type> <value>      a value of an enum or bit set type (decimal)
 *   addr <format> <hex> an fi_info with only addr_format, src_addr and
 *                       dest_addr set (both to the same bytes)
 *   info full|empty     the hand-built fi_info the Go test builds too
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>

static const struct {
	const char *name;
	enum fi_type type;
	int size; /* bytes of the C type */
} types[] = {
	{"caps", FI_TYPE_CAPS, 8},
	{"op_flags", FI_TYPE_OP_FLAGS, 8},
	{"mode", FI_TYPE_MODE, 8},
	{"msg_order", FI_TYPE_MSG_ORDER, 8},
	{"mr_mode", FI_TYPE_MR_MODE, 4},
	{"ep_type", FI_TYPE_EP_TYPE, 4},
	{"protocol", FI_TYPE_PROTOCOL, 4},
	{"addr_format", FI_TYPE_ADDR_FORMAT, 4},
	{"threading", FI_TYPE_THREADING, 4},
	{"progress", FI_TYPE_PROGRESS, 4},
	{"av_type", FI_TYPE_AV_TYPE, 4},
};

static struct sockaddr_in sin4;
static struct sockaddr_in6 sin6;

/* full fills every field of info with distinctive values. */
static struct fi_info *full(void)
{
	struct fi_info *i = fi_allocinfo();

	sin4.sin_family = AF_INET;
	sin4.sin_port = htons(4242);
	inet_pton(AF_INET, "10.1.2.3", &sin4.sin_addr);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(7);
	inet_pton(AF_INET6, "fe80::1:2", &sin6.sin6_addr);

	i->caps = FI_MSG | FI_RMA | FI_TAGGED | FI_HMEM | FI_SOURCE;
	i->mode = FI_CONTEXT | FI_BUFFERED_RECV;
	i->addr_format = FI_SOCKADDR;
	i->src_addr = &sin4;
	i->src_addrlen = sizeof(sin4);
	i->dest_addr = &sin6;
	i->dest_addrlen = sizeof(sin6);

	i->tx_attr->caps = FI_MSG | FI_SEND | FI_WRITE;
	i->tx_attr->mode = FI_CONTEXT2;
	i->tx_attr->op_flags = FI_INJECT | FI_COMPLETION | FI_DELIVERY_COMPLETE;
	i->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RMA_WAW;
	i->tx_attr->comp_order = FI_ORDER_STRICT | FI_ORDER_DATA;
	i->tx_attr->inject_size = 101;
	i->tx_attr->size = 102;
	i->tx_attr->iov_limit = 103;
	i->tx_attr->rma_iov_limit = 104;
	i->tx_attr->tclass = FI_TC_BULK_DATA;

	i->rx_attr->caps = FI_MSG | FI_RECV | FI_MULTI_RECV;
	i->rx_attr->mode = FI_RX_CQ_DATA;
	i->rx_attr->op_flags = FI_MULTI_RECV | FI_COMPLETION;
	i->rx_attr->msg_order = FI_ORDER_RAR;
	i->rx_attr->comp_order = FI_ORDER_RAW;
	i->rx_attr->total_buffered_recv = 201;
	i->rx_attr->size = 202;
	i->rx_attr->iov_limit = 203;

	i->ep_attr->type = FI_EP_RDM;
	i->ep_attr->protocol = FI_PROTO_RXM;
	i->ep_attr->protocol_version = 3;
	i->ep_attr->max_msg_size = SIZE_MAX;
	i->ep_attr->msg_prefix_size = 301;
	i->ep_attr->max_order_raw_size = 302;
	i->ep_attr->max_order_war_size = 303;
	i->ep_attr->max_order_waw_size = 304;
	i->ep_attr->mem_tag_format = 0xaaaa5555;
	i->ep_attr->tx_ctx_cnt = 305;
	i->ep_attr->rx_ctx_cnt = 306;
	i->ep_attr->auth_key = (uint8_t *)"key";
	i->ep_attr->auth_key_size = 3;

	i->domain_attr->name = strdup("dom0");
	i->domain_attr->threading = FI_THREAD_DOMAIN;
	i->domain_attr->control_progress = FI_PROGRESS_AUTO;
	i->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	i->domain_attr->resource_mgmt = FI_RM_DISABLED;
	i->domain_attr->av_type = FI_AV_TABLE;
	i->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	i->domain_attr->mr_key_size = 401;
	i->domain_attr->cq_data_size = 402;
	i->domain_attr->cq_cnt = 403;
	i->domain_attr->ep_cnt = 404;
	i->domain_attr->tx_ctx_cnt = 405;
	i->domain_attr->rx_ctx_cnt = 406;
	i->domain_attr->max_ep_tx_ctx = 407;
	i->domain_attr->max_ep_rx_ctx = 408;
	i->domain_attr->max_ep_stx_ctx = 409;
	i->domain_attr->max_ep_srx_ctx = 410;
	i->domain_attr->cntr_cnt = 411;
	i->domain_attr->mr_iov_limit = 412;
	i->domain_attr->caps = FI_LOCAL_COMM | FI_SHARED_AV;
	i->domain_attr->mode = FI_LOCAL_MR;
	i->domain_attr->auth_key = (uint8_t *)"secret";
	i->domain_attr->auth_key_size = 6;
	i->domain_attr->max_err_data = 413;
	i->domain_attr->mr_cnt = 414;
	i->domain_attr->tclass = FI_TC_LOW_LATENCY;

	i->fabric_attr->name = strdup("10.1.0.0/16");
	i->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	i->fabric_attr->prov_version = FI_VERSION(117, 0);
	i->fabric_attr->api_version = FI_VERSION(1, 17);
	return i;
}

static void print_addr(const char *format, const char *hex)
{
	static uint8_t buf[256];
	struct fi_info info = {0};
	size_t n = strlen(hex) / 2;

	memset(buf, 0, sizeof(buf));
	for (size_t k = 0; k < n && k < sizeof(buf); k++)
		sscanf(hex + 2 * k, "%2hhx", &buf[k]);
	info.addr_format = (uint32_t)strtoul(format, NULL, 10);
	info.src_addr = buf;
	info.src_addrlen = n;
	info.dest_addr = buf;
	info.dest_addrlen = n;
	fputs(fi_tostr(&info, FI_TYPE_INFO), stdout);
}

int main(void)
{
	char line[1024], a[64], b[512];

	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%63s %511s", a, b) != 2)
			continue;
		if (!strcmp(a, "info")) {
			fputs(fi_tostr(strcmp(b, "full") ? fi_allocinfo() : full(),
				       FI_TYPE_INFO), stdout);
		} else if (!strcmp(a, "addr")) {
			char *hex = strchr(line + 5, ' ');
			sscanf(hex ? hex : "", "%511s", b);
			print_addr(line + 5, hex ? b : "");
		} else {
			uint64_t v = strtoull(b, NULL, 10);
			uint32_t v32 = (uint32_t)v;
			size_t k;

			for (k = 0; k < sizeof(types) / sizeof(types[0]); k++)
				if (!strcmp(a, types[k].name))
					break;
			if (k == sizeof(types) / sizeof(types[0])) {
				fprintf(stderr, "unknown type %s\n", a);
				return 2;
			}
			fputs(fi_tostr(types[k].size == 8 ? (void *)&v : (void *)&v32,
				       types[k].type), stdout);
		}
		fputs("\n--end--\n", stdout);
		fflush(stdout);
	}
	return 0;
}
