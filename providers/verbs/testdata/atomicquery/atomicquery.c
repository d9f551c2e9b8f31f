/*
 * atomicquery: what C libfabric 1.17's verbs provider answers to
 * fi_query_atomic on its FI_EP_MSG domain, for gofabric's comparison test
 * (providers/verbs/atomic_test.go, TestAtomicValidAgainstC). Written for
 * gofabric; it only uses the public libfabric API.
 *
 *   atomicquery
 *
 * For each call family (0: fi_atomic, flags 0; 1: fi_fetch_atomic,
 * FI_FETCH_ATOMIC; 2: fi_compare_atomic, FI_COMPARE_ATOMIC), each
 * operation FI_MIN..FI_MSWAP and each datatype FI_INT8..
 * FI_LONG_DOUBLE_COMPLEX it prints one line to stdout:
 *
 *   family op datatype ret count size
 *
 * ret is fi_query_atomic's return value (0 or a negative FI_E* code);
 * count and size are the attribute's on success, else 0. Any failure to
 * open the domain prints a message on stderr and exits with status 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

static void check(const char *what, int ret)
{
	if (ret) {
		fprintf(stderr, "atomicquery: %s: %d (%s)\n", what, ret, fi_strerror(-ret));
		exit(1);
	}
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	const uint64_t families[] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};

	if (!hints)
		check("fi_allocinfo", -FI_ENOMEM);
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
	hints->mode = FI_RX_CQ_DATA | FI_CONTEXT;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs");
	check("fi_getinfo", fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	check("fi_fabric", fi_fabric(info->fabric_attr, &fabric, NULL));
	check("fi_domain", fi_domain(fabric, info, &domain, NULL));

	for (int f = 0; f < 3; f++) {
		for (int op = FI_MIN; op <= FI_MSWAP; op++) {
			for (int dt = FI_INT8; dt <= FI_LONG_DOUBLE_COMPLEX; dt++) {
				struct fi_atomic_attr attr;
				int ret;

				memset(&attr, 0, sizeof attr);
				ret = fi_query_atomic(domain, (enum fi_datatype) dt, (enum fi_op) op,
						      &attr, families[f]);
				printf("%d %d %d %d %zu %zu\n", f, op, dt, ret,
				       ret ? (size_t) 0 : attr.count, ret ? (size_t) 0 : attr.size);
			}
		}
	}
	fflush(stdout);
	check("fi_close(domain)", fi_close(&domain->fid));
	check("fi_close(fabric)", fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
