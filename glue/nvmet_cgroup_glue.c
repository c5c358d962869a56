// SPDX-License-Identifier: GPL-2.0
/*
 * C glue between nvmet's private header and the Rust module: the extension's
 * ops table, accessors for the few nvmet fields the module reads, and
 * wrappers for static inline kernel helpers that Rust cannot call.
 */
#include <linux/cgroup.h>
#include <linux/kthread.h>
#include <linux/llist.h>
#include <linux/sched/mm.h>
#include <linux/workqueue.h>
#include "nvmet.h"
#include "elevator.h"	/* block/: the elevator's name */
#include "nvmet_cgroup_glue.h"

static void nvmet_cgroup_execute(struct nvmet_req *req)
{
	nvmet_cgroup_rs_execute(req, req->ns->exec_ctx);
}

static const struct nvmet_exec_ext_ns_attr nvmet_cgroup_ns_attrs[] = {
	{
		.name	= "cgroup_id",
		.show	= nvmet_cgroup_rs_id_show,
		.store	= nvmet_cgroup_rs_id_store,
	},
};

static const struct nvmet_exec_ext_ops nvmet_cgroup_ops = {
	.owner		= THIS_MODULE,
	.ns_attrs	= nvmet_cgroup_ns_attrs,
	.nr_ns_attrs	= ARRAY_SIZE(nvmet_cgroup_ns_attrs),
	.ns_enable	= nvmet_cgroup_rs_ns_enable,
	.ns_disable	= nvmet_cgroup_rs_ns_disable,
	.ns_free	= nvmet_cgroup_rs_ns_free,
	.execute	= nvmet_cgroup_execute,
};

int nvmet_cgroup_register(void)
{
	return nvmet_register_exec_ext(&nvmet_cgroup_ops);
}

void nvmet_cgroup_unregister(void)
{
	nvmet_unregister_exec_ext(&nvmet_cgroup_ops);
}

bool nvmet_cgroup_ns_enabled(const struct nvmet_ns *ns)
{
	return ns->enabled;
}

bool nvmet_cgroup_ns_buffered_io(const struct nvmet_ns *ns)
{
	return ns->buffered_io;
}

const char *nvmet_cgroup_ns_device_path(const struct nvmet_ns *ns)
{
	return ns->device_path ?: "";
}

u32 nvmet_cgroup_ns_nsid(const struct nvmet_ns *ns)
{
	return ns->nsid;
}

bool nvmet_cgroup_req_ns_live(const struct nvmet_req *req)
{
	return test_bit(NVMET_NS_IO_LIVE, &req->ns->flags);
}

bool nvmet_cgroup_req_sq_dying(const struct nvmet_req *req)
{
	return percpu_ref_is_dying(&req->sq->ref);
}

void nvmet_cgroup_req_abort(struct nvmet_req *req)
{
	nvmet_req_complete(req, NVME_SC_ABORT_QUEUE);
}

/*
 * Filesystems that keep every file's data on sb->s_bdev.  Others may not
 * (an XFS realtime file lives on the rt device, btrfs and f2fs can span
 * devices), so their namespaces always use the execution context.
 */
static bool nvmet_cgroup_single_bdev_fs(const struct super_block *sb)
{
	static const char * const names[] = { "ext4", "ext3", "ext2" };
	int i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(sb->s_type->name, names[i]))
			return true;
	return false;
}

/*
 * The queue whose policies act on the namespace's bios: the block device's,
 * or that of the device under the file's filesystem.  It lives as long as
 * the namespace holds the device or file open, i.e. while it is enabled.
 * NULL if the fast path cannot know (the commands then always go to the
 * execution context).
 */
struct request_queue *nvmet_cgroup_ns_queue(const struct nvmet_ns *ns)
{
	struct block_device *bdev = ns->bdev;

	if (!bdev && ns->file) {
		struct super_block *sb = file_inode(ns->file)->i_sb;

		if (nvmet_cgroup_single_bdev_fs(sb))
			bdev = sb->s_bdev;
	}
	return bdev ? bdev_get_queue(bdev) : NULL;
}

/* Whether io.max was ever configured on @q (blk-throttle stays set up). */
static bool nvmet_cgroup_queue_has_throttle(struct request_queue *q)
{
#ifdef CONFIG_BLK_DEV_THROTTLING
	return READ_ONCE(q->td);
#else
	return false;
#endif
}

/*
 * Whether a policy on @q can put a thread that submits @req's bios to sleep
 * for the cgroup's sake:
 * - io.cost and io.latency, while enabled: their rq-qos ->throttle sleeps a
 *   submitter over its cgroup's budget.  Both stay registered on the queue
 *   once configured, even when turned off again, so their presence says
 *   little; what they throttle on is a private switch (ioc->enabled,
 *   blkiolat->enabled).  Each flips a queue flag of its own together with
 *   that switch, under the same freeze: iocost sets QUEUE_FLAG_RQ_ALLOC_TIME
 *   when enabled, iolatency QUEUE_FLAG_BIO_ISSUE_TIME while any cgroup has
 *   a latency target, and nothing else sets either.  Should another user
 *   appear, the check only gets more conservative.
 * - bfq: it limits the tag depth of a low-weight cgroup's writes, and the
 *   submitter then waits for a tag;
 * - io.max, for a file only: blk-throttle queues a bio instead of sleeping
 *   its submitter, which suits the bdev backend's asynchronous bios, but the
 *   filesystem may wait for a throttled bio in the caller's thread (metadata
 *   reads, extending or unaligned direct writes).
 * wbt does not throttle nvmet's REQ_SYNC | REQ_IDLE writes, and would not
 * without a cgroup either.
 * The flags and the elevator are changed with the queue frozen: the caller's
 * usage reference keeps them stable.
 */
