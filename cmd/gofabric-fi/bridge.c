//go:build cgo && linux

/*
 * gofabric-fi's C side: fi_prov_ini, the provider structs, and the ops
 * tables of every object class. cgo cannot put Go functions into C
 * function-pointer tables, so each slot is a small C function that passes
 * the object's cgo.Handle and the arguments to an exported Go function
 * (declared in _cgo_export.h). Operations gofabric has no counterpart for
 * return -FI_ENOSYS here without entering Go.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "bridge.h"
#include "_cgo_export.h"

/* ---- providers ------------------------------------------------------- */

/* The core calls cleanup from its library destructor, at exit: calling
 * into Go there is unsafe (the Go runtime may be gone), and gofabric's
 * objects need nothing. */
static void gfi_cleanup(void)
{
}

#define GFI_SLOT(n)                                                            \
	static int gfi_getinfo_##n(uint32_t version, const char *node,        \
				  const char *service, uint64_t flags,        \
				  const struct fi_info *hints,                \
				  struct fi_info **info)                      \
	{                                                                     \
		return goGetinfo(n, version, (char *)node, (char *)service,   \
				 flags, (struct fi_info *)hints, info);       \
	}                                                                     \
	static int gfi_fabric_##n(struct fi_fabric_attr *attr,                 \
				 struct fid_fabric **fabric, void *context)   \
	{                                                                     \
		return goFabric(n, attr, fabric, context);                    \
	}

GFI_SLOT(0)
GFI_SLOT(1)
GFI_SLOT(2)
GFI_SLOT(3)
GFI_SLOT(4)
GFI_SLOT(5)
GFI_SLOT(6)
GFI_SLOT(7)

#define GFI_PROV(n)                                                            \
	{                                                                     \
		.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), \
		.getinfo = gfi_getinfo_##n, .fabric = gfi_fabric_##n,           \
		.cleanup = gfi_cleanup,                                        \
	}

static struct fi_provider gfi_provs[GFI_MAX_PROVS] = {
	GFI_PROV(0), GFI_PROV(1), GFI_PROV(2), GFI_PROV(3),
	GFI_PROV(4), GFI_PROV(5), GFI_PROV(6), GFI_PROV(7),
};

void gfi_prov_set(int n, const char *name, uint32_t version)
{
	gfi_provs[n].name = name;
	gfi_provs[n].version = version;
}

const char *gfi_prov_name(int n)
{
	return gfi_provs[n].name;
}

const char *gfi_self_path(void)
{
	Dl_info info;

	if (!dladdr((void *)gfi_self_path, &info))
		return NULL;
	return info.dli_fname;
}

/*
 * fi_prov_ini is called once for each file name ending in "fi.so" that the
 * core finds for this library (symbolic links to one file load it once
 * and call this again): each call returns the next provider, NULL when all
 * are registered. It must not call libfabric (the core holds its init
 * lock). The Go linker marks the library NODELETE, so the core's dlclose
 * at exit leaves the Go runtime in place.
 */
FI_EXT_INI
{
	int slot = goProvIni();

	if (slot < 0 || slot >= GFI_MAX_PROVS)
		return NULL;
	return &gfi_provs[slot];
}

/* ---- fi_ops (every class) -------------------------------------------- */

static int gfi_close(struct fid *fid)
{
	uintptr_t h = gfi_handle(fid, FI_CLASS_UNSPEC);
	int ret;

	if (!h)
		return -FI_EINVAL;
	ret = goClose(h);
	if (!ret)
		free(fid);
	return ret;
}

static int gfi_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return goBind(gfi_handle(fid, FI_CLASS_UNSPEC), bfid, flags);
}

static int gfi_control(struct fid *fid, int command, void *arg)
{
	return goControl(gfi_handle(fid, FI_CLASS_UNSPEC), command, arg);
}

static int gfi_ops_open(struct fid *fid, const char *name, uint64_t flags,
		       void **ops, void *context)
{
	return -FI_ENOSYS;
}

static int gfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int gfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

static int gfi_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

static int gfi_ops_set(struct fid *fid, const char *name, uint64_t flags,
		      void *ops, void *context)
{
	return -FI_ENOSYS;
}

#define GFI_FI_OPS(class)                                                      \
	static struct fi_ops gfi_##class##_fi_ops = {                          \
		.size = sizeof(struct fi_ops),                                \
		.close = gfi_close,                                            \
		.bind = gfi_bind,                                              \
		.control = gfi_control,                                        \
		.ops_open = gfi_ops_open,                                      \
		.tostr = gfi_tostr,                                            \
		.ops_set = gfi_ops_set,                                        \
	}

