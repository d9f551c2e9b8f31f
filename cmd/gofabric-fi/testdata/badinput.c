/*
 * badinput: calls the library's objects the way careless C code does (NULL
 * pointers, wrong sizes, unknown flags and options, fids that are not the
 * provider's, operations it lacks, a completion buffer at an invalid
 * address) and checks the -FI_E* codes, and that the process lives on.
 *
 * usage: badinput RDM-PROVIDER MSG-PROVIDER
 * output: one line per check, "ok NAME" or "FAIL NAME: got X, want Y";
 * the exit status is the number of failures (1 for a setup error).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

static int fails;

#define EXPECT(name, expr, want)                                              \
	do {                                                                  \
		long _g = (long)(expr), _w = (long)(want);                    \
		if (_g != _w) {                                               \
			printf("FAIL %s: got %ld (%s), want %ld (%s)\n", name, \
			       _g, fi_strerror((int)-_g), _w,                 \
			       fi_strerror((int)-_w));                        \
			fails++;                                              \
		} else {                                                      \
			printf("ok %s\n", name);                              \
		}                                                             \
	} while (0)

#define SETUP(call)                                                           \
	do {                                                                  \
		int _r = (int)(call);                                         \
		if (_r) {                                                     \
			printf("setup %s: %d (%s)\n", #call, _r,              \
			       fi_strerror(-_r));                             \
			exit(1);                                              \
		}                                                             \
	} while (0)

static int foreign_close(struct fid *fid)
{
	return 0;
}

static struct fi_ops foreign_ops = { .size = sizeof(struct fi_ops),
				     .close = foreign_close };
static struct fid foreign = { .fclass = FI_CLASS_CQ, .ops = &foreign_ops };

static struct fi_info *getinfo(const char *prov, enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo(), *info;

	hints->ep_attr->type = type;
	hints->caps = FI_MSG;
	hints->mode = ~0ULL;
	hints->fabric_attr->prov_name = strdup(prov);
	if (type == FI_EP_MSG) {
		hints->src_addr = NULL;
		SETUP(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0",
				 FI_SOURCE, hints, &info));
	} else {
		SETUP(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &info));
	}
	fi_freeinfo(hints);
	return info;
}

static void rdm_checks(const char *prov)
{
	struct fi_info *info = getinfo(prov, FI_EP_RDM);
	struct fid_fabric *fabric;
	struct fid_domain *domain, *d2;
	struct fid_eq *eq, *weq;
	struct fid_cq *cq, *cq2;
	struct fid_av *av;
	struct fid_ep *ep, *ep2;
	struct fid_mr *mr;
	struct fid_cntr *cntr;
	struct fi_eq_attr eq_attr = { .size = 8 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_cq_tagged_entry entry;
	struct fi_eq_entry eq_entry = { .data = 42 }, eq_out;
	struct fi_info *bad;
	struct iovec iov[2] = { { &entry, 8 }, { &entry, 8 } };
	char buf[64], name[256], small[4];
	size_t len;
	uint32_t event;
	fi_addr_t self;
	int ctx, fd, errs[1];
	struct fid *fids[1];

	SETUP(fi_fabric(info->fabric_attr, &fabric, NULL));
	SETUP(fi_domain(fabric, info, &domain, NULL));
	SETUP(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	eq_attr.flags = FI_WRITE;
	SETUP(fi_eq_open(fabric, &eq_attr, &weq, NULL));
	SETUP(fi_cq_open(domain, &cq_attr, &cq, NULL));
	SETUP(fi_av_open(domain, &av_attr, &av, NULL));
	SETUP(fi_cntr_open(domain, &cntr_attr, &cntr, NULL));
	SETUP(fi_endpoint(domain, info, &ep, NULL));

	/* opening */
	EXPECT("domain2 flags", fi_domain2(fabric, info, &d2, 1, NULL),
	       -FI_EBADFLAGS);
	cq_attr.format = 99;
	EXPECT("cq_open unknown format", fi_cq_open(domain, &cq_attr, &cq2, NULL),
	       -FI_ENOSYS);
	cq_attr.format = FI_CQ_FORMAT_CONTEXT;
	cq_attr.wait_obj = FI_WAIT_MUTEX_COND;
	EXPECT("cq_open FI_WAIT_MUTEX_COND",
	       fi_cq_open(domain, &cq_attr, &cq2, NULL), -FI_ENOSYS);
	cq_attr.wait_obj = FI_WAIT_FD;
	EXPECT("cq_open FI_WAIT_FD", fi_cq_open(domain, &cq_attr, &cq2, NULL),
	       0);
	EXPECT("cq control GETWAIT NULL arg",
	       fi_control(&cq2->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	EXPECT("cq control unknown command", fi_control(&cq2->fid, 999, &fd),
	       -FI_ENOSYS);
	fd = -1;
	EXPECT("cq control GETWAIT", fi_control(&cq2->fid, FI_GETWAIT, &fd), 0);
	EXPECT("cq wait fd", fd >= 0, 1);
	EXPECT("trywait NULL fids", fi_trywait(fabric, NULL, 1), -FI_EINVAL);
	fids[0] = &foreign;
	EXPECT("trywait foreign fid", fi_trywait(fabric, fids, 1), -FI_EINVAL);
	fids[0] = &cq2->fid;
	EXPECT("trywait empty cq", fi_trywait(fabric, fids, 1), 0);
	EXPECT("close FI_WAIT_FD cq", fi_close(&cq2->fid), 0);
	bad = fi_dupinfo(info);
	bad->handle = &foreign;
	EXPECT("endpoint foreign handle", fi_endpoint(domain, bad, &ep2, NULL),
	       -FI_EINVAL);
	bad->handle = NULL;
	fi_freeinfo(bad);
	EXPECT("scalable_ep", fi_scalable_ep(domain, info, &ep2, NULL),
	       -FI_ENOSYS);
	EXPECT("srx_context", fi_srx_context(domain, info->rx_attr, &ep2, NULL),
	       -FI_ENOSYS);
	EXPECT("query_atomic",
	       fi_query_atomic(domain, FI_INT32, FI_SUM, NULL, 0), -FI_ENOSYS);
	EXPECT("mr_regv two iovecs",
	       fi_mr_regv(domain, iov, 2, FI_SEND, 0, 1, 0, &mr, NULL),
	       -FI_EINVAL);
	EXPECT("mr_reg NULL buffer",
	       fi_mr_reg(domain, NULL, 8, FI_SEND, 0, 1, 0, &mr, NULL),
	       -FI_EINVAL);

	/* binding */
	EXPECT("ep_bind foreign fid", fi_ep_bind(ep, &foreign, FI_SEND),
	       -FI_EINVAL);
	EXPECT("ep_bind cq", fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV), 0);
	EXPECT("ep_bind av", fi_ep_bind(ep, &av->fid, 0), 0);
	EXPECT("enable", fi_enable(ep), 0);
	EXPECT("close bound cq", fi_close(&cq->fid), -FI_EBUSY);
	EXPECT("close busy domain", fi_close(&domain->fid), -FI_EBUSY);

	/* event queues */
	EXPECT("eq_read NULL event", fi_eq_read(eq, NULL, buf, sizeof(buf), 0),
	       -FI_EINVAL);
	EXPECT("eq_readerr NULL entry", fi_eq_readerr(eq, NULL, 0), -FI_EINVAL);
	EXPECT("eq_read empty", fi_eq_read(eq, &event, buf, sizeof(buf), 0),
	       -FI_EAGAIN);
	EXPECT("eq_sread timeout",
	       fi_eq_sread(eq, &event, buf, sizeof(buf), 10, 0), -FI_EAGAIN);
	EXPECT("eq_write without FI_WRITE",
	       fi_eq_write(eq, FI_NOTIFY, &eq_entry, sizeof(eq_entry), 0),
	       -FI_EINVAL);
	EXPECT("eq_write", fi_eq_write(weq, FI_NOTIFY, &eq_entry,
				       sizeof(eq_entry), 0),
	       sizeof(eq_entry));
	EXPECT("eq_read short buffer", fi_eq_read(weq, &event, small,
						  sizeof(small), 0),
	       -FI_ETOOSMALL);
	EXPECT("eq_read after short", fi_eq_read(weq, &event, &eq_out,
						 sizeof(eq_out), 0),
	       sizeof(eq_out));
	EXPECT("eq_read data kept", eq_out.data, 42);
	EXPECT("eq control GETWAIT with FI_WAIT_NONE",
	       fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	fids[0] = &eq->fid;
	EXPECT("trywait eq with FI_WAIT_NONE", fi_trywait(fabric, fids, 1),
	       -FI_EINVAL);

	/* completion queues */
	EXPECT("cq_read NULL buffer", fi_cq_read(cq, NULL, 1), -FI_EINVAL);
	EXPECT("cq_readfrom NULL src", fi_cq_readfrom(cq, &entry, 1, NULL),
	       -FI_EINVAL);
	EXPECT("cq_readerr NULL entry", fi_cq_readerr(cq, NULL, 0), -FI_EINVAL);
	EXPECT("cq_read empty", fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
	EXPECT("cq_sread timeout", fi_cq_sread(cq, &entry, 1, NULL, 10),
	       -FI_EAGAIN);
	EXPECT("cq_signal", fi_cq_signal(cq), 0);
	EXPECT("cq_sread after signal", fi_cq_sread(cq, &entry, 1, NULL, -1),
	       -FI_EAGAIN);
	EXPECT("cq control GETWAIT with FI_WAIT_NONE",
	       fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	EXPECT("cq control GETWAITOBJ with FI_WAIT_NONE",
	       fi_control(&cq->fid, FI_GETWAITOBJ, &fd), -FI_ENODATA);

	/* counters */
	EXPECT("cntr_add", fi_cntr_add(cntr, 3), 0);
	EXPECT("cntr_read", fi_cntr_read(cntr), 3);
	EXPECT("cntr_wait timeout", fi_cntr_wait(cntr, 10, 10), -FI_ETIMEDOUT);
	EXPECT("cntr_seterr", fi_cntr_seterr(cntr, 2), 0);
	EXPECT("cntr_readerr", fi_cntr_readerr(cntr), 2);

	/* addresses */
	len = sizeof(small);
	EXPECT("getname short buffer", fi_getname(&ep->fid, small, &len),
	       -FI_ETOOSMALL);
	EXPECT("getname length", len > sizeof(small), 1);
	len = sizeof(name);
	EXPECT("getname", fi_getname(&ep->fid, name, &len), 0);
	EXPECT("av_insert NULL addresses", fi_av_insert(av, NULL, 1, &self, 0,
							NULL),
	       -FI_EINVAL);
	EXPECT("av_insert FI_SYNC_ERR without context",
	       fi_av_insert(av, name, 1, &self, FI_SYNC_ERR, NULL), -FI_EINVAL);
	EXPECT("av_insert FI_SYNC_ERR", fi_av_insert(av, name, 1, &self,
						     FI_SYNC_ERR, errs),
	       1);
	EXPECT("av_insert FI_SYNC_ERR status", errs[0], 0);
	len = sizeof(small);
	EXPECT("av_lookup short buffer", fi_av_lookup(av, self, small, &len),
	       -FI_ETOOSMALL);
	EXPECT("av_lookup length", len > sizeof(small), 1);
	len = sizeof(buf);
	EXPECT("av_straddr", fi_av_straddr(av, name, buf, &len) == buf, 1);

	/* data transfer */
	EXPECT("send NULL buffer", fi_send(ep, NULL, 10, NULL, self, &ctx),
	       -FI_EINVAL);
	EXPECT("sendv too many iovecs", fi_sendv(ep, iov, NULL, 100, self, &ctx),
	       -FI_EINVAL);
	EXPECT("sendmsg NULL msg", fi_sendmsg(ep, NULL, 0), -FI_EINVAL);
	EXPECT("atomic", fi_atomic(ep, buf, 1, NULL, self, 0, 0, FI_INT32,
				   FI_SUM, &ctx),
	       -FI_ENOSYS);
	EXPECT("getopt unknown option",
	       fi_getopt(&ep->fid, FI_OPT_ENDPOINT, 999, buf, &len),
	       -FI_ENOPROTOOPT);
	/* goshm's endpoints take FI_OPT_MIN_MULTI_RECV, as C's shm's do */
	len = 512;
	EXPECT("setopt FI_OPT_MIN_MULTI_RECV",
	       fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &len,
			 sizeof(len)),
	       0);
	len = 0;
	{
		size_t optlen = sizeof(len);
		EXPECT("getopt FI_OPT_MIN_MULTI_RECV",
		       fi_getopt(&ep->fid, FI_OPT_ENDPOINT,
				 FI_OPT_MIN_MULTI_RECV, &len, &optlen),
		       0);
		EXPECT("getopt FI_OPT_MIN_MULTI_RECV value", len, 512);
	}
	EXPECT("setopt FI_OPT_CM_DATA_SIZE",
	       fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &len,
			 sizeof(len)),
	       -FI_ENOPROTOOPT);

	/* A completion buffer at an invalid address: C would crash; the
	 * library recovers in Go and returns -FI_EOTHER. */
	EXPECT("recv", fi_recv(ep, buf, sizeof(buf), NULL, self, &ctx), 0);
	EXPECT("send", fi_send(ep, "hello", 6, NULL, self, &ctx), 0);
	{
		ssize_t n;
		int k;

		for (k = 0; k < 10000000; k++) /* progress until queued */
			if ((n = fi_cq_read(cq, NULL, 0)) != -FI_EAGAIN)
				break;
		EXPECT("completion queued", n, 0);
		EXPECT("cq_read to an invalid address",
		       fi_cq_read(cq, (void *)16, 1), -FI_EOTHER);
		n = fi_cq_read(cq, &entry, 1);
		EXPECT("cq_read after the panic", n == 1 || n == -FI_EAGAIN, 1);
	}

	EXPECT("close ep", fi_close(&ep->fid), 0);
	EXPECT("close cq", fi_close(&cq->fid), 0);
	EXPECT("close av", fi_close(&av->fid), 0);
	EXPECT("close cntr", fi_close(&cntr->fid), 0);
	EXPECT("close eq", fi_close(&eq->fid), 0);
	EXPECT("close weq", fi_close(&weq->fid), 0);
	EXPECT("close domain", fi_close(&domain->fid), 0);
	EXPECT("close fabric", fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

static void msg_checks(const char *prov)
{
	struct fi_info *info = getinfo(prov, FI_EP_MSG);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_eq *eq;
	size_t size, len;
	char small[1];

	SETUP(fi_fabric(info->fabric_attr, &fabric, NULL));
	SETUP(fi_domain(fabric, info, &domain, NULL));
	SETUP(fi_eq_open(fabric, NULL, &eq, NULL));
	SETUP(fi_passive_ep(fabric, info, &pep, NULL));
	SETUP(fi_endpoint(domain, info, &ep, NULL));

	len = sizeof(size);
	EXPECT("pep getopt FI_OPT_CM_DATA_SIZE",
	       fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size,
			 &len),
	       0);
	EXPECT("pep FI_OPT_CM_DATA_SIZE", size, 256);
	len = sizeof(size);
	EXPECT("ep getopt FI_OPT_CM_DATA_SIZE",
	       fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size,
			 &len),
	       0);
	EXPECT("ep FI_OPT_CM_DATA_SIZE", size, 256);
	len = sizeof(small);
	EXPECT("getopt short optlen",
	       fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, small,
			 &len),
	       -FI_ETOOSMALL);
	EXPECT("pep_bind foreign fid", fi_pep_bind(pep, &foreign, 0),
	       -FI_EINVAL);
	EXPECT("reject foreign handle", fi_reject(pep, &foreign, NULL, 0),
	       -FI_EINVAL);
	EXPECT("connect NULL data with length",
	       fi_connect(ep, info->dest_addr ? info->dest_addr : info->src_addr,
			  NULL, 8),
	       -FI_EINVAL);

	EXPECT("close ep", fi_close(&ep->fid), 0);
	EXPECT("close pep", fi_close(&pep->fid), 0);
	EXPECT("close eq", fi_close(&eq->fid), 0);
	EXPECT("close domain", fi_close(&domain->fid), 0);
	EXPECT("close fabric", fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		printf("usage: badinput RDM-PROVIDER MSG-PROVIDER\n");
		return 1;
	}
	rdm_checks(argv[1]);
	msg_checks(argv[2]);
	return fails;
}
