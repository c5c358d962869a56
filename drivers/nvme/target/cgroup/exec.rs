// SPDX-License-Identifier: GPL-2.0

//! Per-namespace execution contexts: where a namespace's I/O commands run.
//!
//! A namespace with a cgroup has a lane per CPU it runs commands on, made
//! the first time a command needs it there (an idle namespace, or one whose
//! commands all take the fast path, has none but its fallback lane, and the
//! deferred lane below once it has one).  The
//! transport hands a command to the lane of the CPU it runs on; the first
//! command on an empty lane queues one of the lane's [`LANE_WORKERS`] work
//! items on the module's per-CPU high-priority workqueue, and that worker
//! runs the lane's commands one after another, associated with the cgroup
//! and under `memalloc_noio`.  A burst of commands therefore costs one
//! wakeup, the worker stays on the transport's CPU (while the lane is not
//! throttled, below), and a worker that io.cost or io.latency puts to sleep
//! holds up only its own namespace's commands: never a transport thread.
//! Every namespace shares the module's two queues, so no kernel thread is
//! created per namespace.
//!
//! Before it runs a command that may sleep, a worker that sees more commands
//! queued has a second work item of the lane queued.  The per-CPU queue's
//! concurrency management starts it only if the first one sleeps (the
//! unbound queue of throttled lanes starts it at once), so a lane
//! keeps up to [`LANE_WORKERS`] commands waiting in io.cost at once, as the
//! block layer expects of a submitter with that much queued; with one, a
//! namespace under CPU contention under-used its io.weight and iocost gave
//! the share away.
//!
//! The commands whose backend runs its work synchronously in the execution
//! context (a file's Flush, DSM and Write Zeroes: `vfs_fsync`, `fallocate`;
//! a zoned device's zone management) go to a lane of their own, one per
//! namespace, made the first time one comes (the *deferred* lane): in the
//! lane of the reads, a few slow flushes would hold every worker of it.
//! Like stock nvmet, which runs that work as work items of its own, they
//! run apart from the reads and writes, and like everything in a lane,
//! charged to the cgroup (with `inline_assoc=1` too).
//!
//! The fast path ([`crate::fast_path`]) skips the lane while nothing can sleep the
//! transport: such a command runs in the transport's own thread, associated
//! and under `memalloc_noio` just as in a lane.  The check is made per
//! command, so enabling a policy that can sleep the submitter later moves the
//! namespace's next commands to its lanes, and turning it off brings them
//! back.
//!
//! A worker whose command slept gives its kworker back to the pool after
//! that command, and its work item is queued again behind the others; a
//! lane has at most one work item queued and not started.  A lane whose
//! commands sleep has its work items queued on the second queue, unbound
//! (see [`Lane::count_run`]), so that the kworkers a throttled tenant keeps
//! asleep are never those of the per-CPU pool the other lanes and the
//! transports run on.  Under memory pressure, when no pool can create a
//! worker, the other namespaces keep the per-CPU pool's kworkers, and the
//! throttled ones go round the unbound pool's kworkers and their queue's
//! rescuer instead of one of them staying with a lane that io.cost holds.

use crate::{
    blkcg::BlkcgAssociation,
    cgroup::Cgroup,
    cgroup_id,
    exec_queue::{ExecQueues, Sleeps},
    fast_context::FastContext,
    fast_path::Mode,
    inline_scope::InlineScope,
    noio::NoIo,
    nvmet::{Facts, Namespace, Req, ReqBatch, ReqList, ReqState},
    status::Registration,
};
use kernel::{
    cpu::{self, CpuId},
    new_spinlock,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Acquire, Atomic, Full, Relaxed},
        Arc, SetOnce, SpinLock,
    },
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

/// How many commands of one lane may be asleep in the block layer at once.
pub(crate) const LANE_WORKERS: usize = 4;

/// How many commands in a row must run without sleeping before a lane whose
/// command slept goes back from the throttled queue to the local one.
const THROTTLED_RUNS: u32 = 16;

