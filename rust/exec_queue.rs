// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueue, and waiting for a work item.

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
