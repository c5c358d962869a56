// SPDX-License-Identifier: GPL-2.0

//! Safe handles to nvmet's namespaces and I/O commands.

use crate::ffi::raw;
use core::{mem::ManuallyDrop, ptr::NonNull};
use kernel::{bindings, prelude::*, types::Opaque};

/// A namespace, borrowed for the duration of one nvmet callback.
///
/// # Invariants
///
/// `ptr` points to a live `struct nvmet_ns` for the lifetime of the handle;
/// callbacks that read its configuration run under the subsystem's lock.
pub(crate) struct Ns {
    ptr: NonNull<raw::NvmetNs>,
}

impl Ns {
    /// Creates a handle for one callback.
    ///
    /// # Safety
    ///
    /// `ptr` is a live namespace for as long as the handle is used, with its
    /// subsystem's lock held if the handle reads its configuration.
    pub(crate) unsafe fn from_raw(ptr: *mut raw::NvmetNs) -> Self {
        Self {
            // SAFETY: nvmet never passes a NULL namespace.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
        }
    }

    /// A key that identifies the namespace while it exists.
    pub(crate) fn key(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Whether the namespace is enabled.
    pub(crate) fn enabled(&self) -> bool {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_ns_enabled(self.ptr.as_ptr()) }
    }

    /// Whether the namespace uses buffered (page cache) I/O.
    pub(crate) fn buffered_io(&self) -> bool {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_ns_buffered_io(self.ptr.as_ptr()) }
    }

    /// The namespace ID.
    pub(crate) fn nsid(&self) -> u32 {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_ns_nsid(self.ptr.as_ptr()) }
    }

    /// The backing device or file, for messages.
    pub(crate) fn device_path(&self) -> &CStr {
        // SAFETY: By the type invariant; the glue returns a NUL-terminated
        // string that lives as long as the namespace's configuration, which
        // cannot change while the subsystem's lock is held.
        unsafe { CStr::from_char_ptr(raw::nvmet_cgroup_ns_device_path(self.ptr.as_ptr())) }
    }

    /// The block queue behind the namespace's backing device or file.
    ///
    /// # Safety
    ///
    /// The namespace is enabled, and the returned value is dropped before it
    /// is disabled.
    pub(crate) unsafe fn backing_queue(&self) -> BackingQueue {
        // INVARIANT: The namespace holds its device or file open while it is
        // enabled, and the caller drops the value before it is disabled.
        BackingQueue {
            // SAFETY: By the type invariant; the backend is open while the
            // namespace is enabled, which the caller guarantees.
            ptr: NonNull::new(unsafe { raw::nvmet_cgroup_ns_queue(self.ptr.as_ptr()) }),
        }
    }
}

/// The block queue whose policies (io.cost, io.latency, bfq, io.max) act on a
/// namespace's bios.
///
/// # Invariants
///
/// `ptr`, if any, is the queue of a device that an enabled namespace holds
/// open, and the value is dropped before the namespace is disabled.
pub(crate) struct BackingQueue {
    ptr: Option<NonNull<raw::RequestQueue>>,
}

// SAFETY: The value is only a pointer that the glue uses from any thread: it
// takes the queue's usage reference (a per-CPU counter) around every read,
// and by the type invariant the queue outlives the value.
unsafe impl Send for BackingQueue {}
// SAFETY: As above: no operation through `&BackingQueue` needs exclusivity.
unsafe impl Sync for BackingQueue {}

/// An I/O command handed to the extension by nvmet.
///
/// # Invariants
///
/// `ptr` is a parsed command that belongs to the extension: nvmet does not
/// touch it until the handle is consumed by [`Req::run`] or [`Req::abort`].
pub(crate) struct Req {
    ptr: NonNull<raw::NvmetReq>,
}

// SAFETY: A command may be executed from any thread.
unsafe impl Send for Req {}

impl Req {
    /// Takes over a command.
    ///
    /// # Safety
    ///
    /// `ptr` is a parsed command that nvmet handed to the extension.
    pub(crate) unsafe fn from_raw(ptr: *mut raw::NvmetReq) -> Self {
        Self {
            // SAFETY: nvmet never passes a NULL command.
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

    /// Whether the command may run in the caller's (the transport's) thread:
    /// it is a read or write, the caller is a kernel thread, and no policy
    /// on `queue` can put the caller to sleep for the cgroup's sake
    /// (io.cost or io.latency enabled, bfq; io.max for a file namespace).
    /// Checked per command, so a policy enabled or turned off later takes
    /// effect from the next command on.
    pub(crate) fn may_run_inline(&self, queue: &BackingQueue) -> bool {
        let q = queue.ptr.map_or(core::ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: By the type invariants of `Req` and `BackingQueue`: the
        // queue outlives the namespace's commands; NULL is accepted.
        unsafe { raw::nvmet_cgroup_req_may_run_inline(self.ptr.as_ptr(), q) }
    }

    /// Gives up ownership without completing the command.
    fn into_raw(self) -> *mut raw::NvmetReq {
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

    /// Runs the command's own `execute` in the caller's (transport's) context.
    pub(crate) fn run_inline(self) {
        // SAFETY: By the type invariant; the command goes back to nvmet.
        unsafe { raw::nvmet_cgroup_req_run(self.into_raw(), false) }
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

/// A multi-producer list of commands waiting for one worker.
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
    /// An empty list.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            head <- Opaque::ffi_init(|slot: *mut bindings::llist_head| {
                // SAFETY: `slot` is valid for writes; an empty llist_head is
                // a NULL first pointer.
                unsafe { (*slot).first = core::ptr::null_mut() }
            }),
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
    next: Option<NonNull<raw::NvmetReq>>,
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
