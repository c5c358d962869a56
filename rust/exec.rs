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
//! The fast path skips the lane while nothing can sleep the transport: a read
//! or write whose device has neither io.cost nor io.latency enabled and no
//! bfq (io.max queues a bdev namespace's throttled bios instead of sleeping)
//! runs in the transport's own thread, associated and under `memalloc_noio`
//! just as in a lane.  The check is made per command, so enabling such a
//! policy later moves the namespace's next commands to its lanes, and
//! turning it off brings them back.

use crate::{
    cgroup::{BlkcgAssociation, CgroupRef, NoIo},
    cgroup_id,
    exec_queue::{flush_work, OwnedQueue},
    ffi::raw,
    nvmet::{BackingQueue, Ns, Req, ReqList},
};
use kernel::{
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
                // The effective io css is looked up once per batch.
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
    /// The `fast_path` parameter, read when the namespace is enabled.
    fast_path: bool,
    /// The `inline_assoc` diagnostic mode, read when the namespace is enabled.
    inline: bool,
}

impl NsExec {
    /// Sets up the namespace's context if it has a cgroup; `None` if not.
    pub(crate) fn enable(ns: &Ns) -> Result<Option<KBox<Self>>> {
        let id = cgroup_id::get(ns);
        if id == 0 {
            return Ok(None);
        }
        // Writeback of buffered writes is charged through the page cache's
        // memcg, not to this cgroup.
        if ns.buffered_io() {
            pr_err!(
                "cgroup_id is not supported with buffered_io: {}\n",
                ns.device_path()
            );
            return Err(EINVAL);
        }
        let cgroup = CgroupRef::from_id(id).inspect_err(|e| {
            pr_err!(
                "failed to resolve cgroup id {} for nsid {}: {}\n",
                id,
                ns.nsid(),
                e.to_errno()
            );
        })?;
        let queue = crate::shared_queue()?;

        // SAFETY: Reading a constant of the running kernel.
        let nr_cpus = unsafe { raw::nvmet_cgroup_nr_cpu_ids() } as usize;
        let mut lanes = KVec::with_capacity(nr_cpus, GFP_KERNEL)?;
        for _ in 0..nr_cpus {
            lanes.push(
                Arc::pin_init(Lane::new(cgroup.clone()), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        // SAFETY: The namespace is being enabled, and the context is dropped
        // in `disable`, before the namespace's backend is closed.
        let backing = unsafe { ns.backing_queue() };
        let fast_path = crate::module_parameters::fast_path.value();
        let inline = crate::module_parameters::inline_assoc.value();
        Ok(Some(KBox::new(
            Self {
                lanes,
                queue,
                cgroup,
                backing,
                fast_path,
                inline,
            },
            GFP_KERNEL,
        )?))
    }

    /// Hands a command to the lane of the current CPU.  nvmet waits for
    /// every call to return before [`NsExec::disable`] (SRCU), so the
    /// context outlives this call even if the command completes meanwhile.
    pub(crate) fn submit(&self, req: Req) {
        // The diagnostic mode runs every command inline, even where io.cost
        // or io.latency may then put the transport's thread to sleep.
        if self.inline || (self.fast_path && req.may_run_inline(&self.backing)) {
            self.run_inline(req);
            return;
        }
        // SAFETY: No precondition.
        let cpu = unsafe { raw::nvmet_cgroup_this_cpu() } as usize;
        // There is a lane per possible CPU; without one the command is
        // dropped, which aborts it.
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
        let _charged = self.cgroup.associate();
        req.run_inline();
    }

    /// Tears the context down once every command of the namespace completed.
    pub(crate) fn disable(self: KBox<Self>, _ns: &Ns) {
        // nvmet waited for `submit` calls on their way out; wait for workers
        // still returning from a command that completed.
        for lane in self.lanes.iter() {
            flush_work(&lane.work);
        }
    }

    /// Gives the context to nvmet.
    pub(crate) fn into_raw(self: KBox<Self>) -> *mut Self {
        KBox::into_raw(self)
    }

    /// Takes the context back from nvmet.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`NsExec::into_raw`] and is not used afterwards.
    pub(crate) unsafe fn from_raw(ptr: *mut Self) -> KBox<Self> {
        // SAFETY: As required by this function's contract.
        unsafe { KBox::from_raw(ptr) }
    }

    /// Borrows the context nvmet holds.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`NsExec::into_raw`] and is not given back to
    /// [`NsExec::from_raw`] while the reference is used.
    pub(crate) unsafe fn borrow_raw<'a>(ptr: *mut Self) -> &'a Self {
        // SAFETY: As required by this function's contract.
        unsafe { &*ptr }
    }
}