GFI_FI_OPS(fabric);
GFI_FI_OPS(domain);
GFI_FI_OPS(eq);
GFI_FI_OPS(cq);
GFI_FI_OPS(cntr);
GFI_FI_OPS(av);
GFI_FI_OPS(mr);
GFI_FI_OPS(pep);
GFI_FI_OPS(ep);
GFI_FI_OPS(mc);

struct fi_ops *const gfi_mr_fi_ops_ptr = &gfi_mr_fi_ops;

/* A connection request is freed by the endpoint that accepts it or by
 * fi_reject; fi_close on it is refused. */
static int gfi_connreq_close(struct fid *fid)
{
	return -FI_EINVAL;
}

static struct fi_ops gfi_connreq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = gfi_connreq_close,
	.bind = gfi_no_bind,
	.control = gfi_no_control,
	.ops_open = gfi_ops_open,
	.tostr = gfi_tostr,
	.ops_set = gfi_ops_set,
};

uintptr_t gfi_handle(const struct fid *fid, size_t fclass)
{
	const struct fi_ops *ops;

	if (!fid)
		return 0;
	ops = fid->ops;
#define GFI_IS(cls, ops_table, type)                                           \
	if (ops == &ops_table && (fclass == FI_CLASS_UNSPEC || fclass == cls)) \
		return ((const struct type *)fid)->h;
	GFI_IS(FI_CLASS_FABRIC, gfi_fabric_fi_ops, gfi_fabric)
	GFI_IS(FI_CLASS_DOMAIN, gfi_domain_fi_ops, gfi_domain)
	GFI_IS(FI_CLASS_EQ, gfi_eq_fi_ops, gfi_eq)
	GFI_IS(FI_CLASS_CQ, gfi_cq_fi_ops, gfi_cq)
	GFI_IS(FI_CLASS_CNTR, gfi_cntr_fi_ops, gfi_cntr)
	GFI_IS(FI_CLASS_AV, gfi_av_fi_ops, gfi_av)
	GFI_IS(FI_CLASS_MR, gfi_mr_fi_ops, gfi_mr)
	GFI_IS(FI_CLASS_PEP, gfi_pep_fi_ops, gfi_pep)
	GFI_IS(FI_CLASS_EP, gfi_ep_fi_ops, gfi_ep)
	GFI_IS(FI_CLASS_MC, gfi_mc_fi_ops, gfi_mc)
	GFI_IS(FI_CLASS_CONNREQ, gfi_connreq_fi_ops, gfi_connreq)
#undef GFI_IS
	return 0;
}

uintptr_t gfi_desc_handle(const void *desc)
{
	const struct gfi_mr *mr = desc;

	if (!mr || mr->mr.fid.ops != &gfi_mr_fi_ops)
		return 0;
	return mr->h;
}

void gfi_set_handle(struct fid *fid, uintptr_t h)
{
	const struct fi_ops *ops = fid->ops;

#define GFI_SET(ops_table, type)                                               \
	if (ops == &ops_table)                                                \
		((struct type *)fid)->h = h;
	GFI_SET(gfi_fabric_fi_ops, gfi_fabric)
	GFI_SET(gfi_domain_fi_ops, gfi_domain)
	GFI_SET(gfi_eq_fi_ops, gfi_eq)
	GFI_SET(gfi_cq_fi_ops, gfi_cq)
	GFI_SET(gfi_cntr_fi_ops, gfi_cntr)
	GFI_SET(gfi_av_fi_ops, gfi_av)
	GFI_SET(gfi_mr_fi_ops, gfi_mr)
	GFI_SET(gfi_pep_fi_ops, gfi_pep)
	GFI_SET(gfi_ep_fi_ops, gfi_ep)
	GFI_SET(gfi_mc_fi_ops, gfi_mc)
	GFI_SET(gfi_connreq_fi_ops, gfi_connreq)
#undef GFI_SET
}

struct fi_info *gfi_allocinfo(void)
{
	return fi_allocinfo();
}

const char *gfi_strerror(int err)
{
	return fi_strerror(err);
}

/* ---- fabric ----------------------------------------------------------- */

static int gfi_domain2(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **dom, uint64_t flags, void *context)
{
	return goDomain(((struct gfi_fabric *)fabric)->h, info, dom, flags,
			context);
}

static int gfi_domain(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **dom, void *context)
{
	return gfi_domain2(fabric, info, dom, 0, context);
}

static int gfi_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_pep **pep, void *context)
{
	return goPassiveEP(((struct gfi_fabric *)fabric)->h, info, pep, context);
}

static int gfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		      struct fid_eq **eq, void *context)
{
	return goEQOpen(((struct gfi_fabric *)fabric)->h, attr, eq, context);
}

static int gfi_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

static int gfi_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	return goTryWait(fids, count);
}

static struct fi_ops_fabric gfi_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = gfi_domain,
	.passive_ep = gfi_passive_ep,
	.eq_open = gfi_eq_open,
	.wait_open = gfi_wait_open,
	.trywait = gfi_trywait,
	.domain2 = gfi_domain2,
};

