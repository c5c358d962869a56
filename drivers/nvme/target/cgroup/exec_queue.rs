// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueue, waiting for a work item, and telling whether
//! a worker slept.

use crate::raw;
use core::{ops::Deref, ptr::NonNull};
use kernel::{
    bindings,
    prelude::*,
    workqueue::{Queue, Work},
};

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

/// Waits until `work` is neither queued nor running.
pub(crate) fn flush_work<T: ?Sized, const ID: u64>(work: &Work<T, ID>) {
    // SAFETY: `work` is an initialised work item, valid for this call.
    unsafe { bindings::flush_work(Work::raw_get(work)) };
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