/// The commands of one namespace queued on one CPU, and their workers.
///
/// # Invariants
///
/// `claimed[i]` is true while work item `i` is queued or running with the
/// duty to look at the lane again before it stops; whoever sets it queues
/// the work item, and only the run that holds the claim pops commands.  A
/// work item may run twice at once: once it has been queued on the other of
/// the module's two queues (even if it came back since), the workqueue no
/// longer sees its earlier run, which may still be returning.  Two runs of
/// one work item never both hold its claim: a worker that queues its own
/// work item (keeping its claim for the new run) touches nothing of the
/// lane afterwards, and one that gives its claim up ([`Lane::stand_down`])
/// pops nothing more unless it takes the claim back.  `queued` is at least
/// the number of work items queued and not yet started (it is raised before
/// one is queued).  Nothing waits for a lane's work items (no `flush_work`,
/// no `cancel_work_sync`): that could miss the second run.
#[pin_data]
struct Lane {
    /// Where the transport adds commands, without a lock.
    #[pin]
    inbox: ReqList,
    /// Commands taken from `inbox`, older than those still in it, handed to
    /// the workers one at a time.
    #[pin]
    taken: SpinLock<ReqBatch>,
    claimed: [Atomic<bool>; LANE_WORKERS],
    /// Work items queued that have not started yet.
    queued: Atomic<u32>,
    /// Commands still to run without sleeping before the lane's work items
    /// are queued on the local queue again; nonzero: the throttled queue.
    throttled: Atomic<u32>,
    cgroup: ARef<Cgroup>,
    queues: Arc<ExecQueues>,
    #[pin]
    work0: Work<Lane, 0>,
    #[pin]
    work1: Work<Lane, 1>,
    #[pin]
    work2: Work<Lane, 2>,
    #[pin]
    work3: Work<Lane, 3>,
}

/// The [`LANE_WORKERS`] work items of a lane, by number.
macro_rules! lane_work_items {
    ($($id:literal => $field:ident),* $(,)?) => {
        impl_has_work! {
            $(impl HasWork<Self, $id> for Lane { self.$field })*
        }

        $(impl WorkItem<$id> for Lane {
            type Pointer = Arc<Lane>;

            fn run(this: Arc<Lane>) {
                this.drain($id);
            }
        })*

        impl Lane {
            /// Queues work item `worker`; a running one runs again.  On
            /// the throttled queue while the lane's commands sleep, or if
            /// `slept` (the caller's command just did: whatever another
            /// worker made of the counter meanwhile).
            fn enqueue(self: &Arc<Self>, worker: usize, slept: bool) {
                let queue = if slept || self.throttled.load(Relaxed) > 0 {
                    &self.queues.throttled
                } else {
                    &self.queues.local
                };
                match worker {
                    // Counted before it can start.  Already queued means it
                    // has yet to look at the lane, and was counted then.
                    $($id => {
                        self.queued.add(1, Relaxed);
                        if queue.enqueue::<_, $id>(self.clone()).is_err() {
                            self.queued.fetch_sub(1, Relaxed);
                        }
                    })*
                    _ => {}
                }
            }

        }
    };
}

lane_work_items!(0 => work0, 1 => work1, 2 => work2, 3 => work3);

impl Lane {
    fn new(cgroup: ARef<Cgroup>, queues: Arc<ExecQueues>) -> impl PinInit<Self> {
        pin_init!(Self {
            inbox <- ReqList::new(),
            taken <- new_spinlock!(ReqBatch::empty(), "nvmet_cgroup::Lane::taken"),
            claimed: [const { Atomic::new(false) }; LANE_WORKERS],
            queued: Atomic::new(0),
            throttled: Atomic::new(0),
            cgroup,
            queues,
            work0 <- new_work!("nvmet_cgroup::Lane::work0"),
            work1 <- new_work!("nvmet_cgroup::Lane::work1"),
            work2 <- new_work!("nvmet_cgroup::Lane::work2"),
            work3 <- new_work!("nvmet_cgroup::Lane::work3"),
        })
    }

    /// Adds a command, and queues a worker unless one will see it anyway.
    fn submit(self: &Arc<Self>, req: Req) {
        // A non-empty inbox was seen by whoever added its first command.
        if self.inbox.push(req) {
            self.kick();
        }
    }