struct fid_fabric *gfi_fabric_new(uintptr_t h, void *context)
{
	struct gfi_fabric *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fabric.fid.fclass = FI_CLASS_FABRIC;
	f->fabric.fid.context = context;
	f->fabric.fid.ops = &gfi_fabric_fi_ops;
	f->fabric.ops = &gfi_fabric_ops;
	f->h = h;
	return &f->fabric;
}

/* ---- domain ----------------------------------------------------------- */

#define GFI_DOM_H(d) (((struct gfi_domain *)(d))->h)

static int gfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		      struct fid_av **av, void *context)
{
	return goAVOpen(GFI_DOM_H(domain), attr, av, context);
}

static int gfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		      struct fid_cq **cq, void *context)
{
	return goCQOpen(GFI_DOM_H(domain), attr, cq, context);
}

static int gfi_endpoint2(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep, uint64_t flags, void *context)
{
	return goEndpoint(GFI_DOM_H(domain), info, ep, flags, context);
}

static int gfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		       struct fid_ep **ep, void *context)
{
	return gfi_endpoint2(domain, info, ep, 0, context);
}

static int gfi_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int gfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			struct fid_cntr **cntr, void *context)
{
	return goCntrOpen(GFI_DOM_H(domain), attr, cntr, context);
}

static int gfi_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int gfi_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int gfi_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int gfi_query_atomic(struct fid_domain *domain,
			   enum fi_datatype datatype, enum fi_op op,
			   struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int gfi_query_collective(struct fid_domain *domain,
			       enum fi_collective_op coll,
			       struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops_domain gfi_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = gfi_av_open,
	.cq_open = gfi_cq_open,
	.endpoint = gfi_endpoint,
	.scalable_ep = gfi_scalable_ep,
	.cntr_open = gfi_cntr_open,
	.poll_open = gfi_poll_open,
	.stx_ctx = gfi_stx_ctx,
	.srx_ctx = gfi_srx_ctx,
	.query_atomic = gfi_query_atomic,
	.query_collective = gfi_query_collective,
	.endpoint2 = gfi_endpoint2,
};

static int gfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		      uint64_t access, uint64_t offset, uint64_t requested_key,
		      uint64_t flags, struct fid_mr **mr, void *context)
{
	return goMRReg(gfi_handle(fid, FI_CLASS_DOMAIN), (struct iovec *)iov,
		       count, access, offset, requested_key, flags, mr,
		       context);
}

static int gfi_mr_reg(struct fid *fid, const void *buf, size_t len,
		     uint64_t access, uint64_t offset, uint64_t requested_key,
		     uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return gfi_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			  mr, context);
}

static int gfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			 uint64_t flags, struct fid_mr **mr)
{
	if (!attr)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM || attr->auth_key_size)
		return -FI_ENOSYS;
	return gfi_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access,
			  attr->offset, attr->requested_key, flags, mr,
			  attr->context);
}

static struct fi_ops_mr gfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = gfi_mr_reg,
	.regv = gfi_mr_regv,
	.regattr = gfi_mr_regattr,
};

struct fid_domain *gfi_domain_new(uintptr_t h, void *context)
{
	struct gfi_domain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->domain.fid.fclass = FI_CLASS_DOMAIN;
	d->domain.fid.context = context;
	d->domain.fid.ops = &gfi_domain_fi_ops;
	d->domain.ops = &gfi_domain_ops;
	d->domain.mr = &gfi_mr_ops;
	d->h = h;
	return &d->domain;
}

struct fid_mr *gfi_mr_new(uintptr_t h, void *context, uint64_t key)
{
	struct gfi_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = context;
	m->mr.fid.ops = &gfi_mr_fi_ops;
	m->mr.mem_desc = m; /* fi_mr_desc: the data path finds the MR by it */
	m->mr.key = key;
	m->h = h;
	return &m->mr;
}

/* ---- event queue ------------------------------------------------------ */

#define GFI_EQ_H(q) (((struct gfi_eq *)(q))->h)

static ssize_t gfi_eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
			  size_t len, uint64_t flags)
{
	return goEQRead(GFI_EQ_H(eq), event, buf, len, 0, 0, flags);
}

static ssize_t gfi_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
			   size_t len, int timeout, uint64_t flags)
{
	return goEQRead(GFI_EQ_H(eq), event, buf, len, 1, timeout, flags);
}

static ssize_t gfi_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			     uint64_t flags)
{
	return goEQReadErr(GFI_EQ_H(eq), buf, flags);
}

static ssize_t gfi_eq_write(struct fid_eq *eq, uint32_t event, const void *buf,
			   size_t len, uint64_t flags)
{
	return goEQWrite(GFI_EQ_H(eq), event, (void *)buf, len, flags);
}

