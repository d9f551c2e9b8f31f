/*
 * cgetinfo: asks C libfabric 1.17's tcp provider what it makes of transmit
 * and receive attributes in fi_getinfo hints, for gofabric's comparison
 * tests (providers/tcp/opflags_test.go). Written for gofabric; it only uses
 * the public libfabric API.
 *
 * Each line of stdin is one query:
 *
 *   <msg|rdm> <tx op_flags> <rx op_flags> <tx size> <rx size>
 *
 * (numbers as strtoull reads them, 0x for hex). The hints select provider
 * "tcp", the endpoint type, node 127.0.0.1 and those attributes, nothing
 * else. Each query gets one line on stdout:
 *
 *   ok <tx op_flags> <rx op_flags> <tx size> <rx size>
 *
 * with the first entry's values (op flags in hex), or "err <errno>" when
 * fi_getinfo fails (61 for FI_ENODATA).
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

int main(void)
{
	char line[256];

	while (fgets(line, sizeof(line), stdin)) {
		char type[8];
		unsigned long long txf, rxf, txs, rxs;
		struct fi_info *hints, *info;
		int ret;

		if (sscanf(line, "%7s %lli %lli %lli %lli", type, &txf, &rxf,
			   &txs, &rxs) != 5) {
			fprintf(stderr, "cgetinfo: bad query %s", line);
			return 1;
		}
		hints = fi_allocinfo();
		if (!hints) {
			fprintf(stderr, "cgetinfo: fi_allocinfo failed\n");
			return 1;
		}
		hints->ep_attr->type =
			strcmp(type, "rdm") == 0 ? FI_EP_RDM : FI_EP_MSG;
		hints->fabric_attr->prov_name = strdup("tcp");
		hints->tx_attr->op_flags = txf;
		hints->rx_attr->op_flags = rxf;
		hints->tx_attr->size = txs;
		hints->rx_attr->size = rxs;
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints,
				 &info);
		if (ret) {
			printf("err %d\n", -ret);
		} else {
			printf("ok 0x%" PRIx64 " 0x%" PRIx64 " %zu %zu\n",
			       (uint64_t)info->tx_attr->op_flags,
			       (uint64_t)info->rx_attr->op_flags,
			       info->tx_attr->size, info->rx_attr->size);
			fi_freeinfo(info);
		}
		fflush(stdout);
		fi_freeinfo(hints);
	}
	return 0;
}
