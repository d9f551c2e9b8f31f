/*
 * cgetinfo: asks C libfabric 1.17's shm provider what it makes of
 * capabilities and transmit and receive attributes in fi_getinfo hints,
 * for gofabric's comparison test (providers/shm/attrs_test.go). Written
 * for gofabric; it only uses the public libfabric API.
 *
 * Each line of stdin is one query:
 *
 *   <caps> <tx caps> <rx caps> <tx op_flags> <rx op_flags> <tx size> <rx size>
 *
 * (numbers as strtoull reads them, 0x for hex). The hints select provider
 * "shm", FI_EP_RDM and those attributes, nothing else. Each query gets
 * one line on stdout:
 *
 *   ok <tx op_flags> <rx op_flags> <tx size> <rx size> <caps>
 *
 * with the first entry's values (flags in hex), or "err <errno>" when
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
	char line[512];

	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long caps, txcaps, rxcaps, txf, rxf, txs, rxs;
		struct fi_info *hints, *info;
		int ret;

		if (sscanf(line, "%lli %lli %lli %lli %lli %lli %lli", &caps,
			   &txcaps, &rxcaps, &txf, &rxf, &txs, &rxs) != 7) {
			fprintf(stderr, "cgetinfo: bad query %s", line);
			return 1;
		}
		hints = fi_allocinfo();
		if (!hints) {
			fprintf(stderr, "cgetinfo: fi_allocinfo failed\n");
			return 1;
		}
		hints->ep_attr->type = FI_EP_RDM;
		hints->fabric_attr->prov_name = strdup("shm");
		hints->caps = caps;
		hints->tx_attr->caps = txcaps;
		hints->rx_attr->caps = rxcaps;
		hints->tx_attr->op_flags = txf;
		hints->rx_attr->op_flags = rxf;
		hints->tx_attr->size = txs;
		hints->rx_attr->size = rxs;
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
		if (ret) {
			printf("err %d\n", -ret);
		} else {
			printf("ok 0x%" PRIx64 " 0x%" PRIx64 " %zu %zu 0x%" PRIx64
			       "\n",
			       (uint64_t)info->tx_attr->op_flags,
			       (uint64_t)info->rx_attr->op_flags,
			       info->tx_attr->size, info->rx_attr->size,
			       (uint64_t)info->caps);
			fi_freeinfo(info);
		}
		fflush(stdout);
		fi_freeinfo(hints);
	}
	return 0;
}