static bool nvmet_cgroup_queue_may_sleep(const struct nvmet_req *req,
					 struct request_queue *q)
{
	if (test_bit(QUEUE_FLAG_RQ_ALLOC_TIME, &q->queue_flags) ||
	    test_bit(QUEUE_FLAG_BIO_ISSUE_TIME, &q->queue_flags))
		return true;
	if (q->elevator && !strcmp(q->elevator->type->elevator_name, "bfq"))
		return true;
	return req->ns->file && nvmet_cgroup_queue_has_throttle(q);
}

/*
 * Whether @req may run in the caller's (the transport's) thread: the
 * association then costs no wakeup and no hop.  Only if
 * - it is a read or write: they submit their bios from ->execute, while the
 *   file backend defers Flush, DSM and Write Zeroes to a work item, which is
 *   charged only when it runs in the execution context;
 * - the caller is a kernel thread in task context: bios are charged to a
 *   kthread's association only (nvmet-fc may execute from an LLDD's
 *   completion);
 * - @q is a blk-mq queue: a bio-based driver (dm, md, multipath) may pass the
 *   bio on to queues this check does not see;
 * - and nothing on @q can sleep the caller for the cgroup (see above).
 * The check cannot be held across the submission: a freeze that enables a
 * policy waits for our usage reference, and the submission would wait for
 * the freeze.  So commands that passed the check before such a freeze (one
 * per transport context at most) meet a freshly enabled policy: iolatency
 * starts at an unlimited depth, iocost grants a cgroup it activates half a
 * period of budget scaled by its weight.  They usually do not sleep, though
 * a large command of a low-weight cgroup can; every command checked after
 * the freeze goes to the execution context.
 */
bool nvmet_cgroup_req_may_run_inline(const struct nvmet_req *req,
				     struct request_queue *q)
{
	u8 opcode = req->cmd->common.opcode;
	bool may_sleep;

	if (opcode != nvme_cmd_read && opcode != nvme_cmd_write)
		return false;
	if (!q || !queue_is_mq(q) || !in_task() ||
	    !(current->flags & PF_KTHREAD))
		return false;
	if (!percpu_ref_tryget_live(&q->q_usage_counter))
		return false;
	may_sleep = nvmet_cgroup_queue_may_sleep(req, q);
	percpu_ref_put(&q->q_usage_counter);
	return !may_sleep;
}

/* @own_ctx: the caller is the module's worker, not the transport */
void nvmet_cgroup_req_run(struct nvmet_req *req, bool own_ctx)
{
	nvmet_req_exec_ext_run(req, own_ctx);
}

/* Returns true if the list was empty, i.e. its worker must be queued. */
bool nvmet_cgroup_req_push(struct llist_head *list, struct nvmet_req *req)
{
	return llist_add(&req->ext.node, list);
}

/* Takes every queued command, oldest first. */
struct nvmet_req *nvmet_cgroup_reqs_take(struct llist_head *list)
{
	struct llist_node *first = llist_reverse_order(llist_del_all(list));

	return first ? container_of(first, struct nvmet_req, ext.node) : NULL;
}

struct nvmet_req *nvmet_cgroup_req_next(const struct nvmet_req *req)
{
	struct llist_node *next = req->ext.node.next;

	return next ? container_of(next, struct nvmet_req, ext.node) : NULL;
}

struct cgroup *nvmet_cgroup_get_from_id(u64 id)
{
	return cgroup_get_from_id(id);
}

struct cgroup *nvmet_cgroup_get(struct cgroup *cgrp)
{
	cgroup_get(cgrp);
	return cgrp;
}

void nvmet_cgroup_put(struct cgroup *cgrp)
{
	cgroup_put(cgrp);
}

/* The effective io css: the cgroup's or its nearest ancestor's. */
struct cgroup_subsys_state *nvmet_cgroup_io_css_get(struct cgroup *cgrp)
{
	return cgroup_get_e_css(cgrp, &io_cgrp_subsys);
}

void nvmet_cgroup_css_put(struct cgroup_subsys_state *css)
{
	css_put(css);
}

void nvmet_cgroup_associate_blkcg(struct cgroup_subsys_state *css)
{
	kthread_associate_blkcg(css);
}

unsigned int nvmet_cgroup_noio_save(void)
{
	return memalloc_noio_save();
}

void nvmet_cgroup_noio_restore(unsigned int flags)
{
	memalloc_noio_restore(flags);
}

/*
 * One queue for every namespace: per-CPU so that a command is handed to a
 * worker on the transport's CPU, WQ_HIGHPRI because the tcp and rdma
 * transports execute commands at that priority, WQ_MEM_RECLAIM because
 * reclaim may wait for the I/O queued here (one rescuer for all namespaces).
 */
struct workqueue_struct *nvmet_cgroup_alloc_workqueue(void)
{
	return alloc_workqueue("nvmet_cgroup",
			       WQ_PERCPU | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
}

unsigned int nvmet_cgroup_this_cpu(void)
{
	return raw_smp_processor_id();
}

unsigned int nvmet_cgroup_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

int nvmet_cgroup_kstrtou64(const char *s, u64 *res)
{
	return kstrtou64(s, 0, res);
}