    /// Makes sure a work item that has yet to start is queued: queues one
    /// that is neither queued nor running, unless one is queued already;
    /// returns false if every one is running (each looks at the lane again
    /// before it stops).
    ///
    /// One queued work item per lane is enough (it pops commands as soon as
    /// it starts, and queues the next when it has more than one), and keeps
    /// each lane in the pool's queue once: while the pool can make no more
    /// kworkers, how long a lane waits for one grows with that queue.
    fn kick(self: &Arc<Self>) -> bool {
        if self.queued.load(Acquire) > 0 {
            return true;
        }
        for (worker, claimed) in self.claimed.iter().enumerate() {
            if claimed.cmpxchg(false, true, Full).is_ok() {
                self.enqueue(worker, false);
                return true;
            }
        }
        false
    }

    /// The oldest command of the lane.
    fn pop(&self) -> Option<Req> {
        let mut taken = self.taken.lock();
        if let Some(req) = taken.next() {
            return Some(req);
        }
        *taken = self.inbox.take_all();
        taken.next()
    }

    fn is_empty(&self) -> bool {
        self.taken.lock().is_empty() && self.inbox.is_empty()
    }

    /// Gives up worker `worker`'s claim on an empty lane; returns false if
    /// it must go on because a command came in meanwhile.
    fn stand_down(&self, worker: usize) -> bool {
        let claimed = &self.claimed[worker];
        // Full ordering between the release and the look: a transport that
        // found every worker claimed relies on this one to see its command.
        claimed.xchg(false, Full);
        if self.is_empty() {
            return true;
        }
        // Take the claim back, unless a transport took it and queued this
        // work item again.
        claimed.cmpxchg(false, true, Full).is_err()
    }

    /// Work item `worker`: runs the lane's commands until it is empty.
    fn drain(self: Arc<Self>, worker: usize) {
        self.queued.fetch_sub(1, Full);
        // Reclaim must not wait for I/O that is queued behind this worker.
        let _noio = NoIo::enter();
        let mut charged: Option<BlkcgAssociation> = None;
        let mut helper = false;
        loop {
            let Some(req) = self.pop() else {
                if self.stand_down(worker) {
                    return;
                }
                continue;
            };
            // Should this command sleep in the block layer, the next one
            // runs meanwhile (concurrency management starts the helper only
            // once this worker sleeps).
            if !helper && !self.is_empty() {
                helper = self.kick();
            }
            let before = Sleeps::now();
            self.execute(req, &mut charged);
            let slept = before.slept_since();
            self.count_run(slept);
            if slept && self.yield_worker(worker) {
                return;
            }
        }
    }

    /// Moves the lane to the throttled queue when a command slept, and back
    /// once [`THROTTLED_RUNS`] in a row did not.
    ///
    /// A throttled tenant's sleeping workers then come from the unbound
    /// pools, not from the per-CPU high-priority pool the other lanes and
    /// the transports (nvmet-tcp's io_work) run on: while memory pressure
    /// keeps the pools from making kworkers, the ones it has asleep are not
    /// the ones the others need.  A lane's workers may count at once: a
    /// sleep always sets the count, and a countdown that loses a race to it
    /// does not overwrite it; the worker whose command slept queues its work
    /// item on the throttled queue whatever the count ([`Lane::yield_worker`]).
    fn count_run(&self, slept: bool) {
        if slept {
            self.throttled.store(THROTTLED_RUNS, Relaxed);
        } else {
            let left = self.throttled.load(Relaxed);
            if left > 0 {
                // Lost to another worker's update: that one stands.
                let _ = self.throttled.cmpxchg(left, left - 1, Relaxed);
            }
        }
    }

    /// After a command that put worker `worker` to sleep: queues the work
    /// item again, behind the work items queued meanwhile, and returns true
    /// if the worker must stop; false if the lane is empty (the worker
    /// stands down as usual).
    ///
    /// While the pool can make no more kworkers (memory pressure), its
    /// workers and the queue's rescuer run every namespace's work items.
    /// A worker that kept a lane whose cgroup io.cost holds, one sleep after
    /// another, would keep them from every other namespace; one command per
    /// turn after a sleep makes them go round every queued lane instead.
    fn yield_worker(self: &Arc<Self>, worker: usize) -> bool {
        if self.is_empty() {
            return false;
        }
        if self.queued.load(Acquire) > 0 {
            // A work item that has yet to start will look at the lane.
            self.claimed[worker].xchg(false, Full);
        } else {
            // Still claimed: whoever holds the claim queues the work item,
            // on the throttled queue since its command slept.
            self.enqueue(worker, true);
        }
        true
    }

