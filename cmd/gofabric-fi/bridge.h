//go:build cgo && linux

/*
 * The C half of gofabric-fi: the objects C libfabric and its applications
 * see. Every object is C memory that starts with the libfabric struct of its
 * class (so that a pointer to it is the fid the application holds) followed
 * by the cgo.Handle of the Go object behind it. C keeps no Go pointer.
 *
 * Facts used here come from libfabric 1.17's public headers
 * (/usr/include/rdma) and man pages (fi_provider(7), fi_domain(3),
 * fi_endpoint(3), fi_eq(3), fi_cq(3), fi_av(3), fi_mr(3), fi_cm(3)).
 */
#ifndef GOFABRIC_FI_BRIDGE_H
#define GOFABRIC_FI_BRIDGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_atomic.h>
#include <rdma/providers/fi_prov.h>

/* GFI_MAX_PROVS is the number of providers one library can register: one
 * struct fi_provider per fi_prov_ini call. */
#define GFI_MAX_PROVS 8

struct gfi_fabric {
	struct fid_fabric fabric;
	uintptr_t h;
};
struct gfi_domain {
	struct fid_domain domain;
	uintptr_t h;
};
struct gfi_eq {
	struct fid_eq eq;
	uintptr_t h;
};
struct gfi_cq {
	struct fid_cq cq;
	uintptr_t h;
};
struct gfi_cntr {
	struct fid_cntr cntr;
	uintptr_t h;
};
struct gfi_av {
	struct fid_av av;
	uintptr_t h;
};
struct gfi_mr {
	struct fid_mr mr;
	uintptr_t h;
};
struct gfi_pep {
	struct fid_pep pep;
	uintptr_t h;
};
struct gfi_ep {
	struct fid_ep ep;
	uintptr_t h;
};
struct gfi_mc {
	struct fid_mc mc;
	uintptr_t h;
};
/* A connection request (fi_info.handle of an FI_CONNREQ event). */
struct gfi_connreq {
	struct fid fid;
	uintptr_t h;
};

/* Constructors: calloc'ed objects with their ops tables; NULL when out of
 * memory. */
struct fid_fabric *gfi_fabric_new(uintptr_t h, void *context);
struct fid_domain *gfi_domain_new(uintptr_t h, void *context);
struct fid_eq *gfi_eq_new(uintptr_t h, void *context);
struct fid_cq *gfi_cq_new(uintptr_t h, void *context);
struct fid_cntr *gfi_cntr_new(uintptr_t h, void *context);
struct fid_av *gfi_av_new(uintptr_t h, void *context);
struct fid_mr *gfi_mr_new(uintptr_t h, void *context, uint64_t key);
struct fid_pep *gfi_pep_new(uintptr_t h, void *context);
struct fid_ep *gfi_ep_new(uintptr_t h, void *context);
struct fid_mc *gfi_mc_new(uintptr_t h, void *context, fi_addr_t addr);
struct fid *gfi_connreq_new(uintptr_t h);

/* gfi_handle returns the cgo.Handle of fid when fid is one of this
 * library's objects of class fclass (FI_CLASS_UNSPEC: any class), else 0.
 * It recognizes objects by their ops tables, never by reading past them. */
uintptr_t gfi_handle(const struct fid *fid, size_t fclass);

/* gfi_mr_fi_ops_ptr is the fi_ops of memory regions: the data path
 * recognizes MR descriptors by it. */
extern struct fi_ops *const gfi_mr_fi_ops_ptr;

/* gfi_desc_handle is gfi_handle for an MR descriptor (fi_mr_desc's value). */
uintptr_t gfi_desc_handle(const void *desc);

/* gfi_set_handle clears or sets the handle of one of this library's
 * objects (the fid class decides the layout). */
void gfi_set_handle(struct fid *fid, uintptr_t h);

/* gfi_allocinfo is fi_allocinfo (an inline function cgo cannot call). */
struct fi_info *gfi_allocinfo(void);

/* gfi_nic_new returns a struct fid_nic whose strings are copies; fi_freeinfo
 * closes it and fi_dupinfo duplicates it (FI_DUP). */
struct fid_nic *gfi_nic_new(const char *name, const char *device_id,
			   const char *device_version, const char *vendor_id,
			   const char *driver, const char *firmware,
			   const char *address, size_t mtu, size_t speed,
			   int state, const char *network_type);

/* gfi_prov_set names provider slot n; gfi_prov_name returns its name. */
void gfi_prov_set(int n, const char *name, uint32_t version);
const char *gfi_prov_name(int n);

/* gfi_self_path returns the path this library was loaded from (dladdr),
 * or NULL. */
const char *gfi_self_path(void);

/* gfi_strerror returns fi_strerror's text for a provider errno. */
const char *gfi_strerror(int err);

#endif