/* fi_eq_strerror and fi_cq_strerror: gofabric's provider errnos are
 * errnos, as C's socket providers' are. */
static const char *gfi_prov_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
	}
	return s;
}

static const char *gfi_eq_strerror(struct fid_eq *eq, int prov_errno,
				  const void *err_data, char *buf, size_t len)
{
	return gfi_prov_strerror(prov_errno, buf, len);
}

static struct fi_ops_eq gfi_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = gfi_eq_read,
	.readerr = gfi_eq_readerr,
	.write = gfi_eq_write,
	.sread = gfi_eq_sread,
	.strerror = gfi_eq_strerror,
};

struct fid_eq *gfi_eq_new(uintptr_t h, void *context)
{
	struct gfi_eq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->eq.fid.fclass = FI_CLASS_EQ;
	q->eq.fid.context = context;
	q->eq.fid.ops = &gfi_eq_fi_ops;
	q->eq.ops = &gfi_eq_ops;
	q->h = h;
	return &q->eq;
}

/* ---- completion queue ------------------------------------------------- */

#define GFI_CQ_H(q) (((struct gfi_cq *)(q))->h)

static ssize_t gfi_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return goCQRead(GFI_CQ_H(cq), buf, count, NULL, 0, 0);
}

static ssize_t gfi_cq_readfrom(struct fid_cq *cq, void *buf, size_t count,
			      fi_addr_t *src_addr)
{
	if (!src_addr)
		return -FI_EINVAL;
	return goCQRead(GFI_CQ_H(cq), buf, count, src_addr, 0, 0);
}

static ssize_t gfi_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			     uint64_t flags)
{
	return goCQReadErr(GFI_CQ_H(cq), buf, flags);
}

static ssize_t gfi_cq_sread(struct fid_cq *cq, void *buf, size_t count,
			   const void *cond, int timeout)
{
	return goCQRead(GFI_CQ_H(cq), buf, count, NULL, 1, timeout);
}

static ssize_t gfi_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
			       fi_addr_t *src_addr, const void *cond,
			       int timeout)
{
	if (!src_addr)
		return -FI_EINVAL;
	return goCQRead(GFI_CQ_H(cq), buf, count, src_addr, 1, timeout);
}

static int gfi_cq_signal(struct fid_cq *cq)
{
	return goCQSignal(GFI_CQ_H(cq));
}

static const char *gfi_cq_strerror(struct fid_cq *cq, int prov_errno,
				  const void *err_data, char *buf, size_t len)
{
	return gfi_prov_strerror(prov_errno, buf, len);
}

static struct fi_ops_cq gfi_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = gfi_cq_read,
	.readfrom = gfi_cq_readfrom,
	.readerr = gfi_cq_readerr,
	.sread = gfi_cq_sread,
	.sreadfrom = gfi_cq_sreadfrom,
	.signal = gfi_cq_signal,
	.strerror = gfi_cq_strerror,
};

struct fid_cq *gfi_cq_new(uintptr_t h, void *context)
{
	struct gfi_cq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->cq.fid.fclass = FI_CLASS_CQ;
	q->cq.fid.context = context;
	q->cq.fid.ops = &gfi_cq_fi_ops;
	q->cq.ops = &gfi_cq_ops;
	q->h = h;
	return &q->cq;
}

/* ---- counter ---------------------------------------------------------- */

#define GFI_CNTR_H(c) (((struct gfi_cntr *)(c))->h)

static uint64_t gfi_cntr_read(struct fid_cntr *cntr)
{
	return goCntrRead(GFI_CNTR_H(cntr), 0);
}

static uint64_t gfi_cntr_readerr(struct fid_cntr *cntr)
{
	return goCntrRead(GFI_CNTR_H(cntr), 1);
}

static int gfi_cntr_add(struct fid_cntr *cntr, uint64_t value)
{
	return goCntrUpdate(GFI_CNTR_H(cntr), 0, value);
}

static int gfi_cntr_set(struct fid_cntr *cntr, uint64_t value)
{
	return goCntrUpdate(GFI_CNTR_H(cntr), 1, value);
}

static int gfi_cntr_adderr(struct fid_cntr *cntr, uint64_t value)
{
	return goCntrUpdate(GFI_CNTR_H(cntr), 2, value);
}

static int gfi_cntr_seterr(struct fid_cntr *cntr, uint64_t value)
{
	return goCntrUpdate(GFI_CNTR_H(cntr), 3, value);
}

static int gfi_cntr_wait(struct fid_cntr *cntr, uint64_t threshold, int timeout)
{
	return goCntrWait(GFI_CNTR_H(cntr), threshold, timeout);
}

