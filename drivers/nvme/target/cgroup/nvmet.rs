// SPDX-License-Identifier: GPL-2.0

//! Safe handles to nvmet's namespaces and I/O commands.

use crate::raw;
use core::{mem::ManuallyDrop, ptr::NonNull};
use kernel::{bindings, prelude::*, types::Opaque};

/// An nvmet namespace (`struct nvmet_ns`), or the one nvmet makes to stand
/// for a passthru subsystem's controller: NSID 0, the controller's device
/// path, and no backend.
///
/// # Invariants
///
/// Instances are only reached as `&Namespace` handed out by
/// [`Namespace::from_raw`]: a namespace with a cgroup ID that nvmet is
/// enabling, under its subsystem's lock and with its backend open, for as
/// long as the reference lives.
#[repr(transparent)]
pub(crate) struct Namespace(Opaque<raw::nvmet_ns>);

impl Namespace {
    /// Borrows a namespace for nvmet's call to enable it.
    ///
    /// # Safety
    ///
    /// `ptr` is a non-NULL namespace that nvmet is enabling, under its
    /// subsystem's lock and with its backend open, for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut raw::nvmet_ns) -> &'a Self {
        // SAFETY: `Namespace` is `repr(transparent)` over `struct nvmet_ns`,
        // and the caller guarantees the pointer for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The ID of the cgroup its I/O is charged to (configfs `cgroup_id`).
    pub(crate) fn cgroup_id(&self) -> u64 {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_ns_cgroup_id(self.0.get()) }
    }

    /// Whether the namespace uses buffered (page cache) I/O.
    pub(crate) fn buffered_io(&self) -> bool {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_ns_buffered_io(self.0.get()) }
    }

    /// The namespace ID, 0 for a passthru controller.
    pub(crate) fn nsid(&self) -> u32 {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_ns_nsid(self.0.get()) }
    }

    /// The NQN of the namespace's subsystem.
    pub(crate) fn subsys_nqn(&self) -> &CStr {
        // SAFETY: By the type invariant; the subsystem outlives its
        // namespaces and its NQN is a NUL-terminated string that does not
        // change while it has any.
        unsafe { CStr::from_char_ptr(raw::nvmet_cgroup_ns_subsys_nqn(self.0.get())) }
    }

    /// Whether the namespace is backed by a file rather than a block device.
    pub(crate) fn is_file(&self) -> bool {
        // SAFETY: By the type invariant: the backend is open.
        unsafe { raw::nvmet_cgroup_ns_file(self.0.get()) }
    }

    /// The backing device or file, for messages.
    pub(crate) fn device_path(&self) -> &CStr {
        // SAFETY: By the type invariant; the glue returns a NUL-terminated
        // string that lives as long as the namespace's configuration, which
        // cannot change while the subsystem's lock is held.
        unsafe { CStr::from_char_ptr(raw::nvmet_cgroup_ns_device_path(self.0.get())) }
    }

    /// The block queue behind the namespace's backing device or file, if
    /// the glue can tell which one holds its data.
    pub(crate) fn backing_queue(&self) -> BackingQueue {
        // SAFETY: By the type invariant the backend is open, so the queue it
        // returns, if any, is alive.
        let q = NonNull::new(unsafe { raw::nvmet_cgroup_ns_queue(self.0.get()) });
        // SAFETY: `q` is alive (see above); `blk_get_queue` takes a reference
        // unless the queue is dying.
        let held = q.filter(|q| unsafe { bindings::blk_get_queue(q.as_ptr()) });
        // INVARIANT: `held` is a queue on which `blk_get_queue` took a
        // reference, or `None`.
        BackingQueue { ptr: held }
    }
}

/// The block queue whose policies (io.cost, io.latency, bfq, io.max) act on a
/// namespace's bios.
///
/// # Invariants
///
/// `ptr`, if any, is a queue on which the value holds a reference
/// (`blk_get_queue`).
pub(crate) struct BackingQueue {
    ptr: Option<NonNull<bindings::request_queue>>,
}

