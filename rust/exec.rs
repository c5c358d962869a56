// SPDX-License-Identifier: GPL-2.0

//! Per-namespace execution contexts: where a namespace's I/O commands run.
//!
//! A namespace with a cgroup gets one lane per CPU.  The transport hands a
//! command to the lane of the CPU it runs on; the first command on an empty
//! lane queues the lane's work item on the module's per-CPU high-priority
//! workqueue, and the worker runs every command queued by then as one batch,
//! associated with the cgroup and under `memalloc_noio`.  A burst of commands
//! therefore costs one wakeup, the worker stays on the transport's CPU, and a
//! worker that io.cost or io.latency puts to sleep holds up only its own
//! namespace's commands: never a transport thread.  Every namespace shares the
//! one queue, so no kernel thread is created per namespace.
//!
//! The fast path ([`crate::fast_path`]) skips the lane while nothing can sleep the
//! transport: such a command runs in the transport's own thread, associated
//! and under `memalloc_noio` just as in a lane.  The check is made per
//! command, so enabling a policy that can sleep the submitter later moves the
//! namespace's next commands to its lanes, and turning it off brings them
//! back.

use crate::{
    cgroup::{BlkcgAssociation, CgroupRef, NoIo},
    cgroup_id,
    exec_queue::{flush_work, OwnedQueue},
    fast_path::Mode,
    nvmet::{BackingQueue, Ns, Req, ReqList},
    status::Registration,
};
use kernel::{
    cpu::{self, CpuId},
    prelude::*,
    sync::Arc,
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

/// The commands of one namespace queued on one CPU, and their worker.
#[pin_data]
struct Lane {
    #[pin]
    reqs: ReqList,
    cgroup: CgroupRef,
    #[pin]
    work: Work<Lane>,
}

impl_has_work! {
    impl HasWork<Self> for Lane { self.work }
}

impl Lane {
    fn new(cgroup: CgroupRef) -> impl PinInit<Self> {
        pin_init!(Self {
            reqs <- ReqList::new(),
            cgroup,
            work <- new_work!("nvmet_cgroup::Lane::work"),
        })
    }
}

impl WorkItem for Lane {
    type Pointer = Arc<Lane>;

    fn run(this: Arc<Lane>) {
        // Reclaim must not wait for I/O that is queued behind this worker.
        let _noio = NoIo::enter();
        let mut charged: Option<BlkcgAssociation> = None;
        for req in this.reqs.take_all() {
            // Its queue is being deleted: abort it rather than throttle it.
            if req.sq_dying() {
                req.abort();
                continue;
            }
            if req.ns_live() {
                // The effective io css is looked up once per batch, and again
                // once the cgroup it was found for is removed: the rest of
                // the batch goes to the nearest remaining ancestor.
                if charged.as_ref().is_some_and(BlkcgAssociation::is_stale) {
                    // Dropped first: dropping clears the thread's association.
                    charged = None;
                }
                if charged.is_none() {
                    charged = Some(this.cgroup.associate());
                }
            } else {
                // A disable waits for the command: don't throttle it any more.
                charged = None;
            }
            req.run();
        }
    }
}

/// The execution context of one enabled namespace with a cgroup.
pub(crate) struct NsExec {
    lanes: KVec<Arc<Lane>>,
    queue: Arc<OwnedQueue>,
    cgroup: CgroupRef,
    /// The device whose policies decide whether the fast path is safe.
    backing: BackingQueue,
    /// Where Reads and Writes may run, from the module's parameters when the
    /// namespace is enabled.
    mode: Mode,
    /// The namespace's line in the status file.
    _status: Registration,
}

impl NsExec {
    /// Sets up the context of a namespace with a cgroup being enabled.
    pub(crate) fn enable(ns: &Ns<'_>) -> Result<KBox<Self>> {
        let cgroup = cgroup_id::resolve(ns)?;
        let queue = crate::shared_queue()?;

        let nr_cpus = cpu::nr_cpu_ids() as usize;
        let mut lanes = KVec::with_capacity(nr_cpus, GFP_KERNEL)?;
        for _ in 0..nr_cpus {
            lanes.push(
                Arc::pin_init(Lane::new(cgroup.clone()), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        let mode = Mode::from_parameters(
            crate::module_parameters::fast_path.value(),
            crate::module_parameters::inline_assoc.value(),
        );
        Ok(KBox::new(
            Self {
                lanes,
                queue,
                cgroup,
                backing: ns.backing_queue(),
                mode,
                _status: Registration::new(ns, mode)?,
            },
            GFP_KERNEL,
        )?)
    }

    /// Hands a command to the lane of the current CPU, or runs it in the
    /// caller's thread where nothing can put that thread to sleep for the
    /// cgroup (see [`crate::fast_path`]).  nvmet holds a reference on the
    /// namespace until this returns, so the context outlives the call even if
    /// the command completes meanwhile.
    pub(crate) fn submit(&self, req: Req) {
        if self.mode.reads_facts() && self.mode.decide(&req.facts(&self.backing)).is_ok() {
            self.run_inline(req);
            return;
        }
        // The CPU may change under us: any lane will do, this one is likely
        // local.  There is one per possible CPU; without one the command is
        // dropped, which aborts it.
        let cpu = CpuId::current().as_u32() as usize;
        let Some(lane) = cpu
            .checked_rem(self.lanes.len())
            .and_then(|i| self.lanes.get(i))
        else {
            return;
        };
        if lane.reqs.push(req) {
            // Already queued means the worker has yet to take this command.
            let _ = self.queue.enqueue(lane.clone());
        }
    }

    /// Runs a command in the caller's thread, charged as in a lane.
    fn run_inline(&self, req: Req) {
        if req.sq_dying() {
            req.abort();
            return;
        }
        let _noio = NoIo::enter();
        // As in a lane: a disable waits for the command, don't throttle it.
        let _charged = req.ns_live().then(|| self.cgroup.associate());
        req.run_inline();
    }

    /// Tears the context down once every command of the namespace completed
    /// and every [`NsExec::submit`] returned.
    pub(crate) fn disable(self: KBox<Self>) {
        // Wait for workers still returning from a command that completed.
        for lane in self.lanes.iter() {
            flush_work(&lane.work);
        }
    }
}