static struct fi_ops_cntr gfi_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = gfi_cntr_read,
	.readerr = gfi_cntr_readerr,
	.add = gfi_cntr_add,
	.set = gfi_cntr_set,
	.wait = gfi_cntr_wait,
	.adderr = gfi_cntr_adderr,
	.seterr = gfi_cntr_seterr,
};

struct fid_cntr *gfi_cntr_new(uintptr_t h, void *context)
{
	struct gfi_cntr *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	c->cntr.fid.ops = &gfi_cntr_fi_ops;
	c->cntr.ops = &gfi_cntr_ops;
	c->h = h;
	return &c->cntr;
}

/* ---- address vector --------------------------------------------------- */

#define GFI_AV_H(a) (((struct gfi_av *)(a))->h)

static int gfi_av_insert(struct fid_av *av, const void *addr, size_t count,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return goAVInsert(GFI_AV_H(av), (void *)addr, count, fi_addr, flags,
			  context);
}

static int gfi_av_insertsvc(struct fid_av *av, const char *node,
			   const char *service, fi_addr_t *fi_addr,
			   uint64_t flags, void *context)
{
	return goAVInsertSvc(GFI_AV_H(av), (char *)node, (char *)service,
			     fi_addr, flags, context);
}

static int gfi_av_insertsym(struct fid_av *av, const char *node,
			   size_t nodecnt, const char *service, size_t svccnt,
			   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int gfi_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count,
			uint64_t flags)
{
	return goAVRemove(GFI_AV_H(av), fi_addr, count, flags);
}

static int gfi_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr,
			size_t *addrlen)
{
	return goAVLookup(GFI_AV_H(av), fi_addr, addr, addrlen);
}

static const char *gfi_av_straddr(struct fid_av *av, const void *addr,
				 char *buf, size_t *len)
{
	return goAVStraddr(GFI_AV_H(av), (void *)addr, buf, len);
}

static int gfi_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		     struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_av gfi_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = gfi_av_insert,
	.insertsvc = gfi_av_insertsvc,
	.insertsym = gfi_av_insertsym,
	.remove = gfi_av_remove,
	.lookup = gfi_av_lookup,
	.straddr = gfi_av_straddr,
	.av_set = gfi_av_set,
};

struct fid_av *gfi_av_new(uintptr_t h, void *context)
{
	struct gfi_av *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->av.fid.fclass = FI_CLASS_AV;
	a->av.fid.context = context;
	a->av.fid.ops = &gfi_av_fi_ops;
	a->av.ops = &gfi_av_ops;
	a->h = h;
	return &a->av;
}

/* ---- endpoints: fi_ops_ep and fi_ops_cm ------------------------------- */

static ssize_t gfi_cancel(fid_t fid, void *context)
{
	return goCancel(gfi_handle(fid, FI_CLASS_UNSPEC), context);
}

static int gfi_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	return goGetopt(gfi_handle(fid, FI_CLASS_UNSPEC), level, optname,
			optval, optlen);
}

static int gfi_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	return goSetopt(gfi_handle(fid, FI_CLASS_UNSPEC), level, optname,
			(void *)optval, optlen);
}

static int gfi_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		     struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int gfi_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static struct fi_ops_ep gfi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = gfi_cancel,
	.getopt = gfi_getopt,
	.setopt = gfi_setopt,
	.tx_ctx = gfi_tx_ctx,
	.rx_ctx = gfi_rx_ctx,
	.rx_size_left = gfi_size_left,
	.tx_size_left = gfi_size_left,
};

static int gfi_setname(fid_t fid, void *addr, size_t addrlen)
{
	return goSetname(gfi_handle(fid, FI_CLASS_UNSPEC), addr, addrlen);
}

static int gfi_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return goGetname(gfi_handle(fid, FI_CLASS_UNSPEC), addr, addrlen);
}

static int gfi_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return goGetpeer(gfi_handle(&ep->fid, FI_CLASS_EP), addr, addrlen);
}

static int gfi_connect(struct fid_ep *ep, const void *addr, const void *param,
		      size_t paramlen)
{
	return goConnect(gfi_handle(&ep->fid, FI_CLASS_EP), (void *)addr,
			 (void *)param, paramlen);
}

static int gfi_listen(struct fid_pep *pep)
{
	return goListen(gfi_handle(&pep->fid, FI_CLASS_PEP));
}

static int gfi_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return goAccept(gfi_handle(&ep->fid, FI_CLASS_EP), (void *)param,
			paramlen);
}

static int gfi_reject(struct fid_pep *pep, fid_t handle, const void *param,
		     size_t paramlen)
{
	return goReject(gfi_handle(&pep->fid, FI_CLASS_PEP), handle,
			(void *)param, paramlen);
}

static int gfi_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return goShutdown(gfi_handle(&ep->fid, FI_CLASS_EP), flags);
}