// SAFETY: The value is a counted reference that the glue uses from any
// thread: it only loads a few of the queue's fields (flags, `mq_ops`, `td`,
// the usage counter's state) and dereferences nothing it reads, and the
// reference is dropped from any thread.
unsafe impl Send for BackingQueue {}
// SAFETY: As above: no operation through `&BackingQueue` needs exclusivity.
unsafe impl Sync for BackingQueue {}

impl BackingQueue {
    /// The queue's facts now, without a command (for the status file); `None`
    /// if the queue is not known or is dying.
    pub(crate) fn queue_facts(&self) -> Option<QueueFacts> {
        // SAFETY: By the type invariant the value holds a reference on the
        // queue, or it is NULL, which the glue accepts.
        QueueFacts::from_bits(unsafe { raw::nvmet_cgroup_queue_facts(self.as_raw()) })
    }

    /// The queue, or NULL if none is known: what the glue's facts calls take.
    pub(crate) fn as_raw(&self) -> *mut bindings::request_queue {
        self.ptr.map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }
}

/// Whether the facts word `f` the glue returned has `bit` set.
const fn has(f: u32, bit: u32) -> bool {
    f & bit != 0
}

impl Drop for BackingQueue {
    fn drop(&mut self) {
        if let Some(q) = self.ptr {
            // SAFETY: By the type invariant the value holds a reference.
            unsafe { bindings::blk_put_queue(q.as_ptr()) };
        }
    }
}

/// What the fast path decides from: facts about one command, its caller and
/// the queue behind its namespace (see [`crate::fast_path`]).
///
/// Kept as the one word of bits the glue returns, read through the
/// methods: deciding is then a few bit tests on the fast path, where a
/// struct of `bool`s cost it some thirty instructions per command to unpack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Facts(u32);

/// The bits of [`Facts`] that describe the queue ([`QueueFacts`]).
const QUEUE_BITS: u32 = raw::NVMET_CGROUP_F_QUEUE_LIVE
    | raw::NVMET_CGROUP_F_BLK_MQ
    | raw::NVMET_CGROUP_F_IOCOST
    | raw::NVMET_CGROUP_F_IOLATENCY
    | raw::NVMET_CGROUP_F_BFQ
    | raw::NVMET_CGROUP_F_THROTTLE;

