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
    /// Allocates the per-CPU, high-priority, reclaim-safe queue the namespaces'
    /// workers run on (see the glue for why).
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No precondition; NULL means failure.
        let ptr = unsafe { raw::nvmet_cgroup_alloc_workqueue() };
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
