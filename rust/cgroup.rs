// SPDX-License-Identifier: GPL-2.0

//! RAII wrappers for cgroup references, blkcg association and `memalloc_noio`.

use crate::raw;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, error::from_err_ptr, prelude::*};

/// A counted reference to a cgroup (v2).
///
/// # Invariants
///
/// `ptr` is a cgroup on which this value holds one reference.
pub(crate) struct CgroupRef {
    ptr: NonNull<bindings::cgroup>,
}

// SAFETY: cgroup references may be taken, used and dropped on any thread.
unsafe impl Send for CgroupRef {}
// SAFETY: The shared operations (`effective_io_css`, `clone`) are thread safe.
unsafe impl Sync for CgroupRef {}

impl CgroupRef {
    /// Looks up a cgroup by ID in the current task's cgroup namespace.
    pub(crate) fn from_id(id: u64) -> Result<Self> {
        // SAFETY: `cgroup_get_from_id` accepts any ID and returns a counted
        // reference or an `ERR_PTR`.
        let ptr = from_err_ptr(unsafe { bindings::cgroup_get_from_id(id) })?;
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ENOENT)
    }

    /// Associates the current kernel thread with this cgroup's effective io
    /// css (its own, or its nearest ancestor's with the io controller), looked
    /// up now so that a removed cgroup falls back to a remaining ancestor.
    pub(crate) fn associate(&self) -> BlkcgAssociation {
        // SAFETY: By the type invariant the cgroup is alive, and the io
        // subsystem is a static of the kernel; the call returns a counted
        // css reference (the root's at worst), never NULL.
        let css = unsafe {
            bindings::cgroup_get_e_css(self.ptr.as_ptr(), &raw mut bindings::io_cgrp_subsys)
        };
        // SAFETY: `css` is valid; the association takes its own reference.
        unsafe { bindings::kthread_associate_blkcg(css) };
        BlkcgAssociation {
            // SAFETY: `cgroup_get_e_css` never returns NULL.
            css: unsafe { NonNull::new_unchecked(css) },
            _not_send: PhantomData,
        }
    }
}

impl Clone for CgroupRef {
    fn clone(&self) -> Self {
        // SAFETY: By the type invariant the cgroup is alive; this takes one
        // more reference for the new value.
        let ptr = unsafe { raw::nvmet_cgroup_get(self.ptr.as_ptr()) };
        Self {
            // SAFETY: `cgroup_get` returns its argument.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
        }
    }
}

impl Drop for CgroupRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this value owns one reference.
        unsafe { raw::nvmet_cgroup_put(self.ptr.as_ptr()) }
    }
}

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
/// [`CgroupRef::associate`], this value holds one reference on `css`, and it
/// does not leave the thread.
pub(crate) struct BlkcgAssociation {
    css: NonNull<bindings::cgroup_subsys_state>,
    _not_send: PhantomData<*mut ()>,
}

impl BlkcgAssociation {
    /// Whether the css is being removed (its cgroup was `rmdir`ed).  Bios
    /// submitted under such an association go to the root, not to a
    /// remaining ancestor: `bio_associate_blkg` only takes online csses.
    pub(crate) fn is_stale(&self) -> bool {
        // SAFETY: By the type invariant this value holds a reference.
        unsafe { raw::nvmet_cgroup_css_is_dying(self.css.as_ptr()) }
    }
}

impl Drop for BlkcgAssociation {
    fn drop(&mut self) {
        // SAFETY: Clearing the association is always allowed; by the type
        // invariant it is this thread's, and this value owns one reference
        // on `css`.
        unsafe {
            bindings::kthread_associate_blkcg(core::ptr::null_mut());
            raw::nvmet_cgroup_css_put(self.css.as_ptr());
        }
    }
}

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