/// Each fact of a newtype over the glue's word: its getter, and for the
/// tests a setter that builds the facts a case needs.
macro_rules! fact_bits {
    ($($(#[doc = $doc:literal])* $get:ident / $with:ident = $bit:ident;)*) => {
        $(
            $(#[doc = $doc])*
            pub(crate) const fn $get(self) -> bool {
                has(self.0, raw::$bit)
            }

            #[doc = concat!("This value with [`Self::", stringify!($get), "`] set to `on`.")]
            #[cfg(CONFIG_KUNIT = "y")]
            pub(crate) const fn $with(self, on: bool) -> Self {
                Self(if on { self.0 | raw::$bit } else { self.0 & !raw::$bit })
            }
        )*
    };
}

/// The queue's bits of `queue`, none if it is `None`.
const fn queue_bits(queue: Option<QueueFacts>) -> u32 {
    match queue {
        Some(q) => q.0,
        None => 0,
    }
}

impl Facts {
    /// The facts of the glue's word (`nvmet_cgroup_execute` passes it to
    /// the Rust side with the command).
    pub(crate) const fn from_glue(f: u32) -> Self {
        Self(f)
    }

    /// The command's state, read with these facts.
    pub(crate) const fn state(self) -> ReqState {
        ReqState {
            ns_live: has(self.0, raw::NVMET_CGROUP_F_NS_LIVE),
            sq_dying: has(self.0, raw::NVMET_CGROUP_F_SQ_DYING),
        }
    }

    /// A Read or Write from a kernel thread in task context, of a file
    /// namespace if `file`, whose queue is `queue` (`None`: not known).
    pub(crate) const fn read_write_from_kthread(queue: Option<QueueFacts>, file: bool) -> Self {
        let f = raw::NVMET_CGROUP_F_READ_WRITE | raw::NVMET_CGROUP_F_KTHREAD_TASK;
        Self(f | if file { raw::NVMET_CGROUP_F_FILE } else { 0 } | queue_bits(queue))
    }

    fact_bits! {
        /// A Read or Write command: the ones that submit their bios from
        /// `execute`.
        read_write / with_read_write = NVMET_CGROUP_F_READ_WRITE;
        /// The backend runs the command's work synchronously in the
        /// execution context (a file's Flush, DSM and Write Zeroes, zone
        /// management).
        deferred / with_deferred = NVMET_CGROUP_F_DEFERRED;
        /// The caller is a kernel thread in task context.
        kthread_task / with_kthread_task = NVMET_CGROUP_F_KTHREAD_TASK;
        /// The namespace is backed by a file, not a block device.
        file / with_file = NVMET_CGROUP_F_FILE;
    }

    /// The queue behind the namespace, if it is known and live.
    pub(crate) const fn queue(self) -> Option<QueueFacts> {
        QueueFacts::from_bits(self.0)
    }

    /// These facts with [`Facts::queue`] set to `queue`.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) const fn with_queue(self, queue: Option<QueueFacts>) -> Self {
        Self(self.0 & !QUEUE_BITS | queue_bits(queue))
    }
}

/// The policies of the queue behind a namespace, as one command saw them:
/// the queue's bits of the glue's word, [`raw::NVMET_CGROUP_F_QUEUE_LIVE`]
/// set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueFacts(u32);

impl QueueFacts {
    /// A live blk-mq queue with no policy that can sleep a submitter.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) const PLAIN: Self =
        Self(raw::NVMET_CGROUP_F_QUEUE_LIVE | raw::NVMET_CGROUP_F_BLK_MQ);

    /// The queue's part of the facts the glue read; `None` if it read no
    /// queue.
    const fn from_bits(f: u32) -> Option<Self> {
        if has(f, raw::NVMET_CGROUP_F_QUEUE_LIVE) {
            Some(Self(f & QUEUE_BITS))
        } else {
            None
        }
    }

    fact_bits! {
        /// A blk-mq queue, not a bio-based (stacking) driver.
        blk_mq / with_blk_mq = NVMET_CGROUP_F_BLK_MQ;
        /// io.cost is enabled.
        iocost / with_iocost = NVMET_CGROUP_F_IOCOST;
        /// io.latency has a target.
        iolatency / with_iolatency = NVMET_CGROUP_F_IOLATENCY;
        /// The elevator is bfq.
        bfq / with_bfq = NVMET_CGROUP_F_BFQ;
        /// blk-throttle (io.max) was ever configured.
        throttle / with_throttle = NVMET_CGROUP_F_THROTTLE;
    }
}

/// A command's state when the glue read its facts ([`Facts::state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReqState {
    /// The namespace still accepts I/O (see [`Req::ns_live`]).
    pub(crate) ns_live: bool,
    /// The submission queue is being deleted (see [`Req::sq_dying`]).
    pub(crate) sq_dying: bool,
}

/// An I/O command handed to the extension by nvmet.
///
/// # Invariants
///
/// `ptr` is a parsed command that belongs to the extension: nvmet does not
/// touch it until the handle is consumed by [`Req::run`] or [`Req::abort`].
pub(crate) struct Req {
    ptr: NonNull<raw::nvmet_req>,
}

// SAFETY: A command may be executed from any thread.
unsafe impl Send for Req {}

impl Req {
    /// Takes over a command.
    ///
    /// # Safety
    ///
    /// `ptr` is a non-NULL parsed command that nvmet handed to the extension.
    pub(crate) unsafe fn from_raw(ptr: *mut raw::nvmet_req) -> Self {
        Self {
            // SAFETY: Non-NULL, as the caller guarantees.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
        }
    }

    /// Whether the command's namespace still accepts I/O (not being disabled).
    pub(crate) fn ns_live(&self) -> bool {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_req_ns_live(self.ptr.as_ptr()) }
    }

    /// Whether the command's submission queue is being deleted.
    pub(crate) fn sq_dying(&self) -> bool {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_req_sq_dying(self.ptr.as_ptr()) }
    }

    /// Gives up ownership without completing the command: the caller hands
    /// it back to nvmet.
    pub(crate) fn into_raw(self) -> *mut raw::nvmet_req {
        ManuallyDrop::new(self).ptr.as_ptr()
    }

    /// Completes the command with "Command Aborted due to SQ Deletion".
    pub(crate) fn abort(self) {
        // SAFETY: By the type invariant; the command goes back to nvmet.
        unsafe { raw::nvmet_cgroup_req_abort(self.into_raw()) }
    }

    /// Runs the command's own `execute` in the extension's context.
    pub(crate) fn run(self) {
        // SAFETY: By the type invariant; the command goes back to nvmet.
        unsafe { raw::nvmet_cgroup_req_run(self.into_raw(), true) }
    }
}