static int gfi_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context)
{
	return goJoin(gfi_handle(&ep->fid, FI_CLASS_EP), (void *)addr, flags,
		      mc, context);
}

static struct fi_ops_cm gfi_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = gfi_setname,
	.getname = gfi_getname,
	.getpeer = gfi_getpeer,
	.connect = gfi_connect,
	.listen = gfi_listen,
	.accept = gfi_accept,
	.reject = gfi_reject,
	.shutdown = gfi_shutdown,
	.join = gfi_join,
};

struct fid_pep *gfi_pep_new(uintptr_t h, void *context)
{
	struct gfi_pep *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pep.fid.fclass = FI_CLASS_PEP;
	p->pep.fid.context = context;
	p->pep.fid.ops = &gfi_pep_fi_ops;
	p->pep.ops = &gfi_ep_ops;
	p->pep.cm = &gfi_cm_ops;
	p->h = h;
	return &p->pep;
}

struct fid_mc *gfi_mc_new(uintptr_t h, void *context, fi_addr_t addr)
{
	struct gfi_mc *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->mc.fid.fclass = FI_CLASS_MC;
	m->mc.fid.context = context;
	m->mc.fid.ops = &gfi_mc_fi_ops;
	m->mc.fi_addr = addr;
	m->h = h;
	return &m->mc;
}

struct fid *gfi_connreq_new(uintptr_t h)
{
	struct gfi_connreq *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fid.fclass = FI_CLASS_CONNREQ;
	c->fid.ops = &gfi_connreq_fi_ops;
	c->h = h;
	return &c->fid;
}

/* ---- data transfer: fi_ops_msg, fi_ops_tagged, fi_ops_rma ------------- */

#define GFI_EP_H(e) (((struct gfi_ep *)(e))->h)

static ssize_t gfi_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, void *context)
{
	return goRecv(GFI_EP_H(ep), buf, len, gfi_desc_handle(desc), src_addr,
		      context);
}

static ssize_t gfi_recvv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src_addr,
			void *context)
{
	return goRecvv(GFI_EP_H(ep), (struct iovec *)iov, desc, count, src_addr,
		       context);
}

static ssize_t gfi_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags)
{
	return goRecvmsg(GFI_EP_H(ep), (struct fi_msg *)msg, flags);
}

static ssize_t gfi_send(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest_addr, void *context)
{
	return goSend(GFI_EP_H(ep), (void *)buf, len, gfi_desc_handle(desc),
		      dest_addr, context);
}

static ssize_t gfi_sendv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest_addr,
			void *context)
{
	return goSendv(GFI_EP_H(ep), (struct iovec *)iov, desc, count,
		       dest_addr, context);
}

static ssize_t gfi_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags)
{
	return goSendmsg(GFI_EP_H(ep), (struct fi_msg *)msg, flags);
}

static ssize_t gfi_inject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest_addr)
{
	return goInject(GFI_EP_H(ep), (void *)buf, len, dest_addr);
}

static ssize_t gfi_senddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   void *context)
{
	return goSenddata(GFI_EP_H(ep), (void *)buf, len, gfi_desc_handle(desc),
			  data, dest_addr, context);
}

static ssize_t gfi_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr)
{
	return goInjectdata(GFI_EP_H(ep), (void *)buf, len, data, dest_addr);
}

static struct fi_ops_msg gfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = gfi_recv,
	.recvv = gfi_recvv,
	.recvmsg = gfi_recvmsg,
	.send = gfi_send,
	.sendv = gfi_sendv,
	.sendmsg = gfi_sendmsg,
	.inject = gfi_inject,
	.senddata = gfi_senddata,
	.injectdata = gfi_injectdata,
};

static ssize_t gfi_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			void *context)
{
	return goTRecv(GFI_EP_H(ep), buf, len, gfi_desc_handle(desc), src_addr,
		       tag, ignore, context);
}

static ssize_t gfi_trecvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t tag, uint64_t ignore, void *context)
{
	return goTRecvv(GFI_EP_H(ep), (struct iovec *)iov, desc, count,
			src_addr, tag, ignore, context);
}

static ssize_t gfi_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	return goTRecvmsg(GFI_EP_H(ep), (struct fi_msg_tagged *)msg, flags);
}

static ssize_t gfi_tsend(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t tag,
			void *context)
{
	return goTSend(GFI_EP_H(ep), (void *)buf, len, gfi_desc_handle(desc),
		       dest_addr, tag, context);
}

static ssize_t gfi_tsendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t tag, void *context)
{
	return goTSendv(GFI_EP_H(ep), (struct iovec *)iov, desc, count,
			dest_addr, tag, context);
}

static ssize_t gfi_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	return goTSendmsg(GFI_EP_H(ep), (struct fi_msg_tagged *)msg, flags);
}

