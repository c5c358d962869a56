// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueue, waiting for its work items, and telling
//! whether a worker slept.

use crate::raw;
use core::{ops::Deref, ptr::NonNull};
use kernel::{bindings, prelude::*, workqueue::Queue};

/// A workqueue the module allocated and destroys when dropped.
///
/// # Invariants
///
/// `ptr` is a workqueue from `alloc_workqueue` that nothing else destroys.
pub(crate) struct OwnedQueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: Workqueues are used from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: Queueing work is thread safe.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Takes ownership of what an allocation returned: NULL is ENOMEM.
    fn from_alloc(ptr: *mut bindings::workqueue_struct) -> Result<Self> {
        // INVARIANT: a non-NULL `ptr` is a new queue nobody else destroys.
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ENOMEM)
    }
}

impl OwnedQueue {
    /// Waits until no work item is queued or running, including those the
    /// queue's own work items queue meanwhile.
    pub(crate) fn drain(&self) {
        // SAFETY: By the type invariant the queue is alive.
        unsafe { bindings::drain_workqueue(self.ptr.as_ptr()) }
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: By the type invariant the queue lives as long as `self`.
        unsafe { Queue::from_raw(self.ptr.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; `destroy_workqueue` drains the queue
        // first, so work items still queued run to completion.
        unsafe { bindings::destroy_workqueue(self.ptr.as_ptr()) }
    }
}

/// The module's two queues (see the glue for their flags).
pub(crate) struct ExecQueues {
    /// Per-CPU, high priority: lanes whose commands do not sleep.
    pub(crate) local: OwnedQueue,
    /// Unbound, high priority, at most a bounded number of work items
    /// running: lanes whose commands sleep in the block layer.
    pub(crate) throttled: OwnedQueue,
}

impl ExecQueues {
    /// Allocates both queues.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            // SAFETY: No precondition; NULL means failure.
            local: OwnedQueue::from_alloc(unsafe { raw::nvmet_cgroup_alloc_workqueue() })?,
            throttled: OwnedQueue::from_alloc(
                // SAFETY: No precondition; NULL means failure.
                unsafe { raw::nvmet_cgroup_alloc_throttled_workqueue() },
            )?,
        })
    }

    /// Waits until no work item of either queue is queued or running.
    ///
    /// Only once no namespace has a context (module unload): every lane is
    /// empty then, so a worker still running only returns, and queues
    /// nothing on either queue (a queue being drained refuses, with a
    /// warning, work that is not its own workers').
    pub(crate) fn drain(&self) {
        self.local.drain();
        self.throttled.drain();
    }
}

/// How often the current thread had gone to sleep when this was taken.
///
/// A lane worker compares it before and after a command to tell whether the
/// command put it to sleep (see [`crate::exec`]).
#[derive(Clone, Copy)]
pub(crate) struct Sleeps(usize);

impl Sleeps {
    /// The current thread's count now.
    pub(crate) fn now() -> Self {
        // SAFETY: No precondition: it reads a counter of the current task.
        Self(unsafe { raw::nvmet_cgroup_current_sleeps() })
    }

    /// Whether the current thread slept since `self` was taken on it.
    pub(crate) fn slept_since(self) -> bool {
        Self::now().0 != self.0
    }
}
