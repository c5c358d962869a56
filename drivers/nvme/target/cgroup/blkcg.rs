// SPDX-License-Identifier: GPL-2.0

//! The current kernel thread's blkcg association, as a scope guard.

use crate::cgroup::{Cgroup, CgroupSubsysState};
use core::marker::PhantomData;
use kernel::{bindings, sync::aref::ARef};

/// The current kernel thread's bios are charged to a cgroup until this drops.
///
/// Dropping it clears the thread's association rather than restoring an
/// earlier one: the kernel has no exported way to read that, and the threads
/// nvmet executes commands from (transport work items, the module's lane
/// workers) carry none.
///
/// # Invariants
///
/// The current thread is associated with the blkcg of `css` by
/// [`BlkcgAssociation::associate`], and the value does not leave the thread.
pub(crate) struct BlkcgAssociation {
    css: ARef<CgroupSubsysState>,
    _not_send: PhantomData<*mut ()>,
}

impl BlkcgAssociation {
    /// Associates the current kernel thread with `cgroup`'s effective io
    /// css, looked up now (see [`Cgroup::effective_io_css`]).
    pub(crate) fn associate(cgroup: &Cgroup) -> Self {
        let css = cgroup.effective_io_css();
        // SAFETY: `css` is alive; the association takes its own reference,
        // and `drop` clears it on this thread.
        unsafe { bindings::kthread_associate_blkcg(css.as_raw()) };
        // INVARIANT: The thread was associated with `css` just above.
        Self {
            css,
            _not_send: PhantomData,
        }
    }

    /// Whether the association is still `cgroup`'s effective io css, the one
    /// it was made for: false once io was enabled above the cgroup (it has a
    /// css of its own now) or its css is dying (io disabled above it, the
    /// cgroup removed), whose bios the block layer would send to the root
    /// (`bio_associate_blkg` only takes online csses).
    pub(crate) fn is_current(&self, cgroup: &Cgroup) -> bool {
        cgroup.effective_io_css_is(&self.css)
    }
}

impl Drop for BlkcgAssociation {
    fn drop(&mut self) {
        // SAFETY: Clearing the association is always allowed; by the type
        // invariant it is this thread's.  `css` is put after it.
        unsafe { bindings::kthread_associate_blkcg(core::ptr::null_mut()) };
    }
}