static ssize_t gfi_tinject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t tag)
{
	return goTInject(GFI_EP_H(ep), (void *)buf, len, dest_addr, tag);
}

static ssize_t gfi_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t tag, void *context)
{
	return goTSenddata(GFI_EP_H(ep), (void *)buf, len, gfi_desc_handle(desc),
			   data, dest_addr, tag, context);
}

static ssize_t gfi_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	return goTInjectdata(GFI_EP_H(ep), (void *)buf, len, data, dest_addr,
			     tag);
}

static struct fi_ops_tagged gfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = gfi_trecv,
	.recvv = gfi_trecvv,
	.recvmsg = gfi_trecvmsg,
	.send = gfi_tsend,
	.sendv = gfi_tsendv,
	.sendmsg = gfi_tsendmsg,
	.inject = gfi_tinject,
	.senddata = gfi_tsenddata,
	.injectdata = gfi_tinjectdata,
};

static ssize_t gfi_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, uint64_t addr, uint64_t key,
		       void *context)
{
	return goRead(GFI_EP_H(ep), buf, len, gfi_desc_handle(desc), src_addr,
		      addr, key, context);
}

static ssize_t gfi_readv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src_addr,
			uint64_t addr, uint64_t key, void *context)
{
	return goReadv(GFI_EP_H(ep), (struct iovec *)iov, desc, count, src_addr,
		       addr, key, context);
}

static ssize_t gfi_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags)
{
	return goRMAmsg(GFI_EP_H(ep), (struct fi_msg_rma *)msg, flags, 0);
}

static ssize_t gfi_write(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t addr,
			uint64_t key, void *context)
{
	return goWrite(GFI_EP_H(ep), (void *)buf, len, gfi_desc_handle(desc),
		       dest_addr, addr, key, context);
}

static ssize_t gfi_writev(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	return goWritev(GFI_EP_H(ep), (struct iovec *)iov, desc, count,
			dest_addr, addr, key, context);
}

static ssize_t gfi_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return goRMAmsg(GFI_EP_H(ep), (struct fi_msg_rma *)msg, flags, 1);
}

static ssize_t gfi_inject_write(struct fid_ep *ep, const void *buf, size_t len,
			       fi_addr_t dest_addr, uint64_t addr,
			       uint64_t key)
{
	return goInjectWrite(GFI_EP_H(ep), (void *)buf, len, dest_addr, addr,
			     key);
}

static ssize_t gfi_writedata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context)
{
	return goWritedata(GFI_EP_H(ep), (void *)buf, len, gfi_desc_handle(desc),
			   data, dest_addr, addr, key, context);
}

static ssize_t gfi_inject_writedata(struct fid_ep *ep, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key)
{
	return goInjectWritedata(GFI_EP_H(ep), (void *)buf, len, data,
				 dest_addr, addr, key);
}

static struct fi_ops_rma gfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = gfi_read,
	.readv = gfi_readv,
	.readmsg = gfi_readmsg,
	.write = gfi_write,
	.writev = gfi_writev,
	.writemsg = gfi_writemsg,
	.inject = gfi_inject_write,
	.writedata = gfi_writedata,
	.injectdata = gfi_inject_writedata,
};

/* Atomics are not implemented by gofabric's providers yet: every entry
 * point returns -FI_ENOSYS (fi_query_atomic too, above). */
