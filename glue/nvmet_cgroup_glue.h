/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of nvmet_cgroup: the only code that sees nvmet's private
 * structures or calls static inline kernel helpers.  rust/ffi.rs declares
 * the same functions for the Rust side; the nvmet_cgroup_rs_* ones are
 * implemented in Rust and called from the extension's ops table.
 */
#ifndef NVMET_CGROUP_GLUE_H
#define NVMET_CGROUP_GLUE_H

#include <linux/types.h>

struct nvmet_ns;
struct nvmet_req;
struct llist_head;
struct cgroup;
struct cgroup_subsys_state;
struct workqueue_struct;
struct request_queue;

/* implemented in Rust (rust/ffi.rs) */
ssize_t nvmet_cgroup_rs_id_show(struct nvmet_ns *ns, char *page);
ssize_t nvmet_cgroup_rs_id_store(struct nvmet_ns *ns, const char *page,
				 size_t count);
void *nvmet_cgroup_rs_ns_enable(struct nvmet_ns *ns);
void nvmet_cgroup_rs_ns_disable(struct nvmet_ns *ns, void *ctx);
void nvmet_cgroup_rs_ns_free(struct nvmet_ns *ns);
void nvmet_cgroup_rs_execute(struct nvmet_req *req, void *ctx);

/* registration with nvmet */
int nvmet_cgroup_register(void);
void nvmet_cgroup_unregister(void);

/* namespaces, read with the subsystem's lock held */
bool nvmet_cgroup_ns_enabled(const struct nvmet_ns *ns);
bool nvmet_cgroup_ns_buffered_io(const struct nvmet_ns *ns);
const char *nvmet_cgroup_ns_device_path(const struct nvmet_ns *ns);
u32 nvmet_cgroup_ns_nsid(const struct nvmet_ns *ns);
struct request_queue *nvmet_cgroup_ns_queue(const struct nvmet_ns *ns);

/* commands handed to the extension */
bool nvmet_cgroup_req_ns_live(const struct nvmet_req *req);
bool nvmet_cgroup_req_sq_dying(const struct nvmet_req *req);
bool nvmet_cgroup_req_may_run_inline(const struct nvmet_req *req,
				     struct request_queue *q);
void nvmet_cgroup_req_abort(struct nvmet_req *req);
void nvmet_cgroup_req_run(struct nvmet_req *req, bool own_ctx);
bool nvmet_cgroup_req_push(struct llist_head *list, struct nvmet_req *req);
struct nvmet_req *nvmet_cgroup_reqs_take(struct llist_head *list);
struct nvmet_req *nvmet_cgroup_req_next(const struct nvmet_req *req);

/* cgroups and blkcg association */
struct cgroup *nvmet_cgroup_get_from_id(u64 id);
struct cgroup *nvmet_cgroup_get(struct cgroup *cgrp);
void nvmet_cgroup_put(struct cgroup *cgrp);
struct cgroup_subsys_state *nvmet_cgroup_io_css_get(struct cgroup *cgrp);
void nvmet_cgroup_css_put(struct cgroup_subsys_state *css);
void nvmet_cgroup_associate_blkcg(struct cgroup_subsys_state *css);
unsigned int nvmet_cgroup_noio_save(void);
void nvmet_cgroup_noio_restore(unsigned int flags);

/* execution contexts */
struct workqueue_struct *nvmet_cgroup_alloc_workqueue(void);
unsigned int nvmet_cgroup_this_cpu(void);
unsigned int nvmet_cgroup_nr_cpu_ids(void);
int nvmet_cgroup_kstrtou64(const char *s, u64 *res);

#endif /* NVMET_CGROUP_GLUE_H */