    /// Runs one command in a worker, associated with the cgroup unless its
    /// namespace is being disabled.
    fn execute(&self, req: Req, charged: &mut Option<BlkcgAssociation>) {
        // Its queue is being deleted: abort it rather than throttle it.
        if req.sq_dying() {
            req.abort();
            return;
        }
        if req.ns_live() {
            // The effective io css is looked up once per worker run, and
            // again once it is no longer the cgroup's (io enabled or
            // disabled above it, the cgroup removed): a run can last as
            // long as the transports keep the lane busy.
            if charged
                .as_ref()
                .is_some_and(|c| !c.is_current(&self.cgroup))
            {
                // Dropped first: dropping clears the thread's association.
                *charged = None;
            }
            if charged.is_none() {
                *charged = Some(BlkcgAssociation::associate(&self.cgroup));
            }
        } else {
            // A disable waits for the command: don't throttle it any more.
            *charged = None;
        }
        req.run();
    }
}

/// The execution context of one enabled namespace with a cgroup.
///
/// `repr(C)`, `fast` first: the glue's `execute` reads it at the address
/// nvmet holds for the namespace.
#[repr(C)]
pub(crate) struct NsExec {
    /// The fast path's rule, the queue it reads facts from and the cgroup.
    fast: FastContext,
    /// One slot per possible CPU, filled with that CPU's lane the first
    /// time a command needs it there.
    lanes: KVec<SetOnce<Arc<Lane>>>,
    /// The lane for commands whose CPU's lane cannot be made (no memory, or
    /// another thread is making it): made at enable, so a command always
    /// has a lane.
    fallback: Arc<Lane>,
    /// The lane of the commands whose backend runs their work synchronously
    /// here (a file's Flush, DSM and Write Zeroes, zone management), made
    /// the first time one comes.
    deferred: SetOnce<Arc<Lane>>,
    queues: Arc<ExecQueues>,
    /// Where Reads and Writes may run, from the module's parameters when the
    /// namespace is enabled.
    mode: Mode,
    /// The namespace's line in the status file.
    status: Registration,
}

// Where the glue finds `fast`.
const _: () = assert!(core::mem::offset_of!(NsExec, fast) == 0);

impl NsExec {
    /// Sets up the context of a namespace with a cgroup being enabled.
    pub(crate) fn enable(ns: &Namespace) -> Result<KBox<Self>> {
        let cgroup = cgroup_id::resolve(ns)?;
        let queues = crate::shared_queues()?;

        let nr_cpus = cpu::nr_cpu_ids() as usize;
        let mut lanes = KVec::with_capacity(nr_cpus, GFP_KERNEL)?;
        for _ in 0..nr_cpus {
            lanes.push(SetOnce::new(), GFP_KERNEL)?;
        }
        let fallback = Arc::pin_init(Lane::new(cgroup.clone(), queues.clone()), GFP_KERNEL)?;
        let mode = Mode::from_parameters(
            crate::module_parameters::fast_path.value(),
            crate::module_parameters::inline_assoc.value(),
        );
        let fast = FastContext::new(mode.rule(ns.is_file()), ns.backing_queue(), cgroup);
        Ok(KBox::new(
            Self {
                fast,
                lanes,
                fallback,
                deferred: SetOnce::new(),
                queues,
                mode,
                status: Registration::new(ns, mode)?,
            },
            GFP_KERNEL,
        )?)
    }

    /// Decides where a command runs: in the caller's thread where nothing
    /// can put that thread to sleep for the cgroup (see
    /// [`crate::fast_path`]), else in the lane of the current CPU (the
    /// deferred lane for a command whose backend runs its work here).
    ///
    /// Only the decision borrows the context: once the command runs or is
    /// queued it may complete, and the namespace be disabled and this
    /// context freed, before nvmet's call returns.  So what carries the
    /// decision out holds what it needs by its own means (the association's
    /// reference on the css, a clone of the lane's `Arc`), and runs once the
    /// borrow has ended ([`Dispatch::run`]).
    pub(crate) fn dispatch(&self, req: Req, facts: Facts) -> Dispatch {
        if self.mode.decide(&facts).is_ok() {
            return Dispatch::inline(req, facts.state(), self.fast.cgroup());
        }
        let lane = if facts.deferred() {
            self.deferred_lane()
        } else {
            self.lane()
        };
        Dispatch(Target::Lane(lane.clone(), req))
    }