static ssize_t gfi_atomic_write(struct fid_ep *ep, const void *buf,
			       size_t count, void *desc, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
				void **desc, size_t count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_writemsg(struct fid_ep *ep,
				  const struct fi_msg_atomic *msg,
				  uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_inject(struct fid_ep *ep, const void *buf,
				size_t count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_readwrite(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc, void *result,
				   void *result_desc, fi_addr_t dest_addr,
				   uint64_t addr, uint64_t key,
				   enum fi_datatype datatype, enum fi_op op,
				   void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_readwritev(struct fid_ep *ep,
				    const struct fi_ioc *iov, void **desc,
				    size_t count, struct fi_ioc *resultv,
				    void **result_desc, size_t result_count,
				    fi_addr_t dest_addr, uint64_t addr,
				    uint64_t key, enum fi_datatype datatype,
				    enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_readwritemsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_compwrite(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc,
				   const void *compare, void *compare_desc,
				   void *result, void *result_desc,
				   fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key, enum fi_datatype datatype,
				   enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_compwritev(struct fid_ep *ep,
				    const struct fi_ioc *iov, void **desc,
				    size_t count,
				    const struct fi_ioc *comparev,
				    void **compare_desc, size_t compare_count,
				    struct fi_ioc *resultv, void **result_desc,
				    size_t result_count, fi_addr_t dest_addr,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t gfi_atomic_compwritemsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      const struct fi_ioc *comparev,
				      void **compare_desc,
				      size_t compare_count,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	return -FI_ENOSYS;
}

static int gfi_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype,
			   enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

static struct fi_ops_atomic gfi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = gfi_atomic_write,
	.writev = gfi_atomic_writev,
	.writemsg = gfi_atomic_writemsg,
	.inject = gfi_atomic_inject,
	.readwrite = gfi_atomic_readwrite,
	.readwritev = gfi_atomic_readwritev,
	.readwritemsg = gfi_atomic_readwritemsg,
	.compwrite = gfi_atomic_compwrite,
	.compwritev = gfi_atomic_compwritev,
	.compwritemsg = gfi_atomic_compwritemsg,
	.writevalid = gfi_atomic_valid,
	.readwritevalid = gfi_atomic_valid,
	.compwritevalid = gfi_atomic_valid,
};

struct fid_ep *gfi_ep_new(uintptr_t h, void *context)
{
	struct gfi_ep *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ep.fid.fclass = FI_CLASS_EP;
	e->ep.fid.context = context;
	e->ep.fid.ops = &gfi_ep_fi_ops;
	e->ep.ops = &gfi_ep_ops;
	e->ep.cm = &gfi_cm_ops;
	e->ep.msg = &gfi_msg_ops;
	e->ep.rma = &gfi_rma_ops;
	e->ep.tagged = &gfi_tagged_ops;
	e->ep.atomic = &gfi_atomic_ops;
	e->h = h;
	return &e->ep;
}

/* ---- fid_nic ---------------------------------------------------------- */

static char *gfi_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void gfi_nic_free(struct fid_nic *nic)
{
	if (nic->device_attr) {
		free(nic->device_attr->name);
		free(nic->device_attr->device_id);
		free(nic->device_attr->device_version);
		free(nic->device_attr->vendor_id);
		free(nic->device_attr->driver);
		free(nic->device_attr->firmware);
		free(nic->device_attr);
	}
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
		free(nic->link_attr);
	}
	free(nic->bus_attr);
	free(nic);
}

static int gfi_nic_close(struct fid *fid)
{
	gfi_nic_free((struct fid_nic *)fid);
	return 0;
}

static int gfi_nic_control(struct fid *fid, int command, void *arg)
{
	struct fid_nic *nic = (struct fid_nic *)fid, *dup;
	struct fi_device_attr *d = nic->device_attr;
	struct fi_link_attr *l = nic->link_attr;

	if (command != FI_DUP || !arg)
		return -FI_ENOSYS;
	dup = gfi_nic_new(d ? d->name : NULL, d ? d->device_id : NULL,
			 d ? d->device_version : NULL, d ? d->vendor_id : NULL,
			 d ? d->driver : NULL, d ? d->firmware : NULL,
			 l ? l->address : NULL, l ? l->mtu : 0, l ? l->speed : 0,
			 l ? l->state : FI_LINK_UNKNOWN,
			 l ? l->network_type : NULL);
	if (!dup)
		return -FI_ENOMEM;
	*(struct fid_nic **)arg = dup;
	return 0;
}

static struct fi_ops gfi_nic_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = gfi_nic_close,
	.bind = gfi_no_bind,
	.control = gfi_nic_control,
	.ops_open = gfi_ops_open,
	.tostr = gfi_tostr,
	.ops_set = gfi_ops_set,
};

struct fid_nic *gfi_nic_new(const char *name, const char *device_id,
			   const char *device_version, const char *vendor_id,
			   const char *driver, const char *firmware,
			   const char *address, size_t mtu, size_t speed,
			   int state, const char *network_type)
{
	struct fid_nic *nic = calloc(1, sizeof(*nic));

	if (!nic)
		return NULL;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &gfi_nic_fi_ops;
	nic->device_attr = calloc(1, sizeof(*nic->device_attr));
	nic->link_attr = calloc(1, sizeof(*nic->link_attr));
	nic->bus_attr = calloc(1, sizeof(*nic->bus_attr));
	if (!nic->device_attr || !nic->link_attr || !nic->bus_attr) {
		gfi_nic_free(nic);
		return NULL;
	}
	nic->device_attr->name = gfi_strdup(name);
	nic->device_attr->device_id = gfi_strdup(device_id);
	nic->device_attr->device_version = gfi_strdup(device_version);
	nic->device_attr->vendor_id = gfi_strdup(vendor_id);
	nic->device_attr->driver = gfi_strdup(driver);
	nic->device_attr->firmware = gfi_strdup(firmware);
	nic->link_attr->address = gfi_strdup(address);
	nic->link_attr->mtu = mtu;
	nic->link_attr->speed = speed;
	nic->link_attr->state = state;
	nic->link_attr->network_type = gfi_strdup(network_type);
	nic->bus_attr->bus_type = FI_BUS_UNKNOWN;
	return nic;
}
