// SPDX-License-Identifier: GPL-2.0
/*
 * C glue between nvmet's header and the Rust module: the extension's
 * ops table, accessors for the few nvmet fields the module reads, the facts
 * the fast path decides from, and wrappers for static inline kernel helpers
 * and macros that Rust cannot call.  Exported kernel functions are called
 * from Rust through the kernel crate's bindings, not from here.
 */
#include <linux/blk-cgroup.h>
#include <linux/blk-mq.h>
#include <linux/cgroup.h>
#include <linux/kthread.h>
#include <linux/llist.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/workqueue.h>
#include "nvmet.h"
#include "nvmet_cgroup_glue.h"

static const struct nvmet_exec_ext_ops nvmet_cgroup_ops = {
	.owner		= THIS_MODULE,
	.ns_enable	= nvmet_cgroup_rs_ns_enable,
	.ns_disable	= nvmet_cgroup_rs_ns_disable,
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

u64 nvmet_cgroup_ns_cgroup_id(const struct nvmet_ns *ns)
{
	return nvmet_ns_cgroup_id(ns);
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

const char *nvmet_cgroup_ns_subsys_nqn(const struct nvmet_ns *ns)
{
	return ns->subsys->subsysnqn;
}

bool nvmet_cgroup_ns_file(const struct nvmet_ns *ns)
{
	return !!ns->file;
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
 * Filesystems that keep every file's data on sb->s_bdev: the ext2/3/4
 * driver (one magic for all three).  Others may not (an XFS realtime file
 * lives on the rt device, btrfs and f2fs can span devices), so their
 * namespaces always use the execution context.
 */
static bool nvmet_cgroup_single_bdev_fs(const struct super_block *sb)
{
	return sb->s_magic == EXT4_SUPER_MAGIC;
}

/*
 * blk-mq drivers that pass each request on to other block devices from
 * their own threads set BLK_MQ_F_STACKING: loop and request-based
 * device-mapper (multipath).  A policy on a device below one of them holds
 * its requests, and the submitter then waits for a tag, or under a
 * filesystem for a metadata read or a forced-wait direct write: the fast
 * path cannot see that.  (Bio-based stacking drivers fail queue_is_mq().)
 */
static bool nvmet_cgroup_stacking_queue(struct request_queue *q)
{
	return queue_is_mq(q) && (q->tag_set->flags & BLK_MQ_F_STACKING);
}

/*
 * The queue whose policies act on the namespace's bios: the block device's,
 * or that of the device under the file's filesystem; the namespace holds
 * either open while it is enabled, and the caller takes its own reference.
 * NULL if the fast path cannot know (the commands then always go to the
 * execution context): a filesystem that may put data elsewhere, or a
 * stacking driver.
 */
struct request_queue *nvmet_cgroup_ns_queue(const struct nvmet_ns *ns)
{
	struct block_device *bdev = ns->bdev;
	struct request_queue *q;

	if (!bdev && ns->file) {
		struct super_block *sb = file_inode(ns->file)->i_sb;

		if (nvmet_cgroup_single_bdev_fs(sb))
			bdev = sb->s_bdev;
	}
	if (!bdev)
		return NULL;
	q = bdev_get_queue(bdev);
	return nvmet_cgroup_stacking_queue(q) ? NULL : q;
}

/*
 * The queue flags by which a policy that sleeps the submitter says it
 * throttles (see nvmet_cgroup_req_facts()): io.cost's, io.latency's, and
 * bfq's (blk_queue_disable_wbt()).
 */
#define NVMET_CGROUP_QF_IOCOST		BIT(QUEUE_FLAG_RQ_ALLOC_TIME)
#define NVMET_CGROUP_QF_IOLATENCY	BIT(QUEUE_FLAG_BIO_ISSUE_TIME)
#define NVMET_CGROUP_QF_BFQ		BIT(QUEUE_FLAG_DISABLE_WBT_DEF)
#define NVMET_CGROUP_QF_SLEEPERS \
	(NVMET_CGROUP_QF_IOCOST | NVMET_CGROUP_QF_IOLATENCY | NVMET_CGROUP_QF_BFQ)

/* The queue is live: not frozen, not dying (its usage reference alive). */
static __always_inline bool nvmet_cgroup_q_live(struct request_queue *q)
{
	return !percpu_ref_is_dying(&q->q_usage_counter);
}

/*
 * The queue's part of the facts.  One load of the flags: each policy's bit
 * is tested in the same snapshot.
 */
static inline u32 nvmet_cgroup_q_facts(struct request_queue *q)
{
	unsigned long flags;
	u32 f;

	if (!q || !nvmet_cgroup_q_live(q))
		return 0;
	f = NVMET_CGROUP_F_QUEUE_LIVE;
	flags = READ_ONCE(q->queue_flags);
	if (queue_is_mq(q))
		f |= NVMET_CGROUP_F_BLK_MQ;
	if (flags & NVMET_CGROUP_QF_IOCOST)
		f |= NVMET_CGROUP_F_IOCOST;
	if (flags & NVMET_CGROUP_QF_IOLATENCY)
		f |= NVMET_CGROUP_F_IOLATENCY;
	if (flags & NVMET_CGROUP_QF_BFQ)
		f |= NVMET_CGROUP_F_BFQ;
#ifdef CONFIG_BLK_DEV_THROTTLING
	if (READ_ONCE(q->td))
		f |= NVMET_CGROUP_F_THROTTLE;
#endif
	return f;
}

/*
 * The commands whose backend hands its work to nvmet_req_run_work(), which
 * runs it synchronously in the execution context: the file backend's Flush,
 * DSM and Write Zeroes (vfs_fsync, fallocate) and a zoned block device's
 * zone management.  The module runs them apart from the namespace's reads
 * and writes.  The others (Reads, Writes, a block device's Flush, DSM and
 * Write Zeroes, Zone Append, passthru's commands) submit and return.
 */
static bool nvmet_cgroup_req_deferred(const struct nvmet_req *req)
{
	switch (req->cmd->common.opcode) {
	case nvme_cmd_flush:
	case nvme_cmd_dsm:
	case nvme_cmd_write_zeroes:
		return !!req->ns->file;
	case nvme_cmd_zone_mgmt_send:
	case nvme_cmd_zone_mgmt_recv:
		return !!req->ns->bdev;
	default:
		return false;
	}
}

static __always_inline bool
nvmet_cgroup_req_read_write(const struct nvmet_req *req)
{
	u8 opcode = req->cmd->common.opcode;

	return opcode == nvme_cmd_read || opcode == nvme_cmd_write;
}

/* The caller is a kernel thread in task context (not an interrupt's). */
static __always_inline bool nvmet_cgroup_kthread_task(void)
{
	return in_task() && (current->flags & PF_KTHREAD);
}

/*
 * The facts the fast path decides from (fast_path.rs says why each one
 * matters), and the command's state, which the fast path needs next: read
 * once per command, by nvmet_cgroup_execute_facts(), or fact by fact by
 * nvmet_cgroup_req_plain().  The queue's flags and elevator change only
 * with the queue frozen, and the submission that follows the decision
 * holds no usage reference of ours, so the flags are read as a snapshot,
 * without one: a command that read them just before a policy was enabled
 * meets it fresh (fast_path.rs), as it would if they had been read under a
 * reference dropped before the submission.  A queue being frozen or dying
 * counts as unknown (its usage reference is killed first), so that while a
 * policy is being changed the commands go to the execution context.
 * io.cost and io.latency stay registered on a queue once configured; what
 * says whether they throttle is a queue flag each flips with its private
 * switch under that freeze, and nothing else sets:
 * QUEUE_FLAG_RQ_ALLOC_TIME for iocost, QUEUE_FLAG_BIO_ISSUE_TIME for
 * iolatency.  Which elevator is attached is private to block/; the one
 * that throttles by cgroup, bfq, is the one that sets
 * QUEUE_FLAG_DISABLE_WBT_DEF (wbt off by default), only while it is
 * attached.
 */
static u32 nvmet_cgroup_req_facts(const struct nvmet_req *req,
				  struct request_queue *q)
{
	u32 f = nvmet_cgroup_q_facts(q);

	if (nvmet_cgroup_req_read_write(req))
		f |= NVMET_CGROUP_F_READ_WRITE;
	if (nvmet_cgroup_req_deferred(req))
		f |= NVMET_CGROUP_F_DEFERRED;
	if (nvmet_cgroup_kthread_task())
		f |= NVMET_CGROUP_F_KTHREAD_TASK;
	if (req->ns->file)
		f |= NVMET_CGROUP_F_FILE;
	if (nvmet_cgroup_req_ns_live(req))
		f |= NVMET_CGROUP_F_NS_LIVE;
	if (nvmet_cgroup_req_sq_dying(req))
		f |= NVMET_CGROUP_F_SQ_DYING;
	return f;
}

u32 nvmet_cgroup_queue_facts(struct request_queue *q)
{
	return nvmet_cgroup_q_facts(q);
}

/*
 * @own_ctx: the caller is the module's worker, not the transport.  Every
 * command the module runs goes through here, the fast path's too (from
 * nvmet_cgroup_execute() and nvmet_cgroup_inline_run_leave()): the tests
 * and the bench count where commands run with a kprobe on this function
 * and its @own_ctx, so it is kept out of line.
 */
noinline void nvmet_cgroup_req_run(struct nvmet_req *req, bool own_ctx)
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

bool nvmet_cgroup_reqs_empty(const struct llist_head *list)
{
	return llist_empty(list);
}

struct nvmet_req *nvmet_cgroup_req_next(const struct nvmet_req *req)
{
	struct llist_node *next = req->ext.node.next;

	return next ? container_of(next, struct nvmet_req, ext.node) : NULL;
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

/*
 * @cgrp's effective io css: its own, or its nearest ancestor's, that is not
 * being removed; the caller is in an RCU read-side critical section (of
 * any form: see nvmet_cgroup_associate()), and no reference is taken.
 * Like cgroup_get_e_css(@cgrp, &io_cgrp_subsys), but stricter: a css
 * marked dying whose reference is not killed yet is skipped, as the block
 * layer would send its bios to the root.  With io bound to a v1
 * hierarchy, no v2 cgroup has an io css: then, as there, the io root's.
 * @cgrp is never NULL (the callers hold a reference on it), so the loop
 * tests it only from its parent on: one test less on the fast path.
 */
static struct cgroup_subsys_state *nvmet_cgroup_e_io_css(struct cgroup *cgrp)
{
	struct cgroup_subsys_state *e;

	do {
		e = rcu_dereference_all(cgrp->subsys[io_cgrp_id]);
		if (e && !css_is_dying(e))
			return e;
		cgrp = cgroup_parent(cgrp);
	} while (cgrp);
	return blkcg_root_css;
}

/*
 * Whether @css is @cgrp's effective io css now.  A lane worker keeps its
 * association for the whole run and asks this before each command, so that
 * the next command is charged to a css that appeared (io enabled above
 * @cgrp), and not to one that is dying (io disabled above it, @cgrp
 * removed), whose bios the block layer would send to the root.  No
 * reference is taken: when @cgrp has its own io css, this is one
 * RCU-protected load and a flag test.
 */
bool nvmet_cgroup_e_io_css_is(struct cgroup *cgrp,
			      struct cgroup_subsys_state *css)
{
	bool is;

	rcu_read_lock();
	is = nvmet_cgroup_e_io_css(cgrp) == css;
	rcu_read_unlock();
	return is;
}

/*
 * Associates the current kernel thread with @cgrp's effective io css and
 * returns that css (never NULL), on which the association holds the only
 * reference the module needs: nvmet_cgroup_unassociate() drops it.  The
 * reference is taken inside the RCU read-side critical section in which
 * the css was seen not dying: a section with preemption disabled, which
 * has been one since the flavours of RCU were merged (v5.0), and which,
 * unlike rcu_read_lock() with preemptible RCU, costs no call (this runs
 * for every command of the fast path).  kill_css_sync() marks a css dying
 * before kill_css_finish() kills its reference, holding one more that
 * css_killed_work_fn() drops only from an RCU work item, queued after the
 * css was marked dying: a section that saw it not dying began before that
 * grace period, so its css_get() comes before that last put; and the css
 * is freed through RCU work too, so it stays valid meanwhile.  The root
 * css counts no references (CSS_NO_REF).  The fast path's scope and
 * nvmet_cgroup_execute() inline it: the call cost them 7 instructions a
 * command (bench/profile).
 */
static __always_inline struct cgroup_subsys_state *
__nvmet_cgroup_associate(struct cgroup *cgrp)
{
	struct cgroup_subsys_state *css;

	rcu_read_lock_sched();
	css = nvmet_cgroup_e_io_css(cgrp);
	kthread_associate_blkcg(css);
	rcu_read_unlock_sched();
	return css;
}

struct cgroup_subsys_state *nvmet_cgroup_associate(struct cgroup *cgrp)
{
	return __nvmet_cgroup_associate(cgrp);
}

void nvmet_cgroup_unassociate(void)
{
	kthread_associate_blkcg(NULL);
}

/*
 * The fast path's scope around a command run in the transport's thread
 * (inline_scope.rs): the NOIO scope and, if @charge, the association made
 * as nvmet_cgroup_associate() makes it; then the command run, and both
 * left.  Two calls from Rust per command rather than five: each call
 * pays a return thunk, and on CPUs that need it call-depth accounting, on
 * the path that runs for every command.
 */
static __always_inline unsigned int
__nvmet_cgroup_inline_enter(struct cgroup *cgrp, bool charge)
{
	unsigned int flags = memalloc_noio_save();

	if (charge)
		__nvmet_cgroup_associate(cgrp);
	return flags;
}

unsigned int nvmet_cgroup_inline_enter(struct cgroup *cgrp, bool charge)
{
	return __nvmet_cgroup_inline_enter(cgrp, charge);
}

/*
 * The NOIO scope is left first: dropping the association (a css reference)
 * allocates nothing, and as the last call it is a jump, which saves the
 * fast path a return.
 */
void nvmet_cgroup_inline_leave(unsigned int noio_flags, bool charged)
{
	nvmet_cgroup_noio_restore(noio_flags);
	if (charged)
		nvmet_cgroup_unassociate();
}

void nvmet_cgroup_inline_run_leave(struct nvmet_req *req,
				   unsigned int noio_flags, bool charged)
{
	nvmet_cgroup_req_run(req, false);
	nvmet_cgroup_inline_leave(noio_flags, charged);
}

/*
 * The fast path's scope and run, as nvmet_cgroup_execute() carries out a
 * command in the transport's thread.
 */
static __always_inline void
nvmet_cgroup_execute_here(struct nvmet_req *req, struct cgroup *cgrp)
{
	unsigned int noio_flags = __nvmet_cgroup_inline_enter(cgrp, true);

	nvmet_cgroup_inline_run_leave(req, noio_flags, true);
}

/*
 * A command of a namespace with a plain rule (below) that was not plain,
 * or of any other namespace: its facts read, and the rule applied to them.
 * Every command the rule refuses goes to the Rust side with the facts it
 * was refused on.
 */
static noinline void nvmet_cgroup_execute_facts(struct nvmet_req *req,
						void *ctx)
{
	const struct nvmet_cgroup_fast *fast = ctx;
	u32 f = nvmet_cgroup_req_facts(req, fast->queue);

	if ((f & fast->mask) != fast->want) {
		nvmet_cgroup_rs_execute(req, ctx, f);
		return;
	}
	nvmet_cgroup_execute_here(req, fast->cgrp);
}

/*
 * The plain rule (fast_path.rs's Rule::is_plain: the fast path's, for a
 * block device's namespace) tested without building the facts word: a Read
 * or Write from a kernel thread in task context, the namespace live, its
 * submission queue not being deleted, the namespace's queue live with no
 * policy that sleeps a submitter.  That the queue is blk-mq was seen when
 * the namespace was enabled (fast_context.rs): a queue's ->mq_ops is set
 * when it is allocated and never changes.  Each test is the one that
 * nvmet_cgroup_req_facts() makes for its fact, and fast_path.rs's tests
 * check that this conjunction of facts is what the plain rule allows.
 * Building and masking the word took some 60 instructions a command,
 * this takes 30 (bench/profile).
 */
static __always_inline bool
nvmet_cgroup_req_plain(const struct nvmet_req *req, struct request_queue *q)
{
	return nvmet_cgroup_req_read_write(req) &&
	       nvmet_cgroup_kthread_task() &&
	       nvmet_cgroup_q_live(q) &&
	       !(READ_ONCE(q->queue_flags) & NVMET_CGROUP_QF_SLEEPERS) &&
	       nvmet_cgroup_req_ns_live(req) && !nvmet_cgroup_req_sq_dying(req);
}

/*
 * nvmet's ->execute for a namespace with a context.  The common case, a
 * command that may run in the transport's thread, is carried out here: the
 * rule, and the fast path's scope and run (the compiler inlines those in
 * this file).  Which facts allow it is fast_path.rs's decision, compiled
 * into @fast's rule when the namespace was enabled (a KUnit test checks the
 * rule against that decision for every word of facts); the rule also wants
 * the namespace live and the submission queue not dying.  A namespace whose
 * rule is the plain one has its queue in @fast->plain_queue and its
 * commands tested by nvmet_cgroup_req_plain(); the others, and a command
 * that test refuses, by their facts.  As ->execute must, nothing of @ctx is
 * read once the command has run: the association holds its own reference.
 */
void nvmet_cgroup_execute(struct nvmet_req *req, void *ctx)
{
	const struct nvmet_cgroup_fast *fast = ctx;
	struct request_queue *q = fast->plain_queue;

	if (!q || !nvmet_cgroup_req_plain(req, q)) {
		nvmet_cgroup_execute_facts(req, ctx);
		return;
	}
	nvmet_cgroup_execute_here(req, fast->cgrp);
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
 * The lanes' queue for every namespace: per-CPU so that a command is handed
 * to a worker on the transport's CPU, WQ_HIGHPRI because the tcp and rdma
 * transports execute commands at that priority, WQ_MEM_RECLAIM because
 * reclaim may wait for the I/O queued here (one rescuer for all namespaces;
 * throttled lanes have a queue and a rescuer of their own, below).
 */
struct workqueue_struct *nvmet_cgroup_alloc_workqueue(void)
{
	return alloc_workqueue("nvmet_cgroup",
			       WQ_PERCPU | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
}

/*
 * The queue of lanes whose commands sleep in the block layer (io.cost,
 * io.latency): unbound, so that their sleeping workers come from the
 * unbound high-priority pools and not from the per-CPU high-priority pool
 * that the other lanes and nvmet-tcp's io_work use.  While memory pressure
 * keeps the pools from creating kworkers, the workers a throttled tenant
 * holds asleep are then never the ones the other namespaces and the
 * transport need.  Its own rescuer; at most NVMET_CGROUP_THROTTLED_ACTIVE
 * (WQ_MAX_ACTIVE) work items run at once, which bounds the kworkers it can
 * hold whatever the number of namespaces.
 */
struct workqueue_struct *nvmet_cgroup_alloc_throttled_workqueue(void)
{
	return alloc_workqueue("nvmet_cgroup_throttled",
			       WQ_UNBOUND | WQ_HIGHPRI | WQ_MEM_RECLAIM,
			       NVMET_CGROUP_THROTTLED_ACTIVE);
}

/*
 * How often the current thread has gone to sleep of its own accord: a lane
 * worker whose command slept (in io.cost, io.latency or for a tag) hands its
 * kworker back to the pool (exec.rs).
 */
unsigned long nvmet_cgroup_current_sleeps(void)
{
	return current->nvcsw;
}
