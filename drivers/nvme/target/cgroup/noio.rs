// SPDX-License-Identifier: GPL-2.0

//! A `memalloc_noio` scope of the current thread, as a guard.

use crate::raw;
use core::marker::PhantomData;

/// Memory allocations of the current thread do not start I/O until this drops.
///
/// # Invariants
///
/// `flags` is what `memalloc_noio_save` returned on this thread, which this
/// value does not leave.
pub(crate) struct NoIo {
    flags: u32,
    _not_send: PhantomData<*mut ()>,
}

impl NoIo {
    /// Enters a `memalloc_noio` scope.
    pub(crate) fn enter() -> Self {
        Self {
            // SAFETY: Always allowed; restored in `drop` on this thread.
            flags: unsafe { raw::nvmet_cgroup_noio_save() },
            _not_send: PhantomData,
        }
    }
}

impl Drop for NoIo {
    fn drop(&mut self) {
        // SAFETY: By the type invariant.
        unsafe { raw::nvmet_cgroup_noio_restore(self.flags) }
    }
}
