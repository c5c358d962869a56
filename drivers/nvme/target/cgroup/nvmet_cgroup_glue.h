/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of nvmet_cgroup: the only code that sees nvmet's
 * structures or calls static inline kernel helpers and macros.  bindgen
 * generates the Rust declarations of this header at build time
 * (raw.rs); the nvmet_cgroup_rs_* functions are implemented in Rust
 * (entry.rs) and called from the extension's ops table.
 */
#ifndef NVMET_CGROUP_GLUE_H
#define NVMET_CGROUP_GLUE_H

#include <linux/bits.h>
#include <linux/types.h>

struct nvmet_ns;
struct nvmet_req;
struct llist_head;
struct cgroup;
struct cgroup_subsys_state;
struct workqueue_struct;
struct request_queue;

/*
 * What the fast path decides from (fast_path.rs): facts about one
 * command, its caller and the queue behind its namespace, read per command
 * and returned as one word of these bits.
 */
enum nvmet_cgroup_fact {
	/* a Read or Write command: the ones that submit from ->execute */
	NVMET_CGROUP_F_READ_WRITE = BIT(0),
	/* a command whose backend runs its work in the execution context */
	NVMET_CGROUP_F_DEFERRED = BIT(1),
	/* the caller is a kernel thread in task context */
	NVMET_CGROUP_F_KTHREAD_TASK = BIT(2),
	/* the namespace is backed by a file, not a block device */
	NVMET_CGROUP_F_FILE = BIT(3),
	/* the namespace still accepts I/O (it is not being disabled) */
	NVMET_CGROUP_F_NS_LIVE = BIT(4),
	/* the command's submission queue is being deleted */
	NVMET_CGROUP_F_SQ_DYING = BIT(5),
	/* the queue is known and live: the bits below describe it */
	NVMET_CGROUP_F_QUEUE_LIVE = BIT(8),
	/* a blk-mq queue, not a bio-based (stacking) driver */
	NVMET_CGROUP_F_BLK_MQ = BIT(9),
	/* io.cost is enabled on the queue */
	NVMET_CGROUP_F_IOCOST = BIT(10),
	/* io.latency has a target on the queue */
	NVMET_CGROUP_F_IOLATENCY = BIT(11),
	/* the queue's elevator is bfq */
	NVMET_CGROUP_F_BFQ = BIT(12),
	/* blk-throttle (io.max) was ever configured on the queue */
	NVMET_CGROUP_F_THROTTLE = BIT(13),
};

/*
 * The start of a namespace's context (exec.rs's NsExec), which the glue's
 * ->execute reads: the fast path's rule, which fast_path.rs compiled from
 * the module's parameters and the namespace's backend when the namespace
 * was enabled, and what a command run in the transport's thread needs.
 * The context holds the references that keep @queue and @cgrp.
 */
struct nvmet_cgroup_fast {
	/* a command runs in the caller's thread iff (facts & mask) == want */
	u32			mask;
	u32			want;
	/* the queue the facts are read from; NULL if not known */
	struct request_queue	*queue;
	struct cgroup		*cgrp;
	/*
	 * @queue if the rule is the plain one (fast_path.rs, Rule::is_plain),
	 * which the glue tests without reading the facts, and @queue is blk-mq;
	 * else NULL
	 */
	struct request_queue	*plain_queue;
};

/* implemented in Rust (entry.rs) */
void *nvmet_cgroup_rs_ns_enable(struct nvmet_ns *ns);
void nvmet_cgroup_rs_ns_disable(struct nvmet_ns *ns, void *ctx);
void nvmet_cgroup_rs_execute(struct nvmet_req *req, void *ctx, u32 facts);

/* registration with nvmet */
int nvmet_cgroup_register(void);
void nvmet_cgroup_unregister(void);

/* namespaces being enabled, read with the subsystem's lock held */
u64 nvmet_cgroup_ns_cgroup_id(const struct nvmet_ns *ns);
bool nvmet_cgroup_ns_buffered_io(const struct nvmet_ns *ns);
const char *nvmet_cgroup_ns_device_path(const struct nvmet_ns *ns);
u32 nvmet_cgroup_ns_nsid(const struct nvmet_ns *ns);
const char *nvmet_cgroup_ns_subsys_nqn(const struct nvmet_ns *ns);
bool nvmet_cgroup_ns_file(const struct nvmet_ns *ns);
struct request_queue *nvmet_cgroup_ns_queue(const struct nvmet_ns *ns);

/* commands handed to the extension */
bool nvmet_cgroup_req_ns_live(const struct nvmet_req *req);
bool nvmet_cgroup_req_sq_dying(const struct nvmet_req *req);
void nvmet_cgroup_execute(struct nvmet_req *req, void *ctx);
/* the queue's part of the facts alone, for the module's status file */
u32 nvmet_cgroup_queue_facts(struct request_queue *q);
void nvmet_cgroup_req_abort(struct nvmet_req *req);
void nvmet_cgroup_req_run(struct nvmet_req *req, bool own_ctx);
bool nvmet_cgroup_req_push(struct llist_head *list, struct nvmet_req *req);
struct nvmet_req *nvmet_cgroup_reqs_take(struct llist_head *list);
struct nvmet_req *nvmet_cgroup_req_next(const struct nvmet_req *req);
bool nvmet_cgroup_reqs_empty(const struct llist_head *list);

/* static inline helpers and macros of the kernel */
struct cgroup *nvmet_cgroup_get(struct cgroup *cgrp);
void nvmet_cgroup_put(struct cgroup *cgrp);
bool nvmet_cgroup_e_io_css_is(struct cgroup *cgrp,
			      struct cgroup_subsys_state *css);
struct cgroup_subsys_state *nvmet_cgroup_associate(struct cgroup *cgrp);
void nvmet_cgroup_unassociate(void);
unsigned int nvmet_cgroup_inline_enter(struct cgroup *cgrp, bool charge);
void nvmet_cgroup_inline_leave(unsigned int noio_flags, bool charged);
void nvmet_cgroup_inline_run_leave(struct nvmet_req *req,
				   unsigned int noio_flags, bool charged);
unsigned int nvmet_cgroup_noio_save(void);
void nvmet_cgroup_noio_restore(unsigned int flags);
struct workqueue_struct *nvmet_cgroup_alloc_workqueue(void);
/* work items of the throttled lanes' queue that may run at once */
#define NVMET_CGROUP_THROTTLED_ACTIVE WQ_MAX_ACTIVE
struct workqueue_struct *nvmet_cgroup_alloc_throttled_workqueue(void);
unsigned long nvmet_cgroup_current_sleeps(void);

#endif /* NVMET_CGROUP_GLUE_H */
