// SPDX-License-Identifier: GPL-2.0
/*
 * Test helper for css_fresh.sh, never loaded outside the tests: while
 * "hold" is 1, every thread that calls a function (nvmet_bdev_execute_rw by
 * default) waits before the call until the test writes 0, then makes it.
 * With "hold" at 2 the threads held wait on, and no more are held.
 *
 * A lane worker of nvmet_cgroup runs a namespace's queued commands one after
 * another and looks up the cgroup's effective io css once per run.  A run
 * that spans a change of that css without sleeping (the cgroup's rmdir, io
 * enabled or disabled above it) must notice it per command, or the rest of
 * the run is charged to the old css (to the root after an rmdir:
 * bio_associate_blkg() only takes an online css).  Left alone, no run spans
 * a change on purpose.  Held here, every worker of the namespace's lanes is
 * in the middle of a run, the transports keep queueing commands behind
 * them, and the test changes the cgroup meanwhile.  A held thread does not
 * sleep: it spins at the lowest priority and is preempted, which is no
 * voluntary context switch, so its run goes on.
 *
 * The kprobe's handler sends the thread to hold_detour() instead of the
 * function (a pre-handler that changes the instruction pointer and returns
 * 1, as kprobes allow); hold_detour() waits in the caller's context, then
 * calls the function with the same argument.  So the function must take a
 * single pointer, be called from a preemptible thread (css_fresh.sh runs
 * nvmet_cgroup with fast_path=0: only its lane workers call it), and the
 * kernel must not check indirect call types (kCFI).  A hold ends for every
 * thread at max_hold_ms.  A diverted thread holds a reference on the module
 * until its call returns, so rmmod is refused meanwhile.
 */
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#ifdef CONFIG_X86_KERNEL_IBT
#include <asm/ibt.h>
#endif

static char *symbol = "nvmet_bdev_execute_rw";
module_param(symbol, charp, 0444);
MODULE_PARM_DESC(symbol, "function of one pointer whose next caller is held (default nvmet_bdev_execute_rw)");

static unsigned int max_hold_ms = 5000;
module_param(max_hold_ms, uint, 0644);
MODULE_PARM_DESC(max_hold_ms, "longest hold; the thread goes on after it (default 5000)");

static int hold;
module_param(hold, int, 0644);
MODULE_PARM_DESC(hold, "1: callers wait until it is 0; 2: those waiting wait on, others pass");

static atomic_t held = ATOMIC_INIT(0);
static atomic_t holds = ATOMIC_INIT(0);
static atomic_t timeouts = ATOMIC_INIT(0);

static int atomic_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(kp->arg));
}

static const struct kernel_param_ops atomic_ops = {
	.get = atomic_get,
};

module_param_cb(held, &atomic_ops, &held, 0444);
MODULE_PARM_DESC(held, "threads waiting now");
module_param_cb(holds, &atomic_ops, &holds, 0444);
MODULE_PARM_DESC(holds, "threads that waited, in all");
module_param_cb(timeouts, &atomic_ops, &timeouts, 0444);
MODULE_PARM_DESC(timeouts, "holds ended by max_hold_ms rather than by the test");

/* the probed function, called through its entry (ENDBR included) */
static void (*hold_target)(void *arg);

static void hold_detour(void *arg)
{
	unsigned long end = jiffies + msecs_to_jiffies(READ_ONCE(max_hold_ms));
	long nice = task_nice(current);

	/*
	 * Spin at the lowest priority: the test, the transports and the host
	 * run meanwhile (a preemption is no voluntary switch either).
	 */
	set_user_nice(current, MAX_NICE);
	atomic_inc(&held);
	while (READ_ONCE(hold)) {
		if (time_after(jiffies, end)) {
			atomic_inc(&timeouts);
			/* and for every thread: none is held again on its call */
			WRITE_ONCE(hold, 0);
			break;
		}
		cpu_relax();
	}
	atomic_inc(&holds);
	atomic_dec(&held);
	set_user_nice(current, nice);
	/* hold is 0 now: the kprobe lets this call through */
	hold_target(arg);
	module_put(THIS_MODULE);
}

static int hold_pre(struct kprobe *p, struct pt_regs *regs)
{
	/* the module stays while the thread runs its code (put by the detour) */
	if (READ_ONCE(hold) != 1 || !try_module_get(THIS_MODULE))
		return 0;
	/* at the function's entry: its argument is still in place */
	instruction_pointer_set(regs, (unsigned long)hold_detour);
	return 1;
}

/*
 * Only there to keep the probe a breakpoint: an optimized kprobe (a jump)
 * ignores a new instruction pointer, and kprobes never optimize one with a
 * post-handler.
 */
static void hold_post(struct kprobe *p, struct pt_regs *regs,
		      unsigned long flags)
{
}

static struct kprobe hold_probe = {
	.pre_handler = hold_pre,
	.post_handler = hold_post,
};

static int __init hold_init(void)
{
	unsigned long entry;
	u32 insn __maybe_unused = 0;
	int ret;

	hold_probe.symbol_name = symbol;
	ret = register_kprobe(&hold_probe);
	if (ret)
		return ret;
	entry = (unsigned long)hold_probe.addr;
#ifdef CONFIG_X86_KERNEL_IBT
	/* kprobes put the probe after the ENDBR an indirect call must land on */
	if (!get_kernel_nofault(insn, (u32 *)(entry - ENDBR_INSN_SIZE)) &&
	    __is_endbr(insn))
		entry -= ENDBR_INSN_SIZE;
#endif
	hold_target = (void (*)(void *))entry;
	return 0;
}

static void __exit hold_exit(void)
{
	unregister_kprobe(&hold_probe);
}

module_init(hold_init);
module_exit(hold_exit);
MODULE_DESCRIPTION("nvmet_cgroup test helper: hold a command's thread mid-run");
MODULE_LICENSE("GPL");