    /// The lane of the current CPU, made now if this is its first command
    /// there; the fallback lane if it cannot be.
    ///
    /// The CPU may change under us: any lane will do, this one is likely
    /// local.
    fn lane(&self) -> &Arc<Lane> {
        let cpu = CpuId::current().as_u32() as usize;
        self.lanes
            .get(cpu)
            .and_then(|slot| self.lane_in(slot))
            .unwrap_or(&self.fallback)
    }

    /// The deferred lane, made now if this is its first command; the
    /// current CPU's lane if it cannot be.
    fn deferred_lane(&self) -> &Arc<Lane> {
        self.lane_in(&self.deferred).unwrap_or_else(|| self.lane())
    }

    /// The lane in `slot`, made now if there is none; `None` if it cannot
    /// be made.
    ///
    /// It runs in the transport's context, which may be atomic (nvmet-fc),
    /// so the lane is allocated without sleeping; a failure costs
    /// locality, not the command.
    fn lane_in<'a>(&self, slot: &'a SetOnce<Arc<Lane>>) -> Option<&'a Arc<Lane>> {
        if let Some(lane) = slot.as_ref() {
            return Some(lane);
        }
        if let Ok(lane) = Arc::pin_init(
            Lane::new(self.fast.cgroup().clone(), self.queues.clone()),
            GFP_NOWAIT,
        ) {
            // Another thread on this slot may win the race: its lane is as
            // good, and ours is dropped.
            if slot.populate(lane) {
                self.status.lane_made();
            }
        }
        // Empty if our allocation failed, or while the winner of that race
        // is still storing its lane.
        slot.as_ref()
    }

    /// Tears the context down once every command of the namespace completed.
    ///
    /// It waits for nothing: a worker may still be returning from the
    /// namespace's last command, but it holds its lane (and through it the
    /// cgroup and the queue) by reference, and touches nothing else of the
    /// namespace; so may a call from nvmet in [`Dispatch::run`], which holds
    /// nothing of the context.  The module's text outlives both: unloading
    /// drains the queues first ([`crate::NvmetCgroup`]'s `drop`), and
    /// nvmet waits for its calls when the module unregisters.  So disabling a
    /// namespace, which nvmet does holding `nvmet_config_sem`, costs no more
    /// than in stock nvmet, however many CPUs its lanes were on.
    pub(crate) fn disable(self: KBox<Self>) {
        drop(self);
    }
}

/// Where [`NsExec::dispatch`] sends a command, carried out by [`Dispatch::run`]
/// without the context.
#[must_use = "a command dispatched and never run is aborted"]
pub(crate) struct Dispatch(Target);

enum Target {
    /// Run in the caller's thread, associated with the cgroup (unless the
    /// namespace is being disabled) and under `memalloc_noio`, as in a
    /// lane: `scope` holds both, and [`Dispatch::run`] leaves it once the
    /// command has run.
    Inline { req: Req, scope: InlineScope },
    /// Aborted: its submission queue is being deleted.
    Abort(Req),
    /// Queued to this lane.
    Lane(Arc<Lane>, Req),
}

impl Dispatch {
    /// A command run in the caller's thread, charged as in a lane; `state`
    /// was read with the facts that allowed it, just before.
    fn inline(req: Req, state: ReqState, cgroup: &Cgroup) -> Self {
        if state.sq_dying {
            return Self(Target::Abort(req));
        }
        // As in a lane: a disable waits for the command, don't throttle it.
        let scope = InlineScope::enter(cgroup, state.ns_live);
        Self(Target::Inline { req, scope })
    }

    /// Runs, aborts or queues the command.
    pub(crate) fn run(self) {
        match self.0 {
            Target::Inline { req, scope } => scope.run(req),
            Target::Abort(req) => req.abort(),
            Target::Lane(lane, req) => lane.submit(req),
        }
    }
}