impl Drop for Req {
    /// A command must never be lost: one dropped unexecuted is aborted.
    fn drop(&mut self) {
        // SAFETY: By the type invariant; `into_raw` skips this for commands
        // already handed back.
        unsafe { raw::nvmet_cgroup_req_abort(self.ptr.as_ptr()) }
    }
}

/// A multi-producer list of commands waiting for a lane's workers.
#[pin_data]
pub(crate) struct ReqList {
    #[pin]
    head: Opaque<bindings::llist_head>,
}

// SAFETY: `llist_add` may run concurrently on any number of threads, and
// `llist_del_all` is a single atomic exchange.
unsafe impl Send for ReqList {}
// SAFETY: As above: every operation through `&ReqList` is thread safe.
unsafe impl Sync for ReqList {}

impl ReqList {
    /// An empty list (an `llist_head` with a NULL first pointer).
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            head: Opaque::zeroed(),
        })
    }

    /// Adds a command; returns true if the list was empty, i.e. whoever drains
    /// it must be woken.
    pub(crate) fn push(&self, req: Req) -> bool {
        let ptr = req.into_raw();
        // SAFETY: The list head is valid and the command, owned by the
        // extension, is linked by its own node until taken.
        unsafe { raw::nvmet_cgroup_req_push(self.head.get(), ptr) }
    }

    /// Whether no command is queued.
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: The list head is valid.
        unsafe { raw::nvmet_cgroup_reqs_empty(self.head.get()) }
    }

    /// Takes every command queued so far, oldest first.
    pub(crate) fn take_all(&self) -> ReqBatch {
        // SAFETY: The list head is valid.
        let first = unsafe { raw::nvmet_cgroup_reqs_take(self.head.get()) };
        ReqBatch {
            next: NonNull::new(first),
        }
    }
}

/// Commands taken from a [`ReqList`].
///
/// # Invariants
///
/// `next` is the first of a NULL-terminated chain of commands that belong to
/// the extension and are no longer reachable from any list head.
pub(crate) struct ReqBatch {
    next: Option<NonNull<raw::nvmet_req>>,
}

// SAFETY: The chain's commands belong to the extension, which may execute
// them from any thread (as `Req`).
unsafe impl Send for ReqBatch {}

impl ReqBatch {
    /// A batch of no command.
    pub(crate) const fn empty() -> Self {
        Self { next: None }
    }

    /// Whether every command was taken from the batch.
    pub(crate) fn is_empty(&self) -> bool {
        self.next.is_none()
    }
}

impl Iterator for ReqBatch {
    type Item = Req;

    fn next(&mut self) -> Option<Req> {
        let cur = self.next?;
        // Read the link before the command is handed out: once it runs, it
        // may complete and be reused.
        // SAFETY: By the type invariant, `cur` is a command of the chain.
        self.next = NonNull::new(unsafe { raw::nvmet_cgroup_req_next(cur.as_ptr()) });
        Some(Req { ptr: cur })
    }
}

impl Drop for ReqBatch {
    fn drop(&mut self) {
        // Commands a caller left in the batch are aborted by `Req::drop`.
        self.by_ref().for_each(drop);
    }
}
